"""The search finds the page that teaches what a reader types, in both editions.

Every query of tests/e2e/search_queries.toml (written from the chapters, each
with its teaching page) goes through the search page in Chromium, as a reader
types it. Goals, per edition: the teaching page first for at least 90 % of
the queries, within the first three for every query, and no query without a
result. No time is asserted (the search's timing is the bench's:
tests/e2e/search_bench.py).

Run on its own to print the table (and every miss):
    PYTHONPATH=.:tests/e2e .venv/bin/python tests/e2e/test_search.py [SITE]
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest
from browser import search_ranking

QUERIES = Path(__file__).with_name("search_queries.toml")
FIRST_GOAL = 0.90  # share of queries whose teaching page comes first


def load_queries(lang: str) -> list[dict]:
    with QUERIES.open("rb") as f:
        return tomllib.load(f)[lang]


def grade(query: dict, ranking: list[str]) -> str:
    """``first``, ``top3`` (the teaching page, or an API name's page, in the
    first three, or an accepted second page there), ``later`` or ``none``."""
    if not ranking:
        return "none"
    if ranking[0] == query["page"]:
        return "first"
    if query["page"].startswith("api") and ranking[1:2] == [query["page"]]:
        return "first"  # an exact API name: its entry first or second
    accepted = {query["page"], *query.get("also", [])}
    return "top3" if accepted & set(ranking[:3]) else "later"


def run_queries(page, base: str, lang: str) -> list[tuple[dict, list[str], str]]:
    rows = []
    for query in load_queries(lang):
        ranking = search_ranking(page, base, lang, query["q"])
        rows.append((query, ranking, grade(query, ranking)))
    return rows


def table(rows) -> dict[str, int]:
    """Counts: ``first``, ``top3`` (first three, ``first`` included), ``none``, ``n``."""
    grades = [g for _, _, g in rows]
    return {
        "n": len(grades),
        "first": grades.count("first"),
        "top3": grades.count("first") + grades.count("top3"),
        "none": grades.count("none"),
    }


def misses(rows) -> list[str]:
    return [
        f"{q['q']!r}: expected {q['page']}, got {ranking[:4]} ({g})"
        for q, ranking, g in rows
        if g != "first"
    ]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_search_finds_the_teaching_page(page, site_url, lang):
    rows = run_queries(page, site_url, lang)
    counts = table(rows)
    report = "\n".join(misses(rows))
    assert counts["none"] == 0, f"{counts}\n{report}"
    assert counts["top3"] == counts["n"], f"{counts}\n{report}"
    assert counts["first"] >= FIRST_GOAL * counts["n"], f"{counts}\n{report}"


GLOSSARY_HTML = """<article class="bd-article"><section id="glossary"><h1>术语表</h1>
<dl class="glossary"><dt id="term-KV-缓存">KV 缓存</dt><dd><p>……英文：KV cache。别处也写作：键值缓存、kv 缓存。详见
<a class="reference internal" href="13-mqa-gqa-kv-cache.html">第 13 章</a>。</p></dd></dl>
</section></article>"""


def test_a_glossary_variant_becomes_a_name_the_search_knows():
    """What tools/build/search.py reads from the glossary: every name of an
    entry (term, other-language name, variants) and the page it points to."""
    from tools.build.search import build_index
    from tools.build.search_html import parse_page

    pages = [
        {"name": "13-mqa-gqa-kv-cache", "title": "KV", "sections": []},
        {"name": "glossary", **parse_page(GLOSSARY_HTML)},
    ]
    assert build_index(pages)["glossary"] == [
        [["KV 缓存", "KV cache", "键值缓存", "kv 缓存"], 0]
    ]


def main(argv: list[str]) -> int:
    from browser import CHROMIUM, CHROMIUM_ARGS, serve
    from playwright.sync_api import sync_playwright

    site = Path(argv[0]) if argv else Path(__file__).parents[2] / "_build" / "html"
    with sync_playwright() as p, serve(site) as url:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        for lang in ("zh", "en"):
            rows = run_queries(page, url, lang)
            c = table(rows)
            print(
                f"{lang}: first {c['first']}/{c['n']}, top-3 {c['top3']}/{c['n']}, "
                f"none {c['none']}"
            )
            print("  " + "\n  ".join(misses(rows)))
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
