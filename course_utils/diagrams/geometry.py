"""Diagrams of linear algebra in the plane: a matrix as a map (where $e_1$ and $e_2$ go, the unit
square to a parallelogram, $AB$ as doing $B$ then $A$), the column view $Ax = \\sum_j x_j a_j$
drawn tip to tail, and the eigenvectors of a covariance matrix drawn on its point cloud.

These pictures use column vectors, $Ax$, as notebooks 02 and 03 say where they draw them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from course_utils.diagrams._draw import BLACK, BLUE, GREEN, ORANGE, PURPLE, SKY, VERMILLION
from course_utils.validation import real_array

if TYPE_CHECKING:  # matplotlib is imported only when something is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_SQUARE = np.array([[0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0]])  # the unit square's corners


def _matrix_2x2(a: ArrayLike, name: str) -> np.ndarray:
    array = real_array(a, name, ndim=2, what="2 x 2 matrix").astype(float)
    if array.shape != (2, 2):
        raise ValueError(f"{name} must be a 2 x 2 matrix, got shape {array.shape}")
    return array


def _vector_text(v: np.ndarray) -> str:
    return "[" + ", ".join(f"{x:g}" for x in np.round(v, 2) + 0.0) + "]"


def _plane(ax: Axes, points: np.ndarray, title: str) -> None:
    """Equal axes that hold ``points`` (2, n) and the origin, light axis lines, a title."""
    low = np.minimum(points.min(axis=1), 0.0) - 0.7
    high = np.maximum(points.max(axis=1), 1.0) + 0.7
    ax.set(xlim=(low[0], high[0]), ylim=(low[1], high[1]), aspect="equal")
    ax.axhline(0, color="gray", lw=0.5, zorder=0)
    ax.axvline(0, color="gray", lw=0.5, zorder=0)
    ax.set_title(title, fontsize=10)
    ax.set_facecolor("white")


def _vector(ax: Axes, start: np.ndarray, end: np.ndarray, color: str, lw: float = 2.0) -> None:
    ax.annotate("", xy=tuple(end), xytext=tuple(start),
                arrowprops={"arrowstyle": "-|>", "color": color, "lw": lw, "shrinkA": 0,
                            "shrinkB": 0, "mutation_scale": 14})


def _parallelogram(ax: Axes, m: np.ndarray, color: str, alpha: float,
                   dashed: bool = False) -> None:
    """The image of the unit square under ``m``; solid: with its sides m e1 (vermillion) and
    m e2 (blue) as arrows from the origin."""
    corners = m @ _SQUARE
    ax.fill(*corners, color=color, alpha=alpha, lw=0)
    if dashed:
        ax.plot(*np.c_[corners, corners[:, :1]], color=color, lw=1, ls="--")
        return
    for column, side_color in zip(m.T, (VERMILLION, BLUE), strict=True):
        _vector(ax, np.zeros(2), column, side_color)


def linear_map(a: ArrayLike, b: ArrayLike) -> Figure:
    """Three panels for the 2 x 2 matrices ``a`` (A) and ``b`` (B), column vectors: the unit
    square (grey) and its image under B, whose sides are B e1 and B e2, B's columns; B's image
    (dashed) and where A sends it, sides A B e1 and A B e2; and the unit square under the product
    AB in one step, the same parallelogram, sides the columns of AB. Returns the ``Figure``."""
    import matplotlib.pyplot as plt

    a, b = _matrix_2x2(a, "a"), _matrix_2x2(b, "b")
    ab = a @ b
    every = np.c_[_SQUARE, b @ _SQUARE, ab @ _SQUARE, [[0.0], [0.0]]]
    fig, axes = plt.subplots(1, 3, figsize=(9.5, 3.6), facecolor="white")
    panels = [("1. B moves the unit square", None, b, ("B e1", "B e2")),
              ("2. then A moves B's image", b, ab, ("A B e1", "A B e2")),
              ("3. AB does both in one step", None, ab, ("AB e1", "AB e2"))]
    for ax, (title, before, after, names) in zip(axes, panels, strict=True):
        _plane(ax, every, title)
        ax.fill(*_SQUARE, color="#bbbbbb", alpha=0.6, lw=0)
        if before is not None:
            _parallelogram(ax, before, ORANGE, 0.25, dashed=True)
        _parallelogram(ax, after, ORANGE if before is not None else SKY, 0.45)
        sides = [f"{name} = {_vector_text(column)} ({color})"
                 for name, column, color in zip(names, after.T, ("vermillion", "blue"),
                                                strict=True)]
        ax.set_xlabel("\n".join(sides), fontsize=9)
    fig.tight_layout()
    return fig


def column_view(a: ArrayLike, x: ArrayLike) -> Figure:
    """``A x`` for a (2, n) matrix ``a`` and an (n,) vector ``x`` drawn as the columns of A,
    scaled by the entries of x and added tip to tail: the first arrow x_1 a_1 from the origin,
    each next x_j a_j from the tip of the one before, and A x (black) from the origin to the last
    tip. The plain columns a_j are drawn faintly from the origin. Returns the ``Figure``."""
    import matplotlib.pyplot as plt

    a = real_array(a, "a", ndim=2, what="matrix").astype(float)
    x = real_array(x, "x", ndim=1, what="vector").astype(float)
    if a.shape[0] != 2:
        raise ValueError(f"a must have 2 rows (a matrix of the plane), got shape {a.shape}")
    if a.shape[1] != len(x):
        raise ValueError(f"x must have one entry per column of a ({a.shape[1]}), got {len(x)}")
    if a.shape[1] > 4:
        raise ValueError(f"a must have at most 4 columns to be drawn, got {a.shape[1]}")
    tips = np.cumsum(a * x, axis=1)  # the running sums x_1 a_1, x_1 a_1 + x_2 a_2, ...
    every = np.c_[a, tips, [[0.0], [0.0]]]
    fig, ax = plt.subplots(figsize=(5.6, 4.6), facecolor="white")
    _plane(ax, every, "A x = x1 a1 + x2 a2: the columns, scaled and added")
    colors = (VERMILLION, BLUE, GREEN, PURPLE)
    start = np.zeros(2)
    for j in range(a.shape[1]):
        column, color = a[:, j], colors[j]
        _vector(ax, np.zeros(2), column, color, lw=0.8)  # the plain column, thin
        normal = np.array([-column[1], column[0]]) / max(np.linalg.norm(column), 1e-12)
        label_at = 0.5 * column + 0.18 * normal
        ax.text(label_at[0], label_at[1], f"a{j + 1}", fontsize=9, color=color,
                ha="center", va="center")
        end = tips[:, j]
        _vector(ax, start, end, color)
        step = end - start
        normal = np.array([step[1], -step[0]]) / max(np.linalg.norm(step), 1e-12)
        label_at = (start + end) / 2 + 0.3 * normal
        ax.text(label_at[0], label_at[1], f"x{j + 1} a{j + 1} = {x[j]:g} a{j + 1}",
                fontsize=9, color=color, ha="left" if normal[0] >= 0 else "right", va="center")
        start = end
    _vector(ax, np.zeros(2), tips[:, -1], BLACK, lw=2.5)
    ax.text(tips[0, -1] + 0.1, tips[1, -1] + 0.1, f"A x = {_vector_text(tips[:, -1])}", fontsize=9,
            color=BLACK, ha="left", va="bottom")
    ax.set(xlabel="first coordinate", ylabel="second coordinate")
    fig.tight_layout()
    return fig


def pca_directions(points: ArrayLike) -> Figure:
    """A 2-D cloud ``points`` (n, 2) with the eigenvectors of its covariance C (divisor n - 1)
    drawn from the mean as arrows of length sqrt(lambda) (one standard deviation of the points
    along that direction), the largest first, each labelled with its lambda; the title states
    trace(C) = lambda_1 + lambda_2, the total variance. Returns the ``Figure``."""
    import matplotlib.pyplot as plt

    points = real_array(points, "points", ndim=2, what="(n, 2) array").astype(float)
    if points.shape[1] != 2 or len(points) < 3:
        raise ValueError(f"points must be an (n, 2) array with n >= 3, got shape {points.shape}")
    centre = points.mean(axis=0)
    cov = np.cov(points, rowvar=False)
    values, vectors = np.linalg.eigh(cov)
    values, vectors = values[::-1], vectors[:, ::-1]  # largest first
    vectors = vectors * np.where(vectors[0] < 0, -1.0, 1.0)  # each pointing right (a sign is free)
    fig, ax = plt.subplots(figsize=(6.4, 4.6), facecolor="white")
    ax.scatter(points[:, 0], points[:, 1], s=10, color=SKY, alpha=0.7, zorder=1)
    low, high = points.min(axis=0), points.max(axis=0)
    pad = 0.08 * (high - low).max()
    ax.set(xlim=(low[0] - pad, high[0] + pad), ylim=(low[1] - pad, high[1] + pad),
           aspect="equal", xlabel="first coordinate", ylabel="second coordinate")
    lines = []
    for i, color in enumerate((VERMILLION, BLUE)):
        length = np.sqrt(max(values[i], 0.0))
        tip = centre + length * vectors[:, i]
        _vector(ax, centre, tip, color, lw=2.5)
        label_at = tip + 0.35 * vectors[:, i]
        ax.text(label_at[0], label_at[1], f"v{i + 1}", fontsize=10, color=color,
                ha="center", va="center", fontweight="bold")
        lines.append(f"v{i + 1}: lambda{i + 1} = {values[i]:.2f}, arrow sqrt(lambda{i + 1}) = "
                     f"{length:.2f}")
    ax.set_title("\n".join([*lines, f"trace(C) = {np.trace(cov):.2f} = lambda1 + lambda2"]),
                 fontsize=9.5)
    fig.tight_layout()
    return fig
