"""course_utils.diagrams: what each drawing contains (labels, arrows, colours), on white."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.patches import FancyBboxPatch, Rectangle
from matplotlib.text import Annotation

from course_utils import diagrams, plotting
from course_utils.diagrams.architecture import HEAD_COLORS

_, ORANGE, _, _, _, SKY, YELLOW, _ = plotting.PALETTE  # the palette's order


def texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_pipeline_labels_every_stage_with_its_notebooks():
    fig = diagrams.pipeline()
    try:
        drawn = texts(fig)
        for stage in diagrams.PIPELINE:
            assert stage.name in drawn
            assert f"notebook {stage.notebooks}" in drawn
        names = [stage.name.replace("\n", " ") for stage in diagrams.PIPELINE]
        assert names == ["tokens", "embeddings + positions", "attention", "feed-forward", "logits",
                         "softmax", "cross-entropy", "gradients", "optimizer"]
        notes = " ".join(drawn)
        for later in ["15", "16", "17", "01", "02", "03", "04", "layer norm: 12"]:
            assert later in notes
        # every notebook from 05 to 14 explains at least one stage
        covered = {n.strip() for s in diagrams.PIPELINE for n in s.notebooks.split(",")}
        assert covered == {f"{n:02d}" for n in range(5, 15)}
        # one arrow between consecutive stages, plus the optimizer's arrow back to the weights
        arrows = [t for t in fig.axes[0].texts if isinstance(t, Annotation)]
        assert len(arrows) == len(diagrams.PIPELINE) - 1 + 1
        boxes = [p for p in fig.axes[0].patches if isinstance(p, FancyBboxPatch)]
        assert len(boxes) == len(diagrams.PIPELINE) + 1  # the stages and the layer bracket
        assert mcolors.to_hex(fig.get_facecolor()) == "#ffffff"
    finally:
        plt.close(fig)


def test_pipeline_boxes_use_the_palette():
    fig = diagrams.pipeline()
    try:
        colors = {mcolors.to_hex(p.get_facecolor()) for p in fig.axes[0].patches}
        assert colors <= {c.lower() for c in plotting.PALETTE} | {"#ffffff"}
    finally:
        plt.close(fig)


def test_tensor_sheets_draws_every_entry_and_names_the_axes():
    fig = diagrams.tensor_sheets((3, 4, 6), sentence=1, token=2)
    try:
        cells = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
        assert len(cells) == 3 * 4 * 6
        highlighted = [p for p in cells if mcolors.to_hex(p.get_facecolor()) == "#e69f00"]
        assert len(highlighted) == 6  # one token vector: d entries
        drawn = " ".join(texts(fig))
        for label in ["axis 0: B (batch) = 3", "axis 1: N (sequence) = 4",
                      "axis 2: d_model (features) = 6", "X[1]", "shape (4, 6)",
                      "X[1, 2]", "shape (6,)"]:
            assert label in drawn
        assert mcolors.to_hex(fig.get_facecolor()) == "#ffffff"
    finally:
        plt.close(fig)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"shape": (0, 4, 6)}, "shape\\[0\\]"),
    ({"sentence": 3}, "sentence"),
    ({"token": -1}, "token"),
])
def test_tensor_sheets_refuses_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        diagrams.tensor_sheets(**kwargs)


def test_annotated_heatmap_writes_readable_values():
    fig, ax = plt.subplots()
    try:
        data = np.array([[0, 10], [20, 25]])
        image = diagrams.annotated_heatmap(ax, data, vmin=0, vmax=25)
        assert image.get_clim() == (0, 25)
        labels = {t.get_text(): t.get_color() for t in ax.texts}
        assert set(labels) == {"0", "10", "20", "25"}
        for value in [0, 10, 20, 25]:
            assert labels[str(value)] == plotting.text_color(value, 0, 25)
        assert labels["0"] == "white" and labels["25"] == "black"  # dark and light ends
    finally:
        plt.close(fig)


def test_annotated_heatmap_formats_and_takes_a_row():
    fig, ax = plt.subplots()
    try:
        diagrams.annotated_heatmap(ax, [0.25, 0.5], fmt="{:.2f}")
        assert [t.get_text() for t in ax.texts] == ["0.25", "0.50"]
        with pytest.raises(ValueError, match="1-D or 2-D"):
            diagrams.annotated_heatmap(ax, np.zeros((2, 2, 2)))
    finally:
        plt.close(fig)


# --- architecture diagrams (notebooks 11, 13, 14) --------------------------------------------


def arrows_of(fig):
    return [t for t in fig.axes[0].texts if isinstance(t, Annotation)]


def boxes_of(fig):
    return [p for p in fig.axes[0].patches if isinstance(p, FancyBboxPatch)]


def on_a_box_edge(point, boxes, tol=0.05):
    """True when ``point`` lies on the outline of one of the boxes (pad included)."""
    x, y = point
    for box in boxes:
        left, bottom = box.get_x(), box.get_y()
        right, top = left + box.get_width(), bottom + box.get_height()
        inside = left - tol <= x <= right + tol and bottom - tol <= y <= top + tol
        near = min(abs(x - left), abs(x - right), abs(y - bottom), abs(y - top)) <= tol
        if inside and near:
            return True
    return False


ARCHITECTURE = {
    "head_split": (lambda: diagrams.head_split(4), 2 + 2 * 4 + 1,
                   ["X", "split heads\nreshape, transpose", "merge heads\n= Concat",
                    "(B, h, N, d_k)", "each head: (B, N, d_k)"]
                   + [f"head {i}\nsoftmax$(Q_iK_i^T/\\sqrt{{d_k}})\\,V_i$" for i in (1, 2, 3, 4)]),
    "decoder_block": (diagrams.decoder_block, 7 + 1 + 3,
                      ["masked multi-head\nself-attention", "multi-head\ncross-attention",
                       "feed-forward", "K, V", "Q", "Q, K, V", "residual", "× L_dec\nlayers"]),
    "encoder_decoder": (diagrams.encoder_decoder, 4 + 6 + 1,
                        ["self-attention\n+ add & norm", "masked self-attention\n+ add & norm",
                         "cross-attention\n+ add & norm", "memory M\n(B, N_src, d_model)", "K, V",
                         "× L_enc", "× L_dec"]),
    "training_loop": (diagrams.training_loop, 10 + 2,
                      ["tgt_in: <bos>\n+ target", "tgt_out: target\n+ <eos>", "labels",
                       "cross-entropy\n(skips <pad>)", "update the weights", "backpropagation"]),
}


@pytest.mark.parametrize("name", sorted(ARCHITECTURE))
def test_architecture_diagram_has_its_boxes_labels_and_arrows(name):
    draw, n_arrows, labels = ARCHITECTURE[name]
    fig = draw()
    try:
        drawn = texts(fig)
        for label in labels:
            assert label in drawn, f"{label!r} missing from {name}"
        assert len(arrows_of(fig)) == n_arrows
        assert mcolors.to_hex(fig.get_facecolor()) == "#ffffff"
        fills = {mcolors.to_hex(p.get_facecolor()) for p in boxes_of(fig)
                 if p.get_facecolor()[3] > 0}
        assert fills <= {c.lower() for c in plotting.PALETTE} | {"#ffffff"}
    finally:
        plt.close(fig)


@pytest.mark.parametrize("name", ["head_split", "encoder_decoder"])
def test_box_to_box_arrows_start_and_end_on_box_edges(name):
    fig = ARCHITECTURE[name][0]()
    try:
        boxes = [b for b in boxes_of(fig) if b.get_facecolor()[3] > 0]  # not the dashed frames
        for arrow in arrows_of(fig):
            assert on_a_box_edge(arrow.xy, boxes), f"arrow ends at {arrow.xy} off every box"
            assert on_a_box_edge(arrow.xyann, boxes), f"arrow starts at {arrow.xyann} off every box"
    finally:
        plt.close(fig)


def test_decoder_block_has_three_add_and_norm_boxes_each_fed_by_a_residual():
    fig = diagrams.decoder_block()
    try:
        adds = [t.get_position()[1] for t in fig.axes[0].texts if t.get_text() == "add & norm"]
        assert len(adds) == 3
        # each residual path ends in an arrow pointing left, into an add & norm box
        into_adds = [a for a in arrows_of(fig) if a.xy[0] < a.xyann[0] and a.xy[1] == a.xyann[1]]
        assert sorted(a.xy[1] for a in into_adds) == pytest.approx(sorted(adds))
    finally:
        plt.close(fig)


def test_head_split_draws_one_box_per_head():
    for h in (1, 2, 8):
        fig = diagrams.head_split(h)
        try:
            heads = [t for t in texts(fig) if t.startswith("head ")]
            assert len(heads) == h
        finally:
            plt.close(fig)
    with pytest.raises(ValueError, match="n_heads"):
        diagrams.head_split(0)


def test_head_reshape_gives_each_head_its_own_columns():
    fig = diagrams.head_reshape(3, 4, 2)
    try:
        drawn = texts(fig)
        for label in ["x: (N, d_model) = (3, 4)", "reshape: (N, h, d_k) = (3, 2, 2)",
                      "transpose: (h, N, d_k) = (2, 3, 2)",
                      "wrong: x.reshape(2, 3, 2) with no transpose", "head 1", "head 2"]:
            assert label in drawn
        cells = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
        assert len(cells) == 4 * 3 * 4  # x, reshaped, transposed, the wrong reshape
        # a cell's colour is the head its feature goes to: features 0, 1 -> head 1; 2, 3 -> head 2
        values = {(round(t.get_position()[0] - 0.5, 6), round(t.get_position()[1] + 0.5, 6)):
                  int(t.get_text()) for t in fig.axes[0].texts if t.get_text().isdigit()}
        for cell in cells:
            value = values[(round(cell.get_x(), 6), round(cell.get_y() + 1, 6))]
            expected = HEAD_COLORS[(value % 4) // 2]
            assert mcolors.to_hex(cell.get_facecolor()) == mcolors.to_hex(expected)
        # the wrong reshape's first "head" holds features of both heads
        first_wrong = {mcolors.to_hex(c.get_facecolor()) for c in cells
                       if c.get_y() < -3 and c.get_x() < 2}
        assert len(first_wrong) == 2
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="divisible"):
        diagrams.head_reshape(3, 5, 2)


# --- the encoder layer of notebook 12: post-LN and pre-LN ------------------------------------


def heights_of(fig, text):
    """The heights of the boxes labelled ``text`` (a box's text sits at its centre)."""
    return sorted(t.get_position()[1] for t in fig.axes[0].texts if t.get_text() == text)


def residual_paths(fig):
    """(where each residual path leaves the main line, the height of the box it enters)."""
    starts = sorted(line.get_ydata()[0] for line in fig.axes[0].lines if line.get_marker() == "o")
    ends = sorted(a.xy[1] for a in arrows_of(fig) if a.xy[0] < a.xyann[0] and a.xy[1] == a.xyann[1])
    assert len(starts) == len(ends)
    return list(zip(starts, ends, strict=True))


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_block_has_its_boxes_arrows_and_colours(norm_first):
    fig = diagrams.encoder_block(norm_first)
    try:
        drawn = texts(fig)
        for label in ["input x: (B, N, d_model)", "multi-head\nself-attention", "feed-forward",
                      "residual", "× L\nlayers"]:
            assert label in drawn
        assert drawn.count("add") == 2 and drawn.count("LayerNorm") == 2
        assert ("final LayerNorm\n(after the last layer)" in drawn) is norm_first
        assert any(("pre-LN" if norm_first else "post-LN") in t for t in drawn)
        # one arrow from each box to the next, input to output, and one per residual path
        assert len(arrows_of(fig)) == (8 if norm_first else 7) + 2
        assert mcolors.to_hex(fig.get_facecolor()) == "#ffffff"
        fills = {mcolors.to_hex(p.get_facecolor()) for p in boxes_of(fig)
                 if p.get_facecolor()[3] > 0}
        assert fills <= {c.lower() for c in plotting.PALETTE} | {"#ffffff"}
        boxes = [b for b in boxes_of(fig) if b.get_facecolor()[3] > 0]
        residual_ends = {end for _, end in residual_paths(fig)}
        for arrow in arrows_of(fig):
            assert on_a_box_edge(arrow.xy, boxes), f"arrow ends at {arrow.xy} off every box"
            if arrow.xy[1] not in residual_ends:  # a residual starts on the line, not on a box
                assert on_a_box_edge(arrow.xyann, boxes), f"arrow starts off a box: {arrow.xyann}"
    finally:
        plt.close(fig)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_block_puts_layer_norm_after_the_add_or_inside_the_branch(norm_first):
    fig = diagrams.encoder_block(norm_first)
    try:
        norms = heights_of(fig, "LayerNorm")
        sublayers = heights_of(fig, "multi-head\nself-attention") + heights_of(fig, "feed-forward")
        adds = heights_of(fig, "add")
        paths = residual_paths(fig)
        assert [end for _, end in paths] == pytest.approx(adds)  # every residual ends in an add
        for (start, end), sublayer in zip(paths, sublayers, strict=True):
            assert start < sublayer < end  # it bypasses one sublayer
            on_branch = [n for n in norms if start < n < end]
            # pre-LN: the sublayer's LayerNorm is on the branch; post-LN: no LayerNorm there
            assert len(on_branch) == (1 if norm_first else 0)
        if not norm_first:  # post-LN: a LayerNorm right after each add, on the main path
            for add in adds:
                assert min(n - add for n in norms if n > add) < 1.2
    finally:
        plt.close(fig)


def test_encoder_blocks_draws_both_placements_side_by_side():
    fig = diagrams.encoder_blocks()
    try:
        drawn = texts(fig)
        assert sum("post-LN" in t for t in drawn) == 1 and sum("pre-LN" in t for t in drawn) == 1
        assert drawn.count("LayerNorm") == 4 and drawn.count("add") == 4
        assert drawn.count("final LayerNorm\n(after the last layer)") == 1
        assert len(arrows_of(fig)) == (7 + 2) + (8 + 2)
        assert mcolors.to_hex(fig.get_facecolor()) == "#ffffff"
    finally:
        plt.close(fig)


def test_encoder_block_writes_notes_and_refuses_bad_arguments():
    fig = diagrams.encoder_block(notes={"feed-forward": "sections 1–2", "norm 1": "section 4"})
    try:
        drawn = texts(fig)
        assert "sections 1–2" in drawn and "section 4" in drawn
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="unknown box 'ffn'"):
        diagrams.encoder_block(notes={"ffn": "x"})
    with pytest.raises(TypeError, match="norm_first"):
        diagrams.encoder_block("pre")
    plt.close("all")


