"""Diagrams of notebook 16's fast generation: one round of speculative decoding as a timeline,
the tokens a target pass gives and the speed-up against the number of proposals, and a paged KV
cache's block tables beside its pool of blocks."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from course_utils.diagrams._draw import (
    BLACK,
    BLUE,
    GREEN,
    ORANGE,
    PURPLE,
    SKY,
    VERMILLION,
    YELLOW,
    _arrow,
    _white_figure,
)
from course_utils.validation import check_int, check_real

if TYPE_CHECKING:  # matplotlib is imported only when something is drawn
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FREE = "#e6e6e6"  # a slot of a block that no request holds
UNTESTED = "#bdbdbd"  # the text of a proposal thrown away untested
REQUEST_COLORS = (SKY, ORANGE, GREEN, PURPLE, YELLOW)  # request 0, 1, ... of a paged cache


def _rect(ax: Axes, x: float, y: float, width: float, height: float, color: str,
          **style: Any) -> None:
    from matplotlib.patches import Rectangle

    style = {"edgecolor": BLACK, "lw": 1.0, **style}
    ax.add_patch(Rectangle((x, y), width, height, facecolor=color, **style))


def speculative_round(proposed: Sequence[object], accepted: int, final: object, *,
                      draft_cost: float = 0.2) -> Figure:
    """One round of speculative decoding as a timeline.

    Top row: the draft's ``k = len(proposed)`` steps, one after the other, each a box of width
    ``draft_cost`` (in target passes) holding the token it proposed. Middle row: the target's one
    pass, width 1, over the ``k + 1`` positions, with an arrow from each proposal into it. Bottom
    row, under the target's pass, a cell per position: the first ``accepted`` proposals accepted
    (green), then, when ``accepted < k``, the first rejection (vermillion) with ``final``, the
    token drawn from the residual in its place, and the later proposals thrown away untested
    (white, grey text); when all ``k`` are accepted, ``final`` is the bonus token (blue) in cell
    ``k + 1``. A line under it all lists the tokens the round adds, ``accepted + 1`` of them.

    ``proposed`` a non-empty sequence of tokens (ints or strings), ``accepted`` an int in
    ``[0, k]``, ``draft_cost`` in (0, 1]. Returns the ``Figure``.
    """
    k = len(proposed) if isinstance(proposed, Sequence) and not isinstance(proposed, str) else 0
    if k == 0:
        raise ValueError("proposed must be a non-empty sequence of tokens")
    accepted = check_int(accepted, "accepted", minimum=0, maximum=k)
    c = check_real(draft_cost, "draft_cost", low=0, high=1, low_open=True)
    fig, ax = _white_figure((9.2, 3.9))
    start, cell = k * c, 1 / (k + 1)
    ax.text(-0.05, 2.3, f"draft: {k} steps", ha="right", va="center", fontsize=9.5)
    ax.text(-0.05, 1.2, "target: 1 pass", ha="right", va="center", fontsize=9.5)
    ax.text(-0.05, 0.3, "verdict", ha="right", va="center", fontsize=9.5)
    for i, token in enumerate(proposed):  # the draft's steps, one at a time
        _rect(ax, i * c, 2.0, c, 0.6, SKY)
        ax.text((i + 0.5) * c, 2.3, str(token), ha="center", va="center", fontsize=10)
        _arrow(ax, ((i + 0.5) * c, 2.0), (start + (i + 0.5) * cell, 1.5), lw=0.9, color=BLUE)
    _rect(ax, start, 0.9, 1.0, 0.6, YELLOW)
    ax.text(start + 0.5, 1.2, f"scores all {k + 1} positions at once", ha="center", va="center",
            fontsize=9.5)
    kept = [str(t) for t in proposed[:accepted]] + [str(final)]
    for j in range(k + 1):
        x = start + j * cell
        if j < accepted:
            color, text, ink = GREEN, f"{proposed[j]}\nkept", BLACK
        elif j == accepted and accepted < k:
            color, text, ink = VERMILLION, f"{proposed[j]} rejected\n{final} instead", BLACK
        elif j == k and accepted == k:
            color, text, ink = BLUE, f"bonus\n{final}", "white"
        else:
            color, text, ink = "white", "not\ntested", UNTESTED
        _rect(ax, x, 0.0, cell, 0.6, color)
        ax.text(x + cell / 2, 0.3, text, ha="center", va="center", fontsize=8, color=ink)
    end = start + 1
    _arrow(ax, (0, -0.35), (end + 0.08, -0.35), lw=1.0)
    for x, label in ((0, "0"), (start, f"{k}c"), (end, f"{k}c + 1")):
        ax.plot([x, x], [-0.42, -0.28], color=BLACK, lw=1.0)
        ax.text(x, -0.5, label, ha="center", va="top", fontsize=9)
    ax.text(end / 2, -0.9, f"time, in target passes: a draft step drawn as c = {c:g} of one",
            ha="center", va="top", fontsize=9)
    ax.text(end / 2, -1.3, f"this round adds {accepted + 1} token(s): " + ", ".join(kept),
            ha="center", va="top", fontsize=10, fontweight="bold")
    ax.set(xlim=(-0.75, end + 0.15), ylim=(-1.75, 2.75))
    fig.tight_layout()
    return fig


def speculative_gain(alphas: Sequence[float] = (0.5, 0.8, 0.95), *, k_max: int = 20,
                     draft_cost: float | None = None,
                     measured: tuple[int, float, float] | None = None) -> Figure:
    """What speculative decoding gains, against the number of proposals ``k = 0 … k_max``.

    Left: the expected tokens per target pass, ``(1 − a^(k+1)) / (1 − a)`` (Leviathan et al.
    2023, eq. 1; each proposal accepted independently with probability ``a``), one curve per
    ``a`` in ``alphas``. ``measured = (k, â, tokens per pass)``, a run's draft length, its
    estimated acceptance rate and its measured tokens per pass, adds the curve of ``â`` (dashed,
    black) and the measured point (a star) on it.

    Right, when ``draft_cost = c`` is given: the speed-up over plain decoding under the cost
    model that a draft step costs ``c`` target passes and the target's pass over ``k + 1``
    tokens costs as much as over one (memory-bound decoding, section 2 of notebook 16), so a
    round costs ``kc + 1``: ``(1 − a^(k+1)) / ((1 − a)(kc + 1))`` (Leviathan et al., Theorem
    3.8), each curve's best ``k`` marked with a circle (when it is at most ``k_max``), and plain
    decoding's 1 as a grey line.

    ``alphas`` numbers in [0, 1) (at least one), ``k_max`` an int >= 1, ``draft_cost`` in (0, 1]
    or None. Returns the ``Figure``.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from course_utils.sampling import expected_tokens_per_pass

    rates = [check_real(a, "alphas", low=0, high=1, high_open=True) for a in alphas]
    if not rates:
        raise ValueError("alphas must hold at least one acceptance rate")
    k_max = check_int(k_max, "k_max")
    c = None if draft_cost is None else check_real(draft_cost, "draft_cost", low=0, high=1,
                                                   low_open=True)
    if measured is not None:
        k_run = check_int(measured[0], "measured[0] (k)", maximum=k_max)
        a_run = check_real(measured[1], "measured[1] (a)", low=0, high=1, high_open=True)
        per_pass = check_real(measured[2], "measured[2] (tokens per pass)", low=1)
    ks = np.arange(k_max + 1)
    panels = 1 if c is None else 2
    fig, axes = plt.subplots(1, panels, figsize=(4.6 * panels + 0.4, 4.4), facecolor="white",
                             squeeze=False)
    left = axes[0, 0]
    colors = (BLUE, ORANGE, GREEN, PURPLE, VERMILLION, SKY)
    curves = [(a, colors[i % len(colors)], "o-", f"a = {a:g}") for i, a in enumerate(rates)]
    if measured is not None:
        curves.append((a_run, BLACK, "--", f"a = {a_run:.2f}, measured"))
    for a, color, style, label in curves:
        tokens = np.array([expected_tokens_per_pass(a, int(k)) for k in ks])
        left.plot(ks, tokens, style, color=color, ms=3.5, label=label)
    if measured is not None:
        left.plot([k_run], [per_pass], "*", color=VERMILLION, ms=13, zorder=5,
                  label=f"measured: {per_pass:.2f} at k = {k_run}")
    left.set(xlabel="proposals per round, k", ylabel="expected tokens per target pass",
             title="tokens per target pass", ylim=(0, None))
    if c is not None:
        right = axes[0, 1]
        right.axhline(1, color=UNTESTED, lw=1.5, label="plain decoding")
        wide = np.arange(max(k_max, 1000) + 1)  # to find each curve's best k, drawn or not
        for a, color, style, label in curves:
            tokens = np.array([expected_tokens_per_pass(a, int(k)) for k in ks])
            speedup = tokens / (ks * c + 1)
            right.plot(ks, speedup, style, color=color, ms=3.5, label=label)
            best = int(np.argmax((1 - a ** (wide + 1)) / ((1 - a) * (wide * c + 1))))
            if best <= k_max:  # a best k past the axis is not marked
                right.plot([best], [speedup[best]], "o", color=color, ms=10, mfc="none",
                           mew=1.6)
        right.set(xlabel="proposals per round, k", ylabel="speed-up over plain decoding",
                  title=f"speed-up, a draft step costing c = {c:g}", ylim=(0, None))
    handles: dict[str, Artist] = {}  # one key below the panels, each label once
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    columns = min(len(handles), 3 if panels == 2 else 2)
    fig.legend(list(handles.values()), list(handles), loc="lower center", fontsize=8.5,
               ncol=columns, frameon=False)
    rows = math.ceil(len(handles) / columns)
    for ax in fig.axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout(rect=(0, 0.06 + 0.055 * rows, 1, 1))
    return fig


