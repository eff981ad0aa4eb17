"""The book's figures: fonts, size and legibility, shared by every plot.

The attention heatmap itself is :func:`mha_book.viz.heatmap.plot_attention`.

matplotlib is imported lazily, inside the functions, so ``import mha_book``
stays light. The first call registers the Noto Sans CJK font shipped by the
``noto-cjk-sans-otc`` package and puts it after DejaVu Sans in the font
fallback list: Latin text keeps DejaVu Sans, Chinese glyphs come from Noto
Sans CJK SC, and matplotlib has no glyph to warn about.

Every figure is a ``matplotlib.figure.Figure`` that is not registered with
pyplot, so a notebook shows it once (when it is the cell's value) and no
figure leaks between cells.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_book.viz.layout import LAYOUT_KEY, figure_layout
from mha_book.viz.png import compress_png, with_text_chunks

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

CJK_FAMILY = "Noto Sans CJK SC"
_fonts_ready = False


def setup_fonts() -> None:
    """Register the CJK font with matplotlib and set the fallback order.

    Safe to call many times; the work is done once per process.

    Example:
        >>> setup_fonts()
        >>> import matplotlib
        >>> matplotlib.rcParams["font.family"]
        ['DejaVu Sans', 'Noto Sans CJK SC']
    """
    global _fonts_ready
    if _fonts_ready:
        return
    import matplotlib
    from matplotlib import font_manager
    from noto_cjk_sans_otc import FONT_PATH

    font_manager.fontManager.addfont(str(FONT_PATH))
    # Per-glyph fallback walks the families listed in font.family (a generic
    # alias such as "sans-serif" resolves to one font only).
    families = ["DejaVu Sans", CJK_FAMILY]
    matplotlib.rcParams["font.family"] = families
    rest = [f for f in matplotlib.rcParams["font.sans-serif"] if f not in families]
    matplotlib.rcParams["font.sans-serif"] = families + rest
    # One text size for everything a figure writes (titles, labels, ticks,
    # legends, the numbers in cells): see TEXT_PT.
    for key in TEXT_SIZE_KEYS:
        matplotlib.rcParams[key] = TEXT_PT
    _register_notebook_display()
    _fonts_ready = True


# The size of all text in a figure, in points. A figure at most
# PHONE_WIDTH_IN wide (5.1 in as saved, with its margin) is shown at most 342
# CSS px wide on a 390 px phone, so its 12 pt text lands at >= 12 / 72 * 342 /
# 5.1 = 11.2 CSS px: the usual minimum for text on a phone is 11 px. The browser
# tests measure it on every page.
TEXT_PT = 12.0
# The margin (inches) figure_png leaves around what a figure draws; the page
# has its own, and every tenth of an inch counts against PHONE_WIDTH_IN.
PAD_IN = 0.05
TEXT_SIZE_KEYS = (
    "font.size",
    "axes.titlesize",
    "axes.labelsize",
    "xtick.labelsize",
    "ytick.labelsize",
    "legend.fontsize",
    "legend.title_fontsize",
    "figure.titlesize",
    "figure.labelsize",
)

FIGURE_DPI = 110  # CSS px per inch: the size a figure is shown at on a wide screen
#: Image pixels per CSS pixel. A phone's screen has 3 device pixels per CSS
#: pixel: a figure drawn at 110 dpi would be upscaled, soft, on every phone.
#: figure_png draws at 3 x 110 dpi and records the density in the PNG; the
#: build shows the image at its width / density CSS px (docs/_ext/book_pages.py).
PIXEL_DENSITY = 3
DENSITY_KEY = "mha_book:density"
#: The widest a figure may be drawn (inches) for its TEXT_PT text to stay
#: legible in the 342 px column of a 390 px phone.
PHONE_WIDTH_IN = 5.0
# PNG text key under which figure_png records the smallest text of a figure,
# in image pixels (so at 3 per CSS px); the browser tests check it against the
# size shown on a phone.
MIN_TEXT_KEY = "mha_book:min_text_px"


def _register_notebook_display() -> None:
    """Let a notebook show a bare Figure (one not made by pyplot) as a PNG."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is optional
        return
    shell = get_ipython()
    if shell is not None and hasattr(shell, "display_formatter"):
        from matplotlib.figure import Figure

        shell.display_formatter.formatters["image/png"].for_type(Figure, figure_png)


