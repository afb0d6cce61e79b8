"""The course's figure style: a colour-blind-safe palette on an opaque white background.

Transparent figures vanish in dark themes (JupyterLab, Colab and GitHub all have one), so every
figure is drawn on white. The colours are the Okabe–Ito palette (Okabe and Ito, "Color Universal
Design", 2008), which stays distinguishable under the common forms of colour blindness.
"""

from __future__ import annotations

import numbers
from typing import Any, cast

import numpy as np

from course_utils.validation import check_real

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

    if isinstance(value, bool) or not isinstance(value, numbers.Real):  # ±inf, NaN: an end
        raise TypeError(f"value must be a real number, got {type(value).__name__}")
    vmin, vmax = check_real(vmin, "vmin"), check_real(vmax, "vmax")
    if not vmax > vmin:
        raise ValueError(f"vmax must be greater than vmin, got vmin={vmin}, vmax={vmax}")
    if not isinstance(cmap, str):
        raise TypeError(f"cmap must be a colormap name, got {type(cmap).__name__}")
    if cmap not in matplotlib.colormaps:
        raise ValueError(f"cmap must be a matplotlib colormap name, got {cmap!r}")
    t = min(max((value - vmin) / (vmax - vmin), 0.0), 1.0)
    r, g, b, _ = matplotlib.colormaps[cmap](t)

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    luminance = 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)
    return "black" if luminance > 0.179 else "white"


class FigureOverlapError(ValueError):
    """A figure has text over text, or a legend over its data (raised by :func:`show`)."""


TOLERANCE_POINTS = 1.5  # boxes that touch by less than this do not overlap (anti-aliased edges)
TICK_GAP_EM = 0.4  # the least gap between neighbouring tick labels, in units of their font size


def _corners(x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])


def _boxes(text: Any, renderer: Any) -> list[np.ndarray]:
    """The corners, in pixels, of the box around each line of ``text`` as drawn (one box turned
    with the text when it is rotated by other than a multiple of 90 degrees)."""
    from matplotlib.text import Text

    box = text.get_window_extent(renderer)
    angle = text.get_rotation()
    if angle % 90:
        text.set_rotation(0)  # the unrotated size; the centre is that of the rotated box
        width, height = text.get_window_extent(renderer).size
        text.set_rotation(angle)
        c, s = np.cos(np.radians(angle)), np.sin(np.radians(angle))
        corners = _corners(-width / 2, -height / 2, width / 2, height / 2)
        return [corners @ np.array([[c, s], [-s, c]]) + box.get_points().mean(axis=0)]
    lines = text.get_text().split("\n")
    if len(lines) == 1 or angle % 180:
        return [_corners(box.x0, box.y0, box.x1, box.y1)]
    align = getattr(text, "_multialignment", None) or text.get_horizontalalignment()
    step = box.height / len(lines)
    boxes = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        width = Text(0, 0, line, fontproperties=text.get_fontproperties(),
                     figure=text.get_figure()).get_window_extent(renderer).width
        centred = box.x0 + (box.width - width) / 2
        left = {"left": box.x0, "right": box.x1 - width}.get(align, centred)
        top = box.y1 - i * step
        boxes.append(_corners(left, top - step, left + width, top))
    return boxes


def _overlap(a: np.ndarray, b: np.ndarray, tolerance: float) -> bool:
    """Whether two boxes (corners of convex quadrilaterals) overlap by more than ``tolerance``
    pixels along every edge direction (the separating axis theorem)."""
    for corners in (a, b):
        for edge in corners[1:3] - corners[0:2]:
            axis = np.array([-edge[1], edge[0]]) / np.hypot(*edge)
            pa, pb = a @ axis, b @ axis
            if min(pa.max(), pb.max()) - max(pa.min(), pb.min()) <= tolerance:
                return False
    return True


