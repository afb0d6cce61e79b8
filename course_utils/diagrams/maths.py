"""Diagrams of the mathematics: the course's pipeline (which notebook explains which stage of a
Transformer), a (B, N, d) tensor as a stack of sheets, heatmaps whose numbers stay readable on
every cell, the shapes of a matrix product's backward pass, and a computational graph."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from course_utils.diagrams._draw import (
    BLACK,
    BLUE,
    GREEN,
    ORANGE,
    SKY,
    VERMILLION,
    YELLOW,
    _arrow,
    _box,
    _white_figure,
)
from course_utils.plotting import COLORMAP, text_color
from course_utils.validation import check_int, check_real, real_array

if TYPE_CHECKING:  # matplotlib is imported only when something is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

    from course_utils.autograd import Graph


@dataclass(frozen=True)
class Stage:
    """One box of the pipeline: what it computes and the notebooks that explain it."""

    name: str
    notebooks: str
    phase: str  # "forward" (the model computes) or "training" (the model learns)


# Tokens in, loss out, then back through the gradients to the weights.
PIPELINE: tuple[Stage, ...] = (
    Stage("tokens", "09", "forward"),
    Stage("embeddings\n+ positions", "09", "forward"),
    Stage("attention", "10, 11", "forward"),
    Stage("feed-forward", "12", "forward"),
    Stage("logits", "13, 14", "forward"),
    Stage("softmax", "05", "forward"),
    Stage("cross-entropy", "06", "training"),
    Stage("gradients", "07, 08", "training"),
    Stage("optimizer", "08", "training"),
)


def pipeline() -> Figure:
    """The course as one picture: the stages of a Transformer, each labelled by its notebooks.

    Top row, left to right, the forward pass (tokens → embeddings + positions → attention →
    feed-forward → logits → softmax); bottom row, right to left, training (cross-entropy →
    gradients → optimizer), and an arrow from the optimizer back to the weights. Attention and
    feed-forward sit in a bracket repeated L times (with the residuals and layer norm of 12);
    notes name 15 (today's language models), 16 (fast generation) and 17 (tiled attention), and
    01–04, the mathematics used everywhere. Returns the ``Figure``.
    """
    fig, ax = _white_figure((8.6, 4.7))
    spacing = 2.15
    forward = [s for s in PIPELINE if s.phase == "forward"]
    training = [s for s in PIPELINE if s.phase == "training"]
    top, bottom = 2.6, 0.0
    top_x = [i * spacing for i in range(len(forward))]
    # training runs back from the right end, under softmax
    bottom_x = [top_x[-1] - i * spacing for i in range(len(training))]

    # the repeated layer: attention and feed-forward
    from matplotlib.patches import FancyBboxPatch

    layer_left, layer_right = top_x[2] - 1.05, top_x[3] + 1.05
    ax.add_patch(FancyBboxPatch((layer_left, top - 0.85), layer_right - layer_left, 1.9,
                                boxstyle="round,pad=0.02,rounding_size=0.15", facecolor="white",
                                edgecolor=GREEN, lw=1.5, ls="--"))
    ax.text((layer_left + layer_right) / 2, top + 1.45,
            "one layer, repeated L times\n(+ residuals, layer norm: 12)",
            ha="center", va="center", fontsize=8.5, color=GREEN)

    for x, stage in zip(top_x, forward, strict=True):
        _box(ax, x, top, stage.name, f"notebook {stage.notebooks}", SKY)
    for x, stage in zip(bottom_x, training, strict=True):
        _box(ax, x, bottom, stage.name, f"notebook {stage.notebooks}", YELLOW)
    for x0, x1 in zip(top_x[:-1], top_x[1:], strict=True):
        _arrow(ax, (x0 + 0.875, top), (x1 - 0.875, top))
    _arrow(ax, (top_x[-1], top - 0.45), (bottom_x[0], bottom + 0.45 + 0.02))
    for x0, x1 in zip(bottom_x[:-1], bottom_x[1:], strict=True):
        _arrow(ax, (x0 - 0.875, bottom), (x1 + 0.875, bottom))
    # the optimizer updates the weights of every stage that has them
    _arrow(ax, (bottom_x[-1] - 0.875, bottom), (top_x[1], top - 0.75),
           connectionstyle="arc3,rad=-0.25", color=VERMILLION, ls="-")
    ax.text(bottom_x[-1] - 4.3, bottom + 0.2, "update every weight:\nembeddings, attention,\n"
            "feed-forward, logits", ha="center", va="center", fontsize=9, color=VERMILLION)

    ax.text(top_x[0] - 0.75, top + 2.1, "forward pass: the model computes", ha="left",
            fontsize=11, fontweight="bold", color=BLACK)
    ax.text(bottom_x[0] + 0.75, bottom - 1.05, "training: the model learns", ha="right",
            fontsize=11, fontweight="bold", color=BLACK)
    notes = ("underneath everything: tensors 01 · matrix products 02 · eigenvalues 03 · "
             "probability 04\n"
             "today's language models (decoder-only, RoPE, KV cache): 15 · "
             "fast generation: 16 · tiled attention: 17")
    ax.text(top_x[0] - 0.75, bottom - 1.3, notes, ha="left", va="top", fontsize=9,
            color=BLACK, linespacing=1.6)
    ax.set(xlim=(top_x[0] - 1.0, top_x[-1] + 1.0), ylim=(bottom - 2.15, top + 2.45))
    ax.set_aspect("equal")
    fig.tight_layout()
    return fig


def tensor_sheets(shape: tuple[int, int, int] = (3, 4, 6),
                  names: tuple[str, str, str] = ("B (batch)", "N (sequence)", "d_model (features)"),
                  sentence: int = 0, token: int = 2) -> Figure:
    """A (B, N, d) tensor drawn as B sheets, one per sentence, each N rows (tokens) by d columns
    (features); sheet ``sentence`` is shaded and its row ``token`` highlighted.

    The front sheet is sentence 0; the others recede up and to the right. The axes are labelled
    with ``names`` and their sizes, ``X[sentence]`` and ``X[sentence, token]`` are annotated.
    Returns the ``Figure``.
    """
    if not isinstance(shape, tuple) or len(shape) != 3:
        raise TypeError(f"shape must be a tuple (B, N, d), got {shape!r}")
    batch, seq, dim = (check_int(n, f"shape[{i}]") for i, n in enumerate(shape))
    if not (isinstance(names, tuple) and len(names) == 3
            and all(isinstance(name, str) for name in names)):
        raise TypeError(f"names must be a tuple of three strings, got {names!r}")
    sentence = check_int(sentence, "sentence", minimum=0, maximum=batch - 1)
    token = check_int(token, "token", minimum=0, maximum=seq - 1)
    from matplotlib.patches import Rectangle

    fig, ax = _white_figure((8.0, 4.6))
    dx, dy = 0.9, 0.7  # how far each sheet behind is shifted
    for b in reversed(range(batch)):  # back to front, so the front sheet covers the others
        ox, oy = b * dx, b * dy
        for n in range(seq):
            for j in range(dim):
                if b == sentence and n == token:
                    color = ORANGE
                elif b == sentence:
                    color = SKY
                else:
                    color = "#eeeeee"
                ax.add_patch(Rectangle((ox + j, oy + seq - 1 - n), 1, 1, facecolor=color,
                                       edgecolor=BLACK, lw=0.6))
        if b > 0:  # in the strip of this sheet that the sheet in front leaves visible
            ax.text(ox + 0.15, oy + seq - dy / 2, f"sentence {b}", va="center", fontsize=9,
                    color=BLACK)
    # axis labels: features along the bottom, tokens down the side, batch along the diagonal
    ax.annotate("", xy=(dim, -0.45), xytext=(0, -0.45),
                arrowprops={"arrowstyle": "-|>", "color": BLACK})
    ax.text(dim / 2, -0.6, f"axis 2: {names[2]} = {dim}", ha="center", va="top", fontsize=10)
    ax.annotate("", xy=(-0.45, 0), xytext=(-0.45, seq),
                arrowprops={"arrowstyle": "-|>", "color": BLACK})
    ax.text(-0.6, seq / 2, f"axis 1: {names[1]} = {seq}", ha="right", va="center",
            fontsize=10, rotation=90)
    ax.annotate("", xy=(batch * dx - 0.2, seq + batch * dy - 0.2), xytext=(0, seq + 0.1),
                arrowprops={"arrowstyle": "-|>", "color": BLACK})
    ax.text(-0.1, seq + batch * dy * 0.6, f"axis 0: {names[0]} = {batch}", ha="right",
            va="bottom", fontsize=10)
    ox, oy = sentence * dx, sentence * dy
    right = (batch - 1) * dx + dim + 1.6
    ax.annotate(f"X[{sentence}]: sentence {sentence},\nshape ({seq}, {dim})",
                xy=(ox + dim, oy + 0.5 if token != seq - 1 else oy + seq - 0.5),
                xytext=(right, 0.4), fontsize=9, color=BLUE, va="center",
                arrowprops={"arrowstyle": "->", "color": BLUE})
    ax.annotate(f"X[{sentence}, {token}]: token {token} of it,\nshape ({dim},)",
                xy=(ox + dim, oy + seq - 0.5 - token), xytext=(right, seq - 0.8), fontsize=9,
                color=VERMILLION, va="center", arrowprops={"arrowstyle": "->", "color": VERMILLION})
    ax.set(xlim=(-2.0, right + 3.2), ylim=(-1.5, seq + batch * dy + 0.6))
    ax.set_aspect("equal")
    fig.tight_layout()
    return fig


def annotated_heatmap(ax: Axes, data: ArrayLike, vmin: float | None = None,
                      vmax: float | None = None, fmt: str = "{}", cmap: str = COLORMAP,
                      fontsize: float = 10) -> AxesImage:
    """``ax.imshow(data)`` with each cell's value written on it, in black or white, whichever
    reads better on that cell's colour (:func:`course_utils.plotting.text_color`).

    ``data`` is a 2-D array (a 1-D one is drawn as a single row); ``vmin``/``vmax`` default to its
    range; ``fmt`` formats each value (``"{:.2f}"``). Ticks are removed. Returns the image.
    """
    from matplotlib.axes import Axes as AxesType

    if not isinstance(ax, AxesType):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    for name, bound in (("vmin", vmin), ("vmax", vmax)):
        if bound is not None:
            check_real(bound, name)
    check_real(fontsize, "fontsize", low=0, low_open=True)
    for name, text in (("fmt", fmt), ("cmap", cmap)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    array = real_array(data, "data")
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise ValueError(f"data must be a 1-D or 2-D array, got shape {array.shape}")
    low = float(array.min()) if vmin is None else float(vmin)
    high = float(array.max()) if vmax is None else float(vmax)
    if not high > low:
        high = low + 1.0  # a constant array: any range will do
    image = ax.imshow(array, cmap=cmap, vmin=low, vmax=high)
    for (r, c), value in np.ndenumerate(array):
        ax.text(c, r, fmt.format(value), ha="center", va="center", fontsize=fontsize,
                color=text_color(float(value), low, high, cmap))
    ax.set(xticks=[], yticks=[])
    return image


# The chain rule for a matrix product (notebook 08): Y = X W and its two backward products.


def _matrix(ax: Axes, left: float, middle: float, rows: int, cols: int, color: str,
            name: str) -> float:
    """A rows × cols matrix drawn as unit cells, centred on height ``middle``, ``name`` above it
    and its shape below. Returns its right edge."""
    from matplotlib.patches import Rectangle

    top = middle + rows / 2
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((left + c, top - r - 1), 1, 1, facecolor=color,
                                   edgecolor=BLACK, lw=0.8))
    ax.text(left + cols / 2, top + 0.2, name, ha="center", va="bottom", fontsize=11)
    ax.text(left + cols / 2, top - rows - 0.2, f"({rows}, {cols})", ha="center", va="top",
            fontsize=9, color=BLUE)
    return left + cols


def matmul_backward(n: int = 4, d_in: int = 3, d_out: int = 2) -> Figure:
    """The three matrix products of a linear layer Y = X W (notebook 08), each matrix drawn as a
    grid of cells: the forward Y = X W, and the backward ∂ℒ/∂X = G Wᵀ and ∂ℒ/∂W = Xᵀ G with
    G = ∂ℒ/∂Y (ℒ the loss). A variable and its gradient share a colour (X sky blue, W orange,
    Y and G yellow), so each gradient is seen to have its variable's shape, (n, d_in) and
    (d_in, d_out). Returns the ``Figure``."""
    n, d_in, d_out = (check_int(v, name) for v, name in ((n, "n"), (d_in, "d_in"),
                                                          (d_out, "d_out")))
    x_color, w_color, y_color = SKY, ORANGE, YELLOW
    rows = [  # (title, result, first factor, second factor): (name, rows, cols, colour)
        ("forward", ("$Y$", n, d_out, y_color), ("$X$", n, d_in, x_color),
         ("$W$", d_in, d_out, w_color)),
        ("backward", ("$\\partial \\mathcal{L} / \\partial X$", n, d_in, x_color),
         ("$G$", n, d_out, y_color), ("$W^\\top$", d_out, d_in, w_color)),
        ("backward", ("$\\partial \\mathcal{L} / \\partial W$", d_in, d_out, w_color),
         ("$X^\\top$", d_in, n, x_color), ("$G$", n, d_out, y_color)),
    ]
    height = max(n, d_in, d_out) + 2.2
    fig, ax = _white_figure((1.0, 1.0))  # resized below, once the width is known
    widest = 0.0
    for i, (title, result, first, second) in enumerate(rows):
        middle = -i * height
        ax.text(-0.4, middle, title, ha="right", va="center", fontsize=10, fontweight="bold")
        right = _matrix(ax, 0.0, middle, result[1], result[2], result[3], result[0])
        ax.text(right + 0.6, middle, "=", ha="center", va="center", fontsize=16)
        right = _matrix(ax, right + 1.2, middle, first[1], first[2], first[3], first[0])
        ax.text(right + 0.5, middle, "·", ha="center", va="center", fontsize=22)
        widest = max(widest, _matrix(ax, right + 1.0, middle, second[1], second[2], second[3],
                                     second[0]))
    ax.text(-2.6, height / 2 + 0.3, f"N = {n} rows, D_in = {d_in}, D_out = {d_out};  "
            "G = ∂ℒ/∂Y has the shape of Y", ha="left", va="bottom", fontsize=9.5, color=BLACK)
    bottom, top = -(len(rows) - 0.5) * height - 0.3, height / 2 + 1.1
    ax.set(xlim=(-2.8, widest + 0.5), ylim=(bottom, top))
    ax.set_aspect("equal")
    scale = 0.42  # inches per cell
    fig.set_size_inches(scale * (widest + 3.3) + 0.3, scale * (top - bottom) + 0.3)
    fig.tight_layout()
    return fig


def draw_graph(graph: Graph, ax: Axes) -> None:
    """A computational graph (:func:`course_utils.autograd.computational_graph`) on ``ax``:
    nodes as boxes with their data and gradient, edges as arrows from box edge to box edge, each
    labelled just above with its local derivative. One column per distance from the root: the
    root is at the right, each leaf just left of the node that uses it. Leaves are blue,
    operations orange, the root yellow."""
    from matplotlib.axes import Axes as AxesType

    from course_utils.autograd import Graph as GraphType

    if not isinstance(graph, GraphType):
        raise TypeError(f"graph must be a course_utils.autograd.Graph, got {type(graph).__name__}")
    if not isinstance(ax, AxesType):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    hops = [0] * len(graph.nodes)  # the longest path from each node to the root
    for edge in reversed(graph.edges):  # a child's hops are final before its parents'
        hops[edge.parent] = max(hops[edge.parent], hops[edge.child] + 1)
    column = [max(hops) - hop for hop in hops]
    count = {c: column.count(c) for c in column}
    placed: dict[int, int] = {}
    xy: list[tuple[float, float]] = []
    for c in column:  # stack each column's nodes, centred on y = 0
        placed[c] = placed.get(c, 0) + 1
        xy.append((2.6 * c, 1.3 * ((count[c] + 1) / 2 - placed[c])))
    span = 2.6 * max(column) + 2.0
    ax.set_xlim(-1.0, span - 1.0)
    texts = [f"{': '.join(p for p in (n.name, n.op) if p)}\ndata {n.data:.4f}\ngrad {n.grad:.4f}"
             for n in graph.nodes]
    widest = max(len(line) for text in texts for line in text.split("\n"))
    # half a box in data units: monospace glyphs are about 0.6 em wide, the padding 0.3 em a side
    inches = (0.62 * widest + 0.8) * 8 / 72 / 2
    figure = ax.get_figure(root=True)
    if figure is None:
        raise ValueError("ax must belong to a figure")
    wide = ax.get_position().width * figure.get_size_inches()[0]  # the axes' width in inches
    half = inches * span / wide + 0.02
    for edge in graph.edges:
        (x0, y0), (x1, y1) = xy[edge.parent], xy[edge.child]
        start, end = (x0 + half, y0), (x1 - half, y1)  # from box edge to box edge
        ax.annotate("", xy=end, xytext=start,
                    arrowprops={"arrowstyle": "-|>", "color": "0.45", "shrinkA": 0, "shrinkB": 0})
        rise = (end[1] - start[1]) / (end[0] - start[0])  # the label beside the arrow, above it
        ax.text((start[0] + end[0]) / 2 - 0.16 * np.sign(rise), (start[1] + end[1]) / 2 + 0.16,
                f"{edge.local_grad:.3g}", ha="center", va="center", fontsize=8,
                color=VERMILLION)
    for i, (node, text, (x, y)) in enumerate(zip(graph.nodes, texts, xy, strict=True)):
        color = YELLOW if i == len(graph.nodes) - 1 else ORANGE if node.op else SKY
        ax.text(x, y, text, ha="center", va="center", fontsize=8, family="monospace",
                bbox={"boxstyle": "round,pad=0.3", "fc": color, "ec": "0.3"})
    ax.set_ylim(-0.65 * max(count.values()) - 0.2, 0.65 * max(count.values()) + 0.2)
    ax.axis("off")


# Positional encoding (notebook 09): the dot products of every pair of positions.


def position_dot_products(ax: Axes, table: ArrayLike, offsets: tuple[int, ...] = ()) -> AxesImage:
    """The dot products ``PE(p)·PE(q)`` of every pair of rows of a positional table (one row per
    position, ``table[p]`` = PE(p)) as a heatmap on ``ax``: position q across, position p down,
    position 0 at the top left, with a colour bar. Each of ``offsets`` (k = q - p) is marked by a
    dashed white line along its diagonal, labelled "k = ..." near its upper end: where the dot
    product depends only on q - p, the colours are constant along every such diagonal.
    Returns the image."""
    from matplotlib.axes import Axes as AxesType

    if not isinstance(ax, AxesType):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    rows = real_array(table, "table")
    if rows.ndim != 2 or len(rows) < 2:
        raise ValueError(f"table must be 2-D with at least 2 positions, got shape {rows.shape}")
    if not isinstance(offsets, tuple):
        raise TypeError(f"offsets must be a tuple of ints, got {type(offsets).__name__}")
    n = len(rows)
    for k in offsets:
        check_int(k, "offsets", minimum=-(n - 1), maximum=n - 1)
    gram = rows @ rows.T
    image = ax.imshow(gram, cmap=COLORMAP, origin="upper", interpolation="nearest",
                      extent=(-0.5, n - 0.5, n - 0.5, -0.5))
    for k in offsets:  # the diagonal q = p + k, from its first row to its last
        p0, p1 = max(0, -k), min(n - 1, n - 1 - k)
        ax.plot([p0 + k, p1 + k], [p0, p1], ls="--", lw=1.2, color="white")
        along = p0 + 0.12 * (p1 - p0)  # a point near the upper end, inside the axes
        ax.text(along + k + 0.03 * n, along, f"k = {k}", ha="left", va="center", fontsize=8,
                color=BLACK, bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none"})
    ax.set(xlabel="position q", ylabel="position p", xlim=(-0.5, n - 0.5), ylim=(n - 0.5, -0.5))
    bar = ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label(r"$PE(p)\cdot PE(q)$")
    return image
