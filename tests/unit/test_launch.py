"""The launch links' format, and the notebooks branch they open."""

import json

import nbformat
import pytest
from book_launch import github_repo, launch_links
from book_pages import for_download

from tools.notebooks_branch import lay_out

REPO = "https://github.com/someone/mha-book"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_colab_opens_the_editions_notebook_on_the_notebooks_branch(lang):
    links = launch_links(REPO, lang, "13-gqa-kv-cache")
    assert links == {
        "Colab": "https://colab.research.google.com/github/someone/mha-book"
        f"/blob/notebooks/{lang}/13-gqa-kv-cache.ipynb"
    }


def test_binder_opens_the_same_notebook_when_its_address_is_given():
    links = launch_links(
        REPO + ".git", "zh", "02-x", binder_url="https://mybinder.org/"
    )
    assert links["Binder"] == (
        "https://mybinder.org/v2/gh/someone/mha-book/notebooks"
        "?urlpath=lab/tree/zh/02-x.ipynb"
    )
    assert links["Colab"].endswith("/someone/mha-book/blob/notebooks/zh/02-x.ipynb")


@pytest.mark.parametrize(
    "url",
    ["github.com/someone/mha-book", "https://gitlab.com/a/b", "https://github.com/a"],
)
def test_an_address_that_is_not_a_github_repository_is_refused_by_name(url):
    with pytest.raises(ValueError, match="MHA_BOOK_REPO_URL must be a GitHub") as err:
        github_repo(url)
    assert repr(url) in str(err.value)


def downloaded(lang: str):
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("print(1)"))
    return for_download(nb, "zh_CN" if lang == "zh" else "en")


def test_the_branch_holds_each_editions_notebooks_and_what_binder_installs(tmp_path):
    site = tmp_path / "html"
    for lang in ("zh", "en"):
        (site / lang / "_sources").mkdir(parents=True)
        for name in ("02-a", "13-b"):
            nbformat.write(downloaded(lang), site / lang / "_sources" / f"{name}.ipynb")
        (site / lang / "_sources" / "index.md.txt").write_text("not a notebook")
    out = tmp_path / "branch"
    (out / "zh").mkdir(parents=True)  # an earlier layout is replaced
    (out / "zh" / "99-gone.ipynb").write_text("{}")
    assert lay_out(site, out) == {"zh": 2, "en": 2}
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        "en/02-a.ipynb",
        "en/13-b.ipynb",
        "requirements.txt",
        "runtime.txt",
        "zh/02-a.ipynb",
        "zh/13-b.ipynb",
    ]
    version = downloaded("zh").metadata["mha_book"]["version"]
    assert f"mha-book[notebook]=={version}\n" in (out / "requirements.txt").read_text()
    # Binder's default Python is older than the package allows
    assert (out / "runtime.txt").read_text() == "python-3.11\n"
    zh = json.loads((out / "zh/02-a.ipynb").read_text(encoding="utf-8"))
    assert 'os.environ["MHA_BOOK_LANG"] = "zh"' in "".join(zh["cells"][0]["source"])


def test_a_site_without_notebooks_is_refused(tmp_path):
    (tmp_path / "html" / "zh" / "_sources").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="no notebooks in"):
        lay_out(tmp_path / "html", tmp_path / "branch")


def test_a_folder_that_is_not_an_earlier_layout_is_never_removed(tmp_path):
    site = tmp_path / "html"
    for lang in ("zh", "en"):
        (site / lang / "_sources").mkdir(parents=True)
        nbformat.write(downloaded(lang), site / lang / "_sources" / "02-a.ipynb")
    (tmp_path / "work" / "zh").mkdir(parents=True)
    (tmp_path / "work" / "mine.py").write_text("keep me")
    with pytest.raises(FileExistsError, match=r"also holds \['mine.py'\]"):
        lay_out(site, tmp_path / "work")
    assert (tmp_path / "work" / "mine.py").read_text() == "keep me"
