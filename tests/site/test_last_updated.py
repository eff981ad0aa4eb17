"""Each page of the built site shows when its source last changed, from git.

The date (sphinx-last-updated-by-git, in UTC) is that of the newest commit
that changed the page's source or a file the page includes (a literalinclude,
the bibliography); the theme shows it in the page's language.
"""

import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SHOWN = {
    "zh": r"最后更新于 (\d{4}-\d\d-\d\d)",
    "en": r"Last updated on (\d{4}-\d\d-\d\d)",
}
PAGES = ["01-overview", "02-scaled-dot-product", "references"]


def sources(lang: str, page: str) -> list[str]:
    """The page's source and the files it includes, relative to the repository."""
    source = ROOT / "docs" / lang / f"{page}.md"
    text = source.read_text(encoding="utf-8")
    included = re.findall(r"^```\{literalinclude\} (\S+)", text, flags=re.M)
    paths = [
        (source.parent / path).resolve().relative_to(ROOT).as_posix()
        for path in [source.name, *included]
    ]
    if "```{bibliography}" in text:
        paths.append("docs/references.bib")  # conf.py's bibtex_bibfiles
    return paths


def git_date(paths: list[str]) -> str:
    """The newest author date (UTC) of the commits that changed any of ``paths``."""
    log = subprocess.run(
        ["git", "log", "--format=%at", "--", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not log:
        pytest.skip(f"{paths[0]} is not committed")
    return datetime.fromtimestamp(max(map(int, log)), UTC).date().isoformat()


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("page", PAGES)
def test_a_page_shows_the_git_date_of_its_source(site, lang, page):
    if subprocess.run(["git", "rev-parse"], cwd=ROOT, check=False).returncode:
        pytest.skip("not a git clone: the site shows no dates")
    html = (site / lang / f"{page}.html").read_text(encoding="utf-8")
    assert re.findall(SHOWN[lang], html) == [git_date(sources(lang, page))]
