"""course_utils.diagrams.geometry: the drawn vectors are the matrix's columns, products and
eigenvectors, with the labels that name them."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.text import Annotation

from course_utils import plotting
from course_utils.diagrams import geometry

BLUE, _, _, VERMILLION, _, _, _, BLACK = plotting.PALETTE

A = np.array([[0.0, -1.0], [1.0, 0.0]])  # a quarter turn
B = np.array([[1.5, 0.5], [0.0, 1.0]])  # a stretch and a shear


def arrows(ax):
    """(start, end, colour) of every arrow drawn with annotate."""
    return [(np.array(t.xyann), np.array(t.xy), mcolors.to_hex(t.arrow_patch.get_edgecolor()))
            for t in ax.texts if isinstance(t, Annotation)]


def ends(ax, color):
    return [end for _, end, c in arrows(ax) if c == mcolors.to_hex(color)]


def test_linear_map_draws_where_e1_and_e2_go_under_b_then_a_then_ab():
    fig = geometry.linear_map(A, B)
    try:
        assert len(fig.axes) == 3
        first, second, third = fig.axes
        # panel 1: the sides are B's columns; panels 2 and 3: the columns of AB, the same
        for ax, m in [(first, B), (second, A @ B), (third, A @ B)]:
            np.testing.assert_allclose(ends(ax, VERMILLION), [m[:, 0]])
            np.testing.assert_allclose(ends(ax, BLUE), [m[:, 1]])
            assert all(np.allclose(start, 0) for start, _, _ in arrows(ax))
        assert not np.allclose(A @ B, B @ A)  # the picture would differ for BA
        assert "B e1 = [1.5, 0]" in first.get_xlabel()
        assert "A B e2 = [-1, 0.5]" in second.get_xlabel()
        assert "AB e1 = [0, 1.5]" in third.get_xlabel()
        assert [ax.get_title() for ax in fig.axes] == [
            "1. B moves the unit square", "2. then A moves B's image",
            "3. AB does both in one step"]
        # panel 2 also shows B's image, dashed, under A's
        assert any(line.get_linestyle() == "--" for line in second.lines)
        assert not any(line.get_linestyle() == "--" for line in first.lines)
        assert plotting.figure_problems(fig) == []
        assert mcolors.to_hex(fig.get_facecolor()) == "#ffffff"
    finally:
        plt.close(fig)


def test_column_view_adds_the_scaled_columns_tip_to_tail():
    a = np.array([[2.0, -1.0], [1.0, 1.5]])
    x = np.array([1.5, 1.0])
    fig = geometry.column_view(a, x)
    try:
        (ax,) = fig.axes
        drawn = arrows(ax)
        black = [(s, e) for s, e, c in drawn if c == mcolors.to_hex(BLACK)]
        assert len(black) == 1
        np.testing.assert_allclose(black[0][0], [0, 0])
        np.testing.assert_allclose(black[0][1], a @ x)  # A x, from the origin
        scaled = [(s, e) for s, e, c in drawn if c == mcolors.to_hex(VERMILLION)]
        # the plain column a1 and x1 a1, both from the origin
        assert sorted(tuple(e) for _, e in scaled) == sorted([tuple(a[:, 0]), tuple(1.5 * a[:, 0])])
        blue = [(s, e) for s, e, c in drawn if c == mcolors.to_hex(BLUE)]
        tip_to_tail = [(s, e) for s, e in blue if not np.allclose(s, 0)]
        assert len(tip_to_tail) == 1  # x2 a2 starts at the tip of x1 a1 and ends at A x
        np.testing.assert_allclose(tip_to_tail[0][0], 1.5 * a[:, 0])
        np.testing.assert_allclose(tip_to_tail[0][1], a @ x)
        labels = [t.get_text() for t in ax.texts]
        assert "A x = [2, 3]" in labels and "x1 a1 = 1.5 a1" in labels and "a2" in labels
        assert plotting.figure_problems(fig) == []
    finally:
        plt.close(fig)


def test_pca_directions_draws_the_eigenvectors_scaled_by_sqrt_lambda():
    rng = np.random.default_rng(0)
    points = rng.standard_normal((200, 2)) @ np.array([[1.6, 0.9], [0.0, 0.5]]) + [1.0, 2.0]
    cov = np.cov(points, rowvar=False)
    values, vectors = np.linalg.eigh(cov)
    fig = geometry.pca_directions(points)
    try:
        (ax,) = fig.axes
        drawn = arrows(ax)
        assert len(drawn) == 2
        for (start, end, color), i, expected_color in [(drawn[0], 1, VERMILLION),
                                                         (drawn[1], 0, BLUE)]:
            np.testing.assert_allclose(start, points.mean(axis=0))
            step = end - start
            assert np.linalg.norm(step) == pytest.approx(np.sqrt(values[i]))
            assert abs(step @ vectors[:, i]) == pytest.approx(np.sqrt(values[i]))  # along v_i
            assert color == mcolors.to_hex(expected_color)
        title = ax.get_title()
        assert f"trace(C) = {np.trace(cov):.2f} = lambda1 + lambda2" in title
        assert f"lambda1 = {values[1]:.2f}" in title and f"lambda2 = {values[0]:.2f}" in title
        assert len(ax.collections) == 1 and len(ax.collections[0].get_offsets()) == 200
        assert plotting.figure_problems(fig) == []
    finally:
        plt.close(fig)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: geometry.linear_map(np.eye(3), B), ValueError, "a must be a 2 x 2 matrix"),
    (lambda: geometry.linear_map(A, "no"), TypeError, "b must hold real numbers"),
    (lambda: geometry.column_view(np.eye(2), [1.0, 2.0, 3.0]), ValueError, "one entry per column"),
    (lambda: geometry.column_view(np.eye(3), [1.0, 2.0, 3.0]), ValueError, "must have 2 rows"),
    (lambda: geometry.pca_directions(np.ones((5, 3))), ValueError, "an (n, 2) array"),
])
def test_wrong_arguments_are_named(call, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()
