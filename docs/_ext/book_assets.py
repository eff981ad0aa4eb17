"""What a page of the book loads, and nothing it does not use.

* **Icons.** pydata-sphinx-theme draws its icons twice: its CSS gives each
  ``<i class="fa-solid fa-bars">`` a glyph of Font Awesome's icon font, and
  ``fontawesome.js`` (1.5 MiB, on every page) replaces each of them with an
  inline SVG. The script goes (the ``drop_scripts`` template filter, used in
  ``docs/_templates/layout.html``); the font stays, cut down by fontTools'
  subsetter to the icons the site names (:func:`subset_icon_fonts`).
* **Search.** The theme puts Sphinx's search scripts and the whole search
  index in the ``<head>`` of every page, for search-as-you-type, which this
  book does not turn on: the search field sends the reader to ``search.html``.
  So only that page loads them (``layout.html`` again).
* **Bootstrap on demand.** The theme's ``bootstrap.js`` (80 KiB) draws its
  tooltips and opens its two menus. Every page but the search page leaves it
  out, and its ``preload`` too (:func:`drop_scripts`); ``docs/_static/book.js``
  loads it when the reader first points at, focuses or taps such a control.
* **The colour mode before the first paint.** The theme's first lines set
  ``data-theme="auto"`` on a first visit and its script resolves it later,
  which restyles the whole drawn page; ``layout.html`` resolves it at once.
* **Scripts after the text.** Sphinx and its extensions put their scripts in
  the ``<head>``, where each one stops the page from being drawn until it has
  arrived: on a phone's slow network, a round trip each. Every page but the
  search page (whose scripts run in order at once) loads them ``defer``
  (:func:`defer_scripts`): fetched at once, run in the same order once the
  page is parsed, before ``DOMContentLoaded``. ``documentation_options.js``
  stays: the inline lines after it set its fields.
* **CSS.** The theme's stylesheet alone is 370 KiB (Bootstrap and every Font
  Awesome icon). PurgeCSS (``purge_css.cjs``, run with the Node.js of
  ``book_math``) keeps the rules whose classes, ids and tags occur in the
  edition's pages or scripts (:func:`purge_stylesheets`). The untouched
  stylesheets are kept beside the site, in ``_build/css-unpurged/<lang>/``,
  so every build purges from them and the browser tests can draw the pages
  with them and compare (``tests/e2e/test_purged_css.py``).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path

import fontTools
from fontTools import subset
from fontTools.ttLib import TTFont

# The subsetter reports each table it prunes at INFO; a theme's dependency
# (a11y_pygments) sets the root logger to print INFO, which put 1,400 such
# lines into each build's output. Its warnings still show.
logging.getLogger("fontTools").setLevel(logging.WARNING)

# `.fa-bars,.fa-navicon{--fa:"\f0c9"}`: an icon's names and its code point.
ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+,?)+)\{--fa:"\\([0-9a-f]+)"\}')
ICON_NAME = re.compile(r"\bfa-[a-z0-9-]+")
THEME_CSS = Path("_static/styles/pydata-sphinx-theme.css")
WEBFONTS = Path("_static/vendor/fontawesome/webfonts")


def drop_scripts(html: str, *names: str) -> str:
    """``html`` without the ``<script src=...>`` tags, and the ``<link
    rel="preload" as="script">`` tags, whose file is one of ``names``.

    Example:
        >>> drop_scripts('<script defer src="_static/a.js?digest=1"></script><p>', "a.js")
        '<p>'
        >>> drop_scripts('<link rel="preload" as="script" href="_static/a.js?digest=1" />', "a.js")
        ''
        >>> drop_scripts('<script src="_static/ab.js"></script>', "b.js")
        '<script src="_static/ab.js"></script>'
    """
    for name in names:
        file = rf'"(?:[^"]*/)?{re.escape(name)}(?:\?[^"]*)?"'
        tag = rf"<script\b[^>]*\bsrc={file}[^>]*>\s*</script>\s*"
        preload = rf'<link\b[^>]*\brel="preload"[^>]*\bhref={file}[^>]*>\s*'
        html = re.sub(preload, "", re.sub(tag, "", html))
    return html


def defer_scripts(html: str, *keep: str) -> str:
    """``html`` with every ``<script src>`` that blocks parsing made ``defer``,
    but those whose file is one of ``keep``.

    Example:
        >>> defer_scripts('<script src="_static/a.js?v=1"></script><script src="b.js"></script>', "b.js")
        '<script defer src="_static/a.js?v=1"></script><script src="b.js"></script>'
        >>> defer_scripts('<script async src="c.js"></script><script defer src="d.js"></script>')
        '<script async src="c.js"></script><script defer src="d.js"></script>'
    """

    def one(match: re.Match) -> str:
        tag, name = match.group(0), match.group(2)
        if name in keep or re.search(r"\b(defer|async|type=\"module\")", tag):
            return tag
        return tag.replace("<script ", "<script defer ", 1)

    return re.sub(
        r'<script\b[^>]*\bsrc="((?:[^"]*/)?([^"/?]+))(?:\?[^"]*)?"[^>]*>', one, html
    )


def icon_code_points(css: str) -> dict[str, int]:
    """Every icon class the theme's CSS defines, with its code point.

    Example:
        >>> icon_code_points('.fa-bars,.fa-navicon{--fa:"\\\\f0c9"}')
        {'fa-bars': 61641, 'fa-navicon': 61641}
    """
    points = {}
    for names, hex_point in ICON_RULE.findall(css):
        for name in names.strip(",").split(","):
            points[name.lstrip(".")] = int(hex_point, 16)
    return points


def icons_named(outdir: Path) -> set[str]:
    """The ``fa-*`` classes the built pages and their scripts name."""
    names: set[str] = set()
    for path in [*outdir.rglob("*.html"), *outdir.glob("_static/**/*.js")]:
        if path.name != "fontawesome.js":
            names |= set(ICON_NAME.findall(path.read_text(encoding="utf-8")))
    return names


def subset_icon_fonts(outdir: Path) -> set[int]:
    """Cut each Font Awesome font in ``outdir`` down to the icons its pages name.

    Returns the code points kept. The fonts are rewritten in place (WOFF2,
    as the theme's CSS expects); a font that draws none of them keeps one
    glyph, ``.notdef``, and is never downloaded by a page.
    """
    points = icon_code_points((outdir / THEME_CSS).read_text(encoding="utf-8"))
    wanted = {points[name] for name in icons_named(outdir) if name in points}
    options = subset.Options()
    options.layout_features = []
    cut_fonts(sorted((outdir / WEBFONTS).glob("*.woff2")), wanted, options)
    return wanted


def cut_fonts(paths: list[Path], unicodes: set[int], options: subset.Options) -> None:
    """Rewrite each WOFF2 font in ``paths`` in place with only the ``unicodes`` it has.

    Each cut is kept beside the site (:func:`font_cuts_dir`), named for the
    font's bytes, the code points, the options and fontTools' version: a
    rebuild whose pages name the same characters copies it instead of cutting
    again (a second of each edition's build).
    """
    options.flavor = "woff2"
    for font_path in paths:
        data = font_path.read_bytes()
        kept = font_cuts_dir(font_path) / f"{_cut_key(data, unicodes, options)}.woff2"
        try:
            shutil.copyfile(kept, font_path)
            os.utime(kept)  # used: not pruned (prune_font_cuts)
            continue
        except FileNotFoundError:
            pass
        font = TTFont(io.BytesIO(data))
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=unicodes & set(font.getBestCmap() or {}))
        subsetter.subset(font)
        font.flavor = "woff2"
        font.save(font_path)
        kept.parent.mkdir(parents=True, exist_ok=True)
        partial = kept.with_suffix(f".{os.getpid()}.part")  # builds run at once
        shutil.copyfile(font_path, partial)
        partial.replace(kept)


def _cut_key(data: bytes, unicodes: set[int], options: subset.Options) -> str:
    h = hashlib.sha256(fontTools.version.encode() + b"\0" + data)
    h.update(repr(sorted(unicodes)).encode())
    h.update(repr(sorted(vars(options).items())).encode())
    return h.hexdigest()[:32]


FONT_CUTS_ENV = "MHA_BOOK_FONT_CUTS"  # a folder shared by several builds


def font_cuts_dir(font_path: Path) -> Path:
    """Where the cut fonts are kept: ``$MHA_BOOK_FONT_CUTS``, or beside the
    site: ``_build/html/en/_static/...`` -> ``_build/font-cuts``."""
    if os.environ.get(FONT_CUTS_ENV):
        return Path(os.environ[FONT_CUTS_ENV])
    outdir = next(p for p in font_path.parents if p.parent.name == "html")
    return outdir.parent.parent / "font-cuts"


def prune_font_cuts(outdir: Path, keep_days: float = 7.0) -> None:
    """Remove the kept cuts that no build has used for ``keep_days``."""
    cutoff = time.time() - keep_days * 86400
    for old in font_cuts_dir(outdir / "_static" / "x").glob("*.woff2"):
        try:
            if old.stat().st_mtime < cutoff:
                old.unlink()
        except FileNotFoundError:  # another edition pruned it first
            pass


KATEX_FONTS = Path("_static/katex/fonts")


class _MathText(HTMLParser):
    """Collects the characters KaTeX draws: the text of every ``.katex-html``."""

    def __init__(self):
        super().__init__()
        self.depth = 0  # > 0 inside a .katex-html span
        self.chars: set[str] = set()

    def handle_starttag(self, tag, attrs):
        if self.depth:
            self.depth += tag not in VOID_TAGS
        elif "katex-html" in (dict(attrs).get("class") or "").split():
            self.depth = 1

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.chars.update(data)


VOID_TAGS = {"br", "img", "hr", "wbr", "input", "meta", "link"}


def math_characters(outdir: Path) -> set[str]:
    """Every character of every formula KaTeX rendered into the pages of ``outdir``."""
    parser = _MathText()
    for page in outdir.rglob("*.html"):
        parser.feed(page.read_text(encoding="utf-8"))
        parser.close()
        parser.depth = 0
    return parser.chars


def subset_math_fonts(outdir: Path) -> int:
    """Cut each KaTeX font in ``outdir`` down to the characters the formulas use.

    Each font keeps every one of them that it has (a few hundred bytes more
    than the exact set a font draws, and no need to know which KaTeX class
    picks which font). Returns the number of characters kept.
    """
    wanted = {ord(c) for c in math_characters(outdir) if not c.isspace()}
    options = subset.Options()
    options.layout_features = ["*"]
    options.hinting = False  # a fifth of each font; screens draw KaTeX unhinted
    cut_fonts(sorted((outdir / KATEX_FONTS).glob("*.woff2")), wanted, options)
    return len(wanted)


# The book's own stylesheets are written for it and stay whole.
OWN_CSS = {"book.css", "explorer.css"}
PURGE_SCRIPT = Path(__file__).with_name("purge_css.cjs")
PURGED_RECORD = "purged.json"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _purged_record(keep: Path) -> dict[str, str]:
    """What the last purge wrote: site path -> digest ({} if none or unreadable)."""
    try:
        return json.loads((keep / PURGED_RECORD).read_text())
    except (OSError, ValueError):
        return {}


def unpurged_dir(outdir: Path) -> Path:
    """Where the untouched stylesheets of the edition in ``outdir`` are kept.

    ``_build/html/en`` -> ``_build/css-unpurged/en``.
    """
    return outdir.parent.parent / "css-unpurged" / outdir.name


def purge_content(outdir: Path) -> list[str]:
    """What PurgeCSS reads for selectors: every page and script, less the
    search index the build writes after Sphinx (tools/build/search.py), whose
    words are the book's text, not selectors; a rebuild would read it where
    the first build did not, and keep other rules."""
    scripts = sorted(outdir.glob("_static/**/*.js"))
    return [f"{outdir}/**/*.html"] + [
        str(path) for path in scripts if not path.name.startswith("book-search-")
    ]


def purge_stylesheets(outdir: Path) -> list[dict]:
    """Cut every stylesheet of ``outdir/_static`` but the book's own to the rules in use.

    PurgeCSS always starts from the untouched stylesheet: a file that is not
    what the last purge wrote has just been copied by Sphinx, and is saved
    as the new original; one that is, is purged again from the saved
    original, so rules a new page needs come back. Returns PurgeCSS's report,
    one ``{"dest", "before", "after"}`` per stylesheet.
    """
    from book_math import NODE_MODULES, node_binary

    keep = unpurged_dir(outdir)
    record = _purged_record(keep)
    jobs = []
    for css in sorted((outdir / "_static").rglob("*.css")):
        if css.name in OWN_CSS or BUNDLE_NAME.fullmatch(css.name):
            continue
        rel = css.relative_to(outdir).as_posix()
        original = keep / rel
        if not original.is_file() or record.get(rel) != _digest(css):
            original.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(css, original)
        jobs.append({"source": str(original), "dest": str(css), "rel": rel})
    content = purge_content(outdir)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as job:
        json.dump({"content": content, "css": jobs}, job)
    try:
        done = subprocess.run(
            [node_binary(), str(PURGE_SCRIPT), job.name],
            capture_output=True,
            text=True,
            env={"NODE_PATH": str(NODE_MODULES), "PATH": "/usr/bin:/bin"},
            check=False,
        )
    finally:
        Path(job.name).unlink()
    if done.returncode != 0:
        raise RuntimeError(f"PurgeCSS failed on {outdir}:\n{done.stderr.strip()}")
    report = [json.loads(line) for line in done.stdout.splitlines()]
    record = {j["rel"]: _digest(Path(j["dest"])) for j in jobs}
    keep.mkdir(parents=True, exist_ok=True)
    (keep / PURGED_RECORD).write_text(json.dumps(record, indent=1, sort_keys=True))
    return report


def restore_stylesheets(outdir: Path) -> int:
    """Put the untouched stylesheets back in ``outdir`` before Sphinx copies its own.

    myst-nb copies its stylesheet only when the site has none or the same,
    and warns (an error in the strict build) on a purged one. A site file the
    build did not purge last is left alone. Returns the number restored.
    """
    keep = unpurged_dir(outdir)
    restored = 0
    for rel, digest in _purged_record(keep).items():
        site, original = outdir / rel, keep / rel
        if site.is_file() and original.is_file() and _digest(site) == digest:
            shutil.copy2(original, site)
            restored += 1
    return restored


# The stylesheets a page links, written by the layout between these markers
# (docs/_templates/layout.html), become one file. The page keeps the list of
# its sources in a comment, so a later build bundles them again even for a
# page it did not rewrite.
CSS_START, CSS_END = "<!-- book-css -->", "<!-- /book-css -->"
CSS_REGION = re.compile(re.escape(CSS_START) + "(.*?)" + re.escape(CSS_END), re.S)
CSS_SOURCES = re.compile(r"<!-- book-css-sources: ([^>]*?) -->\n?")
STYLESHEET = re.compile(
    r'<link\b(?=[^>]*\brel="stylesheet")[^>]*\bhref="([^"?]+)[^"]*"[^>]*/?>\n?'
)
# _static/book-<digest>.css, or book-katex-<digest>.css when KaTeX's stylesheet is in it
BUNDLE_NAME = re.compile(r"book-(?:katex-)?[0-9a-f]{16}\.css")
CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)""")
CSS_IMPORT = re.compile(r"""@import\s+(?:url\()?\s*['"]([^'"]+)['"]\s*\)?\s*;""")


def css_for_bundle(css: Path, bundle_dir: Path) -> str:
    """The text of ``css`` to sit in a bundle in ``bundle_dir``: its ``@import``
    of a local file replaced by that file's text, its relative ``url()``
    rewritten from its own folder to ``bundle_dir``.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp()); (root / "styles").mkdir()
        >>> _ = (root / "basic.css").write_text("p{color:red}")
        >>> _ = (root / "styles/theme.css").write_text(
        ...     '@import "../basic.css";a{background:url(../fonts/x.woff2)}')
        >>> css_for_bundle(root / "styles/theme.css", root)
        'p{color:red}a{background:url("fonts/x.woff2")}'
    """
    text = css.read_text(encoding="utf-8")
    text = CSS_IMPORT.sub(
        lambda m: css_for_bundle((css.parent / m.group(1)).resolve(), bundle_dir), text
    )

    def rebase(m: re.Match) -> str:
        url = m.group(2)
        if re.match(r"(?i)(data:|[a-z]+:|/|#)", url):
            return m.group(0)
        path, _, rest = url.partition("?")
        target = (css.parent / path).resolve()
        rel = Path(os.path.relpath(target, bundle_dir.resolve())).as_posix()
        return f'url("{rel}{"?" + rest if rest else ""}")'

    return re.sub(r"@charset[^;]*;", "", CSS_URL.sub(rebase, text))


def bundle_stylesheets(outdir: Path) -> dict[str, list[str]]:
    """One stylesheet per page, in ``_static``, from the ones it links.

    Over a slow network every stylesheet costs a round trip before the page
    can be drawn, and a browser opens only six connections to a host over
    HTTP/1.1: thirteen files took four rounds. Each page's stylesheets (their
    order kept) are joined into ``_static/book-<digest>.css`` (named
    ``book-katex-...`` when KaTeX's is among them), and the page links that
    one. Bundles no page links any more are removed. Returns bundle name ->
    its sources (paths in ``outdir``).
    """
    static = outdir / "_static"
    bundles: dict[str, list[str]] = {}
    texts: dict[tuple[str, ...], str] = {}
    for page in sorted(outdir.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        region = CSS_REGION.search(html)
        sources = page_stylesheets(page, outdir, region.group(1)) if region else []
        if not region or not sources:
            continue
        key = tuple(sources)
        if key not in texts:
            texts[key] = "\n".join(
                css_for_bundle(outdir / src, static) for src in sources
            )
        name = bundle_name(texts[key], sources)
        bundles[name] = list(sources)
        href = Path(os.path.relpath(static / name, page.parent)).as_posix()
        link = (
            f"<!-- book-css-sources: {' '.join(sources)} -->\n"
            f'<link rel="stylesheet" href="{href}" />\n'
        )
        rest = STYLESHEET.sub("", CSS_SOURCES.sub("", region.group(1)))
        new = CSS_START + link + rest + CSS_END
        if new != region.group(0):
            page.write_text(html.replace(region.group(0), new, 1), encoding="utf-8")
    write_bundles(static, bundles, texts)
    return bundles


def page_stylesheets(page: Path, outdir: Path, region: str) -> list[str]:
    """The stylesheets a page links (paths in ``outdir``), in order.

    A page bundled before lists its sources in a comment; else its links.
    """
    listed = CSS_SOURCES.search(region)
    if listed:
        return listed.group(1).split()
    return [
        os.path.normpath(page.parent.relative_to(outdir) / href).replace(os.sep, "/")
        for href in STYLESHEET.findall(region)
    ]


def bundle_name(text: str, sources: list[str]) -> str:
    """``book-<digest>.css``, or ``book-katex-<digest>.css`` with KaTeX's in it."""
    katex = any(src.endswith("katex.min.css") for src in sources)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"book-{'katex-' if katex else ''}{digest}.css"


def write_bundles(static: Path, bundles: dict[str, list[str]], texts) -> None:
    """Write the bundles that changed; remove those no page links any more."""
    for name, sources in bundles.items():
        text = texts[tuple(sources)]
        target = static / name
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
    for old in static.glob("book-*.css*"):  # with its .gz and .br copies
        css = old.name.split(".css")[0] + ".css"
        if BUNDLE_NAME.fullmatch(css) and css not in bundles:
            old.unlink()


def _restore_assets(app):
    if app.builder.format == "html":
        restore_stylesheets(Path(app.outdir))


def _finish_assets(app, exception):
    if exception is None and app.builder.format == "html":
        outdir = Path(app.outdir)
        subset_icon_fonts(outdir)  # reads the icon rules: before the purge
        for unused in ("fontawesome.js", "fontawesome.js.map"):  # no page loads it
            (outdir / "_static" / "scripts" / unused).unlink(missing_ok=True)
        subset_math_fonts(outdir)
        prune_font_cuts(outdir)
        purge_stylesheets(outdir)
        bundle_stylesheets(outdir)


def _add_template_filter(app):
    if hasattr(app.builder, "templates"):
        app.builder.templates.environment.filters["drop_scripts"] = drop_scripts
        app.builder.templates.environment.filters["defer_scripts"] = defer_scripts


def setup(app):
    app.connect("builder-inited", _add_template_filter)
    app.connect("builder-inited", _restore_assets)
    # After every other extension's build-finished: pydata-sphinx-theme
    # rewrites pygments.css, myst-nb and sphinx-exercise write their CSS then.
    app.connect("build-finished", _finish_assets, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
