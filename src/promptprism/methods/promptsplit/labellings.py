"""The permutation test's labellings of its rows: the observed labelling and the relabellings of two sets
(:func:`.relabel.test_labellings`) or of K sets (:func:`.comparisons.permuted_model_labels`), drawn in the
sets' canonical order, and the signed weights of a comparison under each
(:func:`.comparisons.comparison_weights`)."""

from __future__ import annotations

import numpy as np

from . import comparisons as kc
from . import significance as sig
from .relabel import canonical_positions


class Labellings:
    """The observed labelling (column 0) and the P relabellings of the test's rows (``counts`` rows of each
    set, in order), drawn from ``seed`` within the prompt ``groups``: two sets, the draws of
    :func:`.significance.test_labellings`; K sets, those of :func:`.comparisons.permuted_model_labels` (with
    two sets the same draws). ``labels``: each row's set under each labelling (N x (P + 1); two sets: 0
    test, 1 reference); ``model``: the same for K >= 3 sets, None for two. ``order``: the sets' canonical
    order (:func:`~promptprism.array_ops.canonical_order`), in which the rows and the labels are drawn, so
    that the sets given in any order get the same relabellings of the same rows (default: as given)."""

    def __init__(self, groups: np.ndarray, counts: np.ndarray, permutations: int, seed: int, *,
                 order: np.ndarray | None = None) -> None:
        self.counts = np.asarray(counts)
        self.order = np.arange(self.counts.size) if order is None else np.asarray(order, dtype=np.int64)
        self.model = None
        if self.counts.size == 2:
            is_test = sig.test_labellings(groups, int(counts[0]), int(counts[1]), permutations, seed,
                                          swapped=bool(self.order[0] == 1))
            self.labels = np.logical_not(is_test).view(np.int8)
            return
        model = np.repeat(np.arange(self.counts.size), self.counts)
        at = canonical_positions(self.counts, self.order)  # (row i's canonical position)
        rows = np.argsort(at)  # (the row at each canonical position)
        rank = np.argsort(self.order)  # (each set's place in the canonical order)
        drawn = kc.permuted_model_labels(np.asarray(groups)[rows], rank[model[rows]], permutations,
                                         np.random.default_rng(seed))
        self.model = self.labels = np.concatenate([model[:, None], self.order[drawn[at]]], axis=1)

    def weights(self, comparison: kc.Comparison, eta: float) -> np.ndarray:
        """D_c of every labelling (N x (P + 1)): SPEC's signed weights (eq. 2), zeros off the comparison."""
        return kc.comparison_weights(self.labels, comparison, self.counts, eta)

    def subset_weights(self, comparison: kc.Comparison, keep: np.ndarray, eta: float) -> np.ndarray:
        """D_c of every labelling on the rows ``keep``, by each labelling's own counts there."""
        return kc.comparison_weights(self.labels[keep], comparison, None, eta)
