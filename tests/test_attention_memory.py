"""course_utils.attention_memory: the peak memory of attention calls, each in a fresh process."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from course_utils import attention_memory, costs, tiled


def test_peak_extra_memory_rejects_unknown_methods():
    with pytest.raises(ValueError, match="method must be"):
        attention_memory.peak_extra_memory("flash", 1024)
    with pytest.raises(ValueError, match="n must be at least 1"):
        attention_memory.peak_extra_memory("tiled", 0)


def test_naive_attention_needs_the_n_by_n_matrices_and_tiled_does_not():
    n = 1536  # naive: two 1536² float32 matrices = 18 MiB; tiled: one 1024 × 256 tile, 1 MiB
    with ThreadPoolExecutor(2) as pool:  # two fresh processes side by side
        naive, tiled_bytes = pool.map(
            lambda m: attention_memory.peak_extra_memory(m, n, threads=1), ["naive", "tiled"]
        )
    assert 0.95 <= naive / costs.naive_attention_bytes(n, n) <= 1.2
    assert tiled_bytes < naive / 4


def test_forward_and_backward_need_the_gradients_and_two_small_tiles():
    n, d = 4096, 64
    tensors = 4 * n * d * 4  # out, dq, dk, dv in float32: 4 MiB
    tiles = 2 * tiled.BACKWARD_BLOCK_Q * tiled.BACKWARD_BLOCK_K * 4  # P and half of dP < 512 KiB
    measured = attention_memory.peak_extra_memory("tiled", n, d, threads=1, backward=True)
    assert 0.95 * tensors <= measured <= 1.15 * (tensors + tiles)


def test_peak_extra_memory_falls_back_where_the_peak_cannot_be_reset(monkeypatch, tmp_path):
    # as on macOS or in a sandbox without /proc/self/clear_refs: ru_maxrss, one process per n
    monkeypatch.setattr(attention_memory, "CLEAR_REFS", str(tmp_path / "no" / "clear_refs"))
    with pytest.warns(RuntimeWarning, match="clear_refs is not writable"):
        naive, small = attention_memory.peak_extra_memory("naive", [1536, 64], threads=1)
    assert 0.9 <= naive / costs.naive_attention_bytes(1536, 1536) <= 1.3
    assert small < naive / 4
