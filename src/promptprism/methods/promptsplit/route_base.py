"""The comparison engine's route interface: one fit over K sets and a list of comparisons, in four steps.

A route is the state of one fit (:mod:`.routes`: ``exact``, ``rff``, ``sketch``) over K >= 2 sets and a
list of comparisons, each a signed weighting of the sets (:mod:`.comparisons`): two-way PromptSplit is K = 2
with the one comparison test-vs-reference, K-way PromptSplit every pair and each set against the pooled rest.
Every route answers the same four questions, in this order, for every comparison:

* :meth:`~Route.covariance` - build the operand (the joint Gram matrix of all K sets, or the K r x r second
  moments of a random feature map) and return each comparison's distance ||Lambda_c||_F^2 (SPEC, eq. 2);
* :meth:`~Route.spectrum` - each comparison's reported modes (:class:`.core.Spectrum`);
* :meth:`~Route.mode_stats` - each comparison's per-side score statistics
  (:class:`~promptprism.stats.ModeStats`; the reference side of a one-vs-rest comparison: its sets in order);
* :meth:`~Route.replicates` - the operand of the permutation test for given rows of each set
  (:mod:`.testing` draws the relabellings and computes the permuted spectra of every comparison).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._progress import progress_enabled, status
from ...backend import Backend
from ...data.paired import PairedSet
from ...stats.modes import ModeStats
from .comparisons import TEST_VS_REFERENCE, Comparison

#: the operand of the permutation test for rows of each set (one array of row indices per set):
#: ("gram", G), ("features", F) or ("subspace", P)
Replicates = Callable[..., tuple[str, Any]]


class Route:
    """One way to every comparison's spectrum; ``est`` holds the options (a :class:`.SplitOptions`).

    ``sets``: the K sets (a list, or two-way's {'test': ..., 'reference': ...}); ``comparisons``: the
    comparisons to fit (default: set 0 against set 1, two-way PromptSplit's one comparison)."""

    name: str = ""
    #: what this route's test was measured to find (``significance['route_note']``)
    test_note: str | None = None

    def __init__(self, est: Any, sets: dict[str, PairedSet] | list[PairedSet], sigmas: tuple, *,
                 precision: str, backend: Backend, comparisons: list[Comparison] | None = None) -> None:
        self.est, self.sigmas, self.precision, self.backend = est, sigmas, precision, backend
        self.sets: list[PairedSet] = list(sets.values()) if isinstance(sets, dict) else list(sets)
        self.comparisons = list(comparisons or [TEST_VS_REFERENCE])
        self.counts = np.array([len(s) for s in self.sets])
        self.bounds = np.r_[0, np.cumsum(self.counts)]
        self.model = np.repeat(np.arange(len(self.sets)), self.counts)  #: each row's set
        self.n, self.m = int(self.counts[0]), int(self.counts[1])
        #: K = 2 with the one comparison test-vs-reference: two-way PromptSplit's own arithmetic
        self.pairwise = len(self.sets) == 2 and self.comparisons == [TEST_VS_REFERENCE]
        self.test_plan: Any = None  #: what :meth:`fit`'s ``test_plan`` made, when it ran

    def fit(self, labels: dict | list, n_groups: int, timings: dict, *,
            test_plan: Callable[[dict], Any] | None = None) -> tuple[dict, dict, dict]:
        """Covariance, spectra, score statistics: ({c: Spectrum}, {c: ||Lambda_c||_F^2}, {c: {side:
        ModeStats}}) over the comparisons; ``labels``: each set's prompt labels. ``test_plan``: spectra ->
        the part of the test that needs no operand (:func:`.testing.plan_test`), made on this thread after
        the scoring while the test's operand is computed ahead (:meth:`operand_ahead`; else not called),
        kept in ``self.test_plan`` (None otherwise; its seconds in ``timings['test_plan_s']``)."""
        labels = list(labels.values()) if isinstance(labels, dict) else list(labels)
        distances = self.covariance(timings)
        with self.replicates_ahead():
            spectra = self.spectrum(timings)
            stats = self.mode_stats(spectra, labels, n_groups, timings)
            if test_plan is not None and self.operand_ahead():
                t0 = time.perf_counter()
                self.test_plan = test_plan(spectra)
                timings["test_plan_s"] = time.perf_counter() - t0
            return spectra, distances, stats

    def replicates_ahead(self) -> Any:
        """A context for the spectra and the scoring, during which a route may start the permutation test's
        label-free operand (:meth:`replicates`) beside them (default: nothing)."""
        return contextlib.nullcontext()

    def operand_ahead(self) -> bool:
        """Whether the test's operand is being computed ahead (:meth:`replicates_ahead`; default: no)."""
        return False

    def covariance(self, timings: dict) -> dict:
        """Build the operand (Gram matrix or second moments); return {c: ||Lambda_c||_F^2}."""
        raise NotImplementedError

    def spectrum(self, timings: dict) -> dict:
        """{c: the reported modes of Lambda_c} (after :meth:`covariance`)."""
        raise NotImplementedError

    def mode_stats(self, spectra: dict, labels: list, n_groups: int, timings: dict) -> dict:
        """{c: {side: ModeStats}} of the samples' scores on the modes of each comparison."""
        raise NotImplementedError

    def replicates(self, compress: bool = True) -> Replicates:
        """(rows of set 1, ..., rows of set K) -> the permutation test's operand for those rows
        (``compress``: a route may project many rows on a label-free principal subspace itself)."""
        raise NotImplementedError

    def distance_matrix(self) -> np.ndarray:
        """The K x K matrix of ||C_a - eta C_b||_F^2 (after :meth:`covariance`, before :meth:`release`)."""
        raise NotImplementedError

    def resolved(self) -> dict:
        """The options this route resolves, for the result's ``config``."""
        raise NotImplementedError

    def release(self) -> None:
        """Drop the operand (the Gram matrix or the kept features) once the test has run."""

    def sides(self, comparison: Comparison) -> dict[str, list[int]]:
        """{'test': [its first set], 'reference': the sets of its reference side}."""
        return {"test": [comparison[0]], "reference": list(comparison[1])}

    def _status(self, what: str) -> Any:
        return status(f"PromptSplit: eigen-solve ({what})", enabled=progress_enabled(self.est.progress))

    def _side_stats(self, c: Comparison, rows: np.ndarray, scores: np.ndarray, labels: list,
                    n_groups: int) -> dict[str, ModeStats]:
        """ModeStats of the comparison's two sides from the scores of its ``rows`` (global, ascending): ids
        within the first set, and within the other side's sets concatenated in order."""
        first, k = c[0], scores.shape[1]
        out = {}
        for side, mask in (("test", self.model[rows] == first), ("reference", self.model[rows] != first)):
            glob = rows[mask]
            lab = np.concatenate([labels[s][glob[self.model[glob] == s] - self.bounds[s]]
                                  for s in np.unique(self.model[glob])])
            out[side] = ModeStats.empty(self.est.top_k, k, n_groups).update(np.arange(glob.size), lab,
                                                                           scores[mask])
        return out


#: ``take_rows`` copies a numpy sub-matrix block by block when its rows form at most this many runs
BLOCK_COPY_MAX_RUNS = 16


def take_rows(gram: Any, rows: np.ndarray, backend: Backend) -> Any:
    """G[rows][:, rows] (the whole matrix when ``rows`` are all of them). Rows in a few runs of consecutive
    indices (a K-way pair: two sets' blocks) are copied block by block (numpy: one contiguous copy per pair
    of runs instead of a row gather and a column gather, ~4x faster at 3,000 of 6,000 rows)."""
    if rows.size == gram.shape[0]:
        return gram
    rows = np.asarray(rows)
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    if isinstance(gram, np.ndarray) and breaks.size < BLOCK_COPY_MAX_RUNS:
        starts = np.r_[0, breaks]
        runs = [(int(a), int(rows[a]), int(rows[b - 1]) + 1) for a, b in zip(starts, np.r_[breaks, rows.size],
                                                                            strict=True)]
        out = np.empty((rows.size, rows.size), dtype=gram.dtype)
        for at, lo, hi in runs:
            for at2, lo2, hi2 in runs:
                out[at:at + hi - lo, at2:at2 + hi2 - lo2] = gram[lo:hi, lo2:hi2]
        return out
    idx = backend.asarray(rows)
    return gram[idx, ...][:, idx]


__all__ = ["Replicates", "Route", "take_rows"]
