"""Derive the handwritten digits (mha_book/data/digits/) from scikit-learn's wheel.

The images are the test set of the UCI Optical Recognition of Handwritten
Digits (Alpaydin and Kaynak, 1998; CC BY 4.0): 1,797 images of 8×8 pixels,
each pixel a count 0..16, as scikit-learn 1.9.1 packs them in its wheel
(``sklearn/datasets/data/digits.csv.gz``, one image a line: 64 pixels row by
row, then the digit). The book ships that file unchanged, whose SHA-256 this
tool checks against the one recorded here, with a fixed stratified split into
training and test images, and regenerates every file byte for byte::

    python -m tools.ship_digits            # from the installed scikit-learn 1.9.1
    python -m tools.ship_digits --check    # regenerate and compare, write nothing
    python -m tools.ship_digits --wheel scikit_learn-1.9.1-...whl   # any wheel of it

The book itself needs no scikit-learn: it reads the shipped files
(:mod:`mha_book.vision.data`). Written: ``digits.csv.gz`` (the wheel's file),
``split.json`` (the test images' indices), ``digest.json`` (SHA-256 of the
text, of the split, and the counts, checked by the tests) and ``SOURCE.md``
(provenance, licence, citation, counts).

Split: within each digit, the images are ordered by the SHA-256 of
``"mha_book digits <seed> <index>"`` and the first quarter (rounded) is the
test set; no random generator is involved, so the split is the same on
every platform and version.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.metadata
import importlib.util
import json
import zipfile
from collections import Counter
from pathlib import Path

from .derived_files import write_or_check

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "mha_book" / "data" / "digits"
PACKAGE, VERSION = "scikit-learn", "1.9.1"
DATA, DESCR = "sklearn/datasets/data/digits.csv.gz", "sklearn/datasets/descr/digits.rst"
#: SHA-256 of the two files as the wheel's RECORD lists them (same in every wheel).
SHA256 = {
    DATA: "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22",
    DESCR: "8e7e58d612958f7d9b0de1931ed68b211703eeb239e808f3d82c5f0837cc0222",
}
SPLIT_SEED, TEST_SHARE = 0, 0.25
SIDE, LEVELS = 8, 17  # 8×8 pixels, counts 0..16


def read_installed() -> dict[str, bytes]:
    """The two files from the installed scikit-learn, which must be 1.9.1."""
    try:
        found = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise SystemExit(f"needs {PACKAGE}=={VERSION}, or --wheel PATH") from None
    if found != VERSION:
        raise SystemExit(f"{PACKAGE} {found} found; the data is made from {VERSION}")
    spec = importlib.util.find_spec("sklearn")
    assert spec is not None and spec.submodule_search_locations  # installed
    site = Path(list(spec.submodule_search_locations)[0]).parent
    return {name: (site / name).read_bytes() for name in (DATA, DESCR)}


def read_wheel(wheel: Path) -> dict[str, bytes]:
    """The two files from a wheel of scikit-learn 1.9.1."""
    if not wheel.name.startswith(f"scikit_learn-{VERSION}-"):
        raise SystemExit(f"--wheel must be a scikit_learn-{VERSION}-*.whl, got {wheel}")
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in (DATA, DESCR)}


def checked(files: dict[str, bytes]) -> dict[str, bytes]:
    """``files``, once each one's SHA-256 is the recorded one."""
    for name, data in files.items():
        if hashlib.sha256(data).hexdigest() != SHA256[name]:
            raise SystemExit(
                f"{name} is not {PACKAGE} {VERSION}'s: its SHA-256 differs"
            )
    return files


def parse(text: str) -> tuple[list[list[int]], list[int]]:
    """The images (64 counts each) and the digits, checked line by line."""
    images, labels = [], []
    for number, line in enumerate(text.splitlines(), 1):
        values = [int(v) for v in line.split(",")]
        if len(values) != SIDE * SIDE + 1 or not 0 <= values[-1] <= 9:
            raise SystemExit(f"{DATA} line {number}: expected 64 pixels and a digit")
        if not all(0 <= v < LEVELS for v in values[:-1]):
            raise SystemExit(f"{DATA} line {number}: a pixel is outside 0..16")
        images.append(values[:-1])
        labels.append(values[-1])
    return images, labels


def stratified_test(labels: list[int], seed: int, share: float) -> list[int]:
    """The test images: in each digit, the first ``share`` (rounded) in hash order.

    >>> stratified_test([0, 0, 0, 0, 1, 1, 1, 1], seed=0, share=0.25)
    [3, 4]
    """
    test = []
    for digit in sorted(set(labels)):
        members = [i for i, label in enumerate(labels) if label == digit]
        members.sort(
            key=lambda i: hashlib.sha256(
                f"mha_book digits {seed} {i}".encode()
            ).digest()
        )
        test += members[: round(share * len(members))]
    return sorted(test)


