"""course_utils.measure: the timer, the machine, and the peak memory of attention calls."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from course_utils import costs, measure, tiled


def test_cache_sizes_are_read_from_linux(monkeypatch, tmp_path):
    entries = {"index0": ("Data", "1", "48K"), "index1": ("Instruction", "1", "32K"),
               "index2": ("Unified", "2", "2048K"), "index3": ("Unified", "3", "36M")}
    for name, (kind, level, size) in entries.items():
        (tmp_path / name).mkdir()
        for field, value in (("type", kind), ("level", level), ("size", size)):
            (tmp_path / name / field).write_text(value + "\n")
    (tmp_path / "uevent").write_text("")
    monkeypatch.setattr(measure, "CACHE_DIR", str(tmp_path))
    assert measure.cache_sizes() == {"L1": 48 * 2**10, "L2": 2 * 2**20, "L3": 36 * 2**20}
    monkeypatch.setattr(measure, "CACHE_DIR", str(tmp_path / "missing"))
    assert measure.cache_sizes() == {}


def test_bandwidth_and_matmul_throughput_are_measured():
    assert 1e8 < measure.copy_bandwidth(2**20, repeats=1) < 1e13  # 0.1 GB/s … 10 TB/s
    assert 1e7 < measure.matmul_flop_rate(256, repeats=1) < 1e15
    with pytest.raises(ValueError, match="nbytes must be at least 4"):
        measure.copy_bandwidth(2)
    with pytest.raises(ValueError, match="repeats must be at least 1"):
        measure.matmul_flop_rate(8, repeats=0)


def test_peak_extra_memory_rejects_unknown_methods():
    with pytest.raises(ValueError, match="method must be"):
        measure.peak_extra_memory("flash", 1024)
    with pytest.raises(ValueError, match="n must be at least 1"):
        measure.peak_extra_memory("tiled", 0)


def test_naive_attention_needs_the_n_by_n_matrices_and_tiled_does_not():
    n = 1536  # naive: two 1536² float32 matrices = 18 MiB; tiled: one 1024 × 256 tile, 1 MiB
    with ThreadPoolExecutor(2) as pool:  # two fresh processes side by side
        naive, tiled_bytes = pool.map(
            lambda m: measure.peak_extra_memory(m, n, threads=1), ["naive", "tiled"]
        )
    assert 0.95 <= naive / costs.naive_attention_bytes(n, n) <= 1.2
    assert tiled_bytes < naive / 4


def test_forward_and_backward_need_the_gradients_and_two_small_tiles():
    n, d = 4096, 64
    tensors = 4 * n * d * 4  # out, dq, dk, dv in float32: 4 MiB
    tiles = 2 * tiled.BACKWARD_BLOCK_Q * tiled.BACKWARD_BLOCK_K * 4  # P and half of dP < 512 KiB
    measured = measure.peak_extra_memory("tiled", n, d, threads=1, backward=True)
    assert 0.95 * tensors <= measured <= 1.15 * (tensors + tiles)


def test_peak_extra_memory_falls_back_where_the_peak_cannot_be_reset(monkeypatch, tmp_path):
    # as on macOS or in a sandbox without /proc/self/clear_refs: ru_maxrss, one process per n
    monkeypatch.setattr(measure, "CLEAR_REFS", str(tmp_path / "no" / "clear_refs"))
    with pytest.warns(RuntimeWarning, match="clear_refs is not writable"):
        naive, small = measure.peak_extra_memory("naive", [1536, 64], threads=1)
    assert 0.9 <= naive / costs.naive_attention_bytes(1536, 1536) <= 1.3
    assert small < naive / 4


def test_best_time_is_the_fastest_run_after_a_warm_up():
    calls = []
    seconds = measure.best_time(lambda: calls.append(1), repeats=4)
    assert len(calls) == 5 and 0 <= seconds < 0.1
    with pytest.raises(TypeError, match="must be callable"):
        measure.best_time(3)
    with pytest.raises(TypeError, match="calls must be a non-empty dict"):
        measure.best_times([])
    with pytest.raises(TypeError, match="cuda must be a bool"):
        measure.best_time(lambda: None, cuda="yes")
