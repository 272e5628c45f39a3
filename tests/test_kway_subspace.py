"""K-way exact route on many rows: per-set moments in a shared pivoted-Cholesky subspace, against brute force
(the joint Gram matrix and every comparison's D_S G_SS from the SPEC's definitions)."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism import KWaySplit, PairedSet
from promptprism.array_ops import blas_thread_count
from promptprism.kernels.gram import joint_gram
from promptprism.methods.promptsplit import comparisons as kc
from promptprism.methods.promptsplit import kway_subspace as ks
from promptprism.stats.subspaces import pivoted_cholesky_factor


def _sets(k: int, n: int, seed: int = 0, shift: float = 0.0) -> list[PairedSet]:
    rng = np.random.default_rng(seed)
    t = rng.normal(size=(5, 4))
    out = []
    for i in range(k):
        lab = np.arange(n) % 5
        o = rng.normal(size=(n, 3)) + (shift if i == k - 1 else 0.0) * (lab[:, None] < 2)
        out.append(PairedSet(t[lab], o, prompts=[f"p{g}" for g in lab], name=f"m{i}"))
    return out


def _gram(sets: list[PairedSet], sigmas=(1.5, 1.5)) -> np.ndarray:
    p = np.concatenate([s.prompt_embeddings for s in sets])
    o = np.concatenate([s.output_embeddings for s in sets])
    return joint_gram(p, o, kernel="gaussian", sigma_prompt=sigmas[0], sigma_output=sigmas[1])


def _brute(gram: np.ndarray, bounds: np.ndarray, c: kc.Comparison, eta: float) -> np.ndarray:
    """Every eigenvalue of Lambda_c = Psi^T D_c Psi: those of D G on the comparison's rows (eq. 3)."""
    counts = np.diff(bounds)
    model = np.repeat(np.arange(counts.size), counts)
    w = kc.comparison_weights(model, c, counts, eta)
    rows = np.flatnonzero(w)
    g, ws = gram[np.ix_(rows, rows)], w[rows]
    return np.sort(np.linalg.eigvalsh(_signed(g, np.sqrt(np.abs(ws)), np.sign(ws))))[::-1]


