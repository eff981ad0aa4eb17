"""Gates for the prose: measured numbers come from the execution, zh uses one term per concept.

Usage: python -m tools.check_prose [DOCS_DIR]   (exit 1 and a list of problems)

Measured numbers
    A number in prose with a unit of measurement (s, ms, %, x/×, 倍, MiB,
    GB/s, FLOP/s, nats, ...) or a duration in words ("half a minute",
    "半分钟") reports a measurement or a computed result, so it must be glued
    from the execution (``{glue:text}`key```), never typed. A figure quoted
    from the literature is the one exception: wrap it in the ``{lit}`` role,
    and the same paragraph must cite its source with ``{cite:p}``/``{cite:t}``.
    Shapes written as ``16 × 16`` are not measurements.

Terms
    The zh glossary (``docs/zh/glossary.md``) is the single source of zh
    terms. An entry may list the other translations a reader meets elsewhere
    in a line ``别处也写作：A、B。``; those variants must not appear in the
    zh prose (code, inline code and math are not prose).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from .page_model import is_citation, read_page

UNITS = (
    r"ms|µs|μs|ns|s|sec|seconds?|minutes?|mins?|hours?|h|秒钟?|毫秒|微秒|纳秒|分钟|小时"
    r"|%|％|percent|个百分点|×|x|times|倍"
    r"|[KMGT]i?B(?:/s)?|bytes?|字节"
    r"|[GTPM]?FLOPs?(?:/s)?|nats?|bits?|比特|奈特|tok/s|tokens/s"
)
NUMBER = r"\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?"
MEASURED = re.compile(
    rf"(?<![A-Za-z0-9_.\-]){NUMBER}(?:\s*[-–~]\s*{NUMBER})?\s?(?:{UNITS})(?![A-Za-z0-9_/])(?!\s*{NUMBER})"
)
SPELLED_DURATION = re.compile(
    r"\b(?:half an? (?:minute|second|hour)|(?:a|one) (?:minute|hour)"
    r"|(?:two|three|a few|several|many) (?:seconds|minutes|hours))\b"
    r"|[半一二两三四五几数十]+(?:分钟|秒钟|小时)",
    re.I,
)
GLOSSARY_VARIANTS = re.compile(r"别处也写作：([^。\n]+)。")
# A glossary entry names its English term ("英文：token。") and its variants; neither is prose.
GLOSSARY_NAMES = re.compile(r"英文：[^。\n]+。|别处也写作：[^。\n]+。")
TERM_LINE = re.compile(r"^(\S[^\n]*)$")


def measured_number_problems(docs: Path) -> list[str]:
    """Typed measurement numbers, and literature figures without a citation."""
    problems = []
    for lang in ("zh", "en"):
        for path in sorted((docs / lang).rglob("*.md")):
            name = f"{lang}/{path.relative_to(docs / lang).as_posix()}"
            for para in read_page(path).paragraphs:
                for m in [
                    *MEASURED.finditer(para.text),
                    *SPELLED_DURATION.finditer(para.text),
                ]:
                    line = para.line + para.text[: m.start()].count("\n")
                    problems.append(
                        f"{name}:{line}: typed measurement {m.group(0)!r}: glue it from the "
                        "execution, or mark a quoted literature figure with {lit} and cite it"
                    )
                roles = [role for role, _ in para.roles]
                if "lit" in roles and not any(is_citation(r) for r in roles):
                    problems.append(
                        f"{name}:{para.line}: literature figure "
                        f"{[c for r, c in para.roles if r == 'lit']} has no {{cite}} "
                        "in its paragraph"
                    )
    return problems


def glossary_terms(glossary: Path) -> dict[str, list[str]]:
    """Map each zh glossary term to the variants its entry lists."""
    terms: dict[str, list[str]] = {}
    current = None
    text = glossary.read_text(encoding="utf-8")
    body = text.split("```{glossary}", 1)[1].split("\n```", 1)[0]
    for line in body.split("\n")[1:]:
        if line.strip() and not line[0].isspace():
            current = line.strip()
            terms[current] = []
        elif current and (m := GLOSSARY_VARIANTS.search(line)):
            terms[current] += [v.strip() for v in m.group(1).split("、") if v.strip()]
    return terms


def _variant_pattern(variant: str) -> re.Pattern:
    # Latin variants match whole words (token, tokens), not parts of others.
    if re.fullmatch(r"[A-Za-z ]+", variant):
        return re.compile(
            rf"(?<![A-Za-z0-9_]){re.escape(variant)}s?(?![A-Za-z0-9_])", re.I
        )
    return re.compile(re.escape(variant))


def term_problems(docs: Path) -> list[str]:
    """Every use of a glossary term's variant in the zh prose."""
    glossary = docs / "zh" / "glossary.md"
    if not glossary.exists():
        return []
    variants = [
        (term, v, _variant_pattern(v))
        for term, vs in glossary_terms(glossary).items()
        for v in vs
    ]
    problems = []
    for path in sorted((docs / "zh").rglob("*.md")):
        name = f"zh/{path.relative_to(docs / 'zh').as_posix()}"
        for para in read_page(path).paragraphs:
            # The glossary's own lists of variants are blanked, not skipped.
            text = GLOSSARY_NAMES.sub(lambda m: " " * len(m.group(0)), para.text)
            for term, _variant, pattern in variants:
                for m in pattern.finditer(text):
                    line = para.line + text[: m.start()].count("\n")
                    problems.append(
                        f"{name}:{line}: {m.group(0)!r} is a variant of the "
                        f"glossary term {term!r}; write {term!r}"
                    )
    return problems


def prose_problems(docs: Path) -> list[str]:
    return measured_number_problems(docs) + term_problems(docs)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    docs = Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / "docs"
    problems = prose_problems(docs)
    for p in problems:
        print(f"prose: {p}")
    print(f"{len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
