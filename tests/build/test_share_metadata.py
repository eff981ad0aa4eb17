"""Links that share well, links that launch, and the date each page last changed.

A scratch book in a git repository of its own (commits with known dates, and
one page never committed) is built twice: with ``MHA_BOOK_BASE_URL`` set, the
site has a sitemap of both editions with hreflang alternates and Open Graph /
Twitter card tags on every page; with ``MHA_BOOK_REPO_URL`` (and
``MHA_BOOK_BINDER_URL``), every page has "open in Colab" and Binder links to
its own edition's notebook; without them, none of that. Either way each page
shows the git date of its source in its own language.
"""

import os
import re
import subprocess
import sys
from xml.etree import ElementTree as ET

import pytest
from scratch_book import HEADER, copy_build_machinery

BASE = "https://example.org/mha-book"
REPO = "https://github.com/someone/mha-book"
BINDER = "https://mybinder.org"
SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
XHTML = "{http://www.w3.org/1999/xhtml}"

# name -> (zh title, zh first paragraph, en title, en first paragraph)
PAGES = {
    "index": (
        "首页",
        "这是一本可以运行的小书。",
        "Home",
        "This is a small book you can run.",
    ),
    "a": (
        "缩放点积",
        "每一个头做的都是同一件事：缩放点积注意力。",
        "Scaled dot product",
        "Every head does the same thing: scaled dot-product attention.",
    ),
    "b": (
        "多头",
        "把同一个输入拆成 $h$ 个子空间。",
        "Many heads",
        "It splits the same input into $h$ subspaces.",
    ),
    "c": ("新页", "这一页还没有提交。", "New page", "This page is not committed yet."),
}
# The first paragraph as the page shows it (the math as its text).
PLAIN = {"$h$": "h"}
COMMITTED = {"index": "2024-03-05", "a": "2024-03-05", "b": "2025-07-09"}
UNCOMMITTED = "c"


def page_source(name, lang):
    zh_title, zh_para, en_title, en_para = PAGES[name]
    title, para = (zh_title, zh_para) if lang == "zh" else (en_title, en_para)
    body = f"{para}\n\n:::{{note}}\nNot the description.\n:::\n\nA second paragraph.\n"
    if name == "index":
        body += "\n```{toctree}\na\nb\nc\n```\n"
    return HEADER.replace("# Page", f"# {title}") + body


def first_paragraph(name, lang):
    text = PAGES[name][1 if lang == "zh" else 3]
    for math, shown in PLAIN.items():
        text = text.replace(math, shown)
    return text


def git(repo, *args, date=None):
    env = dict(os.environ)
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"{date}T12:00:00+00:00"
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )


def write(repo, name):
    for lang in ("zh", "en"):
        path = repo / "docs" / lang / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page_source(name, lang), encoding="utf-8")


