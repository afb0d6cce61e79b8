"""Architecture diagrams of notebooks 11 to 14: the split and merge of heads, the encoder layer
post-LN and pre-LN, the axes LayerNorm and BatchNorm average over, the decoder block with its
residual paths, a cross-attention map, the whole encoder–decoder and the training loop, drawn as
boxes (``_box``) joined by arrows (``_arrow``, ``_flow``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

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
from course_utils.validation import check_bool, check_int, real_array

if TYPE_CHECKING:  # matplotlib is imported only when something is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike


def _flow(ax: Axes, boxes: dict[str, tuple[float, float, str, str]],
          arrows: list[tuple[str, str, str]], width: float = 1.9, height: float = 0.9,
          sizes: dict[str, tuple[float, float]] | None = None) -> dict[str, tuple[float, float]]:
    """Draw named boxes ``name: (x, y, text, color)`` and straight arrows ``(start, end, label)``
    from the edge of one box to the edge of the other; ``sizes`` overrides a box's
    ``(width, height)``. Returns each box's centre."""
    from matplotlib.patches import FancyBboxPatch

    sizes = sizes or {}
    for name, (x, y, text, color) in boxes.items():
        w, h = sizes.get(name, (width, height))
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, facecolor=color,
                                    boxstyle="round,pad=0.02,rounding_size=0.12",
                                    edgecolor=BLACK, lw=1.0))
        ax.text(x, y, text, ha="center", va="center_baseline", fontsize=9.5, color=BLACK)

    def edge(name: str, toward: tuple[float, float]) -> tuple[float, float]:
        x, y = boxes[name][:2]
        w, h = sizes.get(name, (width, height))
        dx, dy = toward[0] - x, toward[1] - y
        # leave the box through the side the other point lies beyond
        scale = min(w / 2 / abs(dx) if dx else np.inf, h / 2 / abs(dy) if dy else np.inf)
        return x + dx * scale, y + dy * scale

    for start, end, label in arrows:
        a, b = boxes[start][:2], boxes[end][:2]
        p, q = edge(start, b), edge(end, a)
        _arrow(ax, p, q)
        if label:
            ax.text((p[0] + q[0]) / 2, (p[1] + q[1]) / 2, label, ha="center", va="bottom",
                    fontsize=8.5, color=BLUE, bbox={"facecolor": "white", "edgecolor": "none",
                                                    "pad": 0.5})
    return {name: box[:2] for name, box in boxes.items()}


HEAD_COLORS = (SKY, ORANGE, YELLOW, PURPLE, GREEN)


def _head_color(i: int) -> str:
    return HEAD_COLORS[i % len(HEAD_COLORS)]


