"""The benchmarks run end to end: attention.py at its --quick smoke sizes, model_paths.py for one
round, each printing complete tables."""

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "attention.py"


def run(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", *args],
                          capture_output=True, text=True, timeout=300, check=True)
    assert done.stderr == ""
    return done.stdout.splitlines()


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"\d+(?:\.\d+)?", text)]


def tables(lines: list[str]) -> dict[str, dict[str, list[list[float]]]]:
    """{title: {N: [numbers of each column group]}} for every table printed."""
    found: dict[str, dict[str, list[list[float]]]] = {}
    title = ""
    for line in lines:
        if line.startswith("CPU "):
            title = line.split(",")[0] + " @" + re.search(r"(\d+) threads?", line).group(1)
            found[title] = {}
        elif re.match(r"\s*\d+ \|", line):
            first, *groups = line.split("|")
            found[title][first.strip()] = [numbers(group) for group in groups]
    return found


def test_forward_and_backward_tables_at_one_thread_and_the_default():
    found = tables(run())
    settings = sorted({1, int(subprocess.check_output(
        [sys.executable, "-c", "import torch; print(torch.get_num_threads())"]))})
    assert sorted(found) == sorted(f"{kind} @{t}" for t in settings
                                   for kind in ("CPU forward", "CPU forward + backward"))
    for title, rows in found.items():
        assert sorted(rows) == ["1024", "512"]
        for seconds, mib, ratios, rates in rows.values():
            if title.startswith("CPU forward @"):  # naive, fused, tiled
                assert len(seconds) == len(mib) == 3 and len(ratios) == 2
            else:  # fused, tiled; tiled/fused time and memory
                assert len(seconds) == len(mib) == 2 and len(ratios) == 2
            assert all(x > 0 for x in seconds + ratios)
            assert len(rates) == 4  # GFLOP/s of fused and tiled, and their share of matmul's
    _, mib, _, _ = found["CPU forward @1"]["1024"]
    assert mib[0] > mib[2]  # naive: two 4 MiB N×N matrices (8.5 MiB measured); tiled: 2.7 MiB


def test_tile_table_reports_ratios_to_the_default_tiles():
    rows = [line for line in run("--tiles", "--threads", "1") if re.match(r"\s*\d+ × \d+ \|", line)]
    assert len(rows) >= 4
    times = {line.split("|")[0].strip(): numbers(line.split("|", 1)[1]) for line in rows}
    for values in times.values():  # scores MiB, forward s, ratio, backward s, ratio
        assert len(values) == 5 and all(x > 0 for x in values)
    assert times["1024 × 256"][2] == 1.0 and times["256 × 256"][4] == 1.0


def test_the_model_paths_benchmark_prints_its_table():
    script = SCRIPT.parent / "model_paths.py"
    done = subprocess.run([sys.executable, str(script), "--rounds", "1", "--repeats", "1"],
                          capture_output=True, text=True, timeout=300, check=True)
    header, row = done.stdout.splitlines()
    assert "tokens/s" in header and done.stderr == ""
    tokens_per_second, step_ms = numbers(row)
    assert tokens_per_second > 0 and step_ms > 0
