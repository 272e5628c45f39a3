"""Every K-way comparison's observed spectrum from the one joint Gram matrix (batched pair blocks, one-vs-rest
by Lanczos) against the brute force of SPEC's definitions: Lambda_c = C_a - eta C_B built from explicit
features (C_k = (1/n_k) sum psi psi^T), its eigenvalues and the scores psi(s) . v of its unit eigenvectors."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.backend import NUMPY
from promptprism.methods.promptsplit import comparisons as kc
from promptprism.methods.promptsplit import core
from promptprism.methods.promptsplit import exact_spectra as es


def _features(counts: list[int], dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(sum(counts), dim)) / np.sqrt(dim)
    feats[: counts[0]] += 0.4 * rng.normal(size=dim) / np.sqrt(dim)  # set 0 differs a little
    return feats, np.r_[0, np.cumsum(counts)]


def _brute(feats: np.ndarray, bounds: np.ndarray, c: kc.Comparison, eta: float
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(eigenvalues descending, unit eigenvectors, the comparison's rows) of C_a - eta C_B (SPEC, eq. 2)."""
    first, second = c
    side_a = feats[bounds[first]:bounds[first + 1]]
    side_b = np.concatenate([feats[bounds[b]:bounds[b + 1]] for b in second])
    lam = side_a.T @ side_a / len(side_a) - eta * side_b.T @ side_b / len(side_b)
    vals, vecs = np.linalg.eigh(lam)
    rows = np.concatenate([np.arange(bounds[k], bounds[k + 1]) for k in sorted((first, *second))])
    return vals[::-1], vecs[:, ::-1], rows


