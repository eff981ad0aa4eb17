"""Dates written the ways people write them, in English and in Chinese, each
mapped to one form, ``YYYY-MM-DD`` (chapter 16-cross-attention).

Every example knows where in its source each field is written
(``DateExample.spans``) and so which source characters carry each output
character (:meth:`DateExample.carriers`): the ground truth an alignment is
measured against. The fields come in different orders (day, month, year in
``"2 December 2026"``; year, month, day in ``"2026年12月2日"``), so the
alignment is not a diagonal.

Train and test dates are kept apart: :func:`date_split` holds out one date in
ten, in every format.

Example:
    >>> import datetime
    >>> ex = render_date(datetime.date(2026, 12, 2), "zh_words")
    >>> ex.source, ex.target
    ('二〇二六年十二月二日星期三', '2026-12-02')
    >>> ex.carriers()[5:7]  # the month's digits are carried by "十二"
    [(5, 7), (5, 7)]
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass

from mha_book._checks import check_positive_int

__all__ = [
    "FORMATS",
    "TARGET_FIELDS",
    "DateExample",
    "render_date",
    "date_split",
    "date_vocabulary",
]

MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
)  # fmt: skip
WEEKDAYS = (
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
)
ZH_DIGITS = "〇一二三四五六七八九"
ZH_WEEKDAYS = "一二三四五六日"  # 星期一 ... 星期日
#: Which field each character of ``YYYY-MM-DD`` comes from ("-": none).
TARGET_FIELDS = "YYYY-MM-DD"
FIRST, LAST = datetime.date(1950, 1, 1), datetime.date(2049, 12, 31)


def _zh_number(n: int) -> str:
    """1 to 31 in Chinese numerals: 二, 十二, 二十, 三十一."""
    tens, ones = divmod(n, 10)
    if tens == 0:
        return ZH_DIGITS[ones]
    return (
        ("" if tens == 1 else ZH_DIGITS[tens])
        + "十"
        + (ZH_DIGITS[ones] if ones else "")
    )


def _pieces(d: datetime.date, fmt: str) -> list[tuple[str, str]]:
    """The source as ``(text, field)`` pieces; field "" for text that carries none."""
    y, m, day, week = str(d.year), d.month, str(d.day), d.weekday()
    if fmt == "en_long":  # Wednesday, 2 December 2026
        return [(WEEKDAYS[week] + ", ", ""), (day, "D"), (" ", ""), (MONTHS[m - 1], "M"),
                (" ", ""), (y, "Y")]  # fmt: skip
    if fmt == "en_short":  # Dec. 2, 2026
        return [
            (MONTHS[m - 1][:3] + ".", "M"),
            (" ", ""),
            (day, "D"),
            (", ", ""),
            (y, "Y"),
        ]
    if fmt == "num_dmy":  # d/m/y 2/12/2026: the order is stated
        return [
            ("d/m/y ", ""),
            (day, "D"),
            ("/", ""),
            (str(m), "M"),
            ("/", ""),
            (y, "Y"),
        ]
    if fmt == "num_mdy":  # m/d/y 12/2/2026
        return [
            ("m/d/y ", ""),
            (str(m), "M"),
            ("/", ""),
            (day, "D"),
            ("/", ""),
            (y, "Y"),
        ]
    if fmt == "zh_digits":  # 2026年12月2日
        return [(y, "Y"), ("年", ""), (str(m), "M"), ("月", ""), (day, "D"), ("日", "")]
    if fmt == "zh_words":  # 二〇二六年十二月二日星期三
        year = "".join(ZH_DIGITS[int(c)] for c in y)
        return [(year, "Y"), ("年", ""), (_zh_number(m), "M"), ("月", ""),
                (_zh_number(d.day), "D"), ("日星期" + ZH_WEEKDAYS[week], "")]  # fmt: skip
    raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")


#: The source formats, English first.
FORMATS = ("en_long", "en_short", "num_dmy", "num_mdy", "zh_digits", "zh_words")


@dataclass(frozen=True)
class DateExample:
    """One date written one way: ``source`` -> ``target``.

    ``spans`` maps each field ("Y", "M", "D") to its ``[start, end)`` in ``source``.
    """

    date: datetime.date
    fmt: str
    source: str
    spans: dict[str, tuple[int, int]]

    @property
    def target(self) -> str:
        return self.date.isoformat()  # YYYY-MM-DD

    def carriers(self) -> list[tuple[int, int] | None]:
        """For each target character, the source span that carries it (None for "-").

        A digit of the year, the month or the day is determined by the whole
        field as written (the "0" of "02" by the day being one digit long).
        """
        return [self.spans.get(field) for field in TARGET_FIELDS]


def render_date(date: datetime.date, fmt: str) -> DateExample:
    """``date`` written in format ``fmt`` (one of :data:`FORMATS`).

    Example:
        >>> ex = render_date(datetime.date(2026, 12, 2), "en_long")
        >>> ex.source, ex.target, ex.spans["M"]
        ('Wednesday, 2 December 2026', '2026-12-02', (13, 21))
    """
    if not isinstance(date, datetime.date) or isinstance(date, datetime.datetime):
        raise TypeError(f"date must be a datetime.date, got {type(date).__name__}")
    if not FIRST <= date <= LAST:
        raise ValueError(f"date must be in [{FIRST}, {LAST}], got {date}")
    source, spans = "", {}
    for text, field in _pieces(date, fmt):
        if field:
            spans[field] = (len(source), len(source) + len(text))
        source += text
    return DateExample(date, fmt, source, spans)


def date_split(
    test_every: int = 10, seed: int = 0
) -> tuple[list[datetime.date], list[datetime.date]]:
    """Every date from 1950 to 2049, shuffled and split: the first
    ``n // test_every`` of the n dates are held out for testing, in every
    format. Returns ``(train, test)``.

    Example:
        >>> train, test = date_split()
        >>> len(train), len(test), set(train) & set(test)
        (32873, 3652, set())
    """
    if check_positive_int(test_every, "test_every") < 2:
        raise ValueError(
            f"test_every must be at least 2 (1 leaves nothing to train on), got {test_every}"
        )
    check_positive_int(seed, "seed", allow_zero=True)  # None would split at random
    days = (LAST - FIRST).days + 1
    dates = [FIRST + datetime.timedelta(i) for i in range(days)]
    random.Random(seed).shuffle(dates)
    held = len(dates) // test_every
    return dates[held:], dates[:held]


def date_vocabulary() -> list[str]:
    """``"<pad>"``, ``"<s>"`` (start of target), then every character of the
    sources and targets, sorted: the same list on every run.

    Example:
        >>> vocab = date_vocabulary()
        >>> len(vocab), vocab[:3]
        (62, ['<pad>', '<s>', ' '])
    """
    year = [datetime.date(2000, 1, 1) + datetime.timedelta(i) for i in range(366)]
    chars = set("0123456789-") | set(ZH_DIGITS)  # every digit of every year
    for d in year:
        for fmt in FORMATS:
            chars |= set(render_date(d, fmt).source)
    return ["<pad>", "<s>", *sorted(chars)]
