"""Write derived data files, or check that the shipped ones match (tools/ship_*.py)."""

from __future__ import annotations

from pathlib import Path


def write_or_check(files: dict[str, bytes], out: Path, root: Path, check: bool) -> int:
    """Write ``files`` into ``out``; with ``check``, compare instead and write nothing.

    Returns the exit status: 1 if a checked file is missing or differs, else 0.
    """
    if check:
        differ = [
            n
            for n, data in files.items()
            if not (out / n).exists() or (out / n).read_bytes() != data
        ]
        print(
            "differs: " + ", ".join(differ) if differ else f"{out} matches its source"
        )
        return 1 if differ else 0
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / name).write_bytes(data)
    print(f"wrote {len(files)} files to {out.relative_to(root)}")
    return 0
