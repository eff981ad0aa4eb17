"""The zh edition prints and labels nothing in English (tools/zh_english.py)."""

import pytest

from tools.zh_english import (
    ALLOWED,
    QUOTES_TAG,
    english_words,
    page_problems,
)


def cell(output: str, tags: str = "", kind: str = "stream") -> str:
    """A code cell as myst-nb writes it: its input, then one output."""
    classes = "cell" + "".join(f" tag_{t}" for t in tags.split())
    return (
        f'<div class="{classes} docutils container">'
        '<div class="cell_input docutils container"><pre>'
        'print(pick("分数的标准差", "score std"), x)</pre></div>'
        '<div class="cell_output docutils container">'
        f'<div class="output {kind} highlight-myst-ansi notranslate">'
        f"<pre>{output}</pre></div></div></div>"
    )


# What zh pages print and show, none of it English (the input code may be).
CLEAN = (
    cell("分数的标准差      有缩放      1.01   无缩放      22.8")
    + cell("tensor([[1, 0]], dtype=torch.int32) | q_proj (2, 8, 64) | True None nan")
    + cell("MultiHeadAttention(\n  (q_proj): Linear(in_features=8, bias=True)\n)")
    + cell("训练 1.933 nats/字符 | 374 KiB | 2.95 ms | max |差| = 1e-06 | log V")
    + cell("ValueError: mask must be bool, got torch.int64")
    + cell("BERT-base、GPT-2 small、ViT-B/16、RoPE、ALiBi、GQA、KV 缓存、PyTorch")
    + cell("'it' -> 'animal' | [CLS] | 直接 view() | .reshape")
    + cell("To be, or not to be", tags=QUOTES_TAG)
    + cell("RuntimeError   Traceback (most recent call last)", kind="traceback")
    + '<summary><p class="collapsed admonition-title">显示代码</p></summary>'
    + '<nav aria-label="本页目录"></nav><a title="English">English</a>'
    + '<input placeholder="搜索本书……">'
    + '<span class="bibtex-citation">Shazeer [<a title="Noam Shazeer. Fast '
    'transformer decoding: one write-head is all you need.">2019</a>]</span>'
    + "<script>let toggleHintShow = '点击显示';</script>"
)


def test_the_clean_page_passes():
    assert page_problems(CLEAN) == []


@pytest.mark.parametrize(
    "broken, found",
    [
        (cell("score std         有缩放      1.01"), "output: 'score std'"),
        (cell("mean row max      有缩放     0.372"), "output: 'mean row max'"),
        (cell("rows > 0.99       有缩放         0"), "output: 'rows'"),
        (cell("block  block max       m  rescale"), "output: 'block max rescale'"),
        (cell(" step  train_loss  val_loss"), "output: 'step'"),
        (cell("解码器      98.7% of 600"), "output: 'of'"),
        (cell("一元模型 6.625 nats/char"), "output: 'char'"),
        (cell("tensor([1.]) loss 0.25"), "output: 'loss'"),
        (cell("分数 (2, 3)", kind="text_plain") + cell("weights (2, 3)"), "'weights'"),
        ('<summary aria-label="Toggle hidden content">', "aria-label: 'Toggle"),
        ('<nav aria-label="Page">', "aria-label: 'Page'"),
        ('<a title="Open the full-size image">', "title: 'Open the full"),
        ('<input placeholder="Search this book">', "placeholder: 'Search"),
        ("<script>let toggleHintShow = 'Click to show';</script>", "toggleHintShow"),
    ],
)
def test_english_in_a_zh_page_is_found(broken, found):
    problems = page_problems(CLEAN + broken, "p.html")
    assert len(problems) == 1 and found in problems[0], problems


def test_each_english_line_is_a_problem_of_its_own():
    problems = page_problems(cell("score std  1.0\n分数\nmean row max  0.3"), "p")
    assert problems == [
        "p: output: 'score std' in 'score std  1.0'",
        "p: output: 'mean row max' in 'mean row max  0.3'",
    ]


def test_the_allow_list_holds_no_ordinary_english_word():
    for word in ("score", "mean", "rows", "block", "loss", "step", "max", "output"):
        assert word not in ALLOWED
        assert english_words(f"{word} 1.0") == [word]
    # and what it does allow is a name or a unit
    assert english_words("PyTorch FlashAttention MiniLM 12 MiB 3 ms 1.2 nats") == []
