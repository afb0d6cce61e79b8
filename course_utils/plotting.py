"""The course's figure style: a colour-blind-safe palette on an opaque white background.

Transparent figures vanish in dark themes (JupyterLab, Colab and GitHub all have one), so every
figure is drawn on white. The colours are the Okabe–Ito palette (Okabe and Ito, "Color Universal
Design", 2008), which stays distinguishable under the common forms of colour blindness.
"""

from __future__ import annotations

from typing import Any, cast

# Okabe–Ito: blue, orange, bluish green, vermillion, reddish purple, sky blue, yellow, black.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
# A perceptually uniform colour map, readable in grey scale and by colour-blind readers.
COLORMAP = "cividis"


def style() -> dict[str, Any]:
    """The matplotlib ``rcParams`` the course sets (see :func:`use_course_style`)."""
    from cycler import cycler

    return {
        "axes.prop_cycle": cycler(color=PALETTE),
        "image.cmap": COLORMAP,
        "figure.facecolor": "white",
        "axes.facecolor": "white",
        "savefig.facecolor": "white",
        "savefig.transparent": False,
    }


def use_course_style() -> None:
    """Apply :func:`style` to matplotlib for the rest of the session."""
    import matplotlib

    matplotlib.rcParams.update(cast(Any, style()))  # the keys are typed as literals


def text_color(value: float, vmin: float, vmax: float, cmap: str = COLORMAP) -> str:
    """Black or white, whichever reads better on ``cmap``'s colour for ``value`` (heatmap labels).

    Uses the colour's relative luminance (WCAG 2): white text on dark cells, black on light.
    """
    import matplotlib

    if not vmax > vmin:
        raise ValueError(f"vmax must be greater than vmin, got vmin={vmin}, vmax={vmax}")
    t = min(max((value - vmin) / (vmax - vmin), 0.0), 1.0)
    r, g, b, _ = matplotlib.colormaps[cmap](t)

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    luminance = 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)
    return "black" if luminance > 0.179 else "white"


def show(fig: Any = None) -> None:
    """``plt.show()`` for the course's figures: every notebook ends a plot cell with
    ``plotting.show()``."""
    import matplotlib.pyplot as plt

    plt.show()
