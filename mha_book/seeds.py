"""A measurement over several random draws: every run kept, the range stated.

A number that depends on a random draw (an initialisation, sampled inputs, a
training run) is one value of a distribution. The book states such a number
as its range over seeds, never as one draw: :func:`over_seeds` runs a
measurement once per seed, with torch's generator seeded before each run, and
returns a :class:`Spread` of every value (a dict of them when the measurement
returns several numbers from one draw). The pages print ``spread.range_text()``
and glue it; they assert only what holds for every seed (``spread.lo``,
``spread.hi``).

The caller's random state is left as it was, so a page's later cells draw
the same numbers whether or not a measurement ran before them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from numbers import Integral
from statistics import median

import torch

__all__ = ["Spread", "over_seeds"]


@dataclass(frozen=True)
class Spread:
    """Every value a measurement gave, one per seed.

    Args:
        seeds: the seeds, in the order they ran.
        values: the value each seed gave.

    Example:
        >>> s = Spread(seeds=(0, 1, 2), values=(3.0, 1.0, 2.0))
        >>> s.lo, s.median, s.hi
        (1.0, 2.0, 3.0)
        >>> s.range_text("{:.1f}")
        '1.0–3.0'
    """

    seeds: tuple[int, ...]
    values: tuple[float, ...]

    @property
    def lo(self) -> float:
        """The smallest value over the seeds."""
        return min(self.values)

    @property
    def hi(self) -> float:
        """The largest value over the seeds."""
        return max(self.values)

    @property
    def median(self) -> float:
        """The median over the seeds."""
        return median(self.values)

    def range_text(self, fmt: str = "{:.2f}") -> str:
        """``lo–hi`` formatted with ``fmt`` (one value when they agree at that
        precision); ``[lo, hi]`` when the low end carries a sign, where a dash
        would read as a minus. A zero never carries a minus.

        Example:
            >>> Spread(seeds=(0, 1), values=(0.12, 0.3)).range_text()
            '0.12–0.30'
            >>> Spread(seeds=(0, 1), values=(-0.012, -0.001)).range_text()
            '[-0.01, 0.00]'
            >>> Spread(seeds=(0,), values=(-0.001,)).range_text()
            '0.00'
            >>> Spread(seeds=(0, 1), values=(0.1, 0.4)).range_text("{:+.1f}")
            '[+0.1, +0.4]'
        """
        lo, hi = (_no_negative_zero(fmt.format(v)) for v in (self.lo, self.hi))
        if lo == hi:
            return lo
        return f"[{lo}, {hi}]" if lo[:1] in "+-" else f"{lo}–{hi}"

    def __str__(self) -> str:
        return f"{self.range_text()} over {len(self.seeds)} seeds"


def _no_negative_zero(text: str) -> str:
    """``-0.00`` as ``0.00`` (``+0.00`` for a signed format): a value that rounds to
    zero has no sign."""
    digits = text.lstrip("+-")
    if text[:1] == "-" and not any(c in "123456789" for c in digits):
        return digits
    return text


def over_seeds(
    measure: Callable[[int], float | Mapping[str, float]],
    seeds: int | Iterable[int] = 5,
) -> Spread | dict[str, Spread]:
    """Run ``measure(seed)`` once per seed and keep every value.

    Before each run, torch's global generator is seeded with ``seed``; after
    the last, the caller's random state is restored.

    Args:
        measure: the measurement; takes the seed, returns a number, or a dict
            of numbers measured on the same draw (the same keys every time).
        seeds: how many seeds (0, 1, ..., n - 1) or which.

    Returns:
        A :class:`Spread`, or a dict of them with ``measure``'s keys.

    Raises:
        ValueError: no seeds; a value that is NaN or infinite; keys that change
            from one seed to the next.

    Shape:
        One value per seed: ``len(spread.values) == len(spread.seeds)``.

    Example:
        >>> spread = over_seeds(lambda seed: torch.randn(1000).std().item(), 4)
        >>> len(spread.values), 0.9 < spread.lo <= spread.hi < 1.1
        (4, True)
        >>> both = over_seeds(lambda seed: {"a": seed, "b": 2 * seed}, [1, 2])
        >>> both["b"].values
        (2.0, 4.0)
    """
    if not callable(measure):
        raise TypeError(
            f"measure: expected a function of the seed, got {type(measure).__name__}"
        )
    seed_list = _seed_list(seeds)
    runs: list[dict[str, float]] = []
    single = True
    with torch.random.fork_rng(devices=[]):
        for seed in seed_list:
            torch.manual_seed(seed)
            value = measure(seed)
            single = not isinstance(value, Mapping)
            run = value if isinstance(value, Mapping) else {"": value}
            runs.append(_numbers(run, seed))
    keys = list(runs[0])
    for seed, run in zip(seed_list, runs, strict=True):
        if list(run) != keys:
            raise ValueError(
                f"measure: expected the same keys for every seed, got {keys} "
                f"for seed {seed_list[0]} and {list(run)} for seed {seed}"
            )
    spreads = {
        key: Spread(tuple(seed_list), tuple(run[key] for run in runs)) for key in keys
    }
    return spreads[""] if single else spreads


def _seed_list(seeds: object) -> list[int]:
    """``seeds`` as a non-empty list of int seeds, or a named error."""
    if isinstance(seeds, Integral) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ValueError(f"seeds: expected at least one seed, got {seeds}")
        return list(range(int(seeds)))
    if isinstance(seeds, str | bytes | bool) or not isinstance(seeds, Iterable):
        raise TypeError(
            "seeds: expected a number of seeds or an iterable of int seeds, "
            f"got {type(seeds).__name__}"
        )
    seed_list = list(seeds)
    if not seed_list:
        raise ValueError("seeds: expected at least one seed, got none")
    for seed in seed_list:
        if not isinstance(seed, Integral) or isinstance(seed, bool):
            raise TypeError(f"seeds: expected int seeds, got {seed!r}")
    return [int(seed) for seed in seed_list]


def _numbers(run: Mapping[str, object], seed: int) -> dict[str, float]:
    """One run's values as finite floats, or an error naming the key and seed."""
    out = {}
    for key, value in run.items():
        name = f"measure[{key!r}]" if key else "measure"
        try:
            out[key] = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise TypeError(
                f"{name}: expected a number for seed {seed}, got {type(value).__name__}"
            ) from None
        if not math.isfinite(out[key]):
            raise ValueError(f"{name}: gave {value} for seed {seed}")
    return out
