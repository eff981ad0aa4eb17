"""Check that both editions print the same numbers.

Usage: python -m tools.check_numbers [BUILD_DIR]   (default _build; exit 1 on a mismatch)

Both editions execute the same code cells, so every number a cell prints and
every glued value must be the same in zh and en; only the words around them
change with the language. A difference means that something was measured
twice (a timing taken once per edition) or depends on the edition when it
should not. The executed notebooks are read from
``BUILD_DIR/jupyter_execute/{zh_CN,en}``: ``PAGE.ipynb`` (the outputs of
every code cell, text only) and ``PAGE.glue.json`` (the glued values; a
figure's text is its size).

Numbers are taken in order from each output; a number in a language's
labels (``第 3 层`` / ``layer 3``) is allowed as long as both editions print
it in the same place. Words that carry a number in one language only are
listed in :data:`EXEMPT`, each with its reason.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EDITIONS = ("zh_CN", "en")  # folder names under jupyter_execute (the languages)

# A number: digits with thousands separators, decimals, exponent; a sign only
# where it is not a hyphen ("0-9", "Llama-2"); no digits of a name ("float64").
NUMBER = re.compile(
    r"(?:(?<![0-9A-Za-z_)\]])[-+])?(?<![0-9A-Za-z_.])"
    r"(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
)


@dataclass(frozen=True)
class Exemption:
    """Words of one edition that hold a number the other edition writes differently.

    Before the numbers of a page's outputs and glued values are read, the
    matches of ``pattern`` in edition ``lang`` are replaced by ``replace``
    (a label with a digit in one language only is dropped; numbers the
    languages put in another order are put in the other edition's order).
    The pattern names the words around the number, so the measured numbers
    of the same output are still compared.
    """

    reason: str
    lang: str  # "zh" or "en"
    pattern: str
    replace: str = " "


# page -> its exemptions. Each is a label printed by a pick() of the page.
EXEMPT: dict[str, list[Exemption]] = {
    "03-multi-head": [
        Exemption(
            "a column head names head 0 in zh only", "zh", r"并入头 0(?=\s+直接去掉)"
        )
    ],
    "04-implementation": [
        Exemption("zh writes 'exact zeros' with a digit", "zh", r"恰好为 0 的权重")
    ],
    "11-pretrained-bert": [
        Exemption(
            "zh says 'of 72, 32', en '32 of 72'",
            "zh",
            r"(\d+) 个中的 (\d+) 个",
            r"\2 of \1",
        )
    ],
    "12-flash-attention": [
        Exemption("zh writes 'all zero' with a digit", "zh", r"行全为 0")
    ],
    "15-tang-poems": [
        Exemption(
            "zh writes the line counts as words (四句, 八句)", "en", r"of [48] lines"
        ),
        Exemption("zh writes 'two lines' as a word (两句)", "en", r"after 2 lines"),
    ],
}


def numbers(text: str) -> list[str]:
    """The numbers in ``text``, in order, as written (thousands separators dropped).

    >>> numbers("T = 1,024: 3.5 ms, 1e-05 error; 第 2 层")
    ['1024', '3.5', '1e-05', '2']
    """
    return [n.replace(",", "") for n in NUMBER.findall(text)]


def _text(output: dict) -> str:
    """The text of one output: a stream, or the text/plain of a result or display."""
    if output.get("output_type") == "stream":
        text = output.get("text", "")
    elif output.get("output_type") == "error":
        text = "\n".join(output.get("traceback", []))
    else:
        text = output.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else text


def _shown(outputs: list[dict]) -> list[str]:
    """The texts of a cell's outputs as the page shows them.

    The page joins the chunks of each stream into one text, in the order they
    came (``join_streams`` in ``docs/_ext/book_build.py``); so does this, so a
    print that reached the notebook in two pieces counts once, whole.

    >>> _shown([{"output_type": "stream", "name": "stdout", "text": "T = "},
    ...         {"output_type": "stream", "name": "stdout", "text": "4\\n"},
    ...         {"output_type": "execute_result", "data": {"text/plain": "2"}}])
    ['T = 4\\n', '2']
    """
    texts: list[str] = []
    stream_at: dict[str, int] = {}
    for output in outputs:
        name = output.get("name", "")
        if output.get("output_type") == "stream" and name in stream_at:
            texts[stream_at[name]] += _text(output)
            continue
        if output.get("output_type") == "stream":
            stream_at[name] = len(texts)
        texts.append(_text(output))
    return texts


def cell_outputs(notebook: Path) -> list[str]:
    """The text each code cell printed, one string per code cell, in order."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [
        "\n".join(_shown(cell.get("outputs", [])))
        for cell in cells
        if cell["cell_type"] == "code"
    ]


