"""The site's search: an index with real ranking, written after both editions built.

Sphinx's own index says only which pages hold a word (and whether in a
title); this step reads each edition's built pages and writes
``_static/book-search-<digest>.js``: how much each word weighs on each page
(title, headings, text, code), the page's sections (a result opens at the
section whose heading matches best), the API's objects (an exact API name opens its
entry) and the glossary's names and variants with the page each entry points
to (so 键值缓存 finds the KV cache chapter). The ranking itself is
``docs/_ext/book_search.js`` (BM25 over the weights), prepended to the data in
the same file; ``search.html`` loads that file instead of ``searchindex.js``,
whose format Sphinx needs for its next incremental build.

Chinese is cut by jieba (with the book's words, ``docs/_ext/jieba_terms.txt``)
into words and their parts (``cut_for_search``); the browser cuts the
reader's query by the longest words the index holds.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import unicodedata
from collections import defaultdict
from pathlib import Path

from .common import ROOT
from .search_html import parse_page

ENGINE = ROOT / "docs" / "_ext" / "book_search.js"
JIEBA_TERMS = ROOT / "docs" / "_ext" / "jieba_terms.txt"
SKIP = {"search", "genindex", "py-modindex"}
# Pages that list or define rather than teach: below the chapters (an exact
# API name still opens its entry first).
PRIOR = {"glossary": 0.25, "index": 0.5, "references": 0.5}
API_PRIOR = 0.25  # every API page: api, api-experiments


def is_api(name: str) -> bool:
    """Whether the page ``name`` is one of the API pages.

    Example:
        >>> [is_api(n) for n in ("api", "api-experiments", "apis", "glossary")]
        [True, True, False, False]
    """
    return name == "api" or name.startswith("api-")
# How much one occurrence weighs, by where it stands.
WEIGHT = {"title": 8.0, "heading": 3.0, "text": 1.0, "code": 0.5}
LONG_NUMBER = re.compile(r"\d{5,}|\d+e\d*|^\d+[a-z]")  # digits of a printed value
RUN = re.compile(r"[a-z0-9_]+|[\u3400-\u9fff]+")


@functools.cache
def _cutter():
    """jieba, quiet, with the book's words."""
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.load_userdict(str(JIEBA_TERMS))
    return jieba


def stem(word: str) -> str:
    """English plurals to their singular, as book_search.js does.

    Example:
        >>> [stem(w) for w in ["heads", "queries", "class", "alibi", "bias"]]
        ['head', 'query', 'class', 'alibi', 'bias']
    """
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if (
        len(word) > 3
        and word.endswith("s")
        and not word.endswith(("ss", "us", "is", "as"))
    ):
        return word[:-1]
    return word


def tokens(text: str) -> list[str]:
    """The index's words of ``text``: Latin words (stemmed) and jieba's words.

    Example:
        >>> tokens("Multi-head 注意力 masks")
        ['multi', 'head', '注意', '注意力', 'mask']
    """
    out = []
    for run in RUN.findall(unicodedata.normalize("NFKC", text).lower()):
        if "\u3400" <= run[0] <= "\u9fff":
            out += [w for w in _cutter().cut_for_search(run) if w.strip()]
        else:
            out.append(stem(run))
    return out


def page_weights(page: dict) -> dict[str, float]:
    """Each word's weight on the page: the sum of its occurrences' weights."""
    total: dict[str, float] = defaultdict(float)
    for section in page["sections"]:
        for field in ("heading", "text", "code"):
            for word in tokens(section[field]):
                if field != "code" or not word.isdigit():  # a printed value
                    total[word] += WEIGHT[field]
    for word in set(tokens(page["title"])):
        total[word] += WEIGHT["title"]
    return dict(total)