def _side_by_side(a: np.ndarray, b: np.ndarray, tolerance: float, gap: float) -> bool:
    """Whether two upright boxes share a row and stand less than ``gap`` pixels apart: tick
    labels such as "10000" and "12500" then read as one number."""
    (ax0, ay0), (ax1, ay1) = a.min(axis=0), a.max(axis=0)
    (bx0, by0), (bx1, by1) = b.min(axis=0), b.max(axis=0)
    return min(ay1, by1) - max(ay0, by0) > tolerance and min(ax1, bx1) - max(ax0, bx0) > -gap


def _drawn_texts(fig: Any) -> list[tuple[Any, list[np.ndarray]]]:
    """Draw ``fig`` (its layout engine included) and return every visible, non-empty text it
    drew with its boxes (:func:`_boxes`), as drawn: ticks outside the view are not drawn, and
    3-D labels are where the projection put them."""
    from matplotlib.text import Text

    drawn: dict[int, tuple[Any, list[np.ndarray]]] = {}
    original = Text.draw

    def record(text: Any, renderer: Any) -> None:
        original(text, renderer)
        if text.get_visible() and text.get_text().strip():
            drawn[id(text)] = (text, _boxes(text, renderer))

    Text.draw = record  # type: ignore[method-assign, assignment]
    try:
        fig.draw_without_rendering()
    finally:
        Text.draw = original  # type: ignore[method-assign]
    return list(drawn.values())


def _axes_name(fig: Any, ax: Any) -> str:
    if ax is None:
        return "the figure"
    name = f"axes {fig.axes.index(ax) + 1}" if ax in fig.axes else "axes"
    if hasattr(ax, "_colorbar"):
        return f"the colorbar ({name})"
    title = ax.get_title() or ax.get_title("left")
    return f"{name} {title!r}" if title else name


def _text_names(fig: Any, texts: list[Any]) -> list[tuple[str, str]]:
    """Each text's role with its axes ("x tick label" of "axes 1"), and its name in a message:
    the role, its words and its axes."""
    roles: dict[int, tuple[str, Any]] = {}
    if getattr(fig, "_suptitle", None) is not None:
        roles[id(fig._suptitle)] = ("suptitle", None)
    for ax in fig.axes:
        for letter in "xyz":
            axis = getattr(ax, f"{letter}axis", None)
            if axis is not None:
                roles[id(axis.label)] = (f"{letter} label", ax)
                roles[id(axis.offsetText)] = (f"{letter} offset", ax)
                roles.update((id(t), (f"{letter} tick label", ax))
                             for t in axis.get_ticklabels(which="both"))
        roles.update((id(t), ("title", ax)) for t in (ax.title, ax._left_title, ax._right_title))
    for legend in _legends(fig):
        roles.update((id(t), ("legend text", legend.axes)) for t in legend.get_texts())
    names = []
    for text in texts:
        kind = "annotation" if hasattr(text, "arrow_patch") else "text"
        role, ax = roles.get(id(text), (kind, text.axes))
        words = " ".join(text.get_text().split())[:40]
        names.append((f"{role} of {_axes_name(fig, ax)}",
                      f"{role} {words!r} ({_axes_name(fig, ax)})"))
    return names


def _legends(fig: Any) -> list[Any]:
    found = [*fig.legends, *(ax.get_legend() for ax in fig.axes)]
    return [legend for legend in found if legend is not None and legend.get_visible()]


