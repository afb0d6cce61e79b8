"""benchmarks/attention.py runs end to end (its --quick smoke sizes) and prints complete tables."""

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "attention.py"


def run(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--threads", "1", *args],
                          capture_output=True, text=True, timeout=300, check=True)
    assert done.stderr == ""
    return done.stdout.splitlines()


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"\d+(?:\.\d+)?", text)]


def test_cpu_table_times_and_measures_every_method():
    rows = {line.split("|")[0].strip(): line.split("|")[1:] for line in run() if "|" in line}
    for n in ("512", "1024"):
        seconds, mib, ratios = (numbers(column) for column in rows[n])
        assert len(seconds) == len(mib) == 3 and len(ratios) == 2  # naive, fused, tiled
        assert all(x > 0 for x in seconds + ratios)
    _, mib, _ = (numbers(column) for column in rows["1024"])
    assert mib[0] > mib[2]  # naive: two 4 MiB N×N matrices (8.5 MiB measured); tiled: 3.7 MiB


def test_tile_table_reports_ratios_to_the_default_tiles():
    rows = [line for line in run("--tiles") if re.match(r"\s*\d+ × \d+ \|", line)]
    assert len(rows) >= 4
    times = {line.split("|")[0].strip(): numbers(line.split("|", 1)[1]) for line in rows}
    for values in times.values():  # forward s, ratio, backward s, ratio
        assert len(values) == 4 and all(x > 0 for x in values)
    assert times["1024 × 512"][1::2] == [1.0, 1.0]
