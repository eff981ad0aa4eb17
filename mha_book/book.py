"""What the book's pages share: the language, ``glue``, and short tracebacks.

The book is built twice from two source trees (``docs/zh`` and ``docs/en``)
whose code cells are identical. A cell that needs language-specific labels
(for example the tokens of a heatmap) calls :func:`book_language` instead of
forking the code. The build sets the environment variable ``MHA_BOOK_LANG``
(see ``conf.py``); every notebook kernel inherits it.

A downloaded notebook sets ``MHA_BOOK_LANG`` itself, in its first cell (the
build writes it there; ``docs/_ext/book_pages.py``), so a Chinese notebook
prints Chinese wherever it runs. The pages hand measured values to their
prose with :func:`glue`, which is myst-nb's in the build and needs nothing
outside it.

A cell meant to raise shows the reader the line of the cell that failed and
the error, not the library frames in between (:func:`short_tracebacks`, which
the build turns on in every kernel).
"""

from __future__ import annotations

import os
import types
import unicodedata
from typing import TypeVar

LANG_ENV_VAR = "MHA_BOOK_LANG"
LANGUAGES = ("zh", "en")

_T = TypeVar("_T")


def book_language(default: str = "en") -> str:
    """Return the language of the book being built: ``"zh"`` or ``"en"``.

    Outside a book build (a plain Python session) the ``default`` is returned.

    Args:
        default: language to use when ``MHA_BOOK_LANG`` is not set.

    Returns:
        ``"zh"`` or ``"en"``.

    Raises:
        ValueError: if ``MHA_BOOK_LANG`` (or ``default``) is another value.

    Example:
        >>> book_language() in ("zh", "en")
        True
    """
    if default not in LANGUAGES:
        raise ValueError(f"default must be one of {LANGUAGES}, got {default!r}")
    lang = os.environ.get(LANG_ENV_VAR, default)
    if lang not in LANGUAGES:
        raise ValueError(f"{LANG_ENV_VAR} must be one of {LANGUAGES}, got {lang!r}")
    return lang


BUILD_ENV_VAR = "MHA_BOOK_BUILD_DIR"  # set for the build's kernels only


def in_book_build() -> bool:
    """Whether this code runs in a kernel of the book's build.

    The build gives its kernels ``MHA_BOOK_BUILD_DIR`` (its folder); a
    downloaded notebook, a terminal or a test has no such variable. Training
    shows a live progress bar everywhere else (:func:`mha_book.lm.training.train`).

    Example:
        >>> in_book_build() in (True, False)
        True
    """
    return bool(os.environ.get(BUILD_ENV_VAR))


def glue(name: str, value: object, display: bool = True) -> None:
    """Hand ``value`` to the page's prose under ``name``: myst-nb's ``glue``.

    Without myst-nb (a downloaded notebook in Jupyter or Colab) there is no
    prose to fill: the value is shown if ``display`` is True, as myst-nb
    would show it, and otherwise nothing happens.

    Example:
        >>> glue("answer", 42, display=False)  # in a build: {glue:text}`answer`
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str, got {name!r}")
    try:
        from myst_nb import glue as myst_glue
    except ImportError:  # outside the book's build
        if display:
            try:
                from IPython.display import display as show
            except ImportError:
                print(value)
            else:
                show(value)
        return
    myst_glue(name, value, display=display)


def pick(zh: _T, en: _T) -> _T:
    """Return ``zh`` or ``en`` according to :func:`book_language`.

    Example:
        >>> pick("注意力", "attention") in ("注意力", "attention")
        True
    """
    return zh if book_language() == "zh" else en


def display_width(text: str) -> int:
    """Columns ``text`` takes in a monospace font: a wide (CJK) character takes two.

    Example:
        >>> display_width("pick('权重', 'weights')")  # 21 characters
        23
    """
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad_cols(text: str, width: int, align: str = "<") -> str:
    """Pad ``text`` with spaces to ``width`` terminal columns.

    Like ``f"{text:<{width}}"``, but a wide character (most CJK characters)
    counts as two columns (:func:`display_width`), as it takes two in a
    monospace font: Chinese table headers then line up with the numbers below
    them.

    Args:
        text: the text to pad (left as is when already wider).
        width: the number of columns to fill.
        align: ``"<"`` (text on the left) or ``">"`` (text on the right).

    Example:
        >>> pad_cols("时间", 6, ">") + "|", pad_cols("time", 6, ">") + "|"
        ('  时间|', '  time|')
    """
    if align not in ("<", ">"):
        raise ValueError(f"align must be '<' or '>', got {align!r}")
    fill = " " * max(width - display_width(text), 0)
    return text + fill if align == "<" else fill + text


def cell_frames(tb: types.TracebackType | None, is_cell) -> types.TracebackType | None:
    """The traceback ``tb`` with only the frames whose file ``is_cell`` accepts.

    Example:
        >>> def fail():
        ...     raise ValueError("x")
        >>> try:
        ...     fail()
        ... except ValueError as err:
        ...     tb = err.__traceback__
        >>> def names(t):
        ...     out = []
        ...     while t:
        ...         out, t = out + [t.tb_frame.f_code.co_name], t.tb_next
        ...     return out
        >>> names(tb)  # the example's own frame, then the function that raised
        ['<module>', 'fail']
        >>> names(cell_frames(tb, lambda filename: "cell_frames[1]" in filename))
        ['<module>']
    """
    kept = []
    while tb is not None:
        if is_cell(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    short = None
    for t in reversed(kept):
        short = types.TracebackType(short, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return short


def short_tracebacks(shell=None) -> bool:
    """Make an IPython shell show only the notebook's own frames of a traceback.

    A call such as ``mha(x, x, x, mask=m)`` passes through about fifty lines of
    ``torch.nn.Module`` internals before it reaches the check that raises; a
    reader needs the line of the cell that failed and the message. Frames from
    files that are not notebook cells are left out; the exception type and
    message are printed as always, and the cell still fails. Returns whether a
    shell was found (outside IPython this does nothing).
    """
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None:
        return False
    cells = shell.compile._filename_map  # cell file -> execution count ("In [n]")

    def show(self, etype, value, tb, tb_offset=None):
        short = cell_frames(tb, lambda filename: filename in cells)
        self.showtraceback((etype, value, short or tb), tb_offset=0)

    shell.set_custom_exc((Exception,), show)
    return True