def _data_under(ax: Any, box: Any) -> list[str]:
    """What of ``ax``'s data (lines, points, bars, filled areas, images) lies inside ``box``
    (pixels); lines and spans drawn in axes coordinates (``axhline``, ``axvspan``) are not
    data."""
    from matplotlib.collections import PathCollection

    def name(artist: Any, kind: str) -> str:
        label = artist.get_label()
        return f"{kind} {label!r}" if label and not label.startswith("_") else kind

    def in_data(artist: Any, transform: Any) -> bool:
        return artist.get_visible() and transform.contains_branch(ax.transData)

    hits = []
    for line in ax.get_lines():
        if in_data(line, line.get_transform()):
            path = line.get_transform().transform_path(line.get_path())
            if line.get_linestyle() in ("None", ""):
                inside = box.count_contains(path.vertices) > 0
            else:
                inside = path.intersects_bbox(box, filled=False)
            hits += [name(line, "line")] if inside else []
    for coll in ax.collections:
        if isinstance(coll, PathCollection) and in_data(coll, coll.get_offset_transform()):
            points = coll.get_offset_transform().transform(coll.get_offsets())
            hits += [name(coll, "points")] if box.count_contains(points) else []
        elif in_data(coll, coll.get_transform()):
            filled = len(coll.get_facecolor()) > 0
            paths = [coll.get_transform().transform_path(p) for p in coll.get_paths()]
            if any(p.intersects_bbox(box, filled=filled) for p in paths):
                hits.append(name(coll, "filled area" if filled else "lines"))
    bars = [p for p in ax.patches if in_data(p, p.get_transform())]
    if any(p.get_transform().transform_path(p.get_path()).intersects_bbox(box, filled=p.get_fill())
           for p in bars):
        hits.append("bars or patches")
    hits += [name(im, "image") for im in ax.images
             if im.get_visible() and im.get_window_extent().overlaps(box)]
    return hits


def _check_figure(fig: object) -> None:
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")


def figure_problems(fig: Any) -> list[str]:
    """Every pair of drawn texts that overlap, and every legend that covers plotted data, in
    ``fig`` as it will be shown (drawn first, so ``tight_layout`` and ``constrained_layout``
    apply); each problem is one sentence. Texts over a heatmap's image are fine."""
    from matplotlib.transforms import Bbox

    _check_figure(fig)
    texts = _drawn_texts(fig)
    names = _text_names(fig, [text for text, _ in texts])
    tolerance = TOLERANCE_POINTS * fig.dpi / 72
    problems = []
    for i, (text_a, boxes_a) in enumerate(texts):
        for j, (text_b, boxes_b) in enumerate(texts[i + 1:], i + 1):
            (role_a, name_a), (role_b, name_b) = names[i], names[j]
            if any(_overlap(p, q, tolerance) for p in boxes_a for q in boxes_b):
                problems.append(f"{name_a} overlaps {name_b}")
            elif (role_a == role_b and "tick label" in role_a
                  and text_a.get_rotation() == text_b.get_rotation() == 0
                  and _side_by_side(boxes_a[0], boxes_b[0], tolerance,
                                    TICK_GAP_EM * text_a.get_fontsize() * fig.dpi / 72)):
                problems.append(f"{name_a} runs into {name_b}")
    renderer = fig.canvas.get_renderer()
    for legend in _legends(fig):
        box = legend.get_window_extent(renderer).padded(-tolerance)
        for ax in fig.axes:
            inside = Bbox.intersection(box, ax.bbox)
            hits = _data_under(ax, inside) if inside is not None else []
            where = "" if legend.axes is ax else f" of {_axes_name(fig, ax)}"
            problems += [f"the legend of {_axes_name(fig, legend.axes)} covers {hit}{where}"
                         for hit in hits]
    return problems


def show(fig: Any = None) -> None:
    """``plt.show()`` for the course's figures, after a check: every notebook ends a plot cell
    with ``plotting.show()``.

    Checks ``fig`` (every open figure when None) with :func:`figure_problems` and raises
    :class:`FigureOverlapError` listing the problems, so that no figure with text over text or a
    legend over its data reaches a reader.
    """
    import matplotlib.pyplot as plt

    if fig is not None:
        _check_figure(fig)
    figures = [fig] if fig is not None else [plt.figure(n) for n in plt.get_fignums()]
    problems = [f"figure {i}: {problem}" for i, f in enumerate(figures, 1)
                for problem in figure_problems(f)]
    if problems:
        more = f"\n... and {len(problems) - 12} more" if len(problems) > 12 else ""
        raise FigureOverlapError("the figure needs fixing before it is shown:\n"
                                 + "\n".join(problems[:12]) + more)
    plt.show()
