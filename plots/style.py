"""What every figure shares (plots.figures, plots.medium, plots.mesh, plots.schemes): the colours, a
new figure, how a figure is written, the variant names under bars, and the style they are drawn in.

A :class:`Style` is the one place that decides how the figures look as a whole: ``notebook`` (the
default: titles that carry the paper's question, sizes for a screen, PNG and SVG) or ``paper`` (no
titles, the caption says what a figure asks; a two-column figure's width and fonts; PDF beside PNG
and SVG; legends without a port where one flow per sender and receiver exists).  Figures draw in
the style :func:`using` made current; their titles go through :func:`title`, which leaves them out
when the style has none."""
from __future__ import annotations

import textwrap
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = ["legend", "Style", "STYLES", "NOTEBOOK", "PAPER", "current", "using", "title", "figure", "colors", "overlay",
           "new_figure", "save", "variant_ticks"]


@dataclass(frozen=True)
class Style:
    """How every figure is drawn and written."""

    name: str
    scale: float = 1.0                     # every figure's width and height times this
    rc: Mapping[str, Any] = field(default_factory=dict)   # matplotlib rc while the figures are drawn
    titles: bool = True                    # titles drawn (False: the caption carries them)
    formats: tuple[str, ...] = ("png", "svg")
    dpi: int = 150                         # of the PNG
    ports: bool = True                     # legends keep a flow's port even when its pair is unique
    fit_labels: bool = False               # axis labels longer than their panel wrapped onto two lines
    legend_below: bool = False             # legends below the figure, outside the data (legend())


NOTEBOOK = Style("notebook")
# A column of a two-column paper is about 3.5 in wide: the default 6.4 in figure is drawn 3.5 in wide,
# a wider one (two panels, many bars) in proportion; fonts of 8-9 pt at that size.
PAPER = Style("paper", scale=3.5 / 6.4, titles=False, formats=("png", "svg", "pdf"), dpi=300, ports=False, fit_labels=True,
              legend_below=True,
              rc={"font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9, "xtick.labelsize": 8,
                  "ytick.labelsize": 8, "legend.fontsize": 8, "figure.titlesize": 9,
                  "lines.linewidth": 1.2, "lines.markersize": 4, "pdf.fonttype": 42,
                  "figure.constrained_layout.h_pad": 0.02, "figure.constrained_layout.w_pad": 0.02})
STYLES: dict[str, Style] = {s.name: s for s in (NOTEBOOK, PAPER)}

_current: Style = NOTEBOOK


def current() -> Style:
    """The style figures are drawn in now (NOTEBOOK unless inside :func:`using`)."""
    return _current


@contextmanager
def using(style: Style | str) -> Iterator[Style]:
    """Draw every figure inside in ``style`` (a Style or a name of STYLES; ValueError naming the
    known ones otherwise): its rc settings apply and :func:`current` returns it."""
    global _current
    if isinstance(style, str):
        if style not in STYLES:
            raise ValueError(f"unknown style {style!r}; expected one of {', '.join(STYLES)}")
        style = STYLES[style]
    before = _current
    _current = style
    try:
        with matplotlib.rc_context(dict(style.rc)):
            yield style
    finally:
        _current = before


def title(target: Axes | Figure, text: str, **kwargs: Any) -> None:
    """A figure's title (``target`` a Figure: its suptitle; an Axes: its title), drawn only when the
    current style has titles.  Panel names that tell panels apart are not titles: they use set_title."""
    if not _current.titles:
        return
    if isinstance(target, Figure):
        target.suptitle(text, **kwargs)
    else:
        target.set_title(text, **kwargs)


def legend(ax: Axes, **kwargs: Any) -> None:
    """A figure's legend of ``ax``'s lines: on the axes (``ax.legend(**kwargs)``), or, where the style has
    ``legend_below`` (paper), below the whole figure in two columns without a frame: on a figure one column wide a
    legend of several entries would cover the lines it names (one legend goes below; another panel's stays on it)."""
    if not _current.legend_below or ax.figure.legends:   # a second panel's legend stays on its panel
        ax.legend(**kwargs)
        return
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    # two columns where the labels are short enough to share the column's width, else one; the figure grows by
    # the legend's rows so that the axes keep their height
    ncol = 2 if len(labels) > 1 and max(map(len, labels)) <= LEGEND_PAIR_CHARS else 1
    rows = -(-len(labels) // ncol)
    fig = ax.figure
    fig.set_figheight(fig.get_figheight() + rows * LEGEND_ROW_IN)
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False, fontsize=7.5,
               handlelength=1.8, columnspacing=1.0, borderaxespad=0.2)


