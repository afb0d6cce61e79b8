"""Measuring the machine and a call: the one timer, memory bandwidth, matrix-multiply throughput
and the caches (the peak memory of an attention call is :mod:`course_utils.attention_memory`).

Every timing in the course (notebooks, benchmark, tests) goes through :func:`best_time`: the
fastest of a few runs after a warm-up, the run least disturbed by other work on the machine.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable

from course_utils.validation import check_bool, check_int

CACHE_DIR = "/sys/devices/system/cpu/cpu0/cache"


def best_time(call: Callable[[], object], repeats: int = 3, *, cuda: bool = False) -> float:
    """The shortest wall time in seconds of ``repeats`` calls of ``call()``, after one warm-up.

    ``cuda=True`` waits for the GPU (``torch.cuda.synchronize()``) before the clock starts and
    before it stops: a CUDA call returns as soon as its kernels are queued, not when they end.
    """
    return best_times({"call": call}, repeats, cuda=cuda)["call"]


def best_times(calls: dict[str, Callable[[], object]], repeats: int = 3, *,
               cuda: bool = False) -> dict[str, float]:
    """:func:`best_time` of several calls side by side: one warm-up each, then ``repeats``
    rounds that time every call once, so that a busy moment of the machine slows all of them
    alike and their ratios stay fair."""
    if not isinstance(calls, dict) or not calls:
        raise TypeError(f"calls must be a non-empty dict of name: function, got "
                        f"{type(calls).__name__}")
    for name, call in calls.items():
        if not callable(call):
            raise TypeError(f"calls[{name!r}] must be callable, got {type(call).__name__}")
    check_int(repeats, "repeats")
    sync: Callable[[], None] = _cuda_synchronize if check_bool(cuda, "cuda") else _no_wait
    for call in calls.values():
        call()
    best = dict.fromkeys(calls, math.inf)
    for _ in range(repeats):
        for name, call in calls.items():
            sync()
            start = time.perf_counter()
            call()
            sync()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def _no_wait() -> None:
    return None


def _cuda_synchronize() -> None:
    import torch

    torch.cuda.synchronize()


def cache_sizes() -> dict[str, int]:
    """This CPU's data caches in bytes, ``{"L1": …, "L2": …, "L3": …}`` as one core sees them
    (L3 is usually shared by all cores), from Linux's ``/sys/devices/system/cpu``; an empty dict
    where that is not readable (macOS, Windows, some containers)."""
    sizes: dict[str, int] = {}
    try:
        for index in sorted(os.listdir(CACHE_DIR)):
            if not index.startswith("index"):
                continue
            fields = {}
            for field in ("type", "level", "size"):
                with open(os.path.join(CACHE_DIR, index, field)) as f:
                    fields[field] = f.read().strip()
            size = fields["size"]
            if fields["type"] in ("Data", "Unified") and size:
                unit = {"K": 2**10, "M": 2**20, "G": 2**30}.get(size[-1], 1)
                sizes[f"L{fields['level']}"] = int(size.rstrip("KMG")) * unit
    except (OSError, ValueError):
        return {}
    return sizes


def copy_bandwidth(nbytes: int, repeats: int = 3) -> float:
    """Bytes per second of ``dst.copy_(src)`` for float32 tensors of ``nbytes``: each copy reads
    and writes ``nbytes`` (``2·nbytes`` moved). Small arrays stay in cache between copies, so the
    rate climbs the memory hierarchy as ``nbytes`` shrinks. Each timing repeats the copy until
    about 64 MiB have moved; the best of ``repeats`` timings."""
    import torch

    nbytes = check_int(nbytes, "nbytes", minimum=4)
    src = torch.ones(nbytes // 4)
    dst = torch.empty_like(src)
    copies = max(1, 2**26 // nbytes)
    return 2 * src.numel() * 4 * copies / best_time(
        lambda: [dst.copy_(src) for _ in range(copies)], repeats)


def matmul_flop_rate(n: int = 1024, repeats: int = 3) -> float:
    """Measured FLOP/s of an ``n × n`` float32 matrix product (``2·n³`` FLOPs), best of
    ``repeats``: this machine's matrix-multiply throughput at the current thread count.
    (:func:`course_utils.linalg.matmul_flops` *counts* the FLOPs of a product.)"""
    import torch

    n = check_int(n, "n")
    a, b = torch.randn(n, n), torch.randn(n, n)
    return 2 * n**3 / best_time(lambda: a @ b, repeats)
