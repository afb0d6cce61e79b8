"""What every diagram draws with: the palette, a white figure, a labelled box, an arrow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from course_utils.plotting import PALETTE

if TYPE_CHECKING:  # matplotlib is imported only when something is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, YELLOW, BLACK = PALETTE


def _white_figure(figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize, facecolor="white")
    ax.set_facecolor("white")
    ax.set_axis_off()
    return fig, ax


def _box(ax: Axes, x: float, y: float, text: str, label: str, color: str,
         width: float = 1.75, height: float = 0.9) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                boxstyle="round,pad=0.02,rounding_size=0.12",
                                facecolor=color, edgecolor=BLACK, lw=1.0))
    ax.text(x, y + 0.08, text, ha="center", va="center", fontsize=9.5, color=BLACK)
    ax.text(x, y - height / 2 - 0.12, label, ha="center", va="top", fontsize=9, color=BLUE,
            fontweight="bold")


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], **style: object) -> None:
    props = {"arrowstyle": "-|>", "color": BLACK, "lw": 1.2, "shrinkA": 0, "shrinkB": 0}
    props.update(style)
    ax.annotate("", xy=end, xytext=start, arrowprops=props)
