"""The browser checks fail on a broken site: missing image, bad switch, empty search."""

import json
import re
import shutil

import pytest
from browser import page_problems, search_hits, serve, switch_problems
from conftest import SITE


@pytest.fixture
def broken_site(tmp_path):
    copy = tmp_path / "html"
    shutil.copytree(SITE, copy)
    return copy


def first_page_with_image(site, lang="en"):
    for html in sorted((site / lang).glob("[0-9]*.html")):
        m = re.search(r'<img[^>]+src="(_images/[^"]+)"', html.read_text(encoding="utf-8"))
        if m:
            return html, m.group(1)
    pytest.fail("no page with an image to break")


def test_a_missing_image_is_reported(page, broken_site):
    html, src = first_page_with_image(broken_site)
    with serve(broken_site) as url:
        assert page_problems(page, f"{url}/en/{html.name}") == []
    (html.parent / src).unlink()
    with serve(broken_site) as url:  # a new port: nothing comes from the browser's cache
        problems = page_problems(page, f"{url}/en/{html.name}")
    assert any("image not decoded" in p for p in problems), problems
    assert any("failed request" in p for p in problems), problems


def test_a_broken_language_switch_is_reported(page, broken_site):
    html = broken_site / "zh" / "01-overview.html"
    text = html.read_text(encoding="utf-8")
    html.write_text(text.replace('href="../en/01-overview.html"', 'href="../en/index.html"'),
                    encoding="utf-8")
    with serve(broken_site) as url:
        assert switch_problems(page, url, "zh", "en", "index.html") == []
        problems = switch_problems(page, url, "zh", "en", "01-overview.html")
    assert problems and "expected" in problems[0], problems


def test_an_empty_search_index_finds_nothing(page, broken_site):
    index = broken_site / "zh" / "searchindex.js"
    text = index.read_text(encoding="utf-8")
    data = json.loads(text[text.index("(") + 1: text.rindex(")")])
    with serve(broken_site) as url:
        assert search_hits(page, url, "zh", "多头注意力")
    # Keep the page list, drop every word and title the search could match.
    for key in ("terms", "titleterms", "alltitles", "indexentries", "objects"):
        data[key] = {}
    index.write_text(f"Search.setIndex({json.dumps(data)})", encoding="utf-8")
    with serve(broken_site) as url:  # a new port: the browser cannot reuse the old index
        assert search_hits(page, url, "zh", "多头注意力") == []


def test_a_request_to_another_host_is_reported(page, broken_site):
    html = broken_site / "en" / "index.html"
    text = html.read_text(encoding="utf-8")
    html.write_text(text.replace("</head>", '<script src="https://cdn.example.org/x.js"></script></head>'),
                    encoding="utf-8")
    with serve(broken_site) as url:
        problems = page_problems(page, f"{url}/en/index.html")
    assert any("left localhost" in p for p in problems), problems
