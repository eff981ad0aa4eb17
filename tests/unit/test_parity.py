"""The zh and en books must have the same pages and identical code cells."""

from pathlib import Path

import pytest

from tools.check_parity import code_cells, parity_problems

ROOT = Path(__file__).resolve().parents[2]

PAGE = """---
file_format: mystnb
---
# {title}

{prose}

```{{code-cell}} ipython3
x = {value}
print(x)
```
"""


def write_book(root: Path, pages: dict[str, dict[str, str]]) -> Path:
    for lang, files in pages.items():
        for name, text in files.items():
            path = root / lang / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return root


def test_the_real_book_has_parity():
    assert parity_problems(ROOT / "docs") == []


def test_every_page_has_a_counterpart():
    zh = sorted(
        p.relative_to(ROOT / "docs/zh").as_posix()
        for p in (ROOT / "docs/zh").rglob("*.md")
    )
    en = sorted(
        p.relative_to(ROOT / "docs/en").as_posix()
        for p in (ROOT / "docs/en").rglob("*.md")
    )
    assert zh == en
    assert "index.md" in zh and "01-overview.md" in zh


def test_prose_may_differ(tmp_path):
    write_book(
        tmp_path,
        {
            "zh": {"a.md": PAGE.format(title="标题", prose="中文。", value=1)},
            "en": {"a.md": PAGE.format(title="Title", prose="English.", value=1)},
        },
    )
    assert parity_problems(tmp_path) == []


def test_a_page_in_one_tree_only_is_reported(tmp_path):
    write_book(
        tmp_path,
        {
            "zh": {
                "a.md": PAGE.format(title="t", prose="", value=1),
                "sub/b.md": PAGE.format(title="t", prose="", value=2),
            },
            "en": {"a.md": PAGE.format(title="t", prose="", value=1)},
        },
    )
    assert parity_problems(tmp_path) == ["sub/b.md: exists in docs/zh only"]


def test_differing_code_cells_are_reported(tmp_path):
    write_book(
        tmp_path,
        {
            "zh": {"a.md": PAGE.format(title="t", prose="", value=1)},
            "en": {"a.md": PAGE.format(title="t", prose="", value=2)},
        },
    )
    assert parity_problems(tmp_path) == [
        "a.md: code cell 1 differs between zh and en; line 1: zh 'x = 1', en 'x = 2'"
    ]


def test_a_missing_code_cell_is_reported(tmp_path):
    write_book(
        tmp_path,
        {
            "zh": {"a.md": PAGE.format(title="t", prose="", value=1)},
            "en": {"a.md": "# t\n"},
        },
    )
    assert parity_problems(tmp_path)[0] == "a.md: 1 code cells in zh, 0 in en"


def test_cell_options_count_as_code(tmp_path):
    tagged = "```{code-cell} ipython3\n:tags: [raises-exception]\n1 / 0\n```\n"
    plain = "```{code-cell} ipython3\n1 / 0\n```\n"
    write_book(tmp_path, {"zh": {"a.md": tagged}, "en": {"a.md": plain}})
    assert len(code_cells(tmp_path / "zh/a.md")) == 1
    assert parity_problems(tmp_path) == [
        "a.md: code cell 1 differs between zh and en; "
        "line 1: zh ':tags: [raises-exception]', en '1 / 0'"
    ]


@pytest.mark.parametrize("fence", ["```", "````", "~~~"])
def test_code_cells_are_found_with_any_fence(tmp_path, fence):
    page = tmp_path / "p.md"
    page.write_text(
        f"{fence}{{code-cell}} ipython3\nprint(1)\n{fence}\n", encoding="utf-8"
    )
    assert code_cells(page) == ["print(1)"]


# --- structure ---------------------------------------------------------------
STRUCTURED = """---
file_format: mystnb
---
# {title}

(sec-one)=
## {one}

```{{code-cell}} ipython3
# a comment, not a heading
x = 1
```

```{{glue:figure}} fig-a
:name: fig-a

{caption} {{glue:text}}`ratio`
```

```{{note}}
{note}
```

## {two}

$$
a = b
$$
"""
ZH = dict(title="标题", one="第一节", two="第二节", caption="图注", note="注意。")
EN = dict(title="Title", one="One", two="Two", caption="Caption", note="Note.")


def test_same_structure_in_other_words_passes(tmp_path):
    write_book(
        tmp_path,
        {
            "zh": {"a.md": STRUCTURED.format(**ZH)},
            "en": {"a.md": STRUCTURED.format(**EN)},
        },
    )
    assert parity_problems(tmp_path) == []


def test_a_missing_heading_is_reported_with_its_line(tmp_path):
    broken = STRUCTURED.format(**ZH).replace("## 第二节\n", "")
    write_book(
        tmp_path, {"zh": {"a.md": broken}, "en": {"a.md": STRUCTURED.format(**EN)}}
    )
    assert parity_problems(tmp_path) == [
        "a.md: structure differs at element 10: zh has math (line 25), en has heading h2 (line 24)"
    ]


def test_a_heading_at_another_level_is_reported(tmp_path):
    broken = STRUCTURED.format(**ZH).replace("## 第一节", "### 第一节")
    write_book(
        tmp_path, {"zh": {"a.md": broken}, "en": {"a.md": STRUCTURED.format(**EN)}}
    )
    [problem] = parity_problems(tmp_path)
    assert "zh has heading h3 (line 7), en has heading h2 (line 7)" in problem


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ("(sec-one)=", "(sec-uno)=", "zh has label sec-uno"),
        (
            "{glue:figure} fig-a",
            "{glue:figure} fig-b",
            "zh has directive glue:figure fig-b",
        ),
        ("{note}", "{warning}", "zh has directive warning"),
    ],
)
def test_labels_figures_and_admonitions_must_match(tmp_path, old, new, expected):
    broken = STRUCTURED.format(**ZH).replace(old, new)
    write_book(
        tmp_path, {"zh": {"a.md": broken}, "en": {"a.md": STRUCTURED.format(**EN)}}
    )
    [problem] = parity_problems(tmp_path)
    assert expected in problem


def test_inline_glue_keys_must_match(tmp_path):
    broken = STRUCTURED.format(**ZH).replace("`ratio`", "`ratio2`")
    write_book(
        tmp_path, {"zh": {"a.md": broken}, "en": {"a.md": STRUCTURED.format(**EN)}}
    )
    assert parity_problems(tmp_path) == [
        "a.md: inline glue/citation keys differ: zh only ['glue:text:ratio2'], "
        "en only ['glue:text:ratio']"
    ]
