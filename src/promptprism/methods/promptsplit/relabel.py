"""The permutation test's relabellings of two sets: which rows carry the test label under each of K draws
(within prompt groups, or pooled), and the sets' canonical order, in which every draw over the sets or
their rows is made so that either argument order tests the same relabellings (the test's rows:
:func:`.comparisons.null_rows`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...array_ops import DIGEST_ROWS, canonical_order, edge_digest


def permuted_labels(groups: np.ndarray, is_test: np.ndarray, permutations: int, rng: np.random.Generator,
                    *, rows: np.ndarray | None = None, flip: bool = False) -> np.ndarray:
    """K relabellings (N x K booleans, True = test): within each group a uniformly random choice of which
    members are 'test', keeping the group's test count (one group for everyone = the pooled scheme). Each
    member draws a key per relabelling; a group's 'test' members are its members with the smallest keys.
    ``rows``: row i takes the keys drawn for row ``rows[i]``; ``flip``: keys 1 - u (the largest become the
    smallest; :func:`test_labellings`)."""
    groups = np.asarray(groups, dtype=np.int64)
    size = groups.size
    keys = rng.random((size, permutations))
    if rows is not None:
        keys = keys[rows]
    if flip:
        np.subtract(1.0, keys, out=keys)
    keys += groups[:, None]  # (in place: no second array of N x K keys)
    n_test_in = np.bincount(groups, weights=is_test.astype(np.float64), minlength=groups.max() + 1)
    sorted_groups = np.sort(groups)
    if np.count_nonzero(n_test_in) <= SELECT_MAX_GROUPS:
        chosen = _smallest_keys(keys, groups, sorted_groups, n_test_in.astype(np.int64))
        if chosen is not None:
            return chosen
    order = np.argsort(keys.T, axis=1)  # (each labelling's keys sorted contiguously: the same order)
    del keys
    starts = np.searchsorted(sorted_groups, sorted_groups, side="left")
    take = (np.arange(size) - starts) < n_test_in[sorted_groups]
    out = np.empty((permutations, size), dtype=bool)
    np.put_along_axis(out, order, np.broadcast_to(take[None, :], order.shape), axis=1)
    return out.T


#: :func:`permuted_labels` by selection (one partition per relabelling) when at most this many groups hold
#: test members (the pooled scheme: one), by sorting every relabelling's keys otherwise
SELECT_MAX_GROUPS = 16


def _smallest_keys(keys: np.ndarray, groups: np.ndarray, sorted_groups: np.ndarray, n_test_in: np.ndarray
                   ) -> np.ndarray | None:
    """keys <= each group's n_test_in-th smallest key (a group's keys lie in [g, g + 1)), per column:
    :func:`permuted_labels`'s sort, by selection (O(N) per relabelling, about 3x faster than the sort at
    N = 20,000). None when a tie made a count differ (the sort then decides)."""
    picked = np.flatnonzero(n_test_in)
    kth = np.searchsorted(sorted_groups, picked) + n_test_in[picked] - 1
    thresholds = np.full((n_test_in.size, keys.shape[1]), -np.inf)
    thresholds[picked] = np.partition(keys.T, kth, axis=1)[:, kth].T
    chosen = keys <= thresholds[groups]
    return chosen if np.all(chosen.sum(axis=0) == int(n_test_in.sum())) else None


def test_labellings(groups: np.ndarray, n: int, m: int, permutations: int, seed: int, *,
                    swapped: bool = False) -> np.ndarray:
    """The observed labelling (column 0) and the K relabellings of the test's rows (N x (K + 1) booleans,
    True = test), drawn from ``seed``: the same columns for every statistic computed on these rows.
    ``swapped``: the two sets come in the other order than their canonical one (:func:`set_order`):
    the keys are drawn for the rows in that order and each row keeps its own, the reference side taking the
    smallest, so (test, reference) and (reference, test) give the same relabellings, mirrored."""
    is_test = np.r_[np.ones(n, bool), np.zeros(m, bool)]
    rows = np.r_[np.arange(m, n + m), np.arange(m)] if swapped else None  # (row i's key: canonical row)
    labels = permuted_labels(groups, is_test, permutations, np.random.default_rng(seed), rows=rows,
                             flip=swapped)
    return np.concatenate([is_test[:, None], labels], axis=1)


def canonical_positions(counts: Any, order: Any) -> np.ndarray:
    """Each row's position when rows stacked set after set in the given order (``counts`` rows each) are
    stacked instead in the sets' canonical ``order`` (:func:`~promptprism.array_ops.canonical_order`): a
    seeded draw over rows made at these positions follows each row, whatever the order of the sets."""
    counts, order = np.asarray(counts, dtype=np.int64), np.asarray(order, dtype=np.int64)
    starts = np.empty(counts.size, dtype=np.int64)
    starts[order] = np.r_[0, np.cumsum(counts[order])][:-1]
    return np.concatenate([starts[k] + np.arange(c) for k, c in enumerate(counts)]) if counts.size else \
        np.zeros(0, dtype=np.int64)


def set_order(sets: Any) -> np.ndarray:
    """The sets' canonical order (:func:`~promptprism.array_ops.canonical_order` of their
    :func:`signature`): every seeded draw over several sets or their rows is made in it, so that the sets
    given in any order get the same draws."""
    return canonical_order([signature(s) for s in sets])


#: rows at each end of a set its content signature reads (:func:`signature`)
SIGNATURE_ROWS = DIGEST_ROWS


def signature(data: Any) -> bytes:
    """A digest of a set's row count and its first and last :data:`SIGNATURE_ROWS` rows (prompt and output
    embeddings, float64, :func:`~promptprism.array_ops.edge_digest`): cheap on streamed sets, and the same
    for the same set in either argument."""
    return edge_digest(data.prompt_embeddings, data.output_embeddings)
