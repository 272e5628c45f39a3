"""Running the permutation test's labellings: in blocks with looks for curtailed stopping
(:func:`sequential_spectra`), and on a pool of threads for the operands solved densely, whole blocks on
every BLAS thread for those solved by Lanczos."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ...array_ops import blas_limits, blas_thread_count
from ...stats.subspace_spectra import lanczos_subspace
from . import significance as sig


def pool_workers(operands: Sequence[tuple[str, Any]]) -> int:
    """Threads :func:`sequential_spectra` may pool the labellings of these operands on: the BLAS's own
    thread count when every operand is a numpy subspace factor and one at least is solved densely (each
    piece of labellings then runs on one BLAS thread), else 1 (a Gram matrix's products and a Lanczos
    factor's use the BLAS threads; a device has its own parallelism)."""
    if all(kind == "subspace" and isinstance(array, np.ndarray) for kind, array in operands) and any(
            piece_columns(operand) for operand in operands):
        return blas_thread_count()
    return 1


def piece_columns(operand: tuple[str, Any]) -> int | None:
    """Labellings per pooled piece for this operand (:func:`sequential_spectra`): :data:`PIECE_COLUMNS`
    for a factor solved densely; None for one solved by Lanczos (its whole block at once, on every BLAS
    thread: each step streams the factor once per call, so the wider the call the nearer the BLAS peak;
    5,000 x 256 float32, 201 labellings on 2 cores: 0.24 s in pieces of 24 on two threads of one BLAS
    thread each, 0.13 s in one call on both)."""
    wide = operand[0] == "subspace" and lanczos_subspace(operand[1])
    return None if wide else PIECE_COLUMNS


def sequential_spectra(solvers: Sequence[Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]],
                       permutations: int, *, alpha: float, sequential: bool = True, look: int = sig.LOOK,
                       workers: int = 1, pieces: Sequence[int | None] | None = None
                       ) -> tuple[list[tuple[np.ndarray, np.ndarray]], int, list[float]]:
    """Each solver's spectra (a function: labelling columns -> (positive, |negative|) rows) on the observed
    labelling (column 0) and the relabellings 1..K, drawn in blocks (the first look after ``look``, the
    next ones where :func:`.significance.next_look` puts them, and K): at each look, stop once
    :func:`.significance.global_pvalue` has :func:`.significance.curtail_at` exceedances
    (``sequential=False``: all K in one block).

    ``workers`` > 1: every solver's block is cut into pieces (of ``pieces[i]`` columns for solver i, default
    :data:`PIECE_COLUMNS`; :func:`piece_columns`), all run on one pool of that many threads under
    one BLAS thread each (numpy solvers: a labelling's spectrum does not depend on the thread, nor on the
    other columns of its piece); the kernels' unequal costs then share the cores evenly (the fitted kernel
    and its family on 2 cores, 101 labellings: 0.34 s in turn, each block split in two; 0.24-0.27 s pooled).
    A solver whose ``pieces[i]`` is None runs its whole block after the pool's, on every BLAS thread.

    Returns (spectra per solver over the columns drawn, relabellings drawn L, seconds per solver, summed
    over its pieces). The spectra of a labelling do not depend on the others, so the result is the
    L-permutation test's."""
    h = sig.curtail_at(permutations, alpha)
    parts: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in solvers]
    seconds = [0.0] * len(solvers)
    drawn, exceed, spectra = -1, 0, []  # (relabellings drawn: -1 before the observed column)
    with _piece_runner(workers, pieces or [PIECE_COLUMNS] * len(solvers)) as run:
        while drawn < permutations:
            target = (sig.next_look(max(drawn, 0), exceed, permutations, h, look) if sequential
                      else permutations)
            for i, (part, secs) in enumerate(run(solvers, np.arange(drawn + 1, target + 1))):
                parts[i].append(part)
                seconds[i] += secs
            drawn = target
            spectra = [(np.concatenate([p for p, _ in part]), np.concatenate([q for _, q in part]))
                       for part in parts]
            exceed = round(sig.global_pvalue(spectra) * (drawn + 1)) - 1
            if sequential and drawn < permutations and exceed >= h:
                break
    return spectra, max(drawn, 0), seconds


#: columns of a block one pooled piece holds (:func:`sequential_spectra`): small enough to balance the
#: threads, large enough that a piece's fixed costs stay small beside its labellings' products
PIECE_COLUMNS = 6


@contextlib.contextmanager
def _piece_runner(workers: int, piece: Sequence[int | None]) -> Iterator[Callable]:
    """A function (solvers, cols) -> [(that solver's spectra on cols, seconds)] for each solver: in turn
    (``workers`` <= 1), or solver i's in pieces of ``piece[i]`` columns on a pool of ``workers`` threads
    (one BLAS thread each), then the solvers whose ``piece[i]`` is None whole, on every BLAS thread."""
    import time

    def timed(solve: Callable, cols: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], float]:
        t0 = time.perf_counter()
        out = solve(cols)
        return out, time.perf_counter() - t0

    if workers <= 1:
        yield lambda solvers, cols: [timed(solve, cols) for solve in solvers]
        return
    from concurrent.futures import ThreadPoolExecutor

    def run(solvers: Sequence[Callable], cols: np.ndarray) -> list:
        pooled = [i for i, size in enumerate(piece) if size]
        out: list = [None] * len(solvers)
        with blas_limits(1):
            futures = {i: [pool.submit(timed, solvers[i], part)
                           for part in np.array_split(cols, max(1, -(-cols.size // piece[i])))]
                       for i in pooled}
            for i, row in futures.items():
                done = [f.result() for f in row]
                out[i] = ((np.concatenate([o[0] for o, _ in done]), np.concatenate([o[1] for o, _ in done])),
                          sum(secs for _, secs in done))
        for i in (i for i, size in enumerate(piece) if not size):  # (whole blocks, every BLAS thread)
            out[i] = timed(solvers[i], cols)
        return out

    with ThreadPoolExecutor(workers) as pool:
        yield run
