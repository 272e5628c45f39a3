"""The exact route (eq. 3): every comparison from the one joint Gram matrix of all K sets.

Two-way PromptSplit is K = 2 with the one comparison test-vs-reference; K-way PromptSplit every pair and
each set against the pooled rest (:mod:`.comparisons`). The Gram matrix is O(N^2) memory; the spectra come
from :func:`.exact_spectra.comparison_spectra`, the test's operand is the Gram matrix of its rows.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from . import comparisons as kc
from . import core
from .exact_spectra import comparison_spectra
from .route_base import Replicates, Route, take_rows


class ExactRoute(Route):
    """eq. 3 on the joint Gram matrix of all K sets (float64 by default); each comparison's spectrum from
    its rows with its signed weights (:func:`.comparisons.comparison_weights`)."""

    name = "exact"

    def covariance(self, timings: dict) -> dict:
        """The joint Gram matrix of all K sets (eq. 3); each comparison's distance from it (two-way:
        :func:`.core.promptsplit_distance_from_gram`; else from its block sums,
        :func:`.comparisons.comparison_distance`)."""
        est, first, t0 = self.est, self.sets[0], time.perf_counter()
        rest = self.sets[1:]
        rest_p, rest_o = ((rest[0].prompt_embeddings, rest[0].output_embeddings) if len(rest) == 1 else
                          (np.concatenate([s.prompt_embeddings for s in rest]),
                           np.concatenate([s.output_embeddings for s in rest])))
        self.gram = core.joint_gram(first.prompt_embeddings, first.output_embeddings, rest_p, rest_o,
                                    kernel=est.kernel, sigma_prompt=self.sigmas[0],
                                    sigma_output=self.sigmas[1], precision=self.precision,
                                    backend=self.backend)
        if self.pairwise:
            distances = {self.comparisons[0]: core.promptsplit_distance_from_gram(self.gram, self.n, est.eta)}
        else:
            sums = self._block_sums()
            distances = {c: kc.comparison_distance(sums, self.counts, c, est.eta) for c in self.comparisons}
        timings["gram_s"] = time.perf_counter() - t0
        return distances

    def _block_sums(self) -> np.ndarray:
        if getattr(self, "sums", None) is None:
            self.sums = kc.block_square_sums(self.gram, self.bounds)
        return self.sums

    def distance_matrix(self) -> np.ndarray:
        """From the K x K block sums of the squared Gram matrix (:func:`.comparisons.pair_distances`)."""
        return kc.pair_distances(self._block_sums(), self.counts, self.est.eta)

    def spectrum(self, timings: dict) -> dict:
        """Each comparison's weighted eigen-problem on its rows of the Gram matrix
        (:func:`.exact_spectra.comparison_spectra`: K-way pairs batched from their blocks)."""
        est, t0 = self.est, time.perf_counter()
        with self._status(f"{int(self.counts.sum())} samples"):
            out = comparison_spectra(self.gram, self.bounds, self.comparisons, eta=est.eta,
                                     n_modes=est.n_modes, solver=est.solver, precision=self.precision,
                                     backend=self.backend)
        timings["eigen_s"] = time.perf_counter() - t0
        return out

    def mode_stats(self, spectra: dict, labels: list, n_groups: int, timings: dict) -> dict:
        """Scores from the eigenvectors (no second pass)."""
        out = {}
        for c, spec in spectra.items():
            rows = np.flatnonzero(np.isin(self.model, (c[0], *c[1])))
            out[c] = self._side_stats(c, rows, spec.scores, labels, n_groups)
        return out

    def replicates(self, compress: bool = True) -> Replicates:
        """The Gram matrix, or its sub-matrix of the given rows of each set (``compress``: the test's
        :func:`.significance.principal_operand` compresses it, not the route)."""
        gram, bounds, backend = self.gram, self.bounds, self.backend

        def operand(*rows: np.ndarray) -> tuple[str, Any]:
            return "gram", take_rows(gram, np.concatenate([bounds[k] + r for k, r in enumerate(rows)]),
                                     backend)

        return operand

    def resolved(self) -> dict:
        """No feature dimension, no partitions on this route."""
        return {"n_features": None, "partition_rows": None}

    def release(self) -> None:
        """Drop the Gram matrix."""
        self.gram = self.sums = None


__all__ = ["ExactRoute"]