def derive(files: dict[str, bytes]) -> dict[str, bytes]:
    """The files to ship (name -> bytes), from the wheel's two files."""
    data = checked(files)[DATA]
    text = gzip.decompress(data).decode("ascii")
    images, labels = parse(text)
    test = stratified_test(labels, SPLIT_SEED, TEST_SHARE)
    split = {
        "rule": "per digit, the first quarter (rounded) in the order of "
        f"sha256('mha_book digits {SPLIT_SEED} <index>')",
        "seed": SPLIT_SEED,
        "test": test,
    }
    split_bytes = (json.dumps(split) + "\n").encode()
    per_digit = Counter(labels)
    test_digit = Counter(labels[i] for i in test)
    pixels = Counter(v for image in images for v in image)
    counts = {
        "images": len(images),
        "train": len(images) - len(test),
        "test": len(test),
        "per_digit": [per_digit[d] for d in range(10)],
        "test_per_digit": [test_digit[d] for d in range(10)],
    }
    digest = {
        "file": "digits.csv.gz",
        "source": f"{PACKAGE} {VERSION} (PyPI wheel): {DATA}",
        "file_sha256": SHA256[DATA],
        "text_sha256": hashlib.sha256(text.encode("ascii")).hexdigest(),
        "split_sha256": hashlib.sha256(split_bytes).hexdigest(),
        "side": SIDE,
        "levels": LEVELS,
        **counts,
    }
    stats = {**counts, "zero": pixels[0], "full": pixels[LEVELS - 1]}
    return {
        "digits.csv.gz": data,
        "split.json": split_bytes,
        "digest.json": (json.dumps(digest, indent=2) + "\n").encode(),
        "SOURCE.md": source_md(stats).encode(),
    }


# SOURCE.md, filled in by source_md (a format string: {name} is a value).
SOURCE_MD = """\
# Handwritten digits (UCI optical recognition, 8×8)

`digits.csv.gz`: {images:,} images of handwritten digits, 8×8 pixels each,
one image a line of 65 integers: the 64 pixels row by row, top left first,
each the number of ink pixels (0..16) in a 4×4 block of the 32×32 scan, then
the digit 0..9. Written by `tools/ship_digits.py`, which regenerates every
file here byte for byte (`python -m tools.ship_digits --check`);
`digest.json` records the SHA-256 of the file, of its text and of the
split, and the counts, and the tests check them.

## Source

- Data: E. Alpaydin and C. Kaynak (1998), *Optical Recognition of
  Handwritten Digits*, UCI Machine Learning Repository,
  <https://doi.org/10.24432/C50P49>
  (<https://archive.ics.uci.edu/dataset/80/optical+recognition+of+handwritten+digits>).
  These are the {images:,} images of its test set, `optdigits.tes`, written
  by 13 people (the training set's 3,823 images were written by 30 others).
- Licence: Creative Commons Attribution 4.0 International (CC BY 4.0),
  <https://creativecommons.org/licenses/by/4.0/>, as the UCI repository
  states for this data set. The file is not changed; the split and the
  counts are ours.
- Copy: the file `{DATA}` of the PyPI wheel of
  {PACKAGE} {VERSION} (the same in every platform's wheel), SHA-256,
  checked by the tool:
  `{sha}`
- Further references (from the wheel's `{DESCR}`):
  C. Kaynak (1995), *Methods of Combining Multiple Classifiers and Their
  Applications to Handwritten Digit Recognition*, MSc thesis, Boğaziçi
  University; E. Alpaydin and C. Kaynak (1998), *Cascading Classifiers*,
  Kybernetika.

## Split

`split.json` lists the test images (indices into the file, from 0). Within
each digit the images are ordered by the SHA-256 of
`mha_book digits {seed} <index>` and the first quarter, rounded, is the test
set: stratified, fixed, and drawn by no random generator.

| digit | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | all |
|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|
| images | {d0} | {images:,} |
| test | {t0} | {test} |
| training | {r0} | {train:,} |

Pixels: {zero:,} of the {pixels:,} are 0 (no ink), {full:,} are 16 (all ink).
"""


def source_md(s: dict) -> str:
    """SOURCE.md: where the digits come from, their licence, split and counts."""
    per, test = s["per_digit"], s["test_per_digit"]
    return SOURCE_MD.format(
        **{k: v for k, v in s.items() if not isinstance(v, list)},
        d0=" | ".join(map(str, per)),
        t0=" | ".join(map(str, test)),
        r0=" | ".join(str(a - b) for a, b in zip(per, test)),
        pixels=s["images"] * SIDE * SIDE,
        seed=SPLIT_SEED,
        sha=SHA256[DATA],
        DATA=DATA,
        DESCR=DESCR,
        PACKAGE=PACKAGE,
        VERSION=VERSION,
    )


def main(argv: list[str] | None = None) -> int:
    assert __doc__ is not None  # the module's docstring (absent only under -OO)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--wheel", type=Path, help="use this scikit-learn 1.9.1 wheel")
    args = parser.parse_args(argv)
    files = derive(read_wheel(args.wheel) if args.wheel else read_installed())
    return write_or_check(files, OUT, ROOT, check=args.check)


if __name__ == "__main__":
    raise SystemExit(main())