def build_site(repo, base_url):
    """Built with the site's address, the repository's and Binder's, or none."""
    env = dict(os.environ)
    for name in ("MHA_BOOK_BASE_URL", "MHA_BOOK_REPO_URL", "MHA_BOOK_BINDER_URL"):
        env.pop(name, None)
    if base_url:
        env["MHA_BOOK_BASE_URL"] = base_url
        env["MHA_BOOK_REPO_URL"] = REPO
        env["MHA_BOOK_BINDER_URL"] = BINDER
    return subprocess.run(
        [sys.executable, "-m", "tools.build_book", "--langs", "zh", "en"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """(repo, html of the build with a base URL, html of the build without)."""
    repo = copy_build_machinery(tmp_path_factory.mktemp("share"))
    git(repo, "init", "-q")
    for name in ("index", "a", "b"):
        write(repo, name)
    git(repo, "add", "docs/zh", "docs/en")
    git(repo, "commit", "-qm", "first", date="2024-03-05")
    (repo / "docs/zh/b.md").write_text(
        page_source("b", "zh") + "\n再改一次。\n", encoding="utf-8"
    )
    (repo / "docs/en/b.md").write_text(
        page_source("b", "en") + "\nChanged again.\n", encoding="utf-8"
    )
    git(repo, "commit", "-qam", "second", date="2025-07-09")
    write(repo, UNCOMMITTED)  # a new page, never committed
    shared = build_site(repo, BASE + "/")
    assert shared.returncode == 0, shared.stdout + shared.stderr
    out = repo / "_build/html"
    with_base = {
        (lang, name): (out / lang / f"{name}.html").read_text(encoding="utf-8")
        for lang in ("zh", "en")
        for name in PAGES
    }
    sitemap = (out / "sitemap.xml").read_bytes()
    # The same folder, built again without the variable: nothing is left over.
    local = build_site(repo, None)
    assert local.returncode == 0, local.stdout + local.stderr
    return repo, with_base, sitemap


def meta(html, key):
    """The content of <meta property=key> or <meta name=key>, or None."""
    m = re.search(
        rf'<meta (?:property|name)="{re.escape(key)}" content="([^"]*)"', html
    )
    return m and m.group(1)


def test_the_sitemap_lists_every_page_of_both_editions_with_alternates(book):
    _, _, sitemap = book
    root = ET.fromstring(sitemap)  # valid XML, or this raises
    assert root.tag == f"{SITEMAP}urlset"
    urls = {u.findtext(f"{SITEMAP}loc"): u for u in root.iter(f"{SITEMAP}url")}
    expected = {f"{BASE}/{lang}/{name}.html" for lang in ("zh", "en") for name in PAGES}
    assert set(urls) == expected
    for loc, url in urls.items():
        lang, page = loc.removeprefix(BASE + "/").split("/")
        alternates = {
            link.get("hreflang"): link.get("href")
            for link in url.iter(f"{XHTML}link")
            if link.get("rel") == "alternate"
        }
        assert alternates == {
            "zh-CN": f"{BASE}/zh/{page}",
            "en": f"{BASE}/en/{page}",
        }, loc
        name = page.removesuffix(".html")
        lastmod = url.findtext(f"{SITEMAP}lastmod")
        if name in COMMITTED:
            assert lastmod.startswith(COMMITTED[name]), (loc, lastmod)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_page_has_open_graph_and_twitter_tags(book, lang):
    repo, pages, _ = book
    for name in PAGES:
        html = pages[lang, name]
        title = PAGES[name][0 if lang == "zh" else 2]
        assert meta(html, "og:title") == title, name
        assert meta(html, "og:url") == f"{BASE}/{lang}/{name}.html", name
        description = meta(html, "og:description")
        assert description == first_paragraph(name, lang), name
        assert meta(html, "description") == description, name
        if lang == "zh":
            assert re.search(r"[\u4e00-\u9fff]", description), name
        image = meta(html, "og:image")
        assert image == f"{BASE}/{lang}/_static/preview-{lang}.png", name
        assert (
            repo / "_build/html" / lang / "_static" / f"preview-{lang}.png"
        ).exists()
        assert meta(html, "og:image:alt"), name
        assert meta(html, "twitter:card") == "summary", name
        assert f'<link rel="canonical" href="{BASE}/{lang}/{name}.html"' in html, name


def test_without_a_base_url_there_is_no_sitemap_and_no_share_tags(book):
    repo, _, _ = book
    out = repo / "_build/html"
    assert not list(out.rglob("sitemap*.xml"))
    for page in out.glob("*/*.html"):
        html = page.read_text(encoding="utf-8")
        assert not re.search(r'<meta (property|name)="(og|twitter):', html), page
        assert 'rel="canonical"' not in html, page


SHOWN = {
    "zh": r"最后更新于 (\d{4}-\d\d-\d\d)",
    "en": r"Last updated on (\d{4}-\d\d-\d\d)",
}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_each_page_shows_the_git_date_of_its_source_in_its_language(book, lang):
    repo, with_base, _ = book
    out = repo / "_build/html" / lang
    for name, day in COMMITTED.items():
        for html in (with_base[lang, name], (out / f"{name}.html").read_text("utf-8")):
            assert re.findall(SHOWN[lang], html) == [day], name
    # The new page was never committed: no date, but it builds and keeps its
    # source link.
    new = (out / f"{UNCOMMITTED}.html").read_text(encoding="utf-8")
    assert not re.search(r"最后更新于|Last updated", new)
    assert f"_sources/{UNCOMMITTED}" in new


def test_a_book_outside_git_builds_without_dates(clean_book):
    repo, result = clean_book
    assert result.returncode == 0, result.stdout
    assert (
        subprocess.run(
            ["git", "rev-parse"], cwd=repo, capture_output=True, check=False
        ).returncode
        != 0
    ), "the scratch book is inside a git repository"
    html = (repo / "_build/html/zh/index.html").read_text(encoding="utf-8")
    assert "最后更新于" not in html


LAUNCH_TIP = {"zh": "在 Colab 中打开", "en": "Open in Colab"}


def launch_links(html):
    """The hrefs of the page's launch menu."""
    menu = re.search(r'<div class="dropdown dropdown-launch-buttons">(.*?)</ul>', html, re.S)
    return menu and re.findall(r'href="([^"]+)"', menu.group(1))


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_page_opens_its_own_editions_notebook_in_colab_and_binder(book, lang):
    repo, pages, _ = book
    for name in PAGES:
        html = pages[lang, name]
        assert launch_links(html) == [
            f"https://colab.research.google.com/github/someone/mha-book"
            f"/blob/notebooks/{lang}/{name}.ipynb",
            f"{BINDER}/v2/gh/someone/mha-book/notebooks"
            f"?urlpath=lab/tree/{lang}/{name}.ipynb",
        ], name
        assert LAUNCH_TIP[lang] in html, name
        # What the links open is what the page offers for download.
        assert (repo / "_build/html" / lang / "_sources" / f"{name}.ipynb").exists()


def test_without_a_repository_address_no_page_has_a_launch_link(book):
    repo, _, _ = book
    for page in (repo / "_build/html").glob("*/*.html"):
        html = page.read_text(encoding="utf-8")
        assert "colab.research.google.com" not in html, page
        assert "mybinder.org" not in html, page
        assert "launch-buttons" not in html, page
