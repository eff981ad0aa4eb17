"""The build is strict and its cache never goes stale.

Each test builds a one-page book in a scratch copy of the repository's build
machinery (the real conf.py, extension, templates and build script), so what
passes or fails here is exactly what passes or fails in `make html`.
"""

import subprocess
import sys

from scratch_book import HEADER, build, cell, executed, run_build, write_book


def test_a_clean_page_builds_and_shows_its_output(clean_book):
    repo, result = clean_book
    assert result.returncode == 0, result.stdout
    html = (repo / "_build/html/zh/index.html").read_text(encoding="utf-8")
    assert "42" in html
    assert '<html lang="zh-CN"' in html


def test_a_raising_cell_fails_the_build(scratch):
    result = build(scratch, cell("raise RuntimeError('shape claim broken')"))
    assert result.returncode != 0
    assert "shape claim broken" in result.stdout
    assert "build FAILED" in result.stdout


def test_stderr_output_fails_the_build(scratch):
    result = build(scratch, cell("import sys\nprint('careful', file=sys.stderr)"))
    assert result.returncode != 0
    assert "stderr" in result.stdout.lower()


def test_a_python_warning_fails_the_build(scratch):
    result = build(scratch, cell("import warnings\nwarnings.warn('deprecated thing')"))
    assert result.returncode != 0
    assert "deprecated thing" in result.stdout


def test_chinese_without_the_cjk_font_fails_and_with_it_passes(scratch):
    bare = cell(
        "from matplotlib.figure import Figure\n"
        "fig = Figure()\nfig.add_subplot().set_title('注意力')\nfig.savefig('/dev/null', format='png')"
    )
    result = build(scratch, bare)
    assert result.returncode != 0
    assert "missing from font" in result.stdout
    # ... and the build names the rule that fixes it
    assert "Draw figures with mha_book.viz.plot.new_figure()" in result.stdout
    with_font = cell(
        "from mha_book.viz.plot import new_figure\n"
        "fig = new_figure()\nfig.add_subplot().set_title('注意力')\nfig"
    )
    result = build(scratch, with_font)
    assert result.returncode == 0, result.stdout


def test_a_cell_tagged_raises_exception_may_raise(scratch):
    result = build(
        scratch,
        cell(
            "raise ValueError('expected failure shown to the reader')",
            tags="raises-exception",
        ),
    )
    assert result.returncode == 0, result.stdout
    html = (scratch / "_build/html/zh/index.html").read_text(encoding="utf-8")
    assert "expected failure shown to the reader" in html


def test_cache_reexecutes_only_when_the_code_it_runs_changes(scratch):
    write_book(scratch, cell("import mha_book\nprint('ran')"))
    first = run_build(scratch, own_package=True)
    assert first.returncode == 0, first.stdout
    assert executed(scratch)

    again = run_build(scratch, own_package=True)
    assert again.returncode == 0, again.stdout
    assert not executed(scratch), "a rebuild with no change executed the page"

    # every kernel's startup imports mha_book.book: a change to its code
    # executes every page (tests/build/test_page_keys.py: and only such a change)
    module = scratch / "mha_book" / "book.py"
    module.write_text(
        module.read_text(encoding="utf-8") + "\n_CHANGED = True\n", encoding="utf-8"
    )
    changed = run_build(scratch, own_package=True)
    assert changed.returncode == 0, changed.stdout
    assert executed(scratch), "changing mha_book did not re-execute the page"


def test_parity_problems_stop_the_build(scratch):
    (scratch / "docs/zh").mkdir(parents=True)
    (scratch / "docs/zh/extra.md").write_text("# only zh\n", encoding="utf-8")
    result = build(scratch, cell("print(1)"))
    assert result.returncode != 0
    assert "extra.md: exists in docs/zh only" in result.stdout


def test_a_typed_measurement_stops_the_build(scratch):
    typed = "Training took 95 s.\n\n"
    result = build(scratch, cell("print(1)"), typed)
    assert result.returncode != 0
    assert "index.md:" in result.stdout and "typed measurement '95 s'" in result.stdout
    glued = "Training took {glue:text}`secs` s.\n\n"
    result = build(
        scratch,
        cell(
            "from myst_nb import glue\nglue('secs', '95', display=False)", "remove-cell"
        ),
        glued,
    )
    assert result.returncode == 0, result.stdout


def test_a_structure_difference_stops_the_build(scratch):
    for lang, extra in (("zh", "## 小节\n\n"), ("en", "")):
        page = scratch / "docs" / lang / "index.md"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(HEADER + extra + cell("print(1)"), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "tools.build_book", "--langs", "zh"],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert (
        "index.md: structure differs at element 2: zh has heading h2" in result.stdout
    )


def test_a_visible_glue_or_an_incomplete_chapter_list_stops_the_build(scratch):
    result = build(
        scratch, cell("from myst_nb import glue\nglue('n', '7', display=False)")
    )
    assert result.returncode != 0
    assert "a visible code cell calls glue(" in result.stdout
    assert "tools/check_pages.py" in result.stdout
    # A list of chapters marked "10-" that misses the newest chapter.
    for lang in ("zh", "en"):
        folder = scratch / "docs" / lang
        for name in ("10-a", "11-b"):
            (folder / f"{name}.md").write_text(HEADER + "Text.\n", encoding="utf-8")
    listed = "% chapters: 10-\n- [A](10-a.md)\n\n```{toctree}\n:glob:\n\n[0-9]*\n```\n"
    result = build(scratch, cell("print(1)"), listed)
    assert result.returncode != 0
    assert "does not link chapter(s) 11" in result.stdout
