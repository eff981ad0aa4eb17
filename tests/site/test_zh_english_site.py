"""The built site: the zh pages print and label nothing in English
(tools/zh_english.py), and English put into a copy of a real page is found."""

import re
from collections import Counter

from tools.zh_english import page_problems, site_problems


def test_a_broken_copy_of_a_real_zh_page_fails(site):
    page = site / "zh" / "07-troubleshooting.html"
    html = page.read_text(encoding="utf-8")
    output = re.search(
        r'<div class="output stream[^>]*><div class="highlight"><pre>', html
    )
    assert output, "no printed output on the page"
    broken = html[: output.end()] + "score std 1.01\n" + html[output.end() :]
    broken = broken.replace(
        "</body>", '<summary aria-label="Toggle hidden content"></summary></body>'
    )
    # what the broken copy adds to whatever the page already has
    added = Counter(page_problems(broken, page.name))
    added.subtract(page_problems(html, page.name))
    assert sorted(+added) == [
        f"{page.name}: aria-label: 'Toggle hidden content' in 'Toggle hidden content'",
        f"{page.name}: output: 'score std' in 'score std 1.01'",
    ]


def test_zh_pages_print_and_label_nothing_in_english(site):
    problems = site_problems(site)
    assert not problems, f"{len(problems)} English strings:\n" + "\n".join(problems)
