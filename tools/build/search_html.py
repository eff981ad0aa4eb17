"""A built page's text, section by section, for the search index (tools/build/search.py).

Only the article counts (not the sidebars). A section starts at each
``<section id>`` and at each ``<dt id>`` (an API object, a glossary term);
its text runs until the next one starts. A formula counts by its TeX source
(KaTeX's annotation, not its drawing), with the words a reader says for a
square root; the heading links' "#" and scripts are left out; code
(``<pre>``) is kept apart, since a word in code weighs less than one in prose.
"""

from __future__ import annotations

from html.parser import HTMLParser

VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "wbr",
}
SKIP_CLASSES = {"headerlink", "katex-html", "toggle-button"}
# "mrow": MathML's drawing of a formula, beside its TeX annotation.
SKIP_TAGS = {"script", "style", "button", "svg", "template", "mrow"}
# What a reader types for what a formula writes.
MATH_WORDS = {"\\sqrt": " sqrt square root 根号 平方根 "}


class _PageText(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # (tag, opens a skipped part)
        self.skipping = 0
        self.in_article = 0
        self.in_pre = 0
        self.heading = 0
        self.title = ""
        self.sections: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = {name: value or "" for name, value in attrs}
        classes = set(a.get("class", "").split())
        if tag == "article" and "bd-article" in classes:
            self.in_article += 1
        skip = tag in SKIP_TAGS or bool(classes & SKIP_CLASSES)
        if tag not in VOID:
            self.stack.append((tag, skip))
            self.skipping += skip
        if not self.in_article or self.skipping:
            return
        if tag in ("section", "dt") and a.get("id"):
            self._start(a["id"], from_dt=tag == "dt")
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.heading += 1
        elif tag == "pre":
            self.in_pre += 1
        elif tag == "a" and self.sections and a.get("href", "").endswith(".html"):
            self.sections[-1]["links"].append(a["href"].removesuffix(".html"))

    def _start(self, anchor: str, from_dt: bool) -> None:
        self.sections.append(
            {"anchor": anchor, "heading": "", "text": "", "code": "", "links": []}
        )
        self.heading += from_dt  # a term's or object's name is its heading

    def handle_endtag(self, tag):
        if all(open_tag != tag for open_tag, _ in self.stack):
            return  # a stray end tag closes nothing
        while self.stack:
            open_tag, skip = self.stack.pop()
            self.skipping -= skip
            if not self.skipping and self.in_article:
                self._close(open_tag)
            if open_tag == tag:
                break

    def _close(self, tag: str) -> None:
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6") or (
            tag == "dt" and self.heading
        ):
            self.heading = max(self.heading - 1, 0)
        elif tag == "pre":
            self.in_pre = max(self.in_pre - 1, 0)
        elif tag == "article":
            self.in_article = max(self.in_article - 1, 0)

    def handle_data(self, data):
        if not self.in_article or self.skipping or not self.sections:
            return
        section = self.sections[-1]
        for tex, words in MATH_WORDS.items():
            data = data.replace(tex, words)
        if self.heading:
            section["heading"] += data
            if not self.title and len(self.sections) == 1:
                self.title += data
        else:
            section["code" if self.in_pre else "text"] += data


def parse_page(html: str) -> dict:
    r"""``{"title", "sections": [{"anchor", "heading", "text", "code", "links"}]}``.

    Example:
        >>> page = parse_page('<article class="bd-article"><section id="a"><h1>T'
        ...     '<a class="headerlink">#</a></h1><p>x <span class="katex">'
        ...     '<mrow><mi>y</mi></mrow><annotation>\\sqrt{y}</annotation>'
        ...     '<span class="katex-html">y</span></span></p><pre>code</pre></section></article>')
        >>> page["title"], page["sections"][0]["text"].split(), page["sections"][0]["code"]
        ('T', ['x', 'sqrt', 'square', 'root', '根号', '平方根', '{y}'], 'code')
    """
    parser = _PageText()
    parser.feed(html)
    for s in parser.sections:
        s["heading"] = " ".join(s["heading"].split())
    return {"title": " ".join(parser.title.split()), "sections": parser.sections}
