"""The comparison engine's algebra: K sets, a list of comparisons, each a signed weighting of the sets.

Two-way PromptSplit is K = 2 with the one comparison test-vs-reference; K-way PromptSplit is K >= 2 sets on
the same prompts with every pair and each set against the pooled rest. For sets X_1..X_K (n_k samples each)
with per-set second moments C_k = (1/n_k) sum_{i in k} psi_i psi_i^T,

    pair (a, b):        Lambda_ab = C_a - eta C_b                                       (SPEC, eq. 2)
    one-vs-rest (k):    Lambda_k  = C_k - eta C_rest(k),  C_rest(k) = (1/n_rest) sum_{i not in k} psi psi^T

(SPEC's Lambda with the pooled others as the reference set: weights 1/n_k and -eta/n_rest). Every comparison
is Psi^T D_c Psi for one Psi and a signed weight vector D_c (zero on the rows it leaves out), so the joint
Gram matrix G = Psi Psi^T of all K sets (exact route) or the K r x r second moments (random features) are
computed once, and each comparison needs only its small spectrum (:func:`comparison_weights`).

||Lambda||_F^2 of every comparison follows from the K x K block sums S_ab = sum_{i in a, j in b} G_ij^2
(:func:`block_square_sums`, :func:`comparison_distance`, :func:`pair_distances`).

The permutation test exchanges model labels among all K sets within each prompt group
(:func:`permuted_model_labels`; with K = 2 the draws of :func:`.significance.permuted_labels`), and controls
the family-wise error over all modes of all comparisons by one max-statistic step-down over the
(comparison, sign) keys (:func:`~promptprism.stats.permutation.step_down_pvalues`; one comparison: its two
signs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...array_ops import is_numpy, sorted_subsample
from ...backend import array_namespace, backend_of
from ...kernels.gram import block_square_sums as numpy_block_square_sums
from ...stats.batched_eigen import _batched_extremes, lanczos_steps
from ...stats.eigen import signed_extremes

#: a comparison: (first set, the sets of its reference side); one set for a pair, all others for the rest
Comparison = tuple[int, tuple[int, ...]]
#: two-way PromptSplit's one comparison: set 0 (test) against set 1 (reference)
TEST_VS_REFERENCE: Comparison = (0, (1,))


def comparisons(k: int) -> tuple[list[Comparison], list[Comparison]]:
    """(pairs (a, (b,)) for a < b, one-vs-rest (k, others) for K >= 3): the K-way family.

    With K = 2 the rest of one set is the other, so the family is the one pair (one-vs-rest would repeat it).
    """
    pairs = [(a, (b,)) for a in range(k) for b in range(a + 1, k)]
    rest = [] if k < 3 else [(a, tuple(b for b in range(k) if b != a)) for a in range(k)]
    return pairs, rest


def comparison_weights(labels: np.ndarray, comparison: Comparison, counts: Any, eta: float) -> np.ndarray:
    """D_c (SPEC, eq. 2, with zeros): for model labels (N, or N x L: one labelling per column), 1/n_a on set
    a's rows, -eta/n_B on the reference side's rows (n_B: their total count), 0 elsewhere. ``counts``: each
    set's rows (the labellings keep them), or None: each labelling's own counts among ``labels`` (a subset of
    the rows, e.g. the kernel family's subsample; at least 1). The one signed weighting of every comparison:
    two-way PromptSplit's D = diag(1/n 1_n, -eta/m 1_m) is test-vs-reference (:func:`.core.signed_weights`);
    labels ``arange(K)`` give each set's coefficient (:func:`.kway_subspace.comparison_set_weights`)."""
    first, second = comparison
    labels = np.asarray(labels)
    is_first = labels == first
    inside = labels == second[0] if len(second) == 1 else np.isin(labels, second)
    if counts is None:
        n_first, n_second = np.maximum(is_first.sum(axis=0), 1), np.maximum(inside.sum(axis=0), 1)
    else:
        n_first, n_second = float(counts[first]), float(np.sum(np.asarray(counts)[list(second)]))
    if first in second:  # (a set against itself: C_a - eta C_a, both weights on its rows)
        return np.where(is_first, 1.0 / n_first, 0.0) + np.where(inside, -eta / n_second, 0.0)
    return np.where(is_first, 1.0 / n_first, np.where(inside, -eta / n_second, 0.0))


def block_square_sums(gram: Any, bounds: np.ndarray) -> np.ndarray:
    """S_ab = sum_{i in a, j in b} G_ij^2 for the K row blocks ``bounds`` (K + 1 offsets), float64.

    Computed as :func:`.core.promptsplit_distance_from_gram` sums (numpy:
    :func:`~promptprism.kernels.gram.block_square_sums`; torch: a block row at a time, G[a]^2, then its
    column blocks), so with K = 2 the distance is the two-way one to the last bit.
    """
    if is_numpy(gram):
        return numpy_block_square_sums(gram, bounds)
    xp = array_namespace(gram)
    k = len(bounds) - 1
    out = np.zeros((k, k))
    for a in range(k):
        rows = gram[bounds[a]:bounds[a + 1]]
        sq = rows * rows
        for b in range(a, k):
            out[a, b] = out[b, a] = float(xp.sum(sq[:, bounds[b]:bounds[b + 1]], dtype=xp.float64))
    return out


def comparison_distance(sums: np.ndarray, counts: np.ndarray, comparison: Comparison, eta: float) -> float:
    """||C_a - eta C_B||_F^2 = S_aa / n_a^2 + eta^2 S_BB / n_B^2 - 2 eta S_aB / (n_a n_B) (SPEC's distance,
    expanded over the block sums; B one set or the pooled rest), at least 0 (the expansion's cancellation
    leaves about -1e-16 on sets that agree)."""
    a, second = comparison
    b = list(second)
    n_a, n_b = float(counts[a]), float(np.sum(counts[b]))
    s_bb = float(np.sum(sums[np.ix_(b, b)]))
    s_ab = float(np.sum(sums[a, b]))
    return max(0.0, sums[a, a] / n_a**2 + eta**2 * s_bb / n_b**2 - 2.0 * eta * s_ab / (n_a * n_b))


def pair_distances(sums: np.ndarray, counts: np.ndarray, eta: float) -> np.ndarray:
    """The K x K matrix of ||C_a - eta C_b||_F^2 (symmetric when eta = 1; diagonal (1 - eta)^2 ||C_a||^2)."""
    k = len(counts)
    return np.array([[comparison_distance(sums, counts, (a, (b,)), eta) for b in range(k)] for a in range(k)])


def permuted_model_labels(groups: np.ndarray, labels: np.ndarray, permutations: int,
                          rng: np.random.Generator) -> np.ndarray:
    """P relabellings (N x P ints): within each prompt group a uniformly random exchange of the model labels
    among the group's samples, keeping each model's count in the group.

    With two models (label 0 = test) this is :func:`.significance.permuted_labels` to the bit: the same
    draws, label 0 where that function says True.
    """
    groups = np.asarray(groups, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    size = groups.size
    order = np.argsort(groups[:, None] + rng.random((size, permutations)), axis=0)
    canonical = labels[np.lexsort((labels, groups))]  # per group (ascending), its labels ascending
    out = np.empty((size, permutations), dtype=np.int64)
    np.put_along_axis(out, order, np.broadcast_to(canonical[:, None], order.shape), axis=0)
    return out


def null_rows(counts: np.ndarray, max_samples: int, seed: int) -> list[np.ndarray]:
    """Rows of each set the permutation test runs on: all, or (more than ``max_samples`` rows in all) a
    seeded subsample of ``max_samples`` rows in the sets' proportions (at least 2 per set; a smaller set is
    taken whole).

    On a subsample the test is exact for the subsample: its own observed eigenvalues against its own
    relabellings, with the power of a test on ``max_samples`` samples. (Rescaling a subsample's null to the
    full sets by the central-limit factor sqrt((1/n + 1/m) / (1/n' + 1/m')) and comparing it with the full
    sets' eigenvalues, as earlier versions did, overstates the null: a permuted Lambda's top eigenvalue also
    has a part that shrinks like 1/n. Measured at n = m = 4,000 with a 2,000-sample subsample: no false
    positive in 200 null data sets, and no power left where the full test found 70 %.)
    """
    counts = [int(c) for c in counts]
    if sum(counts) <= max_samples:
        return [np.arange(c) for c in counts]
    rng = np.random.default_rng(seed)
    total, taken, out = sum(counts), 0, []
    for i, c in enumerate(counts):
        want = max_samples - taken if i == len(counts) - 1 else round(max_samples * c / total)
        size = min(c, max(2, want))
        taken += size
        out.append(sorted_subsample(c, size, rng))
    return out


def null_rows_in_order(counts: np.ndarray, order: np.ndarray, max_samples: int, seed: int
                       ) -> list[np.ndarray]:
    """:func:`null_rows` drawn with the sets in their canonical ``order``
    (:func:`~promptprism.array_ops.canonical_order`) and returned in the given one: the same rows of each set
    whatever the order the sets came in."""
    drawn = null_rows(np.asarray(counts)[order], max_samples, seed)
    rows: list = [None] * len(drawn)
    for place, k in enumerate(order):
        rows[int(k)] = drawn[place]
    return rows


#: a pair's test from its own rows when both sets hold at most this many test rows together (a dense
#: eigen-solve per labelling of the pair's block of the Gram matrix, instead of a solve over all N rows)
PAIR_BLOCK_MAX_ROWS = 256
_PAIR_BLOCK_BYTES = 128 * 1024**2


def label_rows(model: np.ndarray, counts: np.ndarray) -> list[np.ndarray]:
    """Each set's rows under every labelling (columns of the model labels, N x L): K arrays L x n_k,
    ascending (the labels keep every set's count, ``counts``)."""
    order = np.argsort(model, axis=0, kind="stable").T
    bounds = np.r_[0, np.cumsum(np.asarray(counts, dtype=np.int64))]
    return [order[:, bounds[k]:bounds[k + 1]] for k in range(len(counts))]


def pair_block_extremes(gram: np.ndarray, rows_first: np.ndarray, rows_second: np.ndarray, eta: float,
                        n_top: int) -> tuple[np.ndarray, np.ndarray]:
    """(positive, |negative|) top ``n_top`` eigenvalues of a pair's Lambda_ab = F^T D F (SPEC, eq. 2) for
    every labelling, from the pair's own rows (``rows_first``, ``rows_second``: L x n_a and L x n_b, the
    rows labelled a and b, :func:`label_rows`): D is zero elsewhere, so the nonzero eigenvalues are those of
    D_S G_SS, i.e. of the symmetric R^T J R where |D_S|^(1/2) G_SS |D_S|^(1/2) = R R^T (Cholesky; eigh
    where it is singular) and J the signs of D_S. Dense float64 solves of (n_a + n_b)-square blocks,
    batched over labellings: the eigenvalues of
    :func:`~promptprism.stats.batched_eigen.weighted_gram_extremes` on the whole G, to its tolerance."""
    n_a, n_b = rows_first.shape[1], rows_second.shape[1]
    rows = np.concatenate([rows_first, rows_second], axis=1)  # L x s
    w = np.r_[np.full(n_a, 1.0 / n_a), np.full(n_b, -eta / n_b)]
    root, sign = np.sqrt(np.abs(w)), np.sign(w)
    size = rows.shape[1]
    block = max(1, _PAIR_BLOCK_BYTES // (8 * size * size * 3))
    vals = np.empty((rows.shape[0], size))
    g = np.asarray(gram)
    for start in range(0, rows.shape[0], block):
        idx = rows[start:start + block]
        a = np.asarray(g[idx[:, :, None], idx[:, None, :]], dtype=np.float64) * np.outer(root, root)
        try:
            r = np.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            s, u = np.linalg.eigh(a)
            r = u * np.sqrt(np.clip(s, 0.0, None))[:, None, :]
        vals[start:start + block] = np.linalg.eigvalsh(np.swapaxes(r, 1, 2) @ (sign[None, :, None] * r))
    return signed_extremes(vals, n_top)


#: one-vs-rest tested in the eigenbasis of the Gram matrix (:func:`rest_extremes`) up to this many test rows
REST_LOW_RANK_MAX_ROWS = 4000


#: Krylov vectors of the one-vs-rest Lanczos runs held at once: a few labellings, within a core's cache
#: (K = 50 sets of 20 rows, 201 labellings of r = 1,000 on 2 busy cores: 2.4-2.5 s per comparison in one
#: block of every labelling, 0.6-1.3 s in blocks of 1 MB; the same Ritz values)
REST_BATCH_BYTES = 1024**2


def gram_factor(gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(F = U S^(1/2) in float32, s) from G = U S U^T (float64 eigh; the directions with s > 0): the
    eigenbasis in which C_all = F^T F / N is the diagonal S / N, whatever the labelling."""
    s, u = np.linalg.eigh(np.asarray(gram, dtype=np.float64))
    keep = s > 0
    return (u[:, keep] * np.sqrt(s[keep])).astype(np.float32), s[keep]


def rest_extremes(factor: np.ndarray, s: np.ndarray, rows: np.ndarray, eta: float, n_top: int, *,
                  seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(positive, |negative|) top ``n_top`` eigenvalues of one-vs-rest Lambda_k = C_k - eta C_rest for every
    labelling (``rows``: L x n_k, the rows labelled k; :func:`label_rows`). With n_rest = N - n_k,
    C_rest = (N C_all - n_k C_k) / n_rest and C_all is the same for every labelling, so in G's eigenbasis
    (``factor``, ``s``: :func:`gram_factor`) Lambda_k = (1/n_k + eta/n_rest) Y^T Y - (eta/n_rest) diag(s),
    Y = F[rows]: a diagonal plus a rank-n_k update, whose mat-vecs cost O(n_k r) (not N^2); batched
    float32 Lanczos (:func:`~promptprism.stats.batched_eigen.weighted_factor_extremes`'s solver)."""
    n_k, dim = rows.shape[1], factor.shape[1]
    n_rest = factor.shape[0] - n_k
    low = 1.0 / n_k + eta / n_rest
    diag = (-eta / n_rest * s).astype(np.float32)
    y = factor[rows]  # L x n_k x r

    def apply(q: np.ndarray, wt: np.ndarray) -> np.ndarray:
        yb = wt.reshape(q.shape[0], n_k, dim)
        return q * diag + low * (np.swapaxes(yb, 1, 2) @ (yb @ q[:, :, None]))[:, :, 0]

    return _batched_extremes(apply, None, y.reshape(y.shape[0], -1).T, dim, on=backend_of(factor),
                             n_top=n_top, steps=lanczos_steps(n_top, dim), seed=seed, dtype=np.float32,
                             batch_bytes=REST_BATCH_BYTES)


def comparison_name(comparison: Comparison, names: list[str]) -> str:
    """'a vs b' for a pair, 'a vs rest' for a set against the pooled others."""
    first, second = comparison
    other = names[second[0]] if len(second) == 1 else "rest"
    return f"{names[first]} vs {other}"


def key_columns(spectra: tuple[np.ndarray, np.ndarray], widths: list[int]) -> list[np.ndarray]:
    """Each (comparison, sign) key's largest |eigenvalue| over the labellings (the columns of
    :func:`~promptprism.stats.permutation.labelling_statistic`), from spectra stacked side by side
    (``widths``: each comparison's columns):
    (c1, +), (c1, -), (c2, +), ..."""
    offsets = np.r_[0, np.cumsum(widths)][:-1]
    return [x for o in offsets for x in (spectra[0][:, o], spectra[1][:, o])]
