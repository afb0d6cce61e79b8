"""course_utils.diagrams.maths, the drawings added for notebook 09: what each one draws."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from course_utils import diagrams, plotting, positional


def test_position_dot_products_draws_every_pair_and_marks_the_diagonals():
    table = positional.sinusoidal_encoding(60, 16)
    fig, ax = plt.subplots()
    try:
        image = diagrams.position_dot_products(ax, table, offsets=(-20, 0, 35))
        shown = np.asarray(image.get_array())
        np.testing.assert_allclose(shown, table @ table.T)  # row p, column q: PE(p)·PE(q)
        assert shown.shape == (60, 60)
        assert image.get_extent() == [-0.5, 59.5, 59.5, -0.5]  # position 0 at the top left
        assert ax.get_xlabel() == "position q" and ax.get_ylabel() == "position p"
        lines = [line for line in ax.lines if line.get_linestyle() == "--"]
        assert len(lines) == 3
        for line, k in zip(lines, (-20, 0, 35), strict=True):
            q, p = line.get_data()
            np.testing.assert_allclose(np.asarray(q) - np.asarray(p), k)  # the diagonal q = p + k
            assert min(p) >= 0 and max(p) <= 59 and min(q) >= 0 and max(q) <= 59
        assert sorted(t.get_text() for t in ax.texts) == ["k = -20", "k = 0", "k = 35"]
        bars = [a for a in fig.axes if a is not ax]
        assert len(bars) == 1 and "PE(p)" in bars[0].get_ylabel()  # the colour bar
        assert plotting.figure_problems(fig) == []
    finally:
        plt.close(fig)


def test_position_dot_products_shows_constant_diagonals_only_for_a_relative_table():
    fig, ax = plt.subplots()
    try:
        sinusoidal = np.asarray(diagrams.position_dot_products(
            ax, positional.sinusoidal_encoding(40, 8)).get_array())
        random = np.asarray(diagrams.position_dot_products(
            ax, np.random.default_rng(0).normal(size=(40, 8))).get_array())
        assert max(np.ptp(np.diagonal(sinusoidal, k)) for k in range(-39, 40)) < 1e-9
        assert max(np.ptp(np.diagonal(random, k)) for k in range(-38, 39)) > 1.0
    finally:
        plt.close(fig)


@pytest.mark.parametrize(("args", "error", "match"), [
    (("not axes", np.zeros((3, 2))), TypeError, "ax must be a matplotlib Axes"),
    ((None, np.zeros(3)), ValueError, "table must be 2-D"),
    ((None, np.zeros((1, 4))), ValueError, "at least 2 positions"),
    ((None, np.zeros((5, 4)), [1]), TypeError, "offsets must be a tuple"),
    ((None, np.zeros((5, 4)), (5,)), ValueError, "offsets must be in"),
    ((None, np.zeros((5, 4)), (1.5,)), TypeError, "offsets must be an int"),
])
def test_position_dot_products_refuses_bad_arguments(args, error, match):
    fig, ax = plt.subplots()
    try:
        args = tuple(ax if a is None else a for a in args[:1]) + args[1:]
        with pytest.raises(error, match=match):
            diagrams.position_dot_products(*args)
    finally:
        plt.close(fig)


def test_draw_graph_labels_every_node_and_puts_each_derivative_beside_its_arrow():
    from matplotlib.text import Annotation

    from course_utils.autograd import Value, computational_graph
    from course_utils.diagrams._draw import ORANGE, SKY, YELLOW

    w, x, b = Value(0.5), Value(2.0), Value(-0.3)
    loss = ((w * x + b).tanh() - 1.0) ** 2
    loss.backward()
    graph = computational_graph(loss, names={w: "w", x: "x", b: "b", loss: "loss"})
    fig, ax = plt.subplots(figsize=(9.5, 3.6))
    try:
        diagrams.draw_graph(graph, ax)
        arrows = [t for t in ax.texts if isinstance(t, Annotation)]
        assert len(arrows) == len(graph.edges)
        boxes = [t for t in ax.texts if t.get_bbox_patch() is not None]
        assert len(boxes) == len(graph.nodes)
        for node, box in zip(graph.nodes, boxes, strict=True):
            assert f"data {node.data:.4f}" in box.get_text()
            assert f"grad {node.grad:.4f}" in box.get_text()
        colours = [matplotlib.colors.to_hex(box.get_bbox_patch().get_facecolor()) for box in boxes]
        assert colours[-1] == YELLOW.lower()  # the root
        for node, colour in zip(graph.nodes[:-1], colours, strict=False):
            assert colour == (ORANGE if node.op else SKY).lower()
        labels = [t for t in ax.texts if t not in arrows and t not in boxes]
        assert [t.get_text() for t in labels] == [f"{e.local_grad:.3g}" for e in graph.edges]
        for arrow, label in zip(arrows, labels, strict=True):
            (x0, y0), (x1, y1) = arrow.xyann, arrow.xy
            assert x1 > x0  # drawn left to right, as the forward pass runs
            assert label.get_position()[1] > (y0 + y1) / 2  # above the arrow, not on it
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        frames = [box.get_bbox_patch().get_window_extent(renderer) for box in boxes]
        for arrow in arrows:  # each arrow runs from one box's edge to the next: none hidden
            start, end = ax.transData.transform([arrow.xyann, arrow.xy])
            assert not any(f.contains(*start) or f.contains(*end) for f in frames)
        assert plotting.figure_problems(fig) == []
    finally:
        plt.close(fig)
