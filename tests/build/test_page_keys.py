"""A page executes again exactly when the package code it runs changes
(docs/_ext/book_cache.py, mha_book._digest): an edit to a comment, a
docstring or a module the page never imports executes nothing; an edit to a
module it imports, directly or through the package, executes it, and its
outputs are the new code's."""

from scratch_book import cell, executed, run_build, write_book

PAGE = cell(
    "from mha_book.attention.masks import causal_mask\n\n"
    "print('allowed:', int(causal_mask(3, 3).sum()))"
)


def edit(repo, module, old, new):
    path = repo / module
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in {module}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def rebuild(repo):
    result = run_build(repo, own_package=True)
    assert result.returncode == 0, result.stdout + result.stderr
    html = (repo / "_build/html/zh/index.html").read_text(encoding="utf-8")
    return executed(repo), html


def test_only_a_change_to_the_code_a_page_runs_executes_it(scratch):
    write_book(scratch, PAGE)
    ran, html = rebuild(scratch)
    assert ran and "allowed: 6" in html

    masks = "mha_book/attention/masks.py"
    edit(scratch, masks, '"""', '"""An edited docstring. ')
    edit(scratch, masks, "\nimport torch\n", "\n# a comment\nimport torch\n\n\n")
    assert rebuild(scratch)[0] is False, "a comment and a docstring executed the page"

    edit(
        scratch,
        "mha_book/viz/heatmap.py",
        "\ndef ",
        "\ndef _unused():\n    pass\n\n\ndef ",
    )
    assert rebuild(scratch)[0] is False, "a module the page never imports executed it"

    # imported by masks.py, not by the page itself
    edit(
        scratch, "mha_book/_checks.py", "\ndef ", "\nprint('checks changed')\n\n\ndef "
    )
    ran, html = rebuild(scratch)
    assert ran and "checks changed" in html, (
        "a change to imported code served a stale page"
    )

    assert rebuild(scratch)[0] is False  # and then it is stored again
