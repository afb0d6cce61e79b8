"""course_utils.measure: the timer and the machine."""


import pytest

from course_utils import measure


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
