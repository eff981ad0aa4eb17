"""The build says what it is doing and, when a page fails, what to fix.

Each test builds a one-page book in a scratch copy of the build machinery
(see test_build_strict.py) and reads what `tools/build_book.py` prints.
"""

from scratch_book import HEADER, build, cell, run_build

RAISING = cell(
    "import torch\n"
    "shape = torch.ones(2).shape\n"
    "assert shape == (3,), 'shape claim broken'"
)


def test_each_page_says_when_it_starts_and_how_it_ended(clean_book):
    _, result = clean_book
    assert result.returncode == 0, result.stdout
    for lang in ("zh", "en"):
        out = result.stdout
        assert out.index(f"[{lang}]   start index") < out.index(
            f"[{lang}]   done  index:"
        )
        done = next(line for line in out.splitlines() if f"[{lang}]   done" in line)
        assert done.endswith(", executed"), done


def test_a_page_whose_cells_did_not_change_says_from_cache(scratch):
    assert build(scratch, cell("print(6 * 7)")).returncode == 0
    (scratch / "docs/zh/index.md").write_text(
        HEADER + "More prose.\n\n" + cell("print(6 * 7)"), encoding="utf-8"
    )
    again = run_build(scratch)
    done = next(line for line in again.stdout.splitlines() if "done  index" in line)
    assert done.endswith(", from cache"), done


def test_a_raising_cell_gets_a_short_message_and_a_log(scratch):
    result = build(scratch, cell("x = 1"), RAISING)
    out = result.stdout
    assert result.returncode != 0
    # The page's own source, the cell, its first lines, the error.
    assert "docs/zh/index.md: code cell 2 (line " in out
    assert "import torch" in out and "shape = torch.ones(2).shape" in out
    assert "raised AssertionError: shape claim broken" in out
    log = scratch / "_build/reports/zh/index.log"
    assert f"full traceback: {log}" in out
    assert "Traceback" in log.read_text(encoding="utf-8")
    assert "AssertionError: shape claim broken" in log.read_text(encoding="utf-8")
    # No crash report, no traceback in the build output, no myst-nb duplicate.
    for noise in ("Traceback", "Sphinx", "Executing notebook failed", "\x1b["):
        assert noise not in out, noise
    assert out.count("raised AssertionError") == 1
    # The table calls the page failed.
    row = next(line for line in out.splitlines() if line.startswith("zh    index"))
    assert row.endswith("FAILED"), row


def test_a_failed_page_fails_a_rebuild_with_no_change_until_it_is_fixed(scratch):
    assert build(scratch, RAISING).returncode != 0
    again = run_build(scratch)  # nothing changed: the page is read again anyway
    assert again.returncode != 0
    assert "raised AssertionError: shape claim broken" in again.stdout
    assert build(scratch, cell("print('fixed')")).returncode == 0


def test_a_slow_cell_says_which_after_how_long_and_how_to_raise_the_limit(scratch):
    page = HEADER.replace(
        "---\n\n# Page", "mystnb:\n  execution_timeout: 2\n---\n\n# Page"
    ) + cell("import time\n\nfor _ in range(60):\n    time.sleep(1)")
    for lang in ("zh", "en"):
        (scratch / "docs" / lang).mkdir(parents=True, exist_ok=True)
        (scratch / "docs" / lang / "index.md").write_text(page, encoding="utf-8")
    result = run_build(scratch)
    assert result.returncode != 0
    assert "docs/zh/index.md: code cell 1 (line " in result.stdout
    assert "did not finish within 2 s" in result.stdout
    assert "execution_timeout: 1200" in result.stdout
    assert "by default a cell has no limit" in result.stdout
    assert "ZMQError" not in result.stdout  # the stopped kernel's own traceback
