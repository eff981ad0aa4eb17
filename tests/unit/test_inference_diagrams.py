"""The latent-attention flow diagram draws what the module computes."""

import pytest
import torch

from mha_book.attention.latent import LatentAttention
from mha_book.book import LANG_ENV_VAR, pick
from mha_book.viz.diagrams import latent_data_flow
from mha_book.viz.layout import figure_layout
from mha_book.viz.plot import TEXT_PT, smallest_text_pt


def _texts(fig) -> str:
    from matplotlib.text import Text

    fig.draw_without_rendering()
    return "\n".join(t.get_text() for t in fig.findobj(Text))


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_latent_flow_marks_what_the_absorbed_form_skips(monkeypatch, lang):
    from matplotlib.patches import FancyArrowPatch

    monkeypatch.setenv(LANG_ENV_VAR, lang)
    torch.manual_seed(0)
    mla = LatentAttention(64, 4, head_dim=16, latent_dim=24, rope_dim=8)
    x = torch.randn(2, 12, 64)  # (B, T, E)
    fig, facts = latent_data_flow(mla, x)
    assert facts["shapes"] == {
        "x": (2, 12, 64),
        "q": (2, 12, 4 * (16 + 8)),
        "latent": (2, 12, 24),
        "rope_key": (2, 12, 8),
        "k": (2, 12, 64),
        "v": (2, 12, 64),
        "output": (2, 12, 64),
    }
    assert facts["cache"] == ((2, 12, 24), (2, 12, 8))
    assert facts["cached"] == ["latent", "rope_key"]
    assert facts["skipped"] == ["k", "v"]  # k_up and v_up never run when absorbed
    arrows = [p for p in fig.axes[0].patches if isinstance(p, FancyArrowPatch)]
    assert len(arrows) == len(facts["arrows"]) == 8
    assert ["latent", "output"] in facts["arrows"]  # the absorbed form's path
    dashed = [a for a in arrows if a.get_linestyle() not in ("-", "solid")]
    assert len(dashed) == 2  # into and out of the per-head keys and values
    drawn = _texts(fig)
    for label in (
        pick("潜在向量 c", "latent c"),
        pick("吸收形式", "absorbed\nform"),
        pick("缓存的内容", "what the cache holds"),
        "k_up(c), v_up(c)",
        "(2, 12, 24)",
    ):
        assert label in drawn
    assert facts["layout"] == figure_layout(fig)
    assert facts["layout"]["direction"] == "top-to-bottom"
    assert smallest_text_pt(fig) >= TEXT_PT
    assert fig.get_tightbbox().width <= 4.8


def test_the_latent_flow_refuses_another_module():
    with pytest.raises(TypeError, match="module must be a LatentAttention"):
        latent_data_flow(torch.nn.Linear(4, 4), torch.randn(1, 2, 4))
