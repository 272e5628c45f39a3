"""Large numpy tasks of the reference metrics side by side on threads (the usable cores, one BLAS thread
each): the products and numpy's element-wise functions release the GIL, so the element-wise work between
the products runs in parallel too, and one BLAS thread per product gives the same numbers whatever the
number of workers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

#: most threads the tasks run on (each holds its own blocks)
MAX_WORKERS = 4


def thread_workers() -> int:
    """How many threads :func:`map_threads` runs large tasks on: the usable cores, at most
    :data:`MAX_WORKERS`."""
    from ...scale.runner import usable_cores

    return max(1, min(usable_cores(), MAX_WORKERS))


def map_threads(fn: Callable, items: Sequence, *, parallel: bool = True) -> list[Any]:
    """``[fn(item) for item in items]``, in order, with a one-thread BLAS; on up to :data:`MAX_WORKERS`
    threads (the usable cores, counted before the BLAS is limited) when ``parallel`` (small tasks: in turn,
    where thread hand-offs would cost more than they gain)."""
    from ...array_ops import blas_limits

    workers = min(thread_workers(), len(items)) if parallel else 1
    with blas_limits(1):
        if workers <= 1:
            return [fn(item) for item in items]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(fn, items))
