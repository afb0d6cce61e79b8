"""course_utils.diagrams: the LayerNorm/BatchNorm axes of notebook 12, the cross-attention map of
notebook 13, and the boxes of the flow diagrams (what is drawn, not only that it runs)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.patches import FancyBboxPatch, Polygon, Rectangle

from course_utils import diagrams, plotting

_, ORANGE, _, _, _, SKY, _, _ = plotting.PALETTE  # the palette's order


def _cells(fig, color):
    return [p for p in fig.axes[0].patches
            if isinstance(p, Polygon) and mcolors.to_hex(p.get_facecolor()) == color.lower()]


def test_norm_axes_shades_one_token_for_layernorm_and_one_feature_for_batchnorm():
    fig = diagrams.norm_axes()
    try:
        drawn = [t.get_text() for t in fig.axes[0].texts]
        assert sum("LayerNorm" in t for t in drawn) == 1
        assert sum("BatchNorm" in t for t in drawn) == 1
        assert any("B·N = 12 pairs" in t for t in drawn)   # LayerNorm: one pair per token
        assert any("d = 6 pairs" in t for t in drawn)      # BatchNorm: one pair per feature
        assert drawn.count("d = 6 features") == 2 and drawn.count("N = 4 tokens") == 2
        layer, batch = _cells(fig, ORANGE), _cells(fig, SKY)
        # LayerNorm: the 6 features of one token on the front face, and its end on the right
        assert len(layer) == 6 + 1
        # BatchNorm: one feature's column on the front face (4 tokens) and the top (3 sentences)
        assert len(batch) == 4 + 3
        # a block has 4·6 front, 3·6 top and 3·4 right cells, drawn twice
        assert len([p for p in fig.axes[0].patches if isinstance(p, Polygon)]) == 2 * 54
        # the LayerNorm row is horizontal (one token), the BatchNorm column vertical (one feature)
        front = [p.get_xy()[:4] for p in layer if len(np.unique(p.get_xy()[:4, 1])) == 2
                 and np.ptp(p.get_xy()[:4, 0]) == 1 and np.ptp(p.get_xy()[:4, 1]) == 1]
        assert len(front) == 6 and len({tuple(c[:, 1]) for c in front}) == 1
        column = [p.get_xy()[:4] for p in batch if np.ptp(p.get_xy()[:4, 1]) == 1
                  and np.ptp(p.get_xy()[:4, 0]) == 1]
        assert len(column) == 4 and len({tuple(c[:, 0]) for c in column}) == 1
        assert left_of(layer, batch)
        assert mcolors.to_hex(fig.get_facecolor()) == "#ffffff"
        assert plotting.figure_problems(fig) == []
    finally:
        plt.close(fig)


def left_of(a, b):
    return max(p.get_xy()[:, 0].max() for p in a) < min(p.get_xy()[:, 0].min() for p in b)


SOURCE, TARGET = ["the", "black", "cat", "sleeps", "<pad>"], ["le", "chat", "noir", "dort"]


def _alignment():
    weights = np.full((4, 5), 0.03)
    weights[:, 4] = 0.0
    weights[[0, 1, 2, 3], [0, 2, 1, 3]] = 0.91
    return weights


def test_cross_attention_map_labels_both_axes_with_tokens_and_outlines_each_row_maximum():
    fig = diagrams.cross_attention_map(_alignment(), SOURCE, TARGET, title="by hand")
    try:
        ax = fig.axes[0]
        assert [t.get_text() for t in ax.get_xticklabels()] == SOURCE
        assert [t.get_text() for t in ax.get_yticklabels()] == TARGET
        assert ax.get_title() == "by hand"
        assert "source" in ax.get_xlabel() and "target" in ax.get_ylabel()
        outlines = [p for p in ax.patches if isinstance(p, Rectangle) and not p.get_fill()]
        corners = sorted((p.get_x() + 0.5, p.get_y() + 0.5) for p in outlines)
        assert corners == sorted([(0, 0), (2, 1), (1, 2), (3, 3)])  # (column, row) of each max
        values = [t.get_text() for t in ax.texts]
        assert values.count("0.91") == 4 and values.count("0.00") == 4 and len(values) == 20
        assert len(fig.axes) == 2 and "weight" in fig.axes[1].get_ylabel()  # the colour bar
        assert mcolors.to_hex(fig.get_facecolor()) == "#ffffff"
        assert plotting.figure_problems(fig) == []
    finally:
        plt.close(fig)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"weights": np.ones((5, 4))}, ValueError, r"shape \(len\(target\), len\(source\)\)"),
    ({"source": "the cat"}, TypeError, "source must be a sequence of str"),
    ({"target": ["le", 2, "noir", "dort"]}, TypeError, "target must be a sequence of str"),
    ({"title": 3}, TypeError, "title must be a str"),
    ({"weights": "x"}, TypeError, "weights"),
])
def test_cross_attention_map_refuses_wrong_arguments(kwargs, error, match):
    args = {"weights": _alignment(), "source": SOURCE, "target": TARGET, **kwargs}
    title = args.pop("title", "t")
    with pytest.raises(error, match=match):
        diagrams.cross_attention_map(args["weights"], args["source"], args["target"], title=title)
    plt.close("all")


@pytest.mark.parametrize("draw", [diagrams.encoder_blocks, diagrams.decoder_block,
                                  lambda: diagrams.head_split(3)])
def test_flow_box_labels_sit_at_the_centre_of_their_boxes(draw):
    """Each one-line label ("add", "LayerNorm", ...) is centred in its box, not near its top."""
    fig = draw()
    try:
        ax = fig.axes[0]
        boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)
                 and mcolors.to_hex(p.get_facecolor()) != "#ffffff"
                 and p.get_linestyle() in ("-", "solid")]
        assert boxes
        centred = 0
        for box in boxes:
            x0, y0, w, h = box.get_x(), box.get_y(), box.get_width(), box.get_height()
            inside = [t for t in ax.texts if t.get_text() and x0 < t.get_position()[0] < x0 + w
                      and y0 < t.get_position()[1] < y0 + h]
            for text in inside:
                assert text.get_position()[1] == pytest.approx(y0 + h / 2)
                centred += 1
        assert centred >= len(boxes) // 2
    finally:
        plt.close(fig)
