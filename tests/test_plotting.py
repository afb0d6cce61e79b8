"""course_utils.plotting: the palette, the white background, readable heatmap labels, and the
figure check of ``show`` (no text over text, no legend over data)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors
import matplotlib.patches
import numpy as np
import pytest

from course_utils import plotting


def test_style_is_opaque_white_with_the_palette():
    with matplotlib.rc_context():
        plotting.use_course_style()
        assert mcolors.to_hex(matplotlib.rcParams["figure.facecolor"]) == "#ffffff"
        assert mcolors.to_hex(matplotlib.rcParams["axes.facecolor"]) == "#ffffff"
        assert matplotlib.rcParams["savefig.transparent"] is False
        cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
        assert tuple(cycle) == plotting.PALETTE and len(set(cycle)) == len(cycle)
        assert matplotlib.rcParams["image.cmap"] == plotting.COLORMAP


@pytest.mark.parametrize(("value", "expected"), [(0.0, "white"), (1.0, "black")])
def test_text_color_contrasts_with_the_cell(value, expected):
    # cividis runs from dark blue (0) to light yellow (1)
    assert plotting.text_color(value, 0.0, 1.0) == expected


def test_text_color_refuses_an_empty_range():
    with pytest.raises(ValueError, match="vmax"):
        plotting.text_color(0.5, 1.0, 1.0)


# --- the figure check in plotting.show: no text over text, no legend over data -------------


@pytest.fixture
def figure():
    import matplotlib.pyplot as plt

    figures = []

    def make(*args, **kwargs):
        fig, ax = plt.subplots(*args, **kwargs)
        figures.append(fig)
        return fig, ax

    yield make
    for fig in figures:
        plt.close(fig)


def test_show_refuses_two_annotations_on_top_of_each_other(figure):
    fig, ax = figure(figsize=(4, 3))
    ax.plot([0, 1], [0, 1])
    ax.annotate("the first note", (0.2, 0.7))
    ax.annotate("the second note", (0.25, 0.7))
    with pytest.raises(plotting.FigureOverlapError, match="annotation 'the first note' "
                       r"\(axes 1\) overlaps annotation 'the second note' \(axes 1\)"):
        plotting.show(fig)


def test_show_refuses_a_legend_over_a_line(figure):
    fig, ax = figure(figsize=(4, 3))
    ax.plot([0, 1], [0, 1], label="y = x")
    ax.legend(loc="center")
    with pytest.raises(plotting.FigureOverlapError,
                       match="the legend of axes 1 covers line 'y = x'"):
        plotting.show(fig)


@pytest.mark.parametrize("kind", ["points", "bars", "filled area"])
def test_a_legend_over_points_bars_or_a_filled_area_is_found(figure, kind):
    fig, ax = figure(figsize=(4, 3))
    x = np.linspace(0, 1, 5)
    {"points": lambda: ax.scatter(x, x, label="data"),
     "bars": lambda: ax.bar(x, 1.0, width=0.2, label="data"),
     "filled area": lambda: ax.fill_between(x, 0, 1, label="data")}[kind]()
    ax.legend(loc="center")
    assert any("the legend of axes 1 covers" in p for p in plotting.figure_problems(fig))


def test_a_legend_of_one_axes_over_the_line_of_its_twin_is_found(figure):
    fig, ax = figure(figsize=(4, 3))
    ax.plot([0, 1], [1, 0], label="falls")
    twin = ax.twinx()
    twin.plot([0, 1], [0, 1], label="rises")
    ax.legend(loc="upper right")
    assert plotting.figure_problems(fig) == ["the legend of axes 1 covers line 'rises' of axes 2"]


def test_a_clean_figure_passes(figure):
    fig, ax = figure(figsize=(6, 3.5))
    x = np.linspace(0, 2, 50)
    ax.plot(x, x**2, label="x²")
    ax.axhline(1.0, color="gray", label="reference")  # in axes coordinates: not data
    ax.set(xlabel="x (units)", ylabel="y", title="a clean figure")
    ax.legend(loc="upper left")
    fig.tight_layout()
    assert plotting.figure_problems(fig) == []
    plotting.show(fig)


def test_touching_by_a_pixel_is_not_an_overlap(figure):
    fig, ax = figure(figsize=(4, 3))
    renderer = fig.canvas.get_renderer()
    first = ax.text(150, 150, "left", transform=None)  # pixels
    right_edge = first.get_window_extent(renderer).x1
    ax.text(right_edge - 1, 150, "right", transform=None)
    assert plotting.figure_problems(fig) == []
    ax.text(right_edge - 8, 150, "over", transform=None)
    assert len(plotting.figure_problems(fig)) == 2


def test_layouts_apply_before_measuring(figure):
    def stacked(layout):
        fig, axes = figure(2, 1, figsize=(4, 3), layout=layout)
        for ax in axes:
            ax.plot([0, 1], [0, 1])
            ax.set(title="a title", xlabel="x", ylabel="y")
        return fig

    assert any("overlaps title 'a title' (axes 2 'a title')" in p
               for p in plotting.figure_problems(stacked(None)))
    assert plotting.figure_problems(stacked("constrained")) == []
    fig = stacked(None)
    fig.tight_layout()
    assert plotting.figure_problems(fig) == []


def test_rotated_tick_labels_count_as_turned_boxes(figure):
    fig, ax = figure(figsize=(5, 3))
    ax.set_xticks(range(8), [f"token {i}" for i in range(8)], rotation=45, ha="right")
    fig.tight_layout()
    assert plotting.figure_problems(fig) == []  # their upright bounding boxes overlap
    ax.set_xticks(range(8), [f"a longer token {i}" for i in range(8)], rotation=10, ha="right")
    assert any("x tick label" in p for p in plotting.figure_problems(fig))


def test_a_heatmap_with_numbers_colorbar_figure_text_and_3d_axes_pass(figure):
    from course_utils import diagrams

    fig, ax = figure(figsize=(4, 4))
    image = diagrams.annotated_heatmap(ax, np.arange(16).reshape(4, 4) / 16)
    fig.colorbar(image, label="weight")
    fig.suptitle("a heatmap")
    fig.text(0.01, 0.01, "a note at the bottom")
    assert plotting.figure_problems(fig) == []
    ax.legend(handles=[matplotlib.patches.Patch(label="a legend on the cells")], loc="center")
    assert plotting.figure_problems(fig) == ["the legend of axes 1 covers image"]
    fig3d, _ = figure(figsize=(5, 4), subplot_kw={"projection": "3d"})
    fig3d.axes[0].plot([0, 1], [0, 1], [0, 1])
    fig3d.axes[0].set(xlabel="x", ylabel="y", zlabel="z")
    assert plotting.figure_problems(fig3d) == []


DIAGRAMS = ["pipeline", "tensor_sheets", "head_split", "head_reshape", "decoder_block",
            "encoder_decoder", "training_loop", "encoder_block", "encoder_blocks",
            "matmul_backward"]


@pytest.mark.parametrize("name", DIAGRAMS)
def test_the_course_diagrams_pass_the_figure_check(name):
    import matplotlib.pyplot as plt

    from course_utils import diagrams

    fig = getattr(diagrams, name)()
    try:
        assert plotting.figure_problems(fig) == []
    finally:
        plt.close(fig)


def test_tick_labels_that_run_together_are_found(figure):
    fig, ax = figure(figsize=(5, 3))
    ax.plot([0, 20000], [0, 1])
    ax.set(xlabel="step", ylabel="learning rate")
    fig.tight_layout()
    assert any("x tick label '10000' (axes 1) runs into x tick label '12500' (axes 1)" in p
               for p in plotting.figure_problems(fig))
    ax.set_xticks([0, 10000, 20000])
    assert plotting.figure_problems(fig) == []
