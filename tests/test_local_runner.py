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
from promptprism.scale.runner import LocalRunner, balanced_blocks


class Sequence:
    """A part whose merge is order-sensitive: concatenation."""

    def __init__(self, items):
        self.items = list(items)

    def merge(self, other):
        self.items += other.items
        return self


@pytest.mark.slow  # (about a second or more: out of the quick loop)
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


@pytest.mark.slow
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
    # Not bit-identical: the random features are float32 products from BLAS, whose kernel (AVX2, AVX-512)
    # and thread split change their rounding (measured: 1.1e-10 against a top eigenvalue of 0.10 with two
    # OpenBLAS threads). The float64 running sums keep the spectrum within a few float32 ulps of its scale.
    assert one.config["precision"] == "float32"
    tol = 64 * np.finfo(np.float32).eps * np.abs(one.eigenvalues).max()
    np.testing.assert_allclose(many.eigenvalues, one.eigenvalues, rtol=0, atol=tol)
    assert many.distance == pytest.approx(one.distance, rel=0, abs=tol)
    for a, b in zip(one.modes, many.modes, strict=True):
        assert [s.index for s in a.top_samples] == [s.index for s in b.top_samples]
        assert a.p_value == b.p_value


def test_a_one_thread_blas_limit_means_one_worker():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        assert LocalRunner().workers == 1
    assert LocalRunner(3).workers == 3


def test_balanced_blocks_cover_every_row_once_in_whole_chunks_evenly():
    rng = np.random.default_rng(0)
    for _ in range(300):
        lengths = [int(n) for n in rng.integers(0, 5000, rng.integers(1, 4))]
        chunk, workers = int(rng.integers(1, 1200)), int(rng.integers(1, 5))
        dealt = balanced_blocks(lengths, chunk, workers)
        assert len(dealt) <= workers
        seen = [np.zeros(n, dtype=int) for n in lengths]
        loads = []
        for blocks in dealt:
            loads.append(sum(b - a for _, a, b in blocks))
            for i, a, b in blocks:
                assert a % chunk == 0 and (b % chunk == 0 or b == lengths[i])  # whole chunks of that set
                seen[i][a:b] += 1
            # consecutive chunks of a set are one block
            assert all(not (p[0] == q[0] and p[2] == q[1]) for p, q in zip(blocks, blocks[1:], strict=False))
        assert all(np.all(s == 1) for s in seen)
        if sum(lengths) and len(loads) == workers:  # dealt largest first: loads differ by at most a chunk
            assert max(loads) - min(loads) <= chunk
    # the case it was written for: two sets of 30,000 rows, chunks of 8,192, two workers
    assert [sum(b - a for _, a, b in blocks) for blocks in balanced_blocks([30_000, 30_000], 8192, 2)] == [
        30_000, 30_000]


class Tree:
    """A part whose merge records its bracketing: (left, right)."""

    def __init__(self, shape):
        self.shape = shape

    def merge(self, other):
        self.shape = (self.shape, other.shape)
        return self


def _dask_pairing(shapes):
    """DaskRunner's reduction: neighbours pairwise, level by level, an odd last one carried up."""
    while len(shapes) > 1:
        shapes = [(shapes[i], shapes[i + 1]) for i in range(0, len(shapes) - 1, 2)] + \
            ([shapes[-1]] if len(shapes) % 2 else [])
    return shapes[0]


@pytest.mark.parametrize("threads", [False, True])
def test_pairwise_merge_brackets_the_parts_as_a_cluster_does(threads):
    for n in range(1, 40):
        merged = LocalRunner(workers=3).map_reduce(Tree, [(i,) for i in range(n)], threads=threads,
                                                   pairwise=True)
        assert merged.shape == _dask_pairing(list(range(n))), n
    assert LocalRunner().map_reduce(Tree, [(i,) for i in range(4)]).shape == (((0, 1), 2), 3)  # running sum
