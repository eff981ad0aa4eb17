"""Serving many requests from one KV memory: contiguous reservation against paging.

Taught in chapter 17-inference, after Kwon et al. (2023), who measured that
existing systems stored token states in only 20.4 % to 38.2 % of their KV
cache memory, and that paging (vLLM) left almost none unused.

The simulation counts token slots, not bytes, one decoding step at a time.
Requests wait in arrival order; a waiting request starts when its memory
can be reserved, and then adds one token per step until its output is done.

- ``"max"``: each request reserves ``max_len`` slots, the longest sequence
  the model allows (its output length is unknown in advance);
- ``"pow2"``: it reserves the next power of two of its final length;
- ``"oracle"``: it reserves exactly its final length (a bound no real
  server reaches: it would need to know the output length);
- ``"paged"``: blocks of ``block_size`` slots are taken as tokens arrive, and
  a request starts only if 1 % of the blocks stay free (vLLM's watermark,
  which keeps room for the running requests to grow; with none running
  there is nothing to keep it for, and the first waiting request starts).
  When a running request needs a block and none is free, the request started
  last is sent back to the queue, its blocks freed (vLLM's recomputation).

Every simulation ends within ``sum(output_len)`` steps: the oldest running
request is never sent back (a request alone fits, since ``capacity``
is at least ``max_len``), so each step adds at least one token, and a request sent back
keeps the tokens it had.

The share of reserved slots that hold a token, averaged over the steps, is
the figure Kwon et al. report; the mean number of requests running at once
is what the memory buys.

Legend: P tokens per block, ``max_len`` the longest sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from mha_book._checks import check_positive_int

__all__ = ["RESERVATIONS", "ServingRun", "simulate_serving", "sample_requests"]

#: How a simulated server reserves cache memory for a request (see :func:`simulate_serving`).
RESERVATIONS = ("max", "pow2", "oracle", "paged")


@dataclass(frozen=True)
class ServingRun:
    """What one simulation measured.

    Attributes:
        reservation: One of :data:`RESERVATIONS`.
        steps: Decoding steps until every request finished.
        token_share: Slots holding a token / slots reserved, over all steps.
        mean_running: Requests running at once, averaged over the steps.
        preempted: Times a running request was sent back to the queue
            (paging only); a request can be sent back more than once.
        recomputed: Tokens the requests sent back held, which a server
            must compute again when they restart (paging only; the steps
            do not count this work, nor any prompt's).
    """

    reservation: str
    steps: int
    token_share: float
    mean_running: float
    preempted: int
    recomputed: int


def sample_requests(
    n: int, *, max_len: int, mean_output: int, seed: int = 0
) -> list[tuple[int, int]]:
    """``n`` requests ``(prompt_len, output_len)``: prompts uniform in
    ``[1, max_len / 4]``, outputs geometric with mean ``mean_output``, each
    clipped so that prompt plus output fit in ``max_len``.

    Example:
        >>> reqs = sample_requests(1000, max_len=64, mean_output=8, seed=0)
        >>> all(1 <= p <= 16 and 1 <= p + o <= 64 for p, o in reqs)
        True
    """
    n = check_positive_int(n, "n")
    max_len = check_positive_int(max_len, "max_len")
    if max_len < 4:
        raise ValueError(f"max_len must be at least 4, got {max_len}")
    mean_output = check_positive_int(mean_output, "mean_output")
    g = torch.Generator().manual_seed(check_positive_int(seed, "seed", allow_zero=True))
    prompts = torch.randint(1, max_len // 4 + 1, (n,), generator=g)  # (n,)
    p = 1.0 / mean_output
    u = torch.rand(n, generator=g, dtype=torch.float64)  # (n,) uniform in [0, 1)
    outputs = 1 + torch.floor(torch.log1p(-u) / torch.log1p(torch.tensor(-p)))
    outputs = torch.minimum(outputs.long(), max_len - prompts)  # (n,) fits
    return [(int(a), int(b)) for a, b in zip(prompts, outputs.clamp(min=1))]


def _reserved(prompt: int, output: int, reservation: str, max_len: int) -> int:
    final = prompt + output
    if reservation == "max":
        return max_len
    if reservation == "pow2":
        return min(max_len, 1 << (final - 1).bit_length())
    return final  # oracle


def simulate_serving(
    requests: Sequence[tuple[int, int]],
    *,
    capacity: int,
    max_len: int,
    reservation: str,
    block_size: int = 16,
) -> ServingRun:
    """Serve ``requests`` from ``capacity`` token slots; see the module docstring.

    Args:
        requests: ``(prompt_len, output_len)`` pairs in arrival order, each
            with ``prompt_len + output_len <= max_len``.
        capacity: Token slots of KV memory; a multiple of ``block_size``.
        max_len: The longest sequence the model allows.
        reservation: One of :data:`RESERVATIONS`.
        block_size: Slots per block, P (``"paged"``).

    Example:
        >>> reqs = [(10, 5)] * 8
        >>> simulate_serving(reqs, capacity=64, max_len=32, reservation="max").mean_running
        2.0
        >>> simulate_serving(reqs, capacity=64, max_len=32, reservation="paged",
        ...                  block_size=4).mean_running
        4.0
    """
    if reservation not in RESERVATIONS:
        raise ValueError(
            f"reservation must be one of {RESERVATIONS}, got {reservation!r}"
        )
    capacity = check_positive_int(capacity, "capacity")
    max_len = check_positive_int(max_len, "max_len")
    P = check_positive_int(block_size, "block_size")
    if capacity % P:
        raise ValueError(f"block_size must divide capacity = {capacity}, got {P}")
    if capacity < max_len:
        raise ValueError(
            f"capacity must hold one max_len = {max_len} sequence, got {capacity}"
        )
    reqs = _check_requests(requests, max_len)
    paged = reservation == "paged"
    # paging keeps 1% of the blocks free when it starts a request (vLLM's
    # watermark), so that the requests running can grow a little
    spare = max(1, capacity // P // 100) * P if paged else 0
    queue = list(range(len(reqs)))  # waiting, in arrival order
    tokens = [prompt for prompt, _ in reqs]  # each request's tokens so far
    running: dict[int, int] = {}  # running request -> slots reserved, oldest first
    done = steps = preempted = recomputed = 0
    bound = sum(output for _, output in reqs)
    used_sum = reserved_sum = running_sum = 0
    while done < len(reqs):
        while queue:  # start waiting requests while their memory fits
            r = queue[0]
            if paged:  # blocks for its tokens and the next one
                need = -(-(tokens[r] + 1) // P) * P
            else:
                need = _reserved(*reqs[r], reservation, max_len)
            if running and sum(running.values()) + need + spare > capacity:
                break
            running[queue.pop(0)] = need
        for r in list(running):  # one decoding step: each running request adds a token
            if r not in running:  # sent back to the queue earlier in this step
                continue
            while (
                paged
                and tokens[r] == running.get(r)
                and (sum(running.values()) + P > capacity)
            ):  # its last block is full and no block is free: free the newest
                newest = list(running)[-1]
                queue.insert(0, newest)
                del running[newest]
                preempted += 1
                recomputed += tokens[newest]
            if r not in running:
                continue
            if tokens[r] == running[r]:  # a new block (paged only: else it fits)
                running[r] += P
            tokens[r] += 1
        steps += 1
        if steps > bound:  # cannot happen (see the module docstring): never loop on
            raise RuntimeError(f"simulate_serving ran past its bound of {bound} steps")
        used_sum += sum(tokens[r] for r in running)
        reserved_sum += sum(running.values())
        running_sum += len(running)
        for r in [r for r in running if tokens[r] == sum(reqs[r])]:  # output complete
            del running[r]
            done += 1
    return ServingRun(
        reservation,
        steps,
        used_sum / reserved_sum,
        running_sum / steps,
        preempted,
        recomputed,
    )


def _check_requests(requests: object, max_len: int) -> list[tuple[int, int]]:
    if (
        isinstance(requests, (str, bytes))
        or not isinstance(requests, Sequence)
        or not requests
    ):
        raise TypeError(
            f"requests must be a non-empty list of (prompt_len, output_len), got {type(requests).__name__}"
        )
    out = []
    for i, pair in enumerate(requests):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(
                f"requests[{i}] must be (prompt_len, output_len), got {pair!r}"
            )
        a = check_positive_int(pair[0], f"requests[{i}][0]")
        b = check_positive_int(pair[1], f"requests[{i}][1]")
        if a + b > max_len:
            raise ValueError(
                f"requests[{i}] must fit in max_len = {max_len}, got {a} + {b} = {a + b}"
            )
        out.append((a, b))
    return out
