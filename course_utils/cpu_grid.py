"""A GPU's grid of programs, run on the CPU's cores.

A GPU starts one *program* per cell of its grid and runs them independently. :func:`run_grid`
does the same with one worker thread per core, so that the tiled attention of
:mod:`course_utils.tiled` uses every core without synchronising between tiles.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait

import torch

from course_utils.validation import check_int


def run_grid(program: Callable[[tuple, int], None], cells: list[tuple]) -> None:
    """Run ``program(cell, worker)`` for every cell, the way a GPU runs its grid of programs.

    A GPU starts one *program* per cell of its grid (a query block of one batch·head) and runs
    them independently on its streaming multiprocessors. Here ``torch.get_num_threads()`` worker
    threads, one per core, take the cells from a shared queue in the order given (each takes the
    next one as soon as it is free, so a worker slowed down by another process simply takes
    fewer) and run each one alone: its PyTorch calls run on one thread (set per thread, restored
    afterwards) and release the GIL, so the workers do not wait for each other until the end.
    One worker runs in the calling thread, the others in a pool kept between calls.
    """
    if not callable(program):
        raise TypeError(f"program must be callable, got {type(program).__name__}")
    if not isinstance(cells, list):
        raise TypeError(f"cells must be a list, got {type(cells).__name__}")
    threads = torch.get_num_threads()
    workers = min(threads, len(cells))
    queue = iter(cells)
    lock = threading.Lock()

    def work(worker: int) -> None:
        if workers > 1:
            torch.set_num_threads(1)  # per thread: the other workers use the other cores
        with torch.no_grad():  # grad mode is per thread too
            while True:
                with lock:
                    cell = next(queue, None)
                if cell is None:
                    return
                program(cell, worker)

    if workers == 1:
        work(0)
        return
    started = [_pool(workers - 1).submit(work, worker) for worker in range(1, workers)]
    try:
        work(0)
    finally:
        wait(started)  # every worker is done before the thread count is restored
        torch.set_num_threads(threads)
    for future in started:
        future.result()  # raises a worker's error, if any


_POOL: list[tuple[int, ThreadPoolExecutor]] = []


def _pool(size: int) -> ThreadPoolExecutor:
    """The worker threads, started once and kept (like OpenMP's thread team), ``size`` or more."""
    if not _POOL or _POOL[0][0] < size:  # a bigger one replaces it (the old threads then exit)
        _POOL[:] = [(size, ThreadPoolExecutor(size, thread_name_prefix="tiled-attention"))]
    return _POOL[0][1]


def batch_slices(batch: int) -> list[slice]:
    """The batch·head axis in ``min(batch, threads)`` slices, so that a grid of one query block
    still gives every worker a cell."""
    batch = check_int(batch, "batch")
    parts = min(batch, torch.get_num_threads())
    bounds = [batch * p // parts for p in range(parts + 1)]
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
