"""The prose gates: measured numbers come from the execution, one zh term per concept,
code cells fit the code block. Each gate passes on the real book and fails on a broken copy."""

from pathlib import Path

import pytest

from mha_book.book import display_width
from tools.check_prose import glossary_terms, measured_number_problems, term_problems
from tools.format_cells import LINE_LENGTH, format_page
from tools.page_model import read_page

ROOT = Path(__file__).resolve().parents[2]

DOCS = ROOT / "docs"
PAGE = """---
file_format: mystnb
---
# T

```{{code-cell}} ipython3
seconds = 95.0  # 95 s inside code is not prose
```

{prose}
"""


def book(tmp_path: Path, zh: str, en: str, glossary: str | None = None) -> Path:
    for lang, prose in (("zh", zh), ("en", en)):
        (tmp_path / lang).mkdir(parents=True, exist_ok=True)
        (tmp_path / lang / "a.md").write_text(
            PAGE.format(prose=prose), encoding="utf-8"
        )
    if glossary is not None:
        (tmp_path / "zh" / "glossary.md").write_text(glossary, encoding="utf-8")
    return tmp_path


# --- measured numbers ----------------------------------------------------------
def test_the_real_book_has_no_typed_measurement():
    assert measured_number_problems(DOCS) == []


@pytest.mark.parametrize(
    "prose",
    [
        "Training took 95 s on this machine.",
        "The fused kernel is 3.2x faster.",
        "It ran 1.5× faster and used 12 MiB.",
        "Dropout removed 10% of the entries.",
        "The model trains in about half a minute.",
        "The loss reached 1.52 nats.",
    ],
)
def test_a_typed_measurement_fails(tmp_path, prose):
    problems = measured_number_problems(book(tmp_path, "中文。", prose))
    assert len(problems) >= 1 and problems[0].startswith(
        "en/a.md:10: typed measurement"
    )


@pytest.mark.parametrize(
    "prose", ["训练用了 95 秒。", "快了 3 倍。", "大约半分钟。", "约 5%的参数"]
)
def test_a_typed_measurement_in_chinese_fails(tmp_path, prose):
    assert measured_number_problems(book(tmp_path, prose, "English."))


@pytest.mark.parametrize(
    "prose",
    [
        "Training took {glue:text}`train-seconds` s.",
        "A 224 × 224 image cut into 16 × 16 patches.",
        "The kernel uses `95 s` in inline code and $T = 95 s$ in math.",
        "Both have 12 heads of 64 dimensions.",
    ],
)
def test_glued_numbers_shapes_code_and_math_pass(tmp_path, prose):
    assert measured_number_problems(book(tmp_path, "中文。", prose)) == []


def test_a_literature_figure_needs_a_citation_in_its_paragraph(tmp_path):
    uncited = "The A100 has {lit}`40–80 GB` of HBM."
    cited = "The A100 has {lit}`40–80 GB` of HBM {cite:p}`dao2022flashattention`."
    [problem] = measured_number_problems(book(tmp_path, "中文。", uncited))
    assert "literature figure ['40–80 GB'] has no {cite}" in problem
    assert measured_number_problems(book(tmp_path, "中文。", cited)) == []


# --- terms ---------------------------------------------------------------------
GLOSSARY = """# 术语表

```{glossary}
词元
  模型处理的最小单位。英文：token。别处也写作：token、令牌。

内核
  完成一次完整计算的函数。英文：kernel。别处也写作：核函数。
```
"""


def test_the_glossary_lists_variants():
    terms = glossary_terms(DOCS / "zh" / "glossary.md")
    assert "token" in terms["词元"] and "核函数" in terms["内核"]


def test_the_real_zh_book_uses_only_glossary_terms():
    assert term_problems(DOCS) == []


@pytest.mark.parametrize(
    "prose, variant",
    [
        ("每个 token 有一个键。", "token"),
        ("两个tokens。", "tokens"),
        ("融合核函数更快。", "核函数"),
    ],
)
def test_a_variant_term_fails(tmp_path, prose, variant):
    [problem] = term_problems(book(tmp_path, prose, "English.", GLOSSARY))
    assert f"{variant!r} is a variant of the glossary term" in problem
    assert problem.startswith("zh/a.md:10:")


def test_terms_in_code_and_in_the_english_edition_pass(tmp_path):
    docs = book(
        tmp_path,
        "每个词元有一个键，`tokens` 是代码。",
        "Each token has a key.",
        GLOSSARY,
    )
    assert term_problems(docs) == []


# --- code cells fit the code block ----------------------------------------------
def all_pages():
    return sorted(DOCS.glob("*/*.md"))


@pytest.mark.parametrize("page", all_pages(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_code_cell_lines_fit_the_code_block(page):
    long = [
        (i, line)
        for i, cell in enumerate(read_page(page).code_cells, 1)
        for line in cell.split("\n")
        if display_width(line) > LINE_LENGTH
    ]
    assert long == [], f"code-cell lines over {LINE_LENGTH} columns: {long}"


@pytest.mark.parametrize("page", all_pages(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_code_cells_are_formatted_with_ruff(page):
    _, changed = format_page(page.read_text(encoding="utf-8"))
    assert changed == [], f"cells {changed}: run python -m tools.format_cells {page}"


def test_the_format_check_catches_an_unformatted_cell():
    text = "```{code-cell} ipython3\n:tags: [hide-input]\nx=[1,2 ,3]\n```\n"
    new, changed = format_page(text)
    assert changed == [1]
    assert new == "```{code-cell} ipython3\n:tags: [hide-input]\nx = [1, 2, 3]\n```\n"
