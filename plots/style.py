"""What every figure shares (plots.figures, plots.medium, plots.mesh, plots.schemes): the colours, a
new figure, how a figure is written, the variant names under bars."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = ["colors", "new_figure", "save", "variant_ticks"]


def colors(n: int) -> list[Any]:
    """``n`` distinct colours: tab10, or tab20 past ten."""
    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def save(fig: Figure, out_dir: Path, name: str) -> list[Path]:
    """Write ``name.png`` and ``name.svg`` (reproducible metadata, fixed svg hash salt, SVG
    text kept as text so labels stay searchable and editable)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    png, svg = out_dir / f"{name}.png", out_dir / f"{name}.svg"
    with matplotlib.rc_context({"svg.hashsalt": "aspan-plots", "svg.fonttype": "none"}):
        fig.savefig(png, dpi=150, metadata={"Software": None})
        fig.set_layout_engine("none")  # keep the layout just computed: saves a second pass
        fig.savefig(svg, metadata={"Date": None})
    return [png, svg]


def new_figure(width: float = 6.4, height: float = 4.2) -> tuple[Figure, Axes]:
    """A figure of one axes, laid out by matplotlib's constrained layout."""
    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


def variant_ticks(ax: Axes, x: Sequence[float], labels: Sequence[str]) -> None:
    """Variant names under bars, the same in every figure (the medium's too): level for up to
    three, else tilted 20 degrees and right-aligned so long names do not overlap."""
    many = len(labels) > 3
    ax.set_xticks(x, labels, rotation=20 if many else 0, ha="right" if many else "center")
