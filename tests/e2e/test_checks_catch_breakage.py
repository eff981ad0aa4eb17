"""The browser checks fail on a broken site: missing image, bad switch, empty search."""

import json
import re
import shutil

import pytest
from browser import (
    MIN_TEXT_KEY,
    english_ui_problems,
    figure_text_problems,
    horizontal_scroll_problems,
    page_problems,
    search_field_problems,
    search_hits,
    serve,
    switch_problems,
    upscaled_figure_problems,
)
from conftest import SITE


@pytest.fixture
def broken_site(tmp_path):
    copy = tmp_path / "html"
    shutil.copytree(SITE, copy)
    return copy


def first_page_with_image(site, lang="en"):
    for html in sorted((site / lang).glob("[0-9]*.html")):
        m = re.search(
            r'<img[^>]+src="(_images/[^"]+)"', html.read_text(encoding="utf-8")
        )
        if m:
            return html, m.group(1)
    pytest.fail("no page with an image to break")


def test_a_missing_image_is_reported(page, broken_site):
    html, src = first_page_with_image(broken_site)
    with serve(broken_site) as url:
        assert page_problems(page, f"{url}/en/{html.name}") == []
    (html.parent / src).unlink()
    with serve(
        broken_site
    ) as url:  # a new port: nothing comes from the browser's cache
        problems = page_problems(page, f"{url}/en/{html.name}")
    assert any("image not decoded" in p for p in problems), problems
    assert any("failed request" in p for p in problems), problems


def test_a_broken_language_switch_is_reported(page, broken_site):
    html = broken_site / "zh" / "01-overview.html"
    text = html.read_text(encoding="utf-8")
    html.write_text(
        text.replace('href="../en/01-overview.html"', 'href="../en/index.html"'),
        encoding="utf-8",
    )
    with serve(broken_site) as url:
        assert switch_problems(page, url, "zh", "en", "index.html") == []
        problems = switch_problems(page, url, "zh", "en", "01-overview.html")
    assert problems and "expected" in problems[0], problems


def test_an_empty_search_index_finds_nothing(page, broken_site):
    index = next((broken_site / "zh" / "_static").glob("book-search-*.js"))
    text = index.read_text(encoding="utf-8")
    start = text.rindex("Search.setIndex(") + len("Search.setIndex(")
    data = json.loads(text[start : text.rindex(")")])
    with serve(broken_site) as url:
        assert search_hits(page, url, "zh", "多头注意力")
    # Keep the pages and the glossary, drop every word the search could match.
    data["terms"] = {}
    index.write_text(text[:start] + json.dumps(data) + ");\n", encoding="utf-8")
    for copy in (
        index.with_name(index.name + ".gz"),
        index.with_name(index.name + ".br"),
    ):
        copy.unlink(missing_ok=True)  # the server would send the old copy
    with serve(
        broken_site
    ) as url:  # a new port: the browser cannot reuse the old index
        assert search_hits(page, url, "zh", "多头注意力") == []


def test_a_request_to_another_host_is_reported(page, broken_site):
    html = broken_site / "en" / "index.html"
    text = html.read_text(encoding="utf-8")
    html.write_text(
        text.replace(
            "</head>", '<script src="https://cdn.example.org/x.js"></script></head>'
        ),
        encoding="utf-8",
    )
    with serve(broken_site) as url:
        problems = page_problems(page, f"{url}/en/index.html")
    assert any("left localhost" in p for p in problems), problems


def test_a_page_wider_than_a_phone_is_reported(phone, broken_site):
    html = broken_site / "en" / "01-overview.html"
    with serve(broken_site) as url:
        assert horizontal_scroll_problems(phone, f"{url}/en/01-overview.html") == []
    text = html.read_text(encoding="utf-8")
    html.write_text(
        text.replace(
            '<article class="bd-article">',
            '<article class="bd-article"><div style="width:900px">wide</div>',
        ),
        encoding="utf-8",
    )
    with serve(broken_site) as url:
        problems = horizontal_scroll_problems(phone, f"{url}/en/01-overview.html")
    assert any(
        "past the right edge of the 390 px viewport" in p and "div reaches" in p
        for p in problems
    ), problems


def test_small_figure_text_is_reported(phone, broken_site):
    from PIL import Image, PngImagePlugin

    html, src = first_page_with_image(broken_site)
    with serve(broken_site) as url:
        assert figure_text_problems(phone, f"{url}/en/{html.name}", broken_site) == []
    png = html.parent / src
    image = Image.open(png)
    info = PngImagePlugin.PngInfo()
    info.add_text(MIN_TEXT_KEY, "5.00")  # as if every label were drawn at 3.3 pt
    image.save(png, pnginfo=info)
    with serve(broken_site) as url:
        problems = figure_text_problems(phone, f"{url}/en/{html.name}", broken_site)
    assert any(src in p and "smallest text shown at" in p for p in problems), problems


def test_english_in_the_zh_interface_is_reported(page, broken_site):
    html = broken_site / "zh" / "01-overview.html"
    with serve(broken_site) as url:
        assert english_ui_problems(page, f"{url}/zh/01-overview.html") == []
    text = html.read_text(encoding="utf-8")
    assert "显示或隐藏全书目录" in text
    html.write_text(
        text.replace("显示或隐藏全书目录", "Toggle primary sidebar"), encoding="utf-8"
    )
    with serve(broken_site) as url:
        problems = english_ui_problems(page, f"{url}/zh/01-overview.html")
    assert problems == ["English UI text 'Toggle primary sidebar'"]


def test_a_second_search_field_is_reported(page, broken_site):
    html = broken_site / "en" / "01-overview.html"
    with serve(broken_site) as url:
        assert search_field_problems(page, f"{url}/en/01-overview.html") == []
    text = html.read_text(encoding="utf-8")
    field = re.search(
        r"<button class=\"btn search-button-field.*?</button>", text, re.S
    )
    assert field, "the sidebar's search field"
    banner = (
        f'<header style="position:fixed;top:0;left:300px">{field.group(0)}</header>'
    )
    broken = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + banner, text, count=1)
    html.write_text(broken, encoding="utf-8")
    with serve(broken_site) as url:
        problems = search_field_problems(page, f"{url}/en/01-overview.html")
    assert len(problems) == 1 and problems[0].startswith("2 search fields")


def test_a_figure_drawn_at_one_pixel_per_css_pixel_is_reported(phone, broken_site):
    """The figure as it was drawn before (110 dpi): soft on a phone's screen."""
    from PIL import Image

    html, src = first_page_with_image(broken_site)
    with serve(broken_site) as url:
        assert upscaled_figure_problems(phone, f"{url}/en/{html.name}", 3) == []
    png = html.parent / src
    image = Image.open(png)
    text = dict(image.text)
    small = image.resize((image.width // 3, image.height // 3))
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    for key, value in text.items():
        info.add_text(key, value)
    small.save(png, pnginfo=info)
    with serve(broken_site) as url:
        problems = upscaled_figure_problems(phone, f"{url}/en/{html.name}", 3)
    assert any(src in p and "upscaled at 3" in p for p in problems), problems