# --- the chain rule for a matrix product (notebook 08) ----------------------------------------


def test_matmul_backward_shapes_match_and_each_gradient_looks_like_its_variable():
    n, d_in, d_out = 4, 3, 2
    fig = diagrams.matmul_backward(n, d_in, d_out)
    try:
        drawn = texts(fig)
        # each row: title, result, its shape, "=", factor, shape, "·", factor, shape
        shapes = {}
        for row in [drawn[i:i + 9] for i in range(0, 27, 9)]:
            title, result, r_shape, equals, first, f_shape, dot, second, s_shape = row
            assert (title, equals, dot) in {("forward", "=", "·"), ("backward", "=", "·")}
            (r_rows, r_cols), (f_rows, f_cols), (s_rows, s_cols) = (
                tuple(int(v) for v in shape.strip("()").split(","))  # "(4, 3)" -> (4, 3)
                for shape in (r_shape, f_shape, s_shape))
            assert f_cols == s_rows and (r_rows, r_cols) == (f_rows, s_cols)  # the shape rule
            for name, shape in ((result, r_shape), (first, f_shape), (second, s_shape)):
                assert shapes.setdefault(name, shape) == shape  # a name has one shape
        assert (shapes["$\\partial \\mathcal{L} / \\partial X$"] == shapes["$X$"]
                == f"({n}, {d_in})")
        assert (shapes["$\\partial \\mathcal{L} / \\partial W$"] == shapes["$W$"]
                == f"({d_in}, {d_out})")
        assert shapes["$G$"] == shapes["$Y$"] == f"({n}, {d_out})"
        assert shapes["$W^\\top$"] == f"({d_out}, {d_in})"
        assert shapes["$X^\\top$"] == f"({d_in}, {n})"
        # a variable and its gradient share a colour: X-like, W-like and Y-like cells
        cells = [mcolors.to_hex(p.get_facecolor()) for p in fig.axes[0].patches
                 if isinstance(p, Rectangle)]
        sky, orange, yellow = (mcolors.to_hex(c) for c in (SKY, ORANGE, YELLOW))
        assert cells.count(sky) == 3 * n * d_in
        assert cells.count(orange) == 3 * d_in * d_out
        assert cells.count(yellow) == 3 * n * d_out
        assert len(cells) == 3 * (n * d_in + d_in * d_out + n * d_out)
        assert mcolors.to_hex(fig.get_facecolor()) == "#ffffff"
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="d_in"):
        diagrams.matmul_backward(4, 0, 2)
