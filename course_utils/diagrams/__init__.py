"""Drawn diagrams: pictures of ideas rather than plots of data.

:mod:`~course_utils.diagrams.maths`: the course's pipeline (which notebook explains which stage of
a Transformer), a (B, N, d) tensor drawn as a stack of sheets, heatmaps whose numbers stay
readable on every cell, the shapes of a matrix product's backward pass, a computational graph,
the dot products of every pair of positional encodings.
:mod:`~course_utils.diagrams.architecture`: notebooks 11 to 14's split and merge of heads, the
encoder layer post-LN and pre-LN, the axes LayerNorm and BatchNorm average over, the decoder
block, a cross-attention map, the encoder–decoder and the training loop.
:mod:`~course_utils.diagrams.generation`: notebook 16's speculative round and its gain against k,
and a paged KV cache's block tables beside its pool.
:mod:`~course_utils.diagrams.geometry`: notebooks 02 and 03's plane: a matrix as a map, the column
view of A x, and a covariance's eigenvectors drawn on its point cloud.
:mod:`~course_utils.diagrams.positions`: notebook 15's RoPE: one pair turned in its plane, and
the score against the offset for several query positions, beside an added position vector.
Every function draws with matplotlib on an opaque white background in the course's
colour-blind-safe palette (:mod:`course_utils.plotting`) and returns the ``Figure`` (or the
artist) so tests can inspect what was drawn; the notebook ends the cell with
``plotting.show()``.
"""

from course_utils.diagrams.architecture import (
    cross_attention_map,
    decoder_block,
    encoder_block,
    encoder_blocks,
    encoder_decoder,
    head_reshape,
    head_split,
    norm_axes,
    training_loop,
)
from course_utils.diagrams.generation import paged_cache, speculative_gain, speculative_round
from course_utils.diagrams.geometry import column_view, linear_map, pca_directions
from course_utils.diagrams.maths import (
    PIPELINE,
    Stage,
    annotated_heatmap,
    draw_graph,
    matmul_backward,
    pipeline,
    position_dot_products,
    tensor_sheets,
)
from course_utils.diagrams.positions import rope_rotation, rope_scores

__all__ = [
    "PIPELINE",
    "Stage",
    "annotated_heatmap",
    "column_view",
    "cross_attention_map",
    "decoder_block",
    "draw_graph",
    "encoder_block",
    "encoder_blocks",
    "encoder_decoder",
    "head_reshape",
    "head_split",
    "linear_map",
    "matmul_backward",
    "norm_axes",
    "paged_cache",
    "pca_directions",
    "pipeline",
    "position_dot_products",
    "rope_rotation",
    "rope_scores",
    "speculative_gain",
    "speculative_round",
    "tensor_sheets",
    "training_loop",
]
