"""Drawn diagrams: pictures of ideas rather than plots of data.

:mod:`~course_utils.diagrams.maths`: the course's pipeline (which notebook explains which stage of
a Transformer), a (B, N, d) tensor drawn as a stack of sheets, heatmaps whose numbers stay
readable on every cell, the shapes of a matrix product's backward pass, a computational graph.
:mod:`~course_utils.diagrams.architecture`: notebooks 11 to 14's split and merge of heads, the
encoder layer post-LN and pre-LN, the decoder block, the encoder–decoder and the training loop.
Every function draws with matplotlib on an opaque white background in the course's
colour-blind-safe palette (:mod:`course_utils.plotting`) and returns the ``Figure`` (or the
artist) so tests can inspect what was drawn; the notebook ends the cell with
``plotting.show()``.
"""

from course_utils.diagrams.architecture import (
    decoder_block,
    encoder_block,
    encoder_blocks,
    encoder_decoder,
    head_reshape,
    head_split,
    training_loop,
)
from course_utils.diagrams.maths import (
    PIPELINE,
    Stage,
    annotated_heatmap,
    draw_graph,
    matmul_backward,
    pipeline,
    tensor_sheets,
)

__all__ = [
    "PIPELINE",
    "Stage",
    "annotated_heatmap",
    "decoder_block",
    "draw_graph",
    "encoder_block",
    "encoder_blocks",
    "encoder_decoder",
    "head_reshape",
    "head_split",
    "matmul_backward",
    "pipeline",
    "tensor_sheets",
    "training_loop",
]
