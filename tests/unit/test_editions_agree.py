"""Both editions print the same numbers: tools/check_numbers.py, and a broken copy it catches."""

import json
from pathlib import Path

from tools import check_numbers
from tools.check_numbers import EDITIONS, Exemption, number_problems, numbers

ROOT = Path(__file__).resolve().parents[2]


def stream(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text}


def notebook(*outputs: list[dict]) -> dict:
    cells = [{"cell_type": "markdown", "source": "prose", "metadata": {}}]
    cells += [
        {"cell_type": "code", "source": "", "metadata": {}, "outputs": list(out)}
        for out in outputs
    ]
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def glue_value(key: str, text: str) -> dict:
    record = {"scrapbook": {"name": key}}
    return {
        "output_type": "display_data",
        "metadata": record,
        "data": {"text/plain": text},
    }


def write_editions(root: Path, page: str, zh: tuple, en: tuple) -> tuple[Path, Path]:
    """``zh``/``en``: (notebook, glue dict) of one page; returns the two folders."""
    folders = []
    for lang, (nb, glue) in zip(EDITIONS, (zh, en)):
        folder = root / lang
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{page}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
        if glue is not None:
            (folder / f"{page}.glue.json").write_text(
                json.dumps(glue), encoding="utf-8"
            )
        folders.append(folder)
    return folders[0], folders[1]


def timing_page(label: str, ms: str, ratio: str) -> tuple[dict, dict]:
    nb = notebook([stream(f"{label}\n   64      0.13\n 1024  {ms}\n")])
    return nb, {"time-ratio": glue_value("time-ratio", f"'{ratio}'")}


def test_numbers_are_read_in_order_and_labels_do_not_count():
    assert numbers("T = 1,024: 3.5 ms, 1e-05; 第 2 层") == ["1024", "3.5", "1e-05", "2"]
    assert numbers("positions 0-9, 10+; float64, Llama-2-7B") == [
        "0",
        "9",
        "10",
        "2",
        "7",
    ]
    assert numbers("x = -0.5 (-3)") == ["-0.5", "-3"]


def test_the_same_numbers_under_different_labels_pass(tmp_path):
    zh, en = write_editions(
        tmp_path,
        "05-verification",
        timing_page("时间 ms", "6.09", "3.9"),
        timing_page("time ms", "6.09", "3.9"),
    )
    assert number_problems(zh, en) == []


def test_one_timing_measured_twice_is_caught(tmp_path):
    zh, en = write_editions(
        tmp_path,
        "05-verification",
        timing_page("时间 ms", "6.09", "3.9"),
        timing_page("time ms", "59.04", "16.3"),  # the en edition timed it again
    )
    problems = number_problems(zh, en)
    assert problems == [
        "05-verification: cell 1: the editions print different numbers "
        "(number 4: zh 6.09, en 59.04)",
        "05-verification: glue time-ratio: the editions print different numbers "
        "(number 1: zh 3.9, en 16.3)",
    ]


def test_missing_pages_cells_and_glue_keys_are_reported(tmp_path):
    zh, en = write_editions(
        tmp_path,
        "12-flash-attention",
        (notebook([stream("1\n")], [stream("2\n")]), {"a": glue_value("a", "'1'")}),
        (notebook([stream("1\n")]), {}),
    )
    (zh / "13-mqa-gqa-kv-cache.ipynb").write_text(json.dumps(notebook()), "utf-8")
    problems = number_problems(zh, en)
    assert problems[0].startswith("13-mqa-gqa-kv-cache: executed in one edition only")
    assert problems[1] == "12-flash-attention: 2 code cells in zh, 1 in en"


def test_a_glued_value_differing_alone_is_caught(tmp_path):
    zh, en = write_editions(
        tmp_path,
        "13-mqa-gqa-kv-cache",
        (notebook(), {"speedup-min": glue_value("speedup-min", "'3.4'")}),
        (notebook(), {"speedup-min": glue_value("speedup-min", "'3.1'")}),
    )
    assert number_problems(zh, en) == [
        "13-mqa-gqa-kv-cache: glue speedup-min: the editions print different "
        "numbers (number 1: zh 3.4, en 3.1)"
    ]


def test_an_exemption_drops_only_its_words(tmp_path, monkeypatch):
    page = "15-tang-poems"
    exemption = Exemption("zh writes 'two lines' as a word", "en", r"after 2 lines")
    monkeypatch.setitem(check_numbers.EXEMPT, page, [exemption])

    def pair(zh_share: str, en_share: str):
        return write_editions(
            tmp_path / zh_share / en_share,
            page,
            (notebook([stream(f"T = 0.5: 两句就结束的 {zh_share}%\n")]), None),
            (notebook([stream(f"T = 0.5: {en_share}% end after 2 lines\n")]), None),
        )

    assert number_problems(*pair("70", "70")) == []
    # the exempted words are gone, the measured share is still compared
    assert len(number_problems(*pair("70", "71"))) == 1
    monkeypatch.setitem(check_numbers.EXEMPT, page, [])
    assert len(number_problems(*pair("70", "70"))) == 1  # without it: "2" differs


def test_an_exemption_can_put_numbers_in_the_other_editions_order(tmp_path):
    page = "11-pretrained-bert"  # the real exemption: "72 个中的 32 个" / "32 of 72"

    def pair(zh_line: str, en_line: str):
        return write_editions(
            tmp_path / en_line.replace(" ", "_"),
            page,
            (notebook([stream(zh_line)]), None),
            (notebook([stream(en_line)]), None),
        )

    assert number_problems(*pair("头： 72 个中的 32 个", "heads: 32 of 72")) == []
    assert len(number_problems(*pair("头： 72 个中的 32 个", "heads: 31 of 72"))) == 1


def test_stream_chunks_are_read_as_one_text(tmp_path):
    # A busy kernel sends one print in pieces (a number split across two
    # chunks here); the other edition's output came in one chunk. The page
    # joins the chunks (join_streams in docs/_ext/book_build.py), and so does
    # the check.
    chunks = [stream("a = 1\nb = "), stream("2\nc = 3"), stream("1\n")]
    zh, en = write_editions(
        tmp_path,
        "04-implementation",
        (notebook(chunks), None),
        (notebook([stream("a = 1\nb = 2\nc = 31\n")]), None),
    )
    assert number_problems(zh, en) == []


def test_every_exemption_names_a_reason_an_edition_and_a_pattern():
    for page, exemptions in check_numbers.EXEMPT.items():
        assert (ROOT / "docs" / "en" / f"{page}.md").exists(), page
        for exemption in exemptions:
            assert exemption.reason and exemption.pattern
            assert exemption.lang in ("zh", "en"), exemption
