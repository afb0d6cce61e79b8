"""course_utils.plotting: the palette, the white background, readable heatmap labels."""

import matplotlib
import matplotlib.colors as mcolors
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
