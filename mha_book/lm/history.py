"""What a training run measured: the loss of every step and the validation losses.

:func:`mha_book.lm.training.train` returns a :class:`TrainHistory`; chapter
10-decoder-char-lm prints its :meth:`~TrainHistory.summary` after training,
instead of a live log.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mha_book._checks import check_positive_int
from mha_book.book import pad_cols, pick

__all__ = ["TrainHistory"]


@dataclass
class TrainHistory:
    """What :func:`~mha_book.lm.training.train` measured: the loss of every step and the validation losses.

    ``seconds`` is the wall-clock time of the whole loop, validation included.
    ``from_cache`` is True when :func:`~mha_book.lm.training.train` loaded the run instead of doing
    it; ``seconds`` is then the time of the run that was stored.
    """

    train_loss: list[float] = field(default_factory=list)
    val_steps: list[int] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    seconds: float = 0.0
    from_cache: bool = False

    def summary(self, every: int | None = None) -> str:
        """A compact loss table, for printing once after training instead of a live log.

        One row per ``every`` steps (default: one row per validation step, or a
        single row for the last step when there was no validation). A row gives
        the step, the mean training loss over the steps since the previous row,
        and the validation loss measured at that step (blank if none was). The
        header is in the book's language (:func:`mha_book.book.pick`).

        Args:
            every: Steps between rows (None: the validation steps).

        Returns:
            The table as text, one line per row after a header.

        Example:
            >>> h = TrainHistory(
            ...     [4.0, 3.0, 2.0, 1.0], val_steps=[2, 4], val_loss=[3.25, 1.5]
            ... )
            >>> print(h.summary())
             step  train_loss  val_loss
                2       3.500     3.250
                4       1.500     1.500
            >>> print(h.summary(every=3))
             step  train_loss  val_loss
                3       3.000
                4       1.000     1.500
        """
        n = len(self.train_loss)
        if n == 0:
            raise ValueError("the history is empty: nothing was trained")
        if every is not None:
            check_positive_int(every, "every")
            rows = [*range(every, n, every), n]
        else:
            rows = [step for step in self.val_steps if step <= n] or [n]
        val = dict(zip(self.val_steps, self.val_loss))
        header = pick(
            ("步数", "训练损失", "验证损失"), ("step", "train_loss", "val_loss")
        )
        lines = ["  ".join(pad_cols(h, w, ">") for h, w in zip(header, (5, 10, 8)))]
        previous = 0
        for step in rows:
            window = self.train_loss[previous:step]
            line = f"{step:>5}  {sum(window) / len(window):>10.3f}"
            if step in val:
                line += f"  {val[step]:>8.3f}"
            lines.append(line)
            previous = step
        return "\n".join(lines)
