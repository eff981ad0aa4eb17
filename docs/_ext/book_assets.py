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
"""

from __future__ import annotations

import re
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTFont

# `.fa-bars,.fa-navicon{--fa:"\f0c9"}`: an icon's names and its code point.
ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+,?)+)\{--fa:"\\([0-9a-f]+)"\}')
ICON_NAME = re.compile(r"\bfa-[a-z0-9-]+")
THEME_CSS = Path("_static/styles/pydata-sphinx-theme.css")
WEBFONTS = Path("_static/vendor/fontawesome/webfonts")


def drop_scripts(html: str, *names: str) -> str:
    """``html`` without the ``<script src=...>`` tags whose file is one of ``names``.

    Example:
        >>> drop_scripts('<script defer src="_static/a.js?digest=1"></script><p>', "a.js")
        '<p>'
        >>> drop_scripts('<script src="_static/ab.js"></script>', "b.js")
        '<script src="_static/ab.js"></script>'
    """
    for name in names:
        tag = rf'<script\b[^>]*\bsrc="(?:[^"]*/)?{re.escape(name)}(?:\?[^"]*)?"[^>]*>\s*</script>\s*'
        html = re.sub(tag, "", html)
    return html


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
    options.flavor = "woff2"
    options.layout_features = []
    for font_path in sorted((outdir / WEBFONTS).glob("*.woff2")):
        font = TTFont(font_path)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=wanted & set(font.getBestCmap() or {}))
        subsetter.subset(font)
        font.flavor = "woff2"
        font.save(font_path)
    return wanted


def _subset_fonts(app, exception):
    if exception is None and app.builder.format == "html":
        outdir = Path(app.outdir)
        subset_icon_fonts(outdir)
        for unused in ("fontawesome.js", "fontawesome.js.map"):  # no page loads it
            (outdir / "_static" / "scripts" / unused).unlink(missing_ok=True)


def _add_template_filter(app):
    if hasattr(app.builder, "templates"):
        app.builder.templates.environment.filters["drop_scripts"] = drop_scripts


def setup(app):
    app.connect("builder-inited", _add_template_filter)
    app.connect("build-finished", _subset_fonts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