def paged_cache(tables: object, lengths: Sequence[int] | None = None, *,
                n_blocks: int | None = None, block_size: int | None = None,
                names: Sequence[str] | None = None) -> Figure:
    """A paged KV cache: each request's block table (left) and the pool of blocks (right).

    The pool has ``n_blocks`` rows (block 0 on top) of ``block_size`` slots. A slot that holds
    position ``p`` of request ``r`` is in ``r``'s colour and reads ``{name}{p}``; a slot in a
    block a request holds but has not written yet (past its length, in its last block) is hatched
    in that colour; the slots of a block no table lists are free (light grey). Request ``r``'s
    table is a column of boxes, entry ``j`` its block for positions ``j·s … j·s + s − 1``, with an
    arrow to that block. A key under the pool names the three kinds of slot.

    ``tables`` is either a :class:`~course_utils.kv_cache.PagedKVCache` (its ``block_tables``,
    every sequence at its ``length``, its ``n_blocks`` and ``block_size``; give nothing else)
    or a list of block tables, one list of block numbers per request, with ``lengths`` (the
    positions each request has written; each table lists exactly ``⌈length / s⌉`` blocks, no
    block twice), ``n_blocks`` and ``block_size``. ``names``: one short name per request
    (default A, B, C, …; at most 5 requests). Returns the ``Figure``.
    """
    from course_utils.kv_cache import PagedKVCache

    if isinstance(tables, PagedKVCache):
        if lengths is not None or n_blocks is not None or block_size is not None:
            raise ValueError("give a PagedKVCache alone, or tables with lengths, n_blocks and "
                             "block_size")
        cache = tables
        tables, lengths = cache.block_tables, [cache.length] * cache.batch_size
        n_blocks, block_size = cache.n_blocks, cache.block_size
    if lengths is None or n_blocks is None or block_size is None:
        raise ValueError("tables given as lists need lengths, n_blocks and block_size")
    n_blocks, size = check_int(n_blocks, "n_blocks"), check_int(block_size, "block_size")
    if not isinstance(tables, Sequence) or not 1 <= len(tables) <= len(REQUEST_COLORS):
        raise ValueError(f"tables must list 1 to {len(REQUEST_COLORS)} block tables")
    rows = [[check_int(b, "a block number", minimum=0, maximum=n_blocks - 1) for b in t]
            for t in tables]
    counts = [check_int(n, "lengths", minimum=0) for n in lengths]
    if len(counts) != len(rows):
        raise ValueError(f"lengths must give one length per table: {len(rows)}, got "
                         f"{len(counts)}")
    for r, (row, n) in enumerate(zip(rows, counts, strict=True)):
        if len(row) != math.ceil(n / size):
            raise ValueError(f"table {r} lists {len(row)} blocks for {n} positions in blocks "
                             f"of {size}: it needs {math.ceil(n / size)}")
    held = [b for row in rows for b in row]
    if len(held) != len(set(held)):
        raise ValueError("a block appears in two tables, or twice in one")
    labels = list("ABCDE"[: len(rows)] if names is None else names)
    if len(labels) != len(rows):
        raise ValueError(f"names must give one name per table: {len(rows)}, got {len(labels)}")

    groups = [sum(len(row) + 1 for row in rows[:r]) for r in range(len(rows))]  # first rows
    depth = max(n_blocks, groups[-1] + len(rows[-1]))  # rows the pool or the tables need
    fig, ax = _white_figure((8.4, 0.5 * depth + 2.1))
    pool_x, gap, top = 3.7, 0.1, depth - 1

    owner = {b: (r, j) for r, row in enumerate(rows) for j, b in enumerate(row)}
    for block in range(n_blocks):
        y = top - block
        for slot in range(size):
            x = pool_x + slot
            if block not in owner:
                _rect(ax, x, y, 1, 1 - gap, FREE, lw=0.6)
                continue
            r, j = owner[block]
            p = j * size + slot
            if p < counts[r]:
                _rect(ax, x, y, 1, 1 - gap, REQUEST_COLORS[r], lw=0.6)
                ax.text(x + 0.5, y + 0.45, f"{labels[r]}{p}", ha="center", va="center",
                        fontsize=8.5)
            else:  # reserved in the request's last block, not written yet
                _rect(ax, x, y, 1, 1 - gap, "white", lw=0.6, hatch="///",
                      edgecolor=REQUEST_COLORS[r])
        ax.text(pool_x + size + 0.15, y + 0.45, f"block {block}", ha="left", va="center",
                fontsize=8.5)
    ax.text(pool_x + size / 2, top + 1.3, f"the pool: {n_blocks} blocks of s = {size} slots",
            ha="center", va="center", fontsize=9.5)
    ax.text(1.95, top + 1.3, "block tables", ha="center", va="center", fontsize=9.5)
    for r, row in enumerate(rows):  # one column: the arrows cross no other table
        first = top - groups[r]
        ax.text(1.35, first - (len(row) - 1) / 2 + 0.45, f"{labels[r]}'s table:\n"
                f"{counts[r]} positions", ha="right", va="center", fontsize=8.5)
        for j, block in enumerate(row):
            y = first - j
            _rect(ax, 1.55, y, 0.8, 1 - gap, REQUEST_COLORS[r], lw=0.8)
            ax.text(1.95, y + 0.45, str(block), ha="center", va="center", fontsize=9)
            _arrow(ax, (2.35, y + 0.45), (pool_x - 0.05, top - block + 0.45), lw=0.9)
    from matplotlib.patches import Rectangle

    key_y = -0.8
    keys = [(f"written: {labels[0]}p is {labels[0]}'s position p", REQUEST_COLORS[0], None,
             BLACK), ("reserved, not yet written", "white", "///", REQUEST_COLORS[0]),
            ("free: in no table", FREE, None, BLACK)]
    for i, (text, color, hatch, edge) in enumerate(keys):
        x = 0.2 + i * 3.1
        ax.add_patch(Rectangle((x, key_y - 0.3), 0.45, 0.45, facecolor=color, hatch=hatch,
                               edgecolor=edge, lw=0.8))
        ax.text(x + 0.6, key_y - 0.08, text, ha="left", va="center", fontsize=8)
    ax.set(xlim=(-0.6, max(pool_x + size + 1.4, 9.4)), ylim=(key_y - 0.6, top + 1.7))
    fig.tight_layout()
    return fig
