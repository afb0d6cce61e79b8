"""Diagrams of rotary positions (notebook 15): one query/key pair turned in its plane at two
placements with the same offset, and the score as a function of the offset for several query
positions, RoPE beside a position vector added to the token.

Angles follow notebook 15: pair ``i`` of the token at position ``pos`` turns by ``pos · ω_i``, and
the offset is ``n − m`` for a query at ``m`` and a key at ``n``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from course_utils.diagrams._draw import BLACK, BLUE, GREEN, ORANGE, VERMILLION
from course_utils.positional import angular_frequencies, sinusoidal_encoding
from course_utils.validation import check_int, check_real, real_array

if TYPE_CHECKING:  # matplotlib is imported only when something is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _pair(v: ArrayLike, name: str) -> np.ndarray:
    array = real_array(v, name, ndim=1, what="pair (x, y)").astype(float)
    if array.shape != (2,) or not np.any(array):
        raise ValueError(f"{name} must be a nonzero pair (x, y), got {array.tolist()}")
    return array


def _turn(v: np.ndarray, angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])


def _arc(ax: Axes, start: float, stop: float, radius: float, color: str, text: str) -> None:
    """An arc from angle ``start`` to ``stop`` with an arrow head and ``text`` at its middle."""
    angles = np.linspace(start, stop, 40)
    ax.plot(radius * np.cos(angles), radius * np.sin(angles), color=color, lw=1.2)
    ax.annotate("", xy=(radius * np.cos(stop), radius * np.sin(stop)),
                xytext=(radius * np.cos(angles[-3]), radius * np.sin(angles[-3])),
                arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.2, "shrinkA": 0,
                            "shrinkB": 0, "mutation_scale": 10})
    middle = (start + stop) / 2
    if text:
        ax.text(1.18 * radius * np.cos(middle), 1.18 * radius * np.sin(middle), text,
                color=color, ha="center", va="center", fontsize=9)


def _arrow(ax: Axes, end: np.ndarray, color: str, ls: str = "-", lw: float = 2.0) -> None:
    ax.annotate("", xy=tuple(end), xytext=(0.0, 0.0),
                arrowprops={"arrowstyle": "-|>", "color": color, "lw": lw, "ls": ls,
                            "shrinkA": 0, "shrinkB": 0, "mutation_scale": 14})


def rope_rotation(q: ArrayLike = (1.0, -0.3), k: ArrayLike = (-0.2, 0.9), m: int = 1, n: int = 3,
                  shift: int = 2, omega: float = 0.4) -> Figure:
    """One RoPE pair in its plane, twice: the query pair ``q`` at position ``m`` and the key pair
    ``k`` at position ``n`` (left), then both moved ``shift`` positions on (right). Each panel
    draws q and k unturned (dashed), ``R(m ω) q`` and ``R(n ω) k`` (solid), the arcs of their
    turns, ``m ω`` and ``n ω`` radians, and the angle between the two turned vectors, whose
    dot product is written under the panel: the same in both panels, because the angle between
    them is ``(n − m) ω`` plus the angle from q to k. Returns the ``Figure``."""
    import matplotlib.pyplot as plt

    q, k = _pair(q, "q"), _pair(k, "k")
    m, n = check_int(m, "m", minimum=0), check_int(n, "n", minimum=0)
    shift = check_int(shift, "shift", minimum=1)
    omega = check_real(omega, "omega", low=0, low_open=True)
    radius = float(max(np.linalg.norm(q), np.linalg.norm(k)))
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 5.0), facecolor="white")
    for ax, (pos_q, pos_k) in zip(axes, [(m, n), (m + shift, n + shift)], strict=True):
        ax.set_facecolor("white")
        turned_q, turned_k = _turn(q, pos_q * omega), _turn(k, pos_k * omega)
        circle = np.linspace(0, 2 * np.pi, 200)
        ax.plot(radius * np.cos(circle), radius * np.sin(circle), color="lightgray", lw=0.8)
        ax.axhline(0, color="gray", lw=0.5, zorder=0)
        ax.axvline(0, color="gray", lw=0.5, zorder=0)
        _arrow(ax, q, BLUE, ls="--", lw=1.2)
        _arrow(ax, k, ORANGE, ls="--", lw=1.2)
        _arrow(ax, turned_q, BLUE)
        _arrow(ax, turned_k, ORANGE)
        angle_q, angle_k = np.arctan2(q[1], q[0]), np.arctan2(k[1], k[0])
        _arc(ax, angle_q, angle_q + pos_q * omega, 0.45 * float(np.linalg.norm(q)), BLUE,
             f"{pos_q}ω")
        _arc(ax, angle_k, angle_k + pos_k * omega, 0.75 * float(np.linalg.norm(k)), ORANGE,
             f"{pos_k}ω")
        ax.text(*(1.12 * turned_q), f"$R({pos_q}\\omega)\\,q$", color=BLUE, ha="center",
                va="center", fontsize=10)
        ax.text(*(1.12 * turned_k), f"$R({pos_k}\\omega)\\,k$", color=ORANGE, ha="center",
                va="center", fontsize=10)
        ax.text(*(q + np.array([0.0, -0.12])), "q", color=BLUE, ha="center", va="top",
                fontsize=10)
        ax.text(*(k + np.array([0.12, 0.0])), "k", color=ORANGE, ha="left", va="center",
                fontsize=10)
        start_q, start_k = angle_q + pos_q * omega, angle_k + pos_k * omega
        _arc(ax, start_q, start_q + (start_k - start_q) % (2 * np.pi), 0.25 * radius, GREEN, "")
        score = float(turned_q @ turned_k)
        ax.set_title(f"query at m = {pos_q}, key at n = {pos_k} (offset {pos_k - pos_q})",
                     fontsize=10)
        ax.set_xlabel(f"score $(R({pos_q}\\omega)q)\\cdot(R({pos_k}\\omega)k)$ = {score:.3f}",
                      color=GREEN, fontsize=10)
        limit = 1.45 * radius
        ax.set(xlim=(-limit, limit), ylim=(-limit, limit), aspect="equal", xticks=[], yticks=[])
    fig.suptitle(f"One pair turned by RoPE, ω = {omega:g} radians per position: the same offset, "
                 "the same angle between them (green)", fontsize=11)
    fig.tight_layout()
    return fig


def _rotate_pairs(x: np.ndarray, positions: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """Rows ``x`` (d,) turned pair by pair: row r by ``positions[r] · ω_i``, (L, d)."""
    angles = positions[:, None] * omega[None, :]
    first, second = x[0::2][None, :], x[1::2][None, :]
    out = np.empty((len(positions), len(x)))
    out[:, 0::2] = first * np.cos(angles) - second * np.sin(angles)
    out[:, 1::2] = first * np.sin(angles) + second * np.cos(angles)
    return out


def rope_scores(q: ArrayLike, k: ArrayLike, starts: Sequence[int] = (50, 500, 5000),
                offsets: Sequence[int] = tuple(range(-40, 41)), base: float = 10000.0) -> Figure:
    """The score of the query ``q`` at position m against the key ``k`` at n = m + offset, as a
    function of the offset, one curve per m in ``starts``. Left: RoPE, ``(R_m q)·(R_n k)``; the
    curves coincide: the first m is a line, the others markers on it. Right: notebook 09's
    sinusoidal position vector added to both instead, ``(q + p_m)·(k + p_n)`` (no projections),
    one line per m; they differ from one m to the next. Returns the ``Figure``."""
    import matplotlib.pyplot as plt

    q = real_array(q, "q", ndim=1, what="vector").astype(float)
    k = real_array(k, "k", ndim=1, what="vector").astype(float)
    if q.shape != k.shape or len(q) < 2 or len(q) % 2:
        raise ValueError(f"q and k must be vectors of the same even length, got {q.shape} and "
                         f"{k.shape}")
    starts = [check_int(s, "starts", minimum=0) for s in starts]
    offsets_array = np.array([check_int(o, "offsets", minimum=None) for o in offsets])
    if not starts or len(offsets_array) < 2:
        raise ValueError("starts needs at least one position and offsets at least two")
    if min(starts) + offsets_array.min() < 0:
        raise ValueError("every key position m + offset must be 0 or more")
    base = check_real(base, "base", low=1, low_open=True)
    d = len(q)
    omega = angular_frequencies(d, base)
    table = sinusoidal_encoding(max(starts) + int(offsets_array.max()) + 1, d, base)
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.8), facecolor="white", sharey=False)
    markers, colors = ["o", "s", "^", "D", "v"], [BLUE, ORANGE, GREEN, VERMILLION, BLACK]
    for index, m in enumerate(starts):
        keys = m + offsets_array
        rope = _rotate_pairs(k, keys.astype(float), omega) @ _rotate_pairs(
            q, np.array([float(m)]), omega)[0]
        added = (table[keys] + k) @ (table[m] + q)
        color = colors[index % len(colors)]
        for ax, scores in zip(axes, (rope, added), strict=True):
            if index == 0 or ax is axes[1]:
                ax.plot(offsets_array, scores, color=color, lw=2 if index == 0 else 1.2,
                        ls=("-", "--", ":", "-.")[index % 4], label=f"m = {m}")
            else:
                ax.plot(offsets_array[index::4], scores[index::4], ls="none", color=color,
                        marker=markers[index % len(markers)], ms=4, label=f"m = {m}")
    axes[0].set(title="RoPE: $(R_m q)\\cdot(R_n k)$", xlabel="offset n − m", ylabel="score")
    axes[1].set(title="added position: $(q + p_m)\\cdot(k + p_n)$", xlabel="offset n − m")
    for ax in axes:
        ax.set_facecolor("white")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, title="query at")
    fig.tight_layout()
    return fig