def glued(glue_file: Path) -> dict[str, str]:
    """The text/plain of every glued value of a page (empty if it glues nothing)."""
    if not glue_file.exists():
        return {}
    data = json.loads(glue_file.read_text(encoding="utf-8"))
    return {key: _text(value) for key, value in data.items()}


def _exempted(page: str, lang: str, text: str) -> str:
    """``text`` of edition ``lang`` (zh or en) with the page's exemptions applied."""
    for exemption in EXEMPT.get(page, []):
        if exemption.lang == lang:
            text = re.sub(exemption.pattern, exemption.replace, text)
    return text


def _differ(page: str, where: str, zh: str, en: str) -> str | None:
    """A problem if the numbers of ``zh`` and ``en`` differ, after any exemption."""
    a = numbers(_exempted(page, "zh", zh))
    b = numbers(_exempted(page, "en", en))
    if a == b:
        return None
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    first = (
        f"number {i + 1}: zh {a[i] if i < len(a) else 'none'}, "
        f"en {b[i] if i < len(b) else 'none'}"
    )
    return f"{page}: {where}: the editions print different numbers ({first})"


def page_problems(page: str, zh_dir: Path, en_dir: Path) -> list[str]:
    """Where ``page``'s numbers differ between the zh and en notebooks."""
    problems = []
    zh_cells = cell_outputs(zh_dir / f"{page}.ipynb")
    en_cells = cell_outputs(en_dir / f"{page}.ipynb")
    if len(zh_cells) != len(en_cells):
        return [f"{page}: {len(zh_cells)} code cells in zh, {len(en_cells)} in en"]
    for i, (zh, en) in enumerate(zip(zh_cells, en_cells), start=1):
        problems.append(_differ(page, f"cell {i}", zh, en))
    zh_glue = glued(zh_dir / f"{page}.glue.json")
    en_glue = glued(en_dir / f"{page}.glue.json")
    if set(zh_glue) != set(en_glue):
        only = sorted(set(zh_glue) ^ set(en_glue))
        problems.append(f"{page}: glue keys in one edition only: {', '.join(only)}")
    for key in sorted(set(zh_glue) & set(en_glue)):
        problems.append(_differ(page, f"glue {key}", zh_glue[key], en_glue[key]))
    return [p for p in problems if p]


def number_problems(zh_dir: Path, en_dir: Path) -> list[str]:
    """Every difference in printed or glued numbers between two editions' notebooks.

    Args:
        zh_dir: The zh edition's executed notebooks (``PAGE.ipynb``, ``PAGE.glue.json``).
        en_dir: The en edition's, with the same page names.

    Returns:
        One line per difference (empty when the editions agree), naming the
        page, the code cell or glue key, and the first number that differs.
    """
    zh_pages = {p.stem for p in zh_dir.glob("*.ipynb")}
    en_pages = {p.stem for p in en_dir.glob("*.ipynb")}
    problems = [
        f"{page}: executed in one edition only (zh_dir={zh_dir}, en_dir={en_dir})"
        for page in sorted(zh_pages ^ en_pages)
    ]
    for page in sorted(zh_pages & en_pages):
        problems += page_problems(page, zh_dir, en_dir)
    return problems


def main(argv: list[str]) -> int:
    build = Path(argv[0]) if argv else ROOT / "_build"
    folders = [build / "jupyter_execute" / lang for lang in EDITIONS]
    missing = [str(f) for f in folders if not f.is_dir()]
    if missing:
        print(f"no executed notebooks: expected {', '.join(missing)}; build first")
        return 1
    problems = number_problems(*folders)
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