def _signed(g: np.ndarray, root: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """R^T J R with R R^T = |D|^1/2 G |D|^1/2 (its nonzero spectrum is D G's)."""
    s, u = np.linalg.eigh(root[:, None] * g * root[None, :])
    r = u * np.sqrt(np.clip(s, 0.0, None))
    return r.T @ (sign[:, None] * r)


def test_pivoted_cholesky_factor_is_the_nystrom_factor_of_its_pivots():
    """Full rank: F F^T = G to float32 round-off; a lower rank: residual = diag(G - F F^T) >= 0 and G - F F^T
    positive semi-definite (a Nystrom approximation)."""
    g = _gram(_sets(3, 30))
    full, res = pivoted_cholesky_factor(lambda idx: g[:, idx], g.shape[0], g.shape[0], block=16, seed=0)
    np.testing.assert_allclose(full.astype(float) @ full.T, g, atol=2e-5)
    assert res.sum() < 1e-3
    low, res = pivoted_cholesky_factor(lambda idx: g[:, idx], g.shape[0], 20, block=8, seed=1)
    assert low.shape[1] == 20
    left = g - low.astype(float) @ low.T
    np.testing.assert_allclose(res, np.diag(left), atol=2e-5)
    assert np.linalg.eigvalsh(left).min() > -1e-4
    stop, _ = pivoted_cholesky_factor(lambda idx: g[:, idx], g.shape[0], 90, block=4, tolerance=0.5, seed=2)
    assert stop.shape[1] < 90  # (the energy left out fell below half the trace first)


@pytest.mark.parametrize("rank", [90, 40])
@pytest.mark.parametrize("eta", [1.0, 0.7])
def test_subspace_eigenvalues_against_the_brute_force_comparisons(rank, eta):
    """Every pair and every one-vs-rest: at full rank the brute-force top eigenvalues (to 1e-5 of the
    largest); at a lower rank Ritz values (|value| never above the brute force's of the same order) within
    :func:`~kway_subspace.eigenvalue_bound` of them."""
    sets = _sets(3, 30)
    g = _gram(sets)
    bounds = np.r_[0, np.cumsum([len(s) for s in sets])]
    counts = np.diff(bounds)
    f, res = pivoted_cholesky_factor(lambda idx: g[:, idx], g.shape[0], rank, block=16, seed=0)
    moments = ks.set_moments(f, bounds)
    eps = ks.dropped_trace(res, bounds)
    pairs, rest = kc.comparisons(3)
    for c in pairs + rest:
        want = _brute(g, bounds, c, eta)
        got = np.linalg.eigvalsh(ks.comparison_matrix(moments, counts, c, eta))[::-1]
        top = float(np.abs(want).max())
        for sign in (1, -1):
            w = np.sort(sign * want)[::-1][:5]
            h = np.sort(sign * got)[::-1][:5]
            if rank >= g.shape[0]:
                np.testing.assert_allclose(h, w, atol=1e-5 * top)
            else:
                assert np.all(h <= w + 1e-6 * top)  # (Cauchy interlacing: Ritz values sit inside)
                assert np.all(w - h <= ks.eigenvalue_bound(eps, np.ones(3), counts, c, eta) + 1e-6)
        assert rank >= g.shape[0] or eps.max() > 0


def _three_sets(rng: np.random.Generator, per_set: int, relabellings: int) -> tuple:
    """(counts, labels: the model labelling then ``relabellings`` permutations of it, rows_of, comparisons)
    for K = 3 sets of ``per_set`` rows."""
    counts = np.array([per_set] * 3)
    model = np.repeat(np.arange(3), counts)
    labels = np.stack([model] + [rng.permutation(model) for _ in range(relabellings)], axis=1)
    pairs, rest = kc.comparisons(3)
    return counts, labels, kc.label_rows(labels, counts), pairs + rest


def _brute_extremes(p: np.ndarray, labels: np.ndarray, col: int, c: tuple, counts: np.ndarray, top: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The ``top`` largest positive and |negative| eigenvalues of P^T D_c P for labelling ``col``, dense."""
    w = kc.comparison_weights(labels[:, col], c, counts, 0.8)
    vals = np.linalg.eigvalsh(p.T.astype(float) @ (w[:, None] * p))
    return np.sort(vals)[::-1][:top].clip(0), np.sort(-vals)[::-1][:top].clip(0)


def test_moment_extremes_equal_the_brute_force_labellings():
    """The test's statistic: every comparison's extremes on each relabelling from the sets' moments equal
    P^T D_c P diagonalised densely for that labelling's weights (brute force)."""
    rng = np.random.default_rng(3)
    p = rng.normal(size=(24, 6)).astype(np.float32)
    counts, labels, rows_of, comps = _three_sets(rng, 8, 4)
    widths = [2] * 6
    pos, neg = ks.moment_extremes(p, rows_of, np.arange(5), comps, counts, 0.8, widths)
    for col in range(5):
        for j, c in enumerate(comps):
            bp, bn = _brute_extremes(p, labels, col, c, counts, 2)
            np.testing.assert_allclose(pos[col, 2 * j:2 * j + 2], bp, atol=1e-6)
            np.testing.assert_allclose(neg[col, 2 * j:2 * j + 2], bn, atol=1e-6)


def test_moment_extremes_by_lanczos_on_wide_directions_equal_the_brute_force():
    """Wider than LANCZOS_MIN_RANK: the relabellings' extremes come from lockstep Lanczos, within 1e-4 of
    the brute-force eigen-solve at the top of each sign (16 steps on a flat spectrum) and never above it
    (Ritz values; float32 moments); the observed labelling
    (column 0) keeps every reported mode exact; a labelling's numbers do not depend on its block."""
    rng = np.random.default_rng(4)
    width = ks.LANCZOS_MIN_RANK + 16
    p = (rng.normal(size=(240, width)) * np.geomspace(2.0, 0.05, width)).astype(np.float32)
    counts, labels, rows_of, comps = _three_sets(rng, 80, 5)
    widths = [3] * 6
    pos, neg = ks.moment_extremes(p, rows_of, np.arange(6), comps, counts, 0.8, widths, seed=2)
    for col in range(6):
        for j, c in enumerate(comps):
            bp, bn = _brute_extremes(p, labels, col, c, counts, 3)
            scale = max(bp[0], bn[0])
            got_p, got_n = pos[col, 3 * j:3 * j + 3], neg[col, 3 * j:3 * j + 3]
            if col == 0:  # (dense: every reported mode)
                np.testing.assert_allclose(got_p, bp, atol=1e-6 * scale)
                np.testing.assert_allclose(got_n, bn, atol=1e-6 * scale)
            else:
                assert abs(got_p[0] - bp[0]) <= 1e-4 * scale and abs(got_n[0] - bn[0]) <= 1e-4 * scale
                assert np.all(got_p <= bp + 1e-6 * scale) and np.all(got_n <= bn + 1e-6 * scale)  # (float32)
    part = ks.moment_extremes(p, rows_of, np.arange(3, 6), comps, counts, 0.8, widths, seed=2)
    np.testing.assert_allclose(part[0][:, ::3], pos[3:, ::3], rtol=1e-9)
    np.testing.assert_allclose(part[1][:, ::3], neg[3:, ::3], rtol=1e-9)


def test_moment_extremes_in_blocks_of_labellings_equal_one_block(monkeypatch):
    """Labellings whose moments and matrices exceed MOMENT_BLOCK_BYTES go through in blocks (here one at a
    time): the same numbers as all at once, dense (observed) and Lanczos (relabellings) columns alike."""
    rng = np.random.default_rng(5)
    width = ks.LANCZOS_MIN_RANK + 16
    p = (rng.normal(size=(240, width)) * np.geomspace(2.0, 0.05, width)).astype(np.float32)
    counts, _, rows_of, comps = _three_sets(rng, 80, 5)
    whole = ks.moment_extremes(p, rows_of, np.arange(6), comps, counts, 0.8, [3] * 6, seed=2)
    monkeypatch.setattr(ks, "MOMENT_BLOCK_BYTES", 1)
    blocked = ks.moment_extremes(p, rows_of, np.arange(6), comps, counts, 0.8, [3] * 6, seed=2)
    np.testing.assert_allclose(blocked[0], whole[0], rtol=1e-9, atol=0)
    np.testing.assert_allclose(blocked[1], whole[1], rtol=1e-9, atol=0)


@pytest.mark.slow
def test_subspace_fit_agrees_with_the_joint_gram_fit(monkeypatch):
    """End to end (K = 4 x 40 rows, a planted difference in set 4): with the subspace route forced, the
    reported eigenvalues equal the joint Gram route's (the subspace spans every row: float32 tolerance) and
    the p-value decisions agree (p-values within 2 / (P + 1): the statistics differ by round-off)."""
    sets = _sets(4, 40, seed=1, shift=2.5)
    est = KWaySplit(method="exact", permutations=49, n_modes=2, seed=0)
    joint = est.fit(sets)
    monkeypatch.setattr(ks, "SUBSPACE_MIN_ROWS", 0)
    monkeypatch.setattr(ks, "TEST_RANK", 256)  # (the test's directions span all 160 rows)
    shared = est.fit(sets)
    assert "shared subspace" in shared.pairs[0].eigenvalues_scope
    assert "shared subspace" in shared.significance["statistic"]
    for a, b in zip(joint.pairs + joint.one_vs_rest, shared.pairs + shared.one_vs_rest, strict=True):
        top = float(np.abs(a.eigenvalues).max())
        np.testing.assert_allclose(_mode_values(b), _mode_values(a), atol=1e-5 * top)
    decided = [[p is not None and p <= 0.05 for p in row] for row in joint.pair_p_values]
    assert decided == [[p is not None and p <= 0.05 for p in row] for row in shared.pair_p_values]
    assert any(any(row) for row in decided)  # (the planted set differs)
    for row_a, row_b in zip(joint.pair_p_values, shared.pair_p_values, strict=True):
        for p, q in zip(row_a, row_b, strict=True):
            assert (p is None) == (q is None) and (p is None or abs(p - q) <= 2 / 50 + 1e-12)


def _mode_values(result) -> np.ndarray:
    return np.array([m.eigenvalue for m in result.modes])


def test_cost_estimate_of_the_subspace_test():
    """``compare``'s estimate follows the subspace test above SUBSPACE_MIN_ROWS (not K^2 Gram solves)."""
    est = KWaySplit(method="exact", seed=0)
    big = est.test_seconds([5000] * 8)
    assert big == pytest.approx(ks.test_seconds(8, 20_000, 200, threads=blas_thread_count()))
    assert big < 600


def test_comparison_matrix_from_the_total_equals_the_direct_sum():
    """A set against the pooled rest from sum_k M_k less its own moment equals the direct sum (round-off);
    pairs are unchanged."""
    rng = np.random.default_rng(7)
    moments = rng.normal(size=(5, 6, 6))
    moments = moments + moments.transpose(0, 2, 1)
    counts = np.array([10, 20, 30, 40, 50])
    pairs, rest = kc.comparisons(5)
    for c in pairs + rest:
        direct = ks.comparison_matrix(moments, counts, c, 0.7)
        fast = ks.comparison_matrix(moments, counts, c, 0.7, total=moments.sum(axis=0))
        np.testing.assert_allclose(fast, direct, rtol=0, atol=1e-12)
        first, second = c
        n_second = counts[list(second)].sum()
        brute = moments[first] / counts[first] - 0.7 * sum(moments[b] for b in second) / n_second
        np.testing.assert_allclose(direct, brute, rtol=0, atol=1e-12)


def test_comparison_set_weights_give_every_comparison_matrix_in_one_product():
    """W @ [M_1 ... M_K] (flattened) is every comparison's M_a / n_a - eta sum_B M_b / n_B at once, equal to
    :func:`comparison_matrix` (round-off), for pairs and a set against the rest."""
    rng = np.random.default_rng(8)
    moments = rng.normal(size=(4, 5, 5))
    counts = np.array([7, 11, 13, 17])
    pairs, rest = kc.comparisons(4)
    comps = pairs + rest
    w = ks.comparison_set_weights(counts, comps, 0.6)
    stacked = (w @ moments.reshape(4, -1)).reshape(len(comps), 5, 5)
    for i, c in enumerate(comps):
        np.testing.assert_allclose(stacked[i], ks.comparison_matrix(moments, counts, c, 0.6), rtol=0,
                                   atol=1e-13)
    # per sample: weight 1 / n_a on its set's side, the rest's samples' weights sum to -eta
    np.testing.assert_allclose((w * counts).sum(axis=1), 1 - 0.6, atol=1e-14)


def test_comparison_distances_from_the_moments_inner_products():
    """||sum_k w_k M_k||_F^2 from the K x K inner products equals the matrix's own squared norm, for pairs
    (a set with itself: (1 - eta)^2 ||M_a||^2 / n_a^2) and a set against the rest."""
    rng = np.random.default_rng(9)
    moments = rng.normal(size=(4, 6, 6))
    moments = moments + moments.transpose(0, 2, 1)
    counts = np.array([5, 9, 12, 20])
    flat = moments.reshape(4, -1)
    pairs, rest = kc.comparisons(4)
    comps = pairs + rest + [(a, (a,)) for a in range(4)]
    got = ks.comparison_distances(flat @ flat.T, ks.comparison_set_weights(counts, comps, 0.8))
    want = [np.sum(ks.comparison_matrix(moments, counts, c, 0.8) ** 2) for c in comps]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got[-4:], [(0.2 / counts[a]) ** 2 * np.sum(moments[a] ** 2) for a in range(4)],
                               rtol=1e-12)