def head_split(n_heads: int = 4) -> Figure:
    """Multi-head attention as a data flow (notebook 11): X is projected to Q, K and V, split into
    ``n_heads`` heads of width d_k = d_model / h, each head attends on its own, the heads are
    merged (concatenated) and multiplied by W^O. The split and merge boxes span the column of
    heads, so every arrow between them is a straight horizontal line. Shapes are written under
    the boxes. Returns the ``Figure``."""
    h = check_int(n_heads, "n_heads")
    gap, head_h = 0.84, 0.74  # one data unit is about an inch: the figure is 9.2 inches wide
    ys = [(h - 1) / 2 * gap - i * gap for i in range(h)]
    column = max(ys) - min(ys) + head_h  # the height of the split and merge boxes
    xs = {"x": 0.45, "proj": 1.75, "split": 3.4, "heads": 5.45, "merge": 7.3, "out": 8.55}
    widths = {"x": 0.7, "proj": 1.15, "split": 1.5, "heads": 1.8, "merge": 1.1, "out": 0.7}
    fig, ax = _white_figure((9.2, (column + 0.95) * 9.2 / 9.4))
    boxes = {
        "x": (xs["x"], 0.0, "X", SKY),
        "proj": (xs["proj"], 0.0, "$Q = XW^Q$\n$K = XW^K$\n$V = XW^V$", SKY),
        "split": (xs["split"], 0.0, "split heads\nreshape, transpose", "white"),
        "merge": (xs["merge"], 0.0, "merge heads\n= Concat", "white"),
        "out": (xs["out"], 0.0, "$\\cdot\\, W^O$", SKY),
    }
    for i, y in enumerate(ys):
        boxes[f"head {i + 1}"] = (xs["heads"], y,
                                  f"head {i + 1}\nsoftmax$(Q_iK_i^T/\\sqrt{{d_k}})\\,V_i$",
                                  _head_color(i))
    sizes = {name: (widths[name], 0.62) for name in ("x", "out")}
    sizes |= {"proj": (widths["proj"], 0.95), "split": (widths["split"], column),
              "merge": (widths["merge"], column)}
    sizes |= {f"head {i + 1}": (widths["heads"], head_h - 0.04) for i in range(h)}
    _flow(ax, boxes, [("x", "proj", ""), ("proj", "split", ""), ("merge", "out", "")],
          sizes=sizes)
    split_right = xs["split"] + widths["split"] / 2
    merge_left = xs["merge"] - widths["merge"] / 2
    for y in ys:  # straight arrows: split -> each head -> merge
        _arrow(ax, (split_right, y), (xs["heads"] - widths["heads"] / 2, y))
        _arrow(ax, (xs["heads"] + widths["heads"] / 2, y), (merge_left, y))

    def label(x: float, y: float, text: str) -> None:
        ax.text(x, y, text, ha="center", va="top", fontsize=9, color=BLUE, fontweight="bold")

    for name, shape, below in [("x", "(B, N, d_model)", 0.3), ("out", "(B, N, d_model)", 0.3),
                               ("proj", "(B, N, d_model)\neach", 0.48)]:
        label(xs[name], -below - 0.06, shape)
    bottom = -column / 2 - 0.08
    label(xs["split"], bottom, "(B, h, N, d_k)")
    label(xs["heads"], bottom, "each head: (B, N, d_k)")
    label(xs["merge"], bottom, "(B, N, h·d_k)\n= (B, N, d_model)")
    ax.text(xs["heads"], column / 2 + 0.1, "h heads side by side, each of width d_k = d_model / h",
            ha="center", va="bottom", fontsize=9, color=BLACK)
    ax.set(xlim=(-0.2, 9.2), ylim=(-column / 2 - 0.55, column / 2 + 0.4))
    ax.set_aspect("equal")
    fig.subplots_adjust(left=0, right=1, bottom=0, top=1)
    return fig


def _grid(ax: Axes, left: float, top: float, values: np.ndarray, colors: list[list[str]],
          title: str = "") -> None:
    """A small matrix drawn as unit cells (row 0 at the top), each value written on its cell."""
    from matplotlib.patches import Rectangle

    rows, cols = values.shape
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((left + c, top - r - 1), 1, 1, facecolor=colors[r][c],
                                   edgecolor=BLACK, lw=0.8))
            ax.text(left + c + 0.5, top - r - 0.5, f"{values[r, c]}", ha="center", va="center",
                    fontsize=10, color=BLACK)
    if title:
        ax.text(left + cols / 2, top + 0.25, title, ha="center", va="bottom", fontsize=9.5,
                color=BLACK)


