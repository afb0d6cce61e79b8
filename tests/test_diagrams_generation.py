"""course_utils.diagrams.generation: notebook 16's drawings hold what they say they draw."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.patches import Rectangle
from matplotlib.text import Annotation

from course_utils import diagrams, plotting
from course_utils.diagrams.generation import FREE
from course_utils.kv_cache import PagedKVCache

BLUE, ORANGE, GREEN, VERMILLION, _, SKY, YELLOW, _ = (c.lower() for c in plotting.PALETTE)


@pytest.fixture
def drawn():
    figures = []

    def keep(fig):
        figures.append(fig)
        assert plotting.figure_problems(fig) == []
        assert mcolors.to_hex(fig.get_facecolor()) == "#ffffff"
        return fig

    yield keep
    for fig in figures:
        plt.close(fig)


def texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def rectangles(fig, color=None, y=None):
    found = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    if color is not None:
        found = [p for p in found if mcolors.to_hex(p.get_facecolor()) == color]
    return [p for p in found if y is None or math.isclose(p.get_y(), y)]


# ------------------------------------------------------------------ a speculative round


def test_a_round_with_a_rejection_keeps_the_prefix_and_the_resampled_token(drawn):
    fig = drawn(diagrams.speculative_round([5, 7, 3, 9], 2, 11, draft_cost=0.2))
    draft = rectangles(fig, SKY, y=2.0)
    assert len(draft) == 4 and all(math.isclose(p.get_width(), 0.2) for p in draft)
    assert sorted(p.get_x() for p in draft) == pytest.approx([0, 0.2, 0.4, 0.6])  # one by one
    target = rectangles(fig, YELLOW)
    assert len(target) == 1 and target[0].get_width() == 1.0  # one pass, after the draft's
    assert target[0].get_x() == pytest.approx(0.8)
    cells = rectangles(fig, y=0.0)
    assert len(cells) == 5  # k + 1 positions under the target's pass
    colours = [mcolors.to_hex(p.get_facecolor()) for p in sorted(cells, key=Rectangle.get_x)]
    assert colours == [GREEN, GREEN, VERMILLION, "#ffffff", "#ffffff"]
    drawn_texts = texts(fig)
    for token in ("5", "7", "3", "9"):
        assert token in drawn_texts
    assert "3 rejected\n11 instead" in drawn_texts
    assert drawn_texts.count("not\ntested") == 2
    assert "this round adds 3 token(s): 5, 7, 11" in drawn_texts
    arrows = [t for t in fig.axes[0].texts if isinstance(t, Annotation)]
    assert len(arrows) == 4 + 1  # one per proposal into the target's pass, and the time axis


def test_a_round_that_accepts_everything_adds_the_bonus_token(drawn):
    fig = drawn(diagrams.speculative_round(["the", "cat", "sat"], 3, "on", draft_cost=0.1))
    colours = [mcolors.to_hex(p.get_facecolor())
               for p in sorted(rectangles(fig, y=0.0), key=Rectangle.get_x)]
    assert colours == [GREEN, GREEN, GREEN, BLUE]
    assert "bonus\non" in texts(fig)
    assert "this round adds 4 token(s): the, cat, sat, on" in texts(fig)
    assert not rectangles(fig, VERMILLION)


def test_a_round_refuses_bad_arguments():
    with pytest.raises(ValueError, match="proposed"):
        diagrams.speculative_round([], 0, 1)
    with pytest.raises(ValueError, match="accepted"):
        diagrams.speculative_round([1, 2], 3, 4)
    with pytest.raises(ValueError, match="draft_cost"):
        diagrams.speculative_round([1, 2], 1, 4, draft_cost=0)


# ------------------------------------------------------------------ tokens and speed-up


def test_the_tokens_per_pass_curves_are_the_geometric_sums(drawn):
    fig = drawn(diagrams.speculative_gain((0.5, 0.8), k_max=9, measured=(4, 0.44, 1.71)))
    assert len(fig.axes) == 1
    lines = {line.get_label(): line for line in fig.axes[0].lines}
    for a in (0.5, 0.8, 0.44):
        label = f"a = {a:g}" if a != 0.44 else "a = 0.44, measured"
        x, y = lines[label].get_data()
        assert list(x) == list(range(10))
        np.testing.assert_allclose(y, [sum(a**i for i in range(k + 1)) for k in range(10)])
    star = lines["measured: 1.71 at k = 4"]
    assert list(star.get_xdata()) == [4] and list(star.get_ydata()) == [1.71]


def test_the_speed_up_divides_by_k_draft_steps_and_one_target_pass(drawn):
    c = 0.05
    fig = drawn(diagrams.speculative_gain((0.5, 0.8, 0.95), k_max=20, draft_cost=c))
    assert len(fig.axes) == 2
    right = fig.axes[1]
    assert "c = 0.05" in right.get_title()
    curves = {line.get_label(): line for line in right.lines if line.get_label()[0] != "_"}
    ks = np.arange(21)
    marked = [line for line in right.lines if line.get_label().startswith("_")
              and line.get_marker() == "o" and len(line.get_xdata()) == 1]
    for a in (0.5, 0.8, 0.95):
        speedup = [sum(a**i for i in range(k + 1)) / (k * c + 1) for k in ks]
        np.testing.assert_allclose(curves[f"a = {a:g}"].get_ydata(), speedup)
    # the best k: 3 at a = 0.5, 8 at a = 0.8 (notebook 16's Exercise 2); 0.95's is past 20
    best = {round(float(m.get_xdata()[0])) for m in marked}
    assert best == {3, 8}
    whole = np.arange(1000)
    assert int(np.argmax((1 - 0.95 ** (whole + 1)) / (0.05 * (whole * c + 1)))) > 20
    assert np.allclose(curves["plain decoding"].get_ydata(), 1)


def test_the_gain_refuses_bad_arguments():
    with pytest.raises(ValueError, match="alphas"):
        diagrams.speculative_gain(())
    with pytest.raises(ValueError, match="alphas"):
        diagrams.speculative_gain((1.0,))
    with pytest.raises(ValueError, match="draft_cost"):
        diagrams.speculative_gain(draft_cost=0)
    with pytest.raises(ValueError, match="measured"):
        diagrams.speculative_gain(k_max=5, measured=(6, 0.5, 1.5))


# ------------------------------------------------------------------ the paged cache


def pool_slots(fig, color, hatched=False):
    return [p for p in rectangles(fig, color) if p.get_x() >= 3.7 and p.get_y() >= 0
            and bool(p.get_hatch()) == hatched]


def test_a_paged_cache_is_drawn_from_its_own_block_tables(drawn):
    cache = PagedKVCache(1, 2, 1, 1, n_blocks=6, block_size=4)
    for n in (4, 1):  # a prompt of 4, then one token: the second blocks come after the first
        cache.update(0, torch.zeros(2, 1, n, 1), torch.zeros(2, 1, n, 1))
    assert cache.block_tables == [[0, 2], [1, 3]]
    fig = drawn(diagrams.paged_cache(cache))
    assert len(pool_slots(fig, SKY)) == 5 and len(pool_slots(fig, ORANGE)) == 5  # written
    reserved = pool_slots(fig, "#ffffff", hatched=True)
    assert len(reserved) == 2 * 3  # each request's second block holds 1 of its 4 slots
    assert sorted(mcolors.to_hex(p.get_edgecolor()) for p in reserved) == sorted([ORANGE, SKY] * 3)
    assert len(pool_slots(fig, FREE)) == 2 * 4  # blocks 4 and 5 are in no table
    drawn_texts = texts(fig)
    for name in [f"{r}{p}" for r in "AB" for p in range(5)] + [f"block {b}" for b in range(6)]:
        assert name in drawn_texts
    assert "A5" not in drawn_texts  # position 5 was never written
    arrows = [t for t in fig.axes[0].texts if isinstance(t, Annotation)]
    assert len(arrows) == 4  # one per table entry


def test_section_4s_requests_interleave_and_waste_only_their_last_blocks(drawn):
    fig = drawn(diagrams.paged_cache([[0, 1, 3], [2, 4]], [9, 8], n_blocks=8, block_size=4))
    assert len(pool_slots(fig, SKY)) == 9 and len(pool_slots(fig, ORANGE)) == 8
    assert len(pool_slots(fig, "#ffffff", hatched=True)) == 3  # A's block 3: 1 of 4 written
    assert len(pool_slots(fig, FREE)) == 3 * 4
    a8 = [t for t in fig.axes[0].texts if t.get_text() == "A8"]
    assert len(a8) == 1 and a8[0].get_position()[1] == pytest.approx(7 - 3 + 0.45)  # block 3
    # each arrow ends at the row of the block its table entry names
    ends = sorted(round(t.xy[1] - 0.45) for t in fig.axes[0].texts if isinstance(t, Annotation))
    assert ends == sorted(7 - b for b in (0, 1, 3, 2, 4))
    assert {"A's table:\n9 positions", "B's table:\n8 positions"} <= set(texts(fig))


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    (([[0, 1], [1]], [5, 2]), {"n_blocks": 4, "block_size": 4}, "twice"),
    (([[0], [1]], [5, 2]), {"n_blocks": 4, "block_size": 4}, "needs 2"),
    (([[0], [9]], [3, 2]), {"n_blocks": 4, "block_size": 4}, "block number"),
    (([[0]], [3, 2]), {"n_blocks": 4, "block_size": 4}, "one length per table"),
    (([[0]],), {"n_blocks": 4, "block_size": 4}, "need lengths"),
    (([[0]], [3]), {"n_blocks": 4, "block_size": 4, "names": "AB"}, "one name per table"),
])
def test_a_paged_cache_refuses_tables_that_do_not_fit(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        diagrams.paged_cache(*args, **kwargs)


def test_a_paged_cache_object_comes_alone():
    cache = PagedKVCache(1, 1, 1, 1, n_blocks=2, block_size=2)
    with pytest.raises(ValueError, match="alone"):
        diagrams.paged_cache(cache, [0])
