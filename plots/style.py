"""What every figure shares (plots.figures, plots.medium, plots.schemes): the variant names under bars."""
from __future__ import annotations

from typing import Sequence

from matplotlib.axes import Axes

__all__ = ["variant_ticks"]


def variant_ticks(ax: Axes, x: Sequence[float], labels: Sequence[str]) -> None:
    """Variant names under bars, the same in every figure (the medium's too): level for up to
    three, else tilted 20 degrees and right-aligned so long names do not overlap."""
    many = len(labels) > 3
    ax.set_xticks(x, labels, rotation=20 if many else 0, ha="right" if many else "center")
