"""The in-process runner: tasks on threads, parts merged in task order, a bounded number in flight."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from promptprism import PromptSplit
from promptprism.datasets import gaussian_mixture
from promptprism.errors import OptionError
from promptprism.scale import runner as runner_module
from promptprism.scale.runner import LocalRunner


class Sequence:
    """A part whose merge is order-sensitive: concatenation."""

    def __init__(self, items):
        self.items = list(items)

    def merge(self, other):
        self.items += other.items
        return self


def test_threads_merge_in_task_order_whatever_finishes_first():
    def task(i):
        time.sleep(0.02 * ((7 * i) % 5))  # later tasks often finish first
        return Sequence([i])

    tasks = [(i,) for i in range(12)]
    for workers in (1, 2, 3):
        assert LocalRunner(workers).map_reduce(task, tasks, threads=True).items == list(range(12))


def test_at_most_workers_tasks_in_flight_and_errors_propagate():
    lock, running, peak = threading.Lock(), [0], [0]

    def task(i):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        if i == 5:
            raise ValueError("task 5 failed")
        return Sequence([i])

    with pytest.raises(ValueError, match="task 5"):
        LocalRunner(2).map_reduce(task, [(i,) for i in range(9)], threads=True)
    assert peak[0] == 2
    peak[0] = 0  # a call that does not say threads runs one task at a time
    assert LocalRunner(2).map_reduce(task, [(i,) for i in range(5)]).items == list(range(5))
    assert peak[0] == 1
    with pytest.raises(OptionError):
        LocalRunner(0)


def test_promptsplit_on_threads_equals_one_thread():
    test, ref, _ = gaussian_mixture(2, per_component=200, seed=4)
    est = PromptSplit(method="rff", n_features=600, n_modes=3, chunk_size=64, permutations=20, seed=1)
    results = []
    for workers in (1, 3):
        token = runner_module._RUNNER.set(LocalRunner(workers))
        try:
            results.append(est.fit(test, ref))
        finally:
            runner_module._RUNNER.reset(token)
    one, many = results
    np.testing.assert_allclose(many.eigenvalues, one.eigenvalues, rtol=0, atol=1e-13)
    assert many.distance == pytest.approx(one.distance, rel=1e-12)
    for a, b in zip(one.modes, many.modes, strict=True):
        assert [s.index for s in a.top_samples] == [s.index for s in b.top_samples]
        assert a.p_value == b.p_value


def test_a_one_thread_blas_limit_means_one_worker():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        assert LocalRunner().workers == 1
    assert LocalRunner(3).workers == 3
