"""A print that reaches the notebook in pieces is shown as printed
(``join_streams`` in docs/_ext/book_build.py), where myst-nb's own merge
breaks the line at every piece."""

from pathlib import Path

from book_build import join_streams  # docs/_ext, on pytest's pythonpath
from nbformat import NotebookNode

ROOT = Path(__file__).resolve().parents[2]


def stream(text: str, name: str = "stdout") -> NotebookNode:
    return NotebookNode(output_type="stream", name=name, text=text)


def split_print() -> list[NotebookNode]:
    # print("pixels ", (3, 224, 224)) under load: two messages, then a warning
    return [stream("pixels  "), stream("(3, 224, 224)\n"), stream("w\n", "stderr")]


def test_a_split_print_is_one_line():
    outputs = split_print()
    shown = join_streams(outputs)
    assert [o["text"] for o in shown] == ["pixels  (3, 224, 224)\n", "w\n"]
    assert outputs[0]["text"] == "pixels  "  # the saved notebook keeps its chunks


def test_myst_nb_alone_breaks_the_line():
    from myst_nb.core.utils import coalesce_streams

    assert coalesce_streams(split_print())[0]["text"] == "pixels\n(3, 224, 224)\n"


def test_carriage_returns_and_stream_order():
    outputs = [stream("w\n", "stderr"), stream("0%\r50%\r100%\n")]
    assert [o["text"] for o in join_streams(outputs)] == ["100%\n", "w\n"]


def test_the_build_uses_it():
    import book_build
    from myst_nb.core import render

    book_build.use_joined_streams()
    assert render.coalesce_streams is book_build.join_streams
