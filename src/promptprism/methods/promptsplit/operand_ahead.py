"""The rff test's label-free operand made beside the fit's last steps, on one BLAS thread throughout.

:meth:`.routes.FeatureRoute.replicates_ahead`: the directions V (the pooled moment's leading eigenvectors,
which no label enters) on a thread of their own while the caller's thread runs the spectra, the scoring and
the test's plan; then P = psi(rows) V of the test's rows in pieces that both threads claim, the caller's
joining once its steps are done (the context's exit). OpenBLAS's products round differently on one and on
two threads, so every product here runs while the BLAS is held at one thread, from before V's first product
to P's last: a run repeats its numbers whatever the timing.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ...array_ops import blas_limits
from . import core

#: rows of kept features projected at a time for the test: a buffer of a few MB, below the size at which
#: numpy asks for huge pages (whose first touch can cost 2 ms per MB on a virtual machine); measured,
#: 2 x 10,000 of 30,000 rows of r = 3000 onto 128 directions: 0.089-0.092 s in steps of 256 to 2,048 rows
PROJECTION_ROWS = 256


def project_pieces(kept: list[np.ndarray], pieces: list[tuple], v: np.ndarray, out: np.ndarray,
                   claim: Callable[[], int]) -> None:
    """Rows of P = psi V written into ``out`` for each piece (set, its rows, first row of ``out``) whose
    index ``claim()`` hands out, until it hands out one past the last: each piece's kept float32 features
    gathered into one reused buffer and multiplied straight into ``out`` (several threads may share one
    ``claim``: ``next`` of one ``itertools.count``, atomic under the interpreter lock)."""
    if not pieces:
        return
    buffer = np.empty((max(rows.size for _, rows, _ in pieces), v.shape[0]), dtype=np.float32)
    while (i := claim()) < len(pieces):
        k, rows, start = pieces[i]
        np.take(kept[k], rows, axis=0, out=buffer[: rows.size], mode="clip")  # (valid rows)
        np.matmul(buffer[: rows.size], v, out=out[start : start + rows.size])


def pieces_of(pairs: tuple, step: int = PROJECTION_ROWS) -> list[tuple]:
    """The (set, rows, first row of P) pieces of at most ``step`` rows of the (set, rows) ``pairs``."""
    pieces, start = [], 0
    for k, rows in pairs:
        for a, b in core.chunks(rows.size, step):
            pieces.append((k, rows[a:b], start))
            start += b - a
    return pieces


class OperandAhead:
    """V and P = psi(rows) V for the test's ``rows`` of each set, from the kept float32 ``features``;
    ``directions``: the function that computes V (float32, r x rank). :meth:`start` returns the context."""

    def __init__(self, rows: list[np.ndarray], features: list[np.ndarray], directions: Callable[[], Any]):
        self.rows, self.features, self._directions = rows, features, directions
        self.v: Future = Future()  #: V, once computed (or its exception)
        self.projected: np.ndarray | None = None  #: P, complete once the context has exited
        self._pieces = pieces_of(tuple(enumerate(rows)))
        self._counter, self._stopped = itertools.count(), False
        self._done: Future | None = None

    def start(self) -> contextlib.ExitStack:
        """The BLAS held at one thread, V and then P's pieces started on a thread of their own; on exit the
        caller's thread claims the pieces left, waits for the thread, then gives the BLAS its threads back."""
        stack = contextlib.ExitStack()
        stack.enter_context(blas_limits(1))  # (before V's first product)
        pool = ThreadPoolExecutor(1, thread_name_prefix="promptprism-test-directions")
        self._done = pool.submit(self._run)
        pool.shutdown(wait=False)
        stack.push(self._join)  # (exits first: every product made before the BLAS has its threads again)
        return stack

    def _run(self) -> None:
        try:
            v = np.asarray(self._directions(), dtype=np.float32)
        except BaseException as exc:
            self.v.set_exception(exc)
            raise
        self.projected = np.empty((self._pieces[-1][2] + self._pieces[-1][1].size if self._pieces else 0,
                                   v.shape[1]), dtype=np.float32)
        self.v.set_result(v)
        project_pieces(self.features, self._pieces, v, self.projected, self._claim)

    def _claim(self) -> int:
        """The next piece's index (one past the last once stopped)."""
        return len(self._pieces) if self._stopped else next(self._counter)

    def _join(self, exc_type: Any, *_: Any) -> bool:
        if exc_type is None and self.v.exception() is None:  # (the caller's steps done: it helps with P)
            project_pieces(self.features, self._pieces, self.v.result(), self.projected, self._claim)
        else:  # (the fit failed: no more pieces)
            self._stopped = True
        self.wait()
        return False

    def wait(self) -> None:
        """Until the thread is done (its exception, if any, is raised where V or P is taken)."""
        if self._done is not None:
            self._done.exception()

    def operand(self, rows: tuple | list) -> tuple[Any, np.ndarray | None]:
        """(V, P when ``rows`` are the rows it was made for, else None); raises what computing V raised."""
        v = self.v.result()
        same = len(rows) == len(self.rows) and all(
            np.array_equal(a, b) for a, b in zip(rows, self.rows, strict=True))
        self.wait()
        return v, self.projected if same and self._done.exception() is None else None