def head_reshape(n_tokens: int = 3, d_model: int = 4, n_heads: int = 2) -> Figure:
    """The split of notebook 11, cell by cell, for one sentence of ``n_tokens`` tokens: ``x`` of
    shape (N, d_model) holding 0, 1, 2, ... with each cell coloured by the head its feature goes
    to; ``reshape`` to (N, h, d_k) gives every token an (h, d_k) block, one row per head;
    ``transpose`` to (h, N, d_k) takes row i of every token's block into head i. Below, the plain
    reshape to (h, N, d_k) without the transpose, whose "heads" mix tokens and features of other
    heads, with a note comparing its first "head" with the true head 1. Returns the ``Figure``."""
    n = check_int(n_tokens, "n_tokens")
    d = check_int(d_model, "d_model")
    h = check_int(n_heads, "n_heads")
    if d % h:
        raise ValueError(f"d_model must be divisible by n_heads, got d_model={d}, n_heads={h}")
    d_k = d // h
    x = np.arange(n * d).reshape(n, d)
    head_of = [[_head_color(c // d_k) for c in range(d)] for _ in range(n)]
    arrow_gap, block_gap = 1.4, 0.5
    # top row: x, the reshape (one block per token), the transpose (one block per head);
    # bottom row: the wrong reshape under x, and a note
    left2 = d + arrow_gap                                   # reshape: one block per token
    width2 = n * d_k + (n - 1) * block_gap
    left3 = left2 + width2 + arrow_gap                      # transpose: one block per head
    width3 = h * d_k + (h - 1) * block_gap
    top2 = -(n - h) / 2 if n > h else 0.0                   # centre the token blocks on x
    fig, ax = _white_figure((0.48 * (left3 + width3 + 0.6), 0.48 * (2 * n + 3.2)))
    # 1: x as (N, d_model)
    _grid(ax, 0, 0, x, head_of, f"x: (N, d_model) = ({n}, {d})")
    # 2: reshape to (N, h, d_k): token t becomes an (h, d_k) block whose row i goes to head i
    for t in range(n):
        block = x[t].reshape(h, d_k)
        colors = [[_head_color(i)] * d_k for i in range(h)]
        _grid(ax, left2 + t * (d_k + block_gap), top2, block, colors)
        ax.text(left2 + t * (d_k + block_gap) + d_k / 2, top2 - h - 0.12, f"token {t}",
                ha="center", va="top", fontsize=9.5, color=BLACK)
    ax.text(left2 + width2 / 2, 0.25, f"reshape: (N, h, d_k) = ({n}, {h}, {d_k})", ha="center",
            va="bottom", fontsize=9.5, color=BLACK)
    # 3: transpose to (h, N, d_k): head i takes row i of every token's block
    for i in range(h):
        _grid(ax, left3 + i * (d_k + block_gap), 0, x[:, i * d_k:(i + 1) * d_k],
              [row[i * d_k:(i + 1) * d_k] for row in head_of])
        ax.text(left3 + i * (d_k + block_gap) + d_k / 2, -n - 0.12, f"head {i + 1}",
                ha="center", va="top", fontsize=9.5, color=BLACK)
    ax.text(left3 + width3 / 2, 0.25, f"transpose: (h, N, d_k) = ({h}, {n}, {d_k})",
            ha="center", va="bottom", fontsize=9.5, color=BLACK)
    _arrow(ax, (d + 0.2, -n / 2), (left2 - 0.2, -n / 2))
    _arrow(ax, (left2 + width2 + 0.2, -n / 2), (left3 - 0.2, -n / 2))
    # below: the plain reshape, which mixes tokens across heads
    wrong = x.reshape(h, n, d_k)
    top = -n - 1.5
    for i in range(h):
        colors = [[_head_color((int(v) % d) // d_k) for v in row] for row in wrong[i]]
        _grid(ax, i * (d_k + block_gap), top, wrong[i], colors)
        ax.text(i * (d_k + block_gap) + d_k / 2, top - n - 0.12, f"'head {i + 1}'", ha="center",
                va="top", fontsize=9.5, color=VERMILLION)
    ax.text(0, top + 0.25, f"wrong: x.reshape({h}, {n}, {d_k}) with no transpose", ha="left",
            va="bottom", fontsize=9.5, color=VERMILLION, fontweight="bold")
    first = ", ".join(f"[{', '.join(str(v) for v in row)}]" for row in wrong[0])
    right = ", ".join(f"[{', '.join(str(v) for v in row)}]" for row in x[:, :d_k])
    tokens = " and ".join(str(t) for t in sorted({int(v) // d for v in wrong[0].flat}))
    heads = " and ".join(str(i + 1) for i in sorted({int(v) % d // d_k for v in wrong[0].flat}))
    ax.text(width3 + 0.8, top - n / 2,
            f"'head 1' holds {first}:\nfeatures of tokens {tokens}, meant for heads {heads}.\n"
            f"The true head 1 (top right) holds {right}.\n"
            "No error is raised, only the numbers are wrong.",
            ha="left", va="center", fontsize=9.5, color=VERMILLION)
    ax.set(xlim=(-0.3, left3 + width3 + 0.3), ylim=(top - n - 0.7, 1.0))
    ax.set_aspect("equal")
    fig.subplots_adjust(left=0, right=1, bottom=0, top=1)
    return fig


def _residual(ax: Axes, x: float, y_from: float, y_to: float, side: float) -> None:
    """A residual path: from the main line at height ``y_from`` out to ``x + side``, up to
    ``y_to``, and back into the box centred at ``(x, y_to)`` (half as wide as ``side``)."""
    ax.plot([x, x + side, x + side], [y_from, y_from, y_to], color=BLACK, lw=1.2)
    ax.plot([x], [y_from], "o", color=BLACK, ms=4)
    _arrow(ax, (x + side, y_to), (x + side / 2, y_to))


def _frame(ax: Axes, left: float, bottom: float, width: float, height: float, text: str) -> None:
    """A dashed frame around the boxes of one repeated layer, ``text`` beside its top right."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((left, bottom), width, height,
                                boxstyle="round,pad=0.02,rounding_size=0.2", facecolor="none",
                                edgecolor=GREEN, lw=1.5, ls="--"))
    ax.text(left + width + 0.1, bottom + height, text, fontsize=10, color=GREEN, ha="left",
            va="top")


def decoder_block() -> Figure:
    """One decoder layer of notebook 13, post-LN as in the paper: masked self-attention,
    cross-attention (queries from below, keys and values from the encoder's output M) and the
    feed-forward network, each followed by "add & norm" and bypassed by a residual path from
    its input to that sum. The layer is repeated L_dec times. Returns the ``Figure``."""
    fig, ax = _white_figure((7.5, 8.6))
    sub = (2.8, 0.9)
    add = (2.0, 0.55)
    boxes = {
        "input": (0.0, 0.0,
                  "decoder input X: (B, N_tgt, d_model)\ntarget embeddings + positions", "white"),
        "self": (0.0, 1.8, "masked multi-head\nself-attention", SKY),
        "add 1": (0.0, 3.0, "add & norm", YELLOW),
        "cross": (0.0, 4.5, "multi-head\ncross-attention", SKY),
        "add 2": (0.0, 5.7, "add & norm", YELLOW),
        "ffn": (0.0, 7.2, "feed-forward", ORANGE),
        "add 3": (0.0, 8.4, "add & norm", YELLOW),
        "output": (0.0, 9.8, "output: (B, N_tgt, d_model)\nto the next layer", "white"),
        "memory": (-4.2, 4.5, "encoder output M\n(B, N_src, d_model)", "white"),
    }
    sizes = {"input": (4.0, 0.9), "output": (3.4, 0.9), "memory": (2.6, 0.9),
             "self": sub, "cross": sub, "ffn": sub, "add 1": add, "add 2": add, "add 3": add}
    chain = ["input", "self", "add 1", "cross", "add 2", "ffn", "add 3", "output"]
    arrows = [(a, b, "") for a, b in zip(chain[:-1], chain[1:], strict=True)]
    arrows.append(("memory", "cross", ""))
    _flow(ax, boxes, arrows, sizes=sizes)
    # the arrow's label sits left of the dashed frame (at x = -2.0), not on it
    ax.text(-2.5, 4.56, "K, V", ha="center", va="bottom", fontsize=8.5, color=BLUE)
    ax.text(-0.12, 4.5 - 0.45 - 0.3, "Q", fontsize=8.5, color=BLUE, ha="right", va="center")
    ax.text(-0.12, 1.8 - 0.45 - 0.3, "Q, K, V", fontsize=8.5, color=BLUE, ha="right",
            va="center")
    for y_from, y_to in [(0.95, 3.0), (3.75, 5.7), (6.45, 8.4)]:
        _residual(ax, 0.0, y_from, y_to, 2.0)
    ax.text(2.15, 2.0, "residual", rotation=90, fontsize=8.5, va="center")
    _frame(ax, -2.0, 0.65, 4.7, 8.15, "× L_dec\nlayers")
    ax.text(-2.1, 1.8, "causal mask:\nposition t sees\npositions ≤ t", fontsize=8.5,
            ha="right", va="center", color=BLACK)
    ax.set(xlim=(-5.8, 4.0), ylim=(-0.8, 10.6))
    ax.set_aspect("equal")
    fig.tight_layout()
    return fig


def encoder_decoder() -> Figure:
    """The whole encoder–decoder Transformer of notebook 13: the encoder (left) turns the source
    tokens into the memory M; the decoder (right) reads the target shifted right behind <bos>,
    and each of its layers cross-attends to M (keys and values) before the output projection
    and the softmax give a probability for every next token. Returns the ``Figure``."""
    fig, ax = _white_figure((10.0, 8.4))
    enc, dec = 0.0, 6.0
    boxes = {
        "src": (enc, 0.0, "source tokens\nsrc: (B, N_src)", "white"),
        "src embed": (enc, 1.4, "embedding $\\cdot\\sqrt{d_{model}}$\n+ positions", PURPLE),
        "enc self": (enc, 3.0, "self-attention\n+ add & norm", SKY),
        "enc ffn": (enc, 4.3, "feed-forward\n+ add & norm", ORANGE),
        "memory": (enc, 6.0, "memory M\n(B, N_src, d_model)", "white"),
        "tgt": (dec, 0.0, "target, shifted right\n<bos> $y_1 \\dots y_{N_\\mathrm{tgt}-1}$",
                "white"),
        "tgt embed": (dec, 1.4, "embedding $\\cdot\\sqrt{d_{model}}$\n+ positions", PURPLE),
        "dec self": (dec, 3.0, "masked self-attention\n+ add & norm", SKY),
        "cross": (dec, 4.3, "cross-attention\n+ add & norm", SKY),
        "dec ffn": (dec, 5.6, "feed-forward\n+ add & norm", ORANGE),
        "linear": (dec, 7.2, "linear $W_{out}$\n→ logits (B, N_tgt, V)", PURPLE),
        "softmax": (dec, 8.5, "softmax\n→ next-token probabilities", "white"),
    }
    arrows = [("src", "src embed", ""), ("src embed", "enc self", ""),
              ("enc self", "enc ffn", ""), ("enc ffn", "memory", ""),
              ("tgt", "tgt embed", ""), ("tgt embed", "dec self", ""),
              ("dec self", "cross", ""), ("cross", "dec ffn", ""), ("dec ffn", "linear", ""),
              ("linear", "softmax", ""), ("memory", "cross", "K, V")]
    _flow(ax, boxes, arrows, width=3.0, height=0.9)
    _frame(ax, enc - 1.75, 2.35, 3.5, 2.6, "× L_enc")
    _frame(ax, dec - 1.75, 2.35, 3.5, 3.9, "× L_dec")
    ax.text(enc, 9.15, "encoder", fontsize=12, fontweight="bold", ha="center")
    ax.text(dec, 9.15, "decoder", fontsize=12, fontweight="bold", ha="center")  # above softmax
    ax.text(enc, 7.0, "M goes to the cross-attention\nof every decoder layer", fontsize=8.5,
            ha="center", va="bottom", color=BLUE)
    ax.text((enc + dec) / 2, -1.0, "shared embeddings: one V × d_model matrix is the source "
            "embedding,\nthe target embedding and $W_{out}^T$", fontsize=9, ha="center",
            va="top", color=PURPLE)
    ax.set(xlim=(enc - 2.2, dec + 3.0), ylim=(-1.9, 9.7))
    ax.set_aspect("equal")
    fig.tight_layout()
    return fig


def training_loop() -> Figure:
    """One training step of notebook 14 as a loop: a batch of (source, target) pairs is padded;
    the decoder reads ``tgt_in`` = <bos> + target (teacher forcing: the true previous tokens, not
    its own guesses) while ``tgt_out`` = target + <eos> is what the cross-entropy compares the
    logits with; backpropagation gives the gradients and AdamW, with the warm-up learning rate,
    updates the weights. Returns the ``Figure``."""
    fig, ax = _white_figure((9.5, 4.4))  # at most 9.5 inches: JupyterLab shrinks wider ones
    boxes = {
        "pairs": (0.0, 2.6, "training pairs\n(source, target)", "white"),
        "batch": (2.7, 2.6, "batch: pad\n+ masks", "white"),
        "src": (5.6, 3.4, "src: source ids\n+ <eos>", SKY),
        "tgt_in": (5.6, 1.8, "tgt_in: <bos>\n+ target", SKY),
        "tgt_out": (5.6, 5.0, "tgt_out: target\n+ <eos>", YELLOW),
        "model": (8.6, 2.6, "Transformer\n\nencoder: src\ndecoder: tgt_in", PURPLE),
        "logits": (11.4, 2.6, "logits\n(B, N_tgt, V)", "white"),
        "loss": (11.4, 5.0, "cross-entropy\n(skips <pad>)", YELLOW),
        "backward": (11.4, 0.0, "backward:\ngradients", ORANGE),
        "step": (8.6, 0.0, "clip, AdamW step\n(warm-up lr)", ORANGE),
    }
    sizes = {"model": (2.2, 2.4), "pairs": (2.0, 0.9), "batch": (1.7, 0.9)}
    arrows = [("pairs", "batch", ""), ("batch", "src", ""), ("batch", "tgt_in", ""),
              ("batch", "tgt_out", ""), ("src", "model", ""), ("tgt_in", "model", ""),
              ("model", "logits", ""), ("logits", "loss", ""), ("tgt_out", "loss", "labels"),
              ("step", "model", "update the weights")]
    _flow(ax, boxes, arrows, width=2.0, height=0.9, sizes=sizes)
    # the loss flows back: drawn around the right, from the loss down to the gradients
    _arrow(ax, (12.4, 5.0), (12.4, 0.0), connectionstyle="bar,fraction=-0.15")
    _arrow(ax, (10.4, 0.0), (9.6, 0.0))
    ax.text(13.3, 2.5, "backpropagation", rotation=90, fontsize=9, va="center", color=BLACK)
    ax.text(5.6, 0.85, "teacher forcing: the decoder reads\nthe true previous tokens",
            fontsize=8.5, ha="center", va="top", color=BLUE)
    ax.set(xlim=(-1.2, 13.6), ylim=(-0.9, 5.9))
    ax.set_aspect("equal")
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# The encoder layer of notebook 12: post-LN (the paper) and pre-LN, with their residual paths.

# Each placement as a column of boxes from the input up: (name, height, text, colour). A sublayer
# is fed from the residual branch point below it; the "add" box above it receives the residual.
_SUBLAYER = (2.6, 0.85)
_NORM = (2.0, 0.5)
_ADD = (2.0, 0.5)
_ENCODER_COLUMNS: dict[bool, list[tuple[str, float, str, str]]] = {
    False: [("input", 0.0, "input x: (B, N, d_model)", "white"),
            ("attention", 1.6, "multi-head\nself-attention", SKY),
            ("add 1", 2.85, "add", YELLOW),
            ("norm 1", 3.8, "LayerNorm", PURPLE),
            ("feed-forward", 5.25, "feed-forward", ORANGE),
            ("add 2", 6.5, "add", YELLOW),
            ("norm 2", 7.45, "LayerNorm", PURPLE),
            ("output", 8.9, "output: (B, N, d_model)\nto the next layer", "white")],
    True: [("input", 0.0, "input x: (B, N, d_model)", "white"),
           ("norm 1", 1.25, "LayerNorm", PURPLE),
           ("attention", 2.5, "multi-head\nself-attention", SKY),
           ("add 1", 3.75, "add", YELLOW),
           ("norm 2", 4.85, "LayerNorm", PURPLE),
           ("feed-forward", 6.1, "feed-forward", ORANGE),
           ("add 2", 7.35, "add", YELLOW),
           ("final norm", 8.75, "final LayerNorm\n(after the last layer)", PURPLE),
           ("output", 10.15, "output: (B, N, d_model)", "white")],
}
# where each residual path leaves the main line, and the add box it enters
_ENCODER_RESIDUALS = {False: [(0.75, "add 1"), (4.4, "add 2")],
                      True: [(0.65, "add 1"), (4.3, "add 2")]}
_ENCODER_TITLES = {
    False: "post-LN (the 2017 paper)\n"
           "$x \\leftarrow \\mathrm{LN}(x + \\mathrm{Sublayer}(x))$",
    True: "pre-LN (GPT-2 and most models since)\n"
          "$x \\leftarrow x + \\mathrm{Sublayer}(\\mathrm{LN}(x))$",
}
_ENCODER_NOTES = {
    False: "LayerNorm on the main path,\nafter every addition",
    True: "LayerNorm inside the branches:\nthe stream x is added to, normalized\n"
          "only once, after the last layer",
}


def _encoder_column(ax: Axes, x: float, norm_first: bool,
                    notes: dict[str, str] | None = None) -> float:
    """One encoder layer drawn as a column centred at ``x``: its boxes, the arrows between them,
    both residual paths, the frame of the repeated layer, a title and a note. ``notes`` writes
    text to the left of the named boxes. Returns the height of the top box."""
    column = _ENCODER_COLUMNS[norm_first]
    sizes = {"input": (3.0, 0.6), "output": (3.0, 0.75 if norm_first else 0.8),
             "final norm": (3.0, 0.8), "attention": _SUBLAYER, "feed-forward": _SUBLAYER,
             "add 1": _ADD, "add 2": _ADD, "norm 1": _NORM, "norm 2": _NORM}
    boxes = {name: (x, y, text, color) for name, y, text, color in column}
    names = [name for name, *_ in column]
    _flow(ax, boxes, [(a, b, "") for a, b in zip(names[:-1], names[1:], strict=True)],
          sizes=sizes)
    heights = {name: y for name, y, *_ in column}
    for y_from, add in _ENCODER_RESIDUALS[norm_first]:
        _residual(ax, x, y_from, heights[add], _ADD[0])
    ax.text(x + _ADD[0] + 0.15, (heights["add 1"] + _ENCODER_RESIDUALS[norm_first][0][0]) / 2,
            "residual", rotation=90, fontsize=8.5, va="center")
    # the repeated layer: from the first box after the input to the last norm (post-LN) or add
    first, last = heights[names[1]], heights["add 2" if norm_first else "norm 2"]
    _frame(ax, x - 1.6, first - 0.65, 3.95, last - first + 1.0, "× L\nlayers")
    top = heights["output"] + sizes["output"][1] / 2
    ax.text(x, top + 0.25, _ENCODER_TITLES[norm_first], ha="center", va="bottom", fontsize=10.5)
    ax.text(x, -0.55, _ENCODER_NOTES[norm_first], ha="center", va="top", fontsize=9, color=BLUE)
    for name, text in (notes or {}).items():
        if name not in boxes:
            raise ValueError(f"notes: unknown box {name!r}, expected one of {names}")
        ax.text(x - 1.75, heights[name], text, ha="right", va="center", fontsize=9, color=BLUE)
    return top


def encoder_block(norm_first: bool = False, notes: dict[str, str] | None = None) -> Figure:
    """One encoder layer of notebook 12: multi-head self-attention and the feed-forward network,
    each bypassed by a residual path into an "add" box, with LayerNorm after each addition
    (post-LN, ``norm_first=False``, as in the paper) or at the start of each branch (pre-LN,
    ``norm_first=True``, then with a final LayerNorm after the last layer). ``notes`` maps box
    names ("attention", "feed-forward", "add 1", "norm 1", ...) to text written at their left.
    Returns the ``Figure``."""
    check_bool(norm_first, "norm_first")
    if notes is not None and not isinstance(notes, dict):
        raise TypeError(f"notes must be a dict of box name: text, got {type(notes).__name__}")
    fig, ax = _white_figure((6.4 if notes else 5.0, 8.4 if norm_first else 7.6))
    top = _encoder_column(ax, 0.0, norm_first, notes)
    left = -5.0 if notes else -2.1
    ax.set(xlim=(left, 3.9), ylim=(-1.6, top + 1.1))
    ax.set_aspect("equal")
    fig.tight_layout()
    return fig


def encoder_blocks() -> Figure:
    """Post-LN (left, the paper) and pre-LN (right) side by side: the same boxes, the LayerNorm
    moved from after each addition into the start of each branch, plus pre-LN's final LayerNorm.
    Returns the ``Figure``."""
    fig, ax = _white_figure((10.0, 8.0))
    gap = 7.2
    top = max(_encoder_column(ax, 0.0, False), _encoder_column(ax, gap, True))
    ax.set(xlim=(-2.3, gap + 3.9), ylim=(-1.6, top + 1.1))
    ax.set_aspect("equal")
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# Notebook 12: which entries LayerNorm and BatchNorm average over, on a (B, N, d) block.

_NORM_BLOCK = (3, 4, 6)  # B sentences, N tokens, d features: small enough to count the cells
_DEPTH = (0.55, 0.42)    # how far one sentence further back moves a cell: right and up


def _block(ax: Axes, left: float, shaded: Callable[[int, int, int], bool], color: str) -> None:
    """The (B, N, d) block in oblique projection with its left edge at ``left``: the front face
    is sentence 0 (N rows of d features), the top face the first token of every sentence, the
    right face the last feature of every sentence. A cell ``(b, n, j)`` for which ``shaded``
    is true is filled with ``color``; the axes are labelled."""
    from matplotlib.patches import Polygon

    batch, seq, dim = _NORM_BLOCK
    dx, dy = _DEPTH

    def cell(corners: list[tuple[float, float]], fill: bool) -> None:
        ax.add_patch(Polygon([(left + x, y) for x, y in corners], closed=True, lw=0.6,
                             facecolor=color if fill else "#eeeeee", edgecolor=BLACK))

    for n in range(seq):  # front face: sentence 0, token n is row n from the top
        for j in range(dim):
            y = float(seq - 1 - n)
            cell([(j, y), (j + 1, y), (j + 1, y + 1), (j, y + 1)], shaded(0, n, j))
    for b in range(batch):  # top face: token 0 of sentence b, feature j
        for j in range(dim):
            x, y = float(j + b * dx), float(seq + b * dy)
            cell([(x, y), (x + 1, y), (x + 1 + dx, y + dy), (x + dx, y + dy)], shaded(b, 0, j))
    for b in range(batch):  # right face: the last feature of token n of sentence b
        for n in range(seq):
            x, y = float(dim + b * dx), float(seq - 1 - n + b * dy)
            cell([(x, y), (x + dx, y + dy), (x + dx, y + 1 + dy), (x, y + 1)],
                 shaded(b, n, dim - 1))
    ax.text(left + dim / 2, -0.25, f"d = {dim} features", ha="center", va="top", fontsize=9.5)
    ax.text(left - 0.2, seq / 2, f"N = {seq} tokens", ha="right", va="center", fontsize=9.5,
            rotation=90)
    ax.text(left + batch * dx / 2 - 0.25, seq + batch * dy / 2 + 0.15, f"B = {batch}\nsentences",
            ha="right", va="bottom", fontsize=9.5)


def norm_axes() -> Figure:
    """What LayerNorm and BatchNorm average over (notebook 12), on the same (B, N, d) block of
    B = 3 sentences, N = 4 tokens and d = 6 features, drawn as a box whose front face is the
    first sentence. Left: LayerNorm computes one mean and one variance over the d features of one
    token (one row shaded), B·N pairs in all. Right: BatchNorm computes them over one feature
    across all B sentences and N positions (one slab shaded, seen on the front and top faces),
    d pairs in all. Returns the ``Figure``."""
    batch, seq, dim = _NORM_BLOCK
    fig, ax = _white_figure((9.2, 4.1))
    width = dim + batch * _DEPTH[0]
    gap = width + 3.4
    token, feature = 1, 2
    _block(ax, 0.0, lambda b, n, j: b == 0 and n == token, ORANGE)
    _block(ax, gap, lambda b, n, j: j == feature, SKY)
    top = seq + batch * _DEPTH[1] + 0.35
    for left, title, note in (
            (0.0, "LayerNorm: one token's d features",
             f"one mean and one variance per token:\nB·N = {batch * seq} pairs, each over "
             f"{dim} numbers"),
            (gap, "BatchNorm: one feature over all B and N",
             f"one mean and one variance per feature:\nd = {dim} pairs, each over "
             f"B·N = {batch * seq} numbers")):
        ax.text(left + width / 2, top + 0.55, title, ha="center", va="bottom", fontsize=10.5,
                fontweight="bold")
        ax.text(left + width / 2, -0.95, note, ha="center", va="top", fontsize=9.5, color=BLUE)
    ax.set(xlim=(-1.9, gap + width + 1.1), ylim=(-2.55, top + 1.35))
    ax.set_aspect("equal")
    fig.subplots_adjust(left=0, right=1, bottom=0, top=1)
    return fig


# ---------------------------------------------------------------------------------------------
# Notebook 13: a cross-attention map, target words against source tokens.


def cross_attention_map(weights: ArrayLike, source: Sequence[str], target: Sequence[str], *,
                        title: str = "cross-attention") -> Figure:
    """A cross-attention map (notebook 13): ``weights`` of shape (N_tgt, N_src), one row per
    target position (labelled with ``target``, the word it writes) and one column per source
    token (``source``), each cell's weight written on it, the largest weight of each row outlined
    in black. Returns the ``Figure``."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from course_utils.diagrams.maths import annotated_heatmap

    array = real_array(weights, "weights")
    for name, words in (("source", source), ("target", target)):
        if isinstance(words, str) or not all(isinstance(w, str) for w in words):
            raise TypeError(f"{name} must be a sequence of str, got {words!r}")
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {type(title).__name__}")
    if array.shape != (len(target), len(source)):
        raise ValueError(f"weights must have shape (len(target), len(source)) = "
                         f"{(len(target), len(source))}, got {array.shape}")
    fig, ax = plt.subplots(figsize=(0.95 * len(source) + 2.6, 0.7 * len(target) + 1.9),
                           facecolor="white", layout="constrained")
    image = annotated_heatmap(ax, array, vmin=0, vmax=1, fmt="{:.2f}", fontsize=9)
    for row, col in enumerate(array.argmax(axis=1)):
        ax.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, fill=False, edgecolor=BLACK, lw=2))
    ax.set_xticks(range(len(source)), list(source))
    ax.set_yticks(range(len(target)), list(target))
    ax.set(xlabel="key: source token", ylabel="query: the target word it writes", title=title)
    fig.colorbar(image, ax=ax, shrink=0.9, label="attention weight")
    return fig