def _check(spec: core.Spectrum, feats: np.ndarray, bounds: np.ndarray, c: kc.Comparison, eta: float,
           n_modes: int) -> None:
    vals, vecs, rows = _brute(feats, bounds, c, eta)
    got = spec.mode_eigenvalues
    pos, neg = got[got > 0], got[got < 0]
    np.testing.assert_allclose(pos, vals[: pos.size], rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(neg, vals[::-1][: neg.size], rtol=1e-9, atol=1e-13)
    assert pos.size == min(n_modes, int(np.sum(vals > 1e-10)))
    assert neg.size == min(n_modes, int(np.sum(vals < -1e-10)))
    # scores psi(s) . v_j for the comparison's rows, v_j the brute-force eigenvector (up to sign)
    picks = np.r_[np.arange(pos.size), vals.size - 1 - np.arange(neg.size)]
    brute_scores = feats[rows] @ vecs[:, picks]
    signs = np.sign(np.sum(brute_scores * spec.scores, axis=0))
    np.testing.assert_allclose(spec.scores * signs, brute_scores, rtol=0,
                               atol=1e-8 * float(np.abs(brute_scores).max()))


@pytest.mark.parametrize("eta", [1.0, 0.7])
def test_pair_blocks_equal_the_brute_force_lambda(eta):
    """Two sizes of pairs (batched by size), each pair's every eigenvalue and its top modes' scores."""
    counts = [12, 12, 9, 12, 9]
    feats, bounds = _features(counts, 60, 1)
    pairs, _ = kc.comparisons(len(counts))
    got = es.pair_spectra(feats @ feats.T, bounds, pairs, eta=eta, n_modes=4, precision="float64")
    assert set(got) == set(pairs)
    for c in pairs:
        vals, _, _ = _brute(feats, bounds, c, eta)
        spec = got[c]
        assert spec.scope == "all"
        nonzero = vals[np.abs(vals) > 1e-12]
        np.testing.assert_allclose(np.sort(spec.eigenvalues[np.abs(spec.eigenvalues) > 1e-12]),
                                   np.sort(nonzero), rtol=1e-9, atol=1e-14)
        _check(spec, feats, bounds, c, eta, 4)


@pytest.mark.parametrize("lockstep", [False, True])
def test_rest_by_lanczos_equals_the_brute_force_lambda(monkeypatch, lockstep):
    """Above REST_DENSE_MAX_ROWS rows, one-vs-rest reports its top modes (Lanczos) and they are Lambda's;
    above REST_LOW_RANK_MAX_ROWS (here lowered) the sets' runs go in lockstep, one product with G a round."""
    calls = []
    if lockstep:
        monkeypatch.setattr(es, "REST_LOW_RANK_MAX_ROWS", 0)
        alone = core.exact_spectra_lockstep
        monkeypatch.setattr(core, "exact_spectra_lockstep", lambda g, ws, **kw: calls.append(len(ws)) or
                            alone(g, ws, **kw))
    counts = [20] * 14  # 280 rows
    feats, bounds = _features(counts, 300, 2)
    pairs, rest = kc.comparisons(len(counts))
    got = es.comparison_spectra(feats @ feats.T, bounds, pairs[:3] + rest[:3], eta=0.8, n_modes=5,
                                solver="auto", precision="float64", backend=NUMPY)
    assert calls == ([3] if lockstep else [])
    for c in rest[:3]:
        assert got[c].scope == "top 5 of each sign"
        _check(got[c], feats, bounds, c, 0.8, 5)
    for c in pairs[:3]:
        assert got[c].scope == "all"
        _check(got[c], feats, bounds, c, 0.8, 5)


def test_batched_pairs_equal_the_former_per_comparison_solve():
    """The same selected modes, eigenvalues and scores (up to sign) as core.exact_spectrum on each pair's
    rows, the route's former solve."""
    counts = [15, 15, 15, 15]
    feats, bounds = _features(counts, 40, 3)
    gram = feats @ feats.T
    model = np.repeat(np.arange(4), counts)
    pairs, rest = kc.comparisons(4)
    got = es.comparison_spectra(gram, bounds, pairs + rest, eta=1.0, n_modes=3, solver="auto",
                                precision="float64", backend=NUMPY)
    for c in pairs + rest:
        w = kc.comparison_weights(model, c, np.array(counts), 1.0)
        rows = np.flatnonzero(w)
        old = core.exact_spectrum(gram[np.ix_(rows, rows)], w[rows], n_modes=3, eta=1.0)
        np.testing.assert_array_equal(got[c].selected, old.selected)
        np.testing.assert_allclose(got[c].eigenvalues, old.eigenvalues, rtol=1e-10, atol=1e-15)
        signs = np.sign(np.sum(got[c].scores * old.scores, axis=0))
        np.testing.assert_allclose(got[c].scores * signs, old.scores, rtol=0, atol=1e-10)


def test_singular_pair_blocks_go_through_the_pivoted_solve():
    """Features of rank 3: every pair block is singular, so no pair is batched, and the route's solve
    (pivoted Cholesky, the block's rank) gives every pair."""
    counts = [8, 8, 8]
    feats, bounds = _features(counts, 3, 4)
    pairs, _ = kc.comparisons(3)
    assert es.pair_spectra(feats @ feats.T, bounds, pairs, eta=1.0, n_modes=2, precision="float64") == {}
    got = es.comparison_spectra(feats @ feats.T, bounds, pairs, eta=1.0, n_modes=2, solver="auto",
                                precision="float64", backend=NUMPY)
    for c in pairs:
        assert got[c].eigenvalues.size <= 3
        _check(got[c], feats, bounds, c, 1.0, 2)


@pytest.mark.parametrize("rows", [
    np.r_[0:40, 90:130],                                    # a pair of sets: two blocks
    np.r_[90:130, 0:40],                                    # blocks out of order
    np.r_[0:10, 11:12, 20:45, 46:47, 130:150],              # runs of one row among them
    np.sort(np.random.default_rng(3).choice(150, 60, replace=False)),  # scattered: the gather
])
def test_take_rows_blocks_equal_the_gather(rows):
    from promptprism.methods.promptsplit.route_base import take_rows

    gram = np.random.default_rng(4).normal(size=(150, 150)).astype(np.float32)
    out = take_rows(gram, rows, NUMPY)
    assert out.dtype == gram.dtype
    np.testing.assert_array_equal(out, gram[np.ix_(rows, rows)])