def smallest_text_pt(fig: Figure, *, laid_out: bool = False) -> float:
    """Font size in points of the smallest text the figure draws (inf if none).

    Tick labels count only for the ticks in view (matplotlib keeps spare Tick
    objects whose labels are never drawn). The figure is laid out first,
    unless ``laid_out`` says it was drawn since its last change.

    Example:
        >>> fig = new_figure(figsize=(3, 2))
        >>> ax = fig.subplots()
        >>> _ = ax.set_title("t", fontsize=12); ax.tick_params(labelsize=9)
        >>> smallest_text_pt(fig)
        9.0
        >>> ax.set_xscale("log", base=2)  # ticks like 2^0 have superscripts
        >>> round(smallest_text_pt(fig), 2)
        6.3
    """
    from matplotlib.axis import Tick
    from matplotlib.text import Text

    if not laid_out:
        fig.draw_without_rendering()  # lay out, so tick labels are final
    tick_labels = {
        id(label) for tick in fig.findobj(Tick) for label in (tick.label1, tick.label2)
    }
    texts = [t for t in fig.findobj(Text) if id(t) not in tick_labels]
    for ax in fig.axes:  # the tick labels in view
        texts += [*ax.get_xticklabels(), *ax.get_yticklabels()]
    sizes = [
        float(t.get_fontsize())  # points (the stubs also allow a name, "large")
        * (MATH_SCRIPT_SHRINK if _has_math_script(t.get_text()) else 1.0)
        for t in texts
        if t.get_visible() and t.get_text().strip()
    ]
    return float(min(sizes, default=float("inf")))


# mathtext draws sub- and superscripts (the 10 of a log axis's 2^10) at 0.7 of
# the font size (matplotlib.mathtext's SHRINK_FACTOR).
MATH_SCRIPT_SHRINK = 0.7


def _has_math_script(text: str) -> bool:
    return any(("^" in part or "_" in part) for part in text.split("$")[1::2])


def figure_png(fig: Figure, dpi: int = FIGURE_DPI) -> bytes:
    """Render a figure as PNG bytes, recording its smallest text size in the file.

    This is the notebook's PNG formatter for every Figure (see
    :func:`setup_fonts`). The figure is drawn at ``dpi`` x
    :data:`PIXEL_DENSITY` pixels per inch (sharp on a phone's screen), then
    compressed (:func:`~mha_book.viz.png.compress_png`). The PNG carries text chunks:
    ``MIN_TEXT_KEY``, the smallest text in image pixels (points x dpi x
    density / 72); ``DENSITY_KEY``, the density; ``LAYOUT_KEY``,
    :func:`figure_layout` as JSON.

    Example:
        >>> from PIL import Image; import io
        >>> fig = new_figure(figsize=(3, 2))
        >>> ax = fig.subplots(); ax.tick_params(labelsize=9)
        >>> png = Image.open(io.BytesIO(figure_png(fig)))
        >>> png.text[MIN_TEXT_KEY], png.text[DENSITY_KEY], png.text[LAYOUT_KEY]
        ('41.25', '3', '{"rows": 1, "columns": 1, "direction": null}')
        >>> png.width  # 3 inches at 110 dpi, cut to what is drawn, times 3
        995
    """
    import io
    import json

    pixels_per_inch = dpi * PIXEL_DENSITY
    buf = io.BytesIO()
    fig.savefig(
        buf, format="png", dpi=pixels_per_inch, bbox_inches="tight", pad_inches=PAD_IN
    )
    # savefig has just laid the figure out: its text and panels are read as
    # drawn, without the two more layout passes (half the time of a figure)
    # that reading them first would take.
    smallest = smallest_text_pt(fig, laid_out=True) * pixels_per_inch / 72
    layout = figure_layout(fig, laid_out=True)
    png = with_text_chunks(
        buf.getvalue(),
        {
            MIN_TEXT_KEY: f"{smallest:.2f}",
            DENSITY_KEY: str(PIXEL_DENSITY),
            LAYOUT_KEY: json.dumps(layout),
        },
    )
    return compress_png(png)


def new_figure(**kwargs) -> Figure:
    """Return a new constrained-layout Figure with the book's fonts set up.

    Keyword arguments go to ``matplotlib.figure.Figure``.

    Example:
        >>> fig = new_figure(figsize=(3, 2))
        >>> type(fig).__name__
        'Figure'
    """
    setup_fonts()
    from matplotlib.figure import Figure

    kwargs.setdefault("layout", "constrained")
    return Figure(**kwargs)


def plain_log_ticks(ax, axis: str = "both") -> None:
    """Label log-scale axes with plain numbers (1024, 0.5) instead of powers (2^10).

    A power's exponent is drawn at 0.7 of the font size, too small to read on a
    phone; minor ticks keep their marks but lose their labels.

    Args:
        ax: a matplotlib Axes.
        axis: "x", "y" or "both".

    Example:
        >>> fig = new_figure(figsize=(3, 2))
        >>> ax = fig.subplots()
        >>> _ = ax.loglog([1, 1024], [0.5, 8], base=2)
        >>> plain_log_ticks(ax)
        >>> [ax.xaxis.get_major_formatter()(v, 0) for v in (1024, 0.5)]
        ['1024', '0.5']
    """
    from matplotlib.ticker import FuncFormatter, NullFormatter

    if axis not in ("x", "y", "both"):
        raise ValueError(f"axis must be 'x', 'y' or 'both', got {axis!r}")
    plain = FuncFormatter(
        lambda v, _: f"{v:.0f}" if v >= 1 and v == int(v) else f"{v:g}"
    )
    for name in ("x", "y") if axis == "both" else (axis,):
        target = getattr(ax, f"{name}axis")
        target.set_major_formatter(plain)
        target.set_minor_formatter(NullFormatter())
