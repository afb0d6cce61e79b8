"""course_utils.costs: the counts, against hand-computed values and FlashAttention's Theorem 2."""

import math

import pytest

from course_utils import costs


def test_io_of_standard_and_tiled_attention():
    # FlashAttention's Theorem 2: Θ(N·d + N²) against Θ(N²·d²/M)
    assert costs.standard_attention_io(1024, 64) == 4 * 1024 * 64 + 4 * 1024**2
    m = 48 * 1024  # 192 KB of float32: one A100 SM's SRAM; query blocks of 192 rows
    n, d = 16_384, 64
    passes = math.ceil(n / (m // (4 * d)))
    assert costs.tiled_attention_io(n, d, m) == 2 * n * d + passes * 2 * n * d
    ratio = costs.tiled_attention_io(n, d, m) / (8 * n**2 * d**2 / m)
    assert 1.0 <= ratio <= 1.02  # ≈ 8·N²·d²/M
    assert costs.tiled_attention_io(n, d, 4 * m) < costs.tiled_attention_io(n, d, m) / 3.5
    with pytest.raises(ValueError, match="m must be at least 256"):
        costs.tiled_attention_io(n, 64, 100)


def test_flops_and_bytes():
    assert costs.attention_flops(1024, 1024, 64) == 4 * 1024**2 * 64
    assert costs.attention_flops(3, 5, 8, d_v=2) == 2 * 3 * 5 * (8 + 2)
    assert costs.naive_attention_bytes(16_384, 16_384) == 2 * 2**30
    with pytest.raises(ValueError, match="lq must be at least 1"):
        costs.attention_flops(0, 4, 8)
    with pytest.raises(TypeError, match="itemsize must be an int"):
        costs.naive_attention_bytes(4, 4, 4.0)
