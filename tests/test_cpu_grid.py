"""course_utils.cpu_grid: every cell runs once, on at most torch.get_num_threads() workers, the
thread count is restored, and a worker's error reaches the caller."""

import threading

import pytest
import torch

from course_utils import cpu_grid


@pytest.fixture
def two_threads():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


def test_every_cell_runs_once_on_at_most_the_thread_count(two_threads):
    seen, workers, lock = [], set(), threading.Lock()

    def program(cell, worker):
        with lock:
            seen.append(cell)
            workers.add(worker)
        assert torch.get_num_threads() == 1  # each worker runs its calls on one thread

    cells = [(i,) for i in range(20)]
    cpu_grid.run_grid(program, cells)
    assert sorted(seen) == cells and workers <= {0, 1}
    assert torch.get_num_threads() == 2  # restored


def test_a_workers_error_reaches_the_caller(two_threads):
    def program(cell, worker):
        if cell == (3,):
            raise ArithmeticError("cell 3")

    with pytest.raises(ArithmeticError, match="cell 3"):
        cpu_grid.run_grid(program, [(i,) for i in range(8)])
    assert torch.get_num_threads() == 2


def test_batch_slices_cover_the_batch_in_at_most_thread_count_parts(two_threads):
    assert cpu_grid.batch_slices(5) == [slice(0, 2), slice(2, 5)]
    assert cpu_grid.batch_slices(1) == [slice(0, 1)]