#: legend() of the paper style: the longest labels two columns hold at 7.5 pt on a 3.5 in figure, and the
#: height one row of it takes
LEGEND_PAIR_CHARS = 22
LEGEND_ROW_IN = 0.14


def figure(width: float, height: float) -> Figure:
    """A figure of ``width`` x ``height`` inches (times the current style's scale), laid out by
    matplotlib's constrained layout."""
    s = _current.scale
    return Figure(figsize=(width * s, height * s), layout="constrained")


def colors(n: int) -> list[Any]:
    """``n`` distinct colours: tab10, or tab20 past ten."""
    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _fit_labels(fig: Figure) -> None:
    """Wrap each line of an axis label or panel title that is longer than its panel (width for x
    labels and titles, height for y labels; the panel's share of the figure, estimated at 0.55 em per
    character) at word boundaries."""
    width, height = fig.get_size_inches()
    for ax in fig.get_axes():
        spec = ax.get_subplotspec()
        rows, cols = spec.get_gridspec().get_geometry() if spec is not None else (1, 1)
        for label, inches in ((ax.xaxis.label, width / cols), (ax.yaxis.label, height / rows),
                              (ax.title, width / cols)):
            text = label.get_text()
            room = max(8, int(0.8 * inches * 72 / (0.55 * float(label.get_fontsize()))))
            if text and any(len(line) > room for line in text.split("\n")):
                label.set_text("\n".join(textwrap.fill(line, room) for line in text.split("\n")))


# Line styles of overlaid lines: matplotlib's four, then dash patterns told apart from them.
LINE_STYLES: list[Any] = ["-", "--", "-.", ":", (0, (8, 2)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (6, 2, 1, 2))]


def overlay(runs: Sequence[str], keys: Sequence[Any]) -> list[tuple[Any, Any]]:
    """(colour, line style) of each of the lines one figure overlays, line i of run ``runs[i]`` showing
    ``keys[i]`` (a variant, or a variant and flow).  Lines of several runs: a colour per run and a line
    style per key, the same key in the same style in every run.  Lines of one run: a colour each, the
    line styles in turn."""
    run_order = list(dict.fromkeys(runs))
    if len(run_order) > 1:
        key_order = list(dict.fromkeys(keys))
        palette = colors(len(run_order))
        return [(palette[run_order.index(r)], LINE_STYLES[key_order.index(k) % len(LINE_STYLES)])
                for r, k in zip(runs, keys)]
    return [(c, LINE_STYLES[i % 4]) for i, c in enumerate(colors(len(keys)))]


def save(fig: Figure, out_dir: Path, name: str) -> list[Path]:
    """Write ``name.png`` and ``name.svg``, and ``name.pdf`` when the current style asks for it
    (reproducible metadata: no creation date; fixed svg hash salt, SVG text kept as text so labels
    stay searchable and editable)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    png, svg = out_dir / f"{name}.png", out_dir / f"{name}.svg"
    written = [png, svg]
    if _current.fit_labels:
        _fit_labels(fig)
    with matplotlib.rc_context({"svg.hashsalt": "aspan-plots", "svg.fonttype": "none"}):
        fig.savefig(png, dpi=_current.dpi, metadata={"Software": None})
        fig.set_layout_engine("none")  # keep the layout just computed: saves a second pass
        fig.savefig(svg, metadata={"Date": None})
        if "pdf" in _current.formats:
            pdf = out_dir / f"{name}.pdf"
            fig.savefig(pdf, metadata={"CreationDate": None, "ModDate": None})
            written.append(pdf)
    return written


def new_figure(width: float = 6.4, height: float = 4.2) -> tuple[Figure, Axes]:
    """A figure of one axes (:func:`figure`)."""
    fig = figure(width, height)
    return fig, fig.add_subplot()


def variant_ticks(ax: Axes, x: Sequence[float], labels: Sequence[str]) -> None:
    """Variant names under bars, the same in every figure (the medium's too): level for up to
    three, else tilted 20 degrees and right-aligned so long names do not overlap."""
    many = len(labels) > 3
    ax.set_xticks(x, labels, rotation=20 if many else 0, ha="right" if many else "center")
