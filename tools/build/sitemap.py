"""One sitemap for both editions, each page with its hreflang alternates."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from .common import LANGS

BASE_URL_ENV = "MHA_BOOK_BASE_URL"  # the site's public address (conf.py reads it too)
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
XHTML_NS = "http://www.w3.org/1999/xhtml"
HREFLANG = {"zh": "zh-CN", "en": "en"}


def join_sitemaps(out: Path, base_url: str | None) -> Path | None:
    """Write ``out/sitemap.xml``: every page of both editions, each with its
    hreflang alternates (the same page in zh-CN and en, itself included).

    sphinx-sitemap writes one sitemap per edition (``out/<lang>/sitemap.xml``,
    where conf.py loads it when ``MHA_BOOK_BASE_URL`` is set); this joins them
    and pairs each page with the other edition's page of the same name. With
    no base URL there is no sitemap: a stale one is removed. Returns its path.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> for lang in LANGS:
    ...     (out / lang).mkdir()
    ...     _ = (out / lang / "sitemap.xml").write_text(
    ...         f'<urlset xmlns="{SITEMAP_NS}"><url><loc>https://b.org/x/{lang}/a.html'
    ...         '</loc><lastmod>2026-01-02T00:00:00Z</lastmod></url></urlset>')
    >>> print(join_sitemaps(out, "https://b.org/x").read_text())  # doctest: +ELLIPSIS
    <?xml version='1.0' encoding='utf-8'?>
    <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">
      <url>
        <loc>https://b.org/x/zh/a.html</loc>
        <lastmod>2026-01-02T00:00:00Z</lastmod>
        <xhtml:link rel="alternate" hreflang="zh-CN" href="https://b.org/x/zh/a.html" />
        <xhtml:link rel="alternate" hreflang="en" href="https://b.org/x/en/a.html" />
      </url>
      <url>
        <loc>https://b.org/x/en/a.html</loc>...
    >>> join_sitemaps(out, None), (out / "sitemap.xml").exists()
    (None, False)
    """
    target = out / "sitemap.xml"
    if not base_url:
        target.unlink(missing_ok=True)
        return None
    base = base_url.rstrip("/")
    pages = {
        lang: edition_pages(out / lang / "sitemap.xml", f"{base}/{lang}/")
        for lang in LANGS
        if (out / lang / "sitemap.xml").exists()
    }
    ET.register_namespace("", SITEMAP_NS)
    ET.register_namespace("xhtml", XHTML_NS)
    root = ET.Element(f"{{{SITEMAP_NS}}}urlset")
    for lang, edition in pages.items():
        for page, lastmod in sorted(edition.items()):
            url = ET.SubElement(root, f"{{{SITEMAP_NS}}}url")
            ET.SubElement(url, f"{{{SITEMAP_NS}}}loc").text = f"{base}/{lang}/{page}"
            if lastmod:
                ET.SubElement(url, f"{{{SITEMAP_NS}}}lastmod").text = lastmod
            for other in (other for other in pages if page in pages[other]):
                ET.SubElement(
                    url,
                    f"{{{XHTML_NS}}}link",
                    rel="alternate",
                    hreflang=HREFLANG[other],
                    href=f"{base}/{other}/{page}",
                )
    ET.indent(root)
    ET.ElementTree(root).write(target, xml_declaration=True, encoding="utf-8")
    return target


def edition_pages(path: Path, edition: str) -> dict[str, str | None]:
    """{page: lastmod} of one edition's sitemap, pages relative to ``edition``."""
    pages = {}
    for url in ET.parse(path).getroot().iter(f"{{{SITEMAP_NS}}}url"):
        loc = url.findtext(f"{{{SITEMAP_NS}}}loc", "")
        if not loc.startswith(edition):
            raise ValueError(f"{path}: {loc} is not under {edition}")
        pages[loc.removeprefix(edition)] = url.findtext(f"{{{SITEMAP_NS}}}lastmod")
    return pages
