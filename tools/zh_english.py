"""English meant for reading on the zh edition's built pages.

Usage: python -m tools.zh_english [SITE]   (SITE: a built site, default _build/html;
one line per English string found in SITE/zh, exit 1 when there is one)

The zh prose is checked before the build (``tools/check_prose.py``); what the
code cells print and what the theme writes into a page are only known after
it. This reads, on every zh page:

* the outputs of code cells: what a cell prints or shows. Not a traceback (it
  quotes the program), not an image (a figure's text is checked with the
  figures), and not the output of a cell tagged ``quotes-english``, whose
  output quotes English on purpose (a corpus, a model's samples, a sentence
  and its tokens, the package's docstrings);
* the attributes a browser or a screen reader gives the reader: ``aria-label``,
  ``title`` and ``placeholder``, except the titles of citations (a cited
  work's own title);
* the hints sphinx-togglebutton writes into the page (``toggleHintShow``).

A word there is English unless it is

* code: a Python repr or call (``tensor(...)``, ``Linear(...)``, ``view()``),
  a keyword (``dtype=...``), an attribute (``.reshape``), a name with ``_`` or
  ``.`` (``q_proj``, ``torch.float64``, ``charlm.pt``), a CamelCase name
  (``MultiHeadAttention``), ``True``/``False``/``None``/``nan``, a quoted
  string (``'it'``), a special token (``[CLS]``), a single letter (``B``, ``T``),
  a word with a digit (``GPT-2``, ``t2s``, ``2.13.0+cpu``), or text in ``<code>``;
* an error the program raised, quoted after its type (``ValueError: ...``);
* a unit or a name of :data:`ALLOWED`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from bs4 import BeautifulSoup

# Latin words a zh reader may meet in outputs and the interface: units, and
# names (projects, models, acronyms, packages). Never an ordinary English
# word: a label such as "score", "mean", "rows", "block", "loss" or "step"
# is translated with mha_book.book.pick.
ALLOWED = frozenset(
    # units of time, memory and information
    "s ms us µs ns B KB MB GB TB KiB MiB GiB TiB nat nats bit bits FLOP FLOPs".split()
    # projects, packages and devices
    + "PyTorch torch numpy python Python npm cpu cuda CPU GPU API PDF PEP".split()
    + "matplotlib tokenizers".split()
    # the other edition's name, on its link
    + ["English"]
    # models, methods and hardware, as the literature writes them
    + "BERT GPT ViT Transformer MHA MQA GQA KV RoPE ALiBi FlashAttention".split()
    + "MLA FlexAttention".split()
    + "SGD HBM SRAM SM".split()
    # terms the zh glossary keeps in Latin letters (docs/zh/glossary.md)
    + "softmax dropout logits".split()
)
# Names of more than one word: a model's size is part of its name.
ALLOWED_PHRASES = (
    "Transformer base",
    "Transformer big",
    "BERT-base",
    "BERT-large",
    "GPT-2 small",
    "GPT-2 medium",
    "GPT-2 large",
    "GPT-2 XL",
)
QUOTES_TAG = "quotes-english"  # a cell whose output quotes English on purpose
ATTRIBUTES = ("aria-label", "title", "placeholder")
SKIP_PAGES = {"genindex.html", "search.html", "py-modindex.html"}

# Removed before the words are read: quoted errors, strings, special tokens.
RAISED = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning)\b: .*$", re.M)
QUOTED = re.compile(r"(?<![A-Za-z])'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
SPECIAL_TOKEN = re.compile(r"\[[A-Z]{2,}\]")
LITERALS = {"True", "False", "None", "nan", "inf", "NaN"}
CHUNK = re.compile(r"[A-Za-z0-9_µ][A-Za-z0-9_µ.+\-/@*#^]*")
# Math: an operator before |x| or a one-letter symbol (max |w|, log V).
MATH = re.compile(r"\b(?:max|min|log)\s?(?=\||[A-Za-z]\b)")
CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
HINT = re.compile(r"\blet (toggleHint\w*) = '([^']*)'")


def english_words(text: str) -> list[str]:
    """The English words of ``text`` (see the module's docstring), in order.

    >>> english_words("score std   有缩放 1.01 (dtype=torch.float64) view()")
    ['score', 'std']
    >>> english_words("q_proj (2, 8, 64) tensor([True]) 4.2 nats/char, 12 MiB")
    ['char']
    >>> english_words("ValueError: mask must be bool | 'it' -> [CLS] | GPT-2 small")
    []
    """
    for phrase in ALLOWED_PHRASES:
        text = text.replace(phrase, " ")
    text = SPECIAL_TOKEN.sub(" ", QUOTED.sub(" ", RAISED.sub(" ", text)))
    text = MATH.sub(" ", text)
    words = []
    for m in CHUNK.finditer(text):
        chunk = m.group().rstrip(".-/+@*#")
        before, after = text[m.start() - 1 : m.start()], text[m.end() : m.end() + 1]
        code = (
            re.search(r"\d|_|\^|\w\.\w", chunk)
            or before == "."  # an attribute: .reshape
            or (after in ("(", "=") and chunk == m.group())  # a call or a keyword
        )
        if code:
            continue
        for word in re.split(r"[-/+@*#]", chunk):
            if (
                len(word) > 1
                and word not in ALLOWED
                and word not in LITERALS
                and not CAMEL.search(word)
            ):
                words.append(word)
    return words


def _problems(where: str, text: str) -> list[str]:
    """One problem per line of ``text`` that holds English words."""
    problems = []
    for line in text.splitlines():
        words = english_words(line)
        if words:
            shown = " ".join(dict.fromkeys(words))
            problems.append(f"{where}: {shown!r} in {line.strip()[:120]!r}")
    return problems


def page_problems(html: str, page: str = "page") -> list[str]:
    """English meant for reading in one zh page's HTML: a list of problems.

    >>> page_problems('<div class="cell"><div class="cell_output">'
    ...     '<div class="output stream"><pre>rows &gt; 0.99  0.742</pre></div>'
    ...     '</div></div><summary aria-label="Toggle hidden content">')
    ["page: output: 'rows' in 'rows > 0.99  0.742'", "page: aria-label: \
'Toggle hidden content' in 'Toggle hidden content'"]
    """
    soup = BeautifulSoup(html, "html.parser")
    problems = []
    for output in soup.select("div.cell_output > div.output"):
        cell = output.find_parent("div", class_="cell")
        classes = output.get("class") or []
        if "traceback" in classes or (
            cell is not None and f"tag_{QUOTES_TAG}" in (cell.get("class") or [])
        ):
            continue
        for hidden in output.select("code, script, style, img"):
            hidden.decompose()
        problems += _problems(f"{page}: output", output.get_text())
    for name in ATTRIBUTES:
        for el in soup.find_all(None, {name: True}):
            if name == "title" and el.find_parent(class_="bibtex-citation"):
                continue  # a cited work's own title
            problems += _problems(f"{page}: {name}", str(el[name]))
    for script in soup.find_all("script"):
        for var, value in HINT.findall(script.string or ""):
            problems += _problems(f"{page}: {var}", value)
    return problems


def site_problems(site: Path) -> list[str]:
    """English meant for reading on every zh page of a built site."""
    root = site / "zh"
    return [
        problem
        for path in sorted(root.glob("*.html"))
        if path.name not in SKIP_PAGES
        for problem in page_problems(path.read_text(encoding="utf-8"), path.name)
    ]


def main(argv: list[str]) -> int:
    site = (
        Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / "_build/html"
    )
    problems = site_problems(site)
    for problem in problems:
        print(problem)
    outputs = sum(": output: " in p for p in problems)
    print(
        f"{len(problems)} English strings on the zh pages of {site}: "
        f"{outputs} in outputs, {len(problems) - outputs} in the interface"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