def glossary_entries(page: dict, names: dict[str, int]) -> list[list]:
    """``[[name, other names...], teaching page]`` for each glossary entry:
    its term, its name in the other language and the variants it lists
    ("别处也写作：…" / "Also written: …"), and the chapter it points to."""
    entries = []
    for section in page["sections"][1:]:
        text = section["text"]
        found = [section["heading"]]
        for pattern in (r"英文：(.+?)。", r"Chinese: (.+?)\. See"):
            found += re.findall(pattern, text)
        for pattern in (r"别处也写作：(.+?)。", r"Also written: (.+?)\. See"):
            for listed in re.findall(pattern, text):
                found += re.split(r"、|, ", listed)
        chapters = [n for n in section["links"] if re.match(r"\d\d-", n)]
        if chapters and chapters[0] in names:
            entries.append([list(dict.fromkeys(found)), names[chapters[0]]])
    return entries


def coarse(weight: float) -> int:
    """Twice the weight, to two steps per doubling above 4 (BM25 saturates:
    finer steps would only make the index larger).

    Example:
        >>> [coarse(w) for w in (0.5, 3.0, 9.0, 40.0)]
        [1, 6, 16, 91]
    """
    doubled = weight * 2
    if doubled <= 8:
        return max(1, round(doubled))
    return round(2 ** (round(math.log2(doubled) * 2) / 2))


def build_index(pages: list[dict]) -> dict:
    """The data book_search.js ranks with (see the module's docstring)."""
    names = {p["name"]: i for i, p in enumerate(pages)}
    terms: dict[str, list] = defaultdict(list)
    lengths, glossary = [], []
    for i, page in enumerate(pages):
        weights = page_weights(page)
        lengths.append(round(sum(weights.values())))
        for word, weight in sorted(weights.items()):
            if not LONG_NUMBER.search(word):  # not a printed value
                terms[word] += [i, coarse(weight)]
        if page["name"] == "glossary":
            glossary = glossary_entries(page, names)
    return {
        "book": 1,
        "pages": [
            [
                p["name"],
                p["title"],
                [[s["anchor"], s["heading"]] for s in p["sections"]],
            ]
            for p in pages
        ],
        "prior": [
            API_PRIOR if is_api(p["name"]) else PRIOR.get(p["name"], 1.0) for p in pages
        ],
        "lens": lengths,
        "terms": dict(terms),  # word: [page, 2 x weight, page, 2 x weight, ...]
        # The API's objects are its pages' sections whose anchor is a full name.
        "api": [i for i, p in enumerate(pages) if is_api(p["name"])],
        "glossary": glossary,
    }


def edition_pages(edition: Path) -> list[dict]:
    """The edition's pages, parsed (search_html.parse_page), in name order."""
    pages = []
    for path in sorted(edition.glob("*.html")):
        if path.stem not in SKIP:
            page = parse_page(path.read_text(encoding="utf-8"))
            if page["title"]:
                pages.append({"name": path.stem, **page})
    return pages


def write_search(edition: Path) -> Path:
    """Write the edition's index and engine; point search.html at them."""
    data = json.dumps(
        build_index(edition_pages(edition)), ensure_ascii=False, separators=(",", ":")
    )
    script = ENGINE.read_text(encoding="utf-8") + f"\nSearch.setIndex({data});\n"
    digest = hashlib.sha256(script.encode()).hexdigest()[:16]
    static = edition / "_static"
    for old in static.glob("book-search-*.js*"):
        old.unlink()
    target = static / f"book-search-{digest}.js"
    target.write_text(script, encoding="utf-8")
    search = edition / "search.html"
    html = search.read_text(encoding="utf-8")
    html = re.sub(
        r'src="(searchindex\.js|_static/book-search-[0-9a-f]+\.js)"',
        f'src="_static/{target.name}"',
        html,
    )
    search.write_text(html, encoding="utf-8")
    return target


def write_search_indexes(out: Path, langs) -> None:
    """The search of every edition built under ``out`` (``<out>/<lang>/``)."""
    for lang in langs:
        if (out / lang / "search.html").is_file():
            target = write_search(out / lang)
            print(
                f"search index: {target.relative_to(out)} ({target.stat().st_size:,} bytes)"
            )
