"""The built site: every glued figure's alt text matches the layout its image
records (tools/check_alt_text.py), and a broken one in a built page is caught."""

import shutil

import pytest

from tools.check_alt_text import LANGS, html_figures, site_problems


@pytest.mark.parametrize("lang", LANGS)
def test_every_glued_figure_has_an_alt_text_that_matches_its_layout(site, lang):
    problems = site_problems(site, langs=(lang,))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang", LANGS)
def test_a_broken_alt_text_in_a_built_page_is_reported(site, tmp_path, lang):
    """Chapter 03's 2 x 2 heads, copied, with the alt text of the old bug."""
    page = "03-multi-head"
    copy = tmp_path / "site"
    shutil.copytree(site / lang / "_images", copy / lang / "_images")
    html = (site / lang / f"{page}.html").read_text(encoding="utf-8")
    alt, _ = html_figures(site / lang / f"{page}.html")["fig-heads"]
    assert site_problems(site, langs=(lang,), pages=[page]) == []
    wrong = {
        "zh": "四幅热力图并排：四个头的权重。",
        "en": "Four heatmaps side by side.",
    }
    (copy / lang / f"{page}.html").write_text(
        html.replace(f'alt="{alt}"', f'alt="{wrong[lang]}"'), encoding="utf-8"
    )
    problems = site_problems(copy, langs=(lang,), pages=[page])
    assert len(problems) == 1 and "fig-heads" in problems[0], problems
    assert "but the figure has 2 rows" in problems[0]
