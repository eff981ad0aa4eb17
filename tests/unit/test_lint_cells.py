"""tools/lint_cells.py lints a page's cells as one program, at the page's lines."""

from pathlib import Path

from tools.lint_cells import lint_page

PAGE = """---
file_format: mystnb
---
# Page

```{code-cell} ipython3
:tags: [hide-input]
import math

x = math.pi
```

Prose.

```{code-cell} ipython3
print(x, y)
```
"""


def test_a_name_from_an_earlier_cell_is_known_and_an_unknown_one_is_reported(
    tmp_path,
):
    page = tmp_path / "docs" / "en" / "01-page.md"
    page.parent.mkdir(parents=True)
    page.write_text(PAGE, encoding="utf-8")
    [problem] = lint_page(page)
    line = PAGE.splitlines().index("print(x, y)") + 1
    assert problem.endswith(f"01-page.md:{line}: F821 Undefined name `y`"), problem


def test_the_real_pages_pass():
    docs = Path(__file__).resolve().parents[2] / "docs"
    assert [p for page in sorted(docs.glob("*/*.md")) for p in lint_page(page)] == []
