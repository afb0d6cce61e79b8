"""The drawings of rotary positions: what each panel holds, and that the numbers drawn are RoPE's
(compared with positional.apply_rope) and the added encoding's (positional.sinusoidal_encoding)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from course_utils import plotting, positional
from course_utils.diagrams import positions
from course_utils.plotting import PALETTE


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _arrows(ax):
    return [a for a in ax.texts if getattr(a, "arrow_patch", None) is not None and not a.get_text()]


def _texts(ax):
    return [t.get_text() for t in ax.texts]


def test_rope_rotation_draws_both_placements_with_the_same_score():
    q, k, m, n, shift, omega = (1.0, -0.3), (-0.2, 0.9), 1, 3, 2, 0.4
    fig = positions.rope_rotation(q, k, m, n, shift, omega)
    assert fig.get_facecolor()[:3] == (1.0, 1.0, 1.0)
    axes = fig.axes
    assert len(axes) == 2
    scores = []
    for ax, (pos_q, pos_k) in zip(axes, [(m, n), (m + shift, n + shift)], strict=True):
        assert ax.get_title() == f"query at m = {pos_q}, key at n = {pos_k} (offset {n - m})"
        texts = _texts(ax)
        assert {"q", "k", f"$R({pos_q}\\omega)\\,q$", f"$R({pos_k}\\omega)\\,k$",
                f"{pos_q}ω", f"{pos_k}ω"} <= set(texts)
        # 4 vectors and 3 arc heads (the two turns and the angle between the turned vectors)
        heads = _arrows(ax)
        vectors = [a for a in heads if a.xyann == (0.0, 0.0)]
        assert len(vectors) == 4 and len(heads) == 7
        ends = sorted(tuple(np.round(a.xy, 6)) for a in vectors)
        want = []
        for v, p in ((q, 0), (k, 0), (q, pos_q), (k, pos_k)):
            c, s = np.cos(p * omega), np.sin(p * omega)
            want.append(tuple(np.round([c * v[0] - s * v[1], s * v[0] + c * v[1]], 6)))
        assert ends == sorted(want)
        colors = {matplotlib.colors.to_hex(a.arrow_patch.get_edgecolor()) for a in vectors}
        assert colors == {PALETTE[0].lower(), PALETTE[1].lower()}
        label = ax.get_xlabel()
        scores.append(float(label.rsplit("=", 1)[1]))
    turned_q = np.array(want[2])
    turned_k = np.array(want[3])
    assert scores[0] == scores[1] == pytest.approx(float(turned_q @ turned_k), abs=1e-3)
    assert plotting.figure_problems(fig) == []


def test_rope_rotation_refuses_a_zero_pair_and_bad_positions():
    with pytest.raises(ValueError, match="q must be a nonzero pair"):
        positions.rope_rotation(q=(0.0, 0.0))
    with pytest.raises(ValueError, match="k must be a nonzero pair"):
        positions.rope_rotation(k=(1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match="shift"):
        positions.rope_rotation(shift=0)
    with pytest.raises(TypeError, match="m must be an int"):
        positions.rope_rotation(m=1.5)


def test_rope_scores_coincide_for_rope_and_not_for_an_added_encoding():
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((2, 16))
    starts, offsets = (5, 60, 700), list(range(-5, 21))
    fig = positions.rope_scores(q, k, starts, offsets)
    rope_ax, added_ax = fig.axes
    assert "RoPE" in rope_ax.get_title() and "added" in added_ax.get_title()
    assert rope_ax.get_xlabel() == added_ax.get_xlabel() == "offset n − m"
    for ax in (rope_ax, added_ax):
        assert [t.get_text() for t in ax.get_legend().get_texts()] == [f"m = {m}" for m in starts]
    rope_lines, added_lines = rope_ax.get_lines(), added_ax.get_lines()
    assert len(rope_lines) == len(added_lines) == 3
    # RoPE: the first m is a line over every offset, the others markers on every 4th offset
    assert rope_lines[0].get_linestyle() == "-" and rope_lines[1].get_linestyle() == "None"
    qt, kt = torch.tensor(q)[None], torch.tensor(k)[None]
    for index, (line, m) in enumerate(zip(rope_lines, starts, strict=True)):
        x = np.asarray(line.get_xdata())
        np.testing.assert_array_equal(x, offsets[index::4] if index else offsets)
        by_torch = [(positional.apply_rope(qt, [m]) * positional.apply_rope(kt, [m + o])).sum()
                    .item() for o in x]
        np.testing.assert_allclose(line.get_ydata(), by_torch, rtol=1e-10, atol=1e-10)
        first = np.asarray(rope_lines[0].get_ydata())[index::4] if index else None
        if index:
            np.testing.assert_allclose(line.get_ydata(), first, rtol=1e-9, atol=1e-9)
    table = positional.sinusoidal_encoding(max(starts) + max(offsets) + 1, 16)
    curves = []
    for line, m in zip(added_lines, starts, strict=True):
        np.testing.assert_array_equal(line.get_xdata(), offsets)
        want = [(q + table[m]) @ (k + table[m + o]) for o in offsets]
        np.testing.assert_allclose(line.get_ydata(), want, rtol=1e-12)
        curves.append(np.asarray(line.get_ydata()))
    assert np.abs(curves[0] - curves[1]).max() > 0.5 and np.abs(curves[1] - curves[2]).max() > 0.5
    assert plotting.figure_problems(fig) == []


def test_rope_scores_refuses_what_it_cannot_draw():
    q = np.ones(8)
    with pytest.raises(ValueError, match="same even length"):
        positions.rope_scores(q, np.ones(6))
    with pytest.raises(ValueError, match="same even length"):
        positions.rope_scores(np.ones(5), np.ones(5))
    with pytest.raises(ValueError, match="0 or more"):
        positions.rope_scores(q, q, starts=(0,), offsets=(-1, 0, 1))
    with pytest.raises(ValueError, match="at least"):
        positions.rope_scores(q, q, starts=(), offsets=(0, 1))
