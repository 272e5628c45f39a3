"""Top-k eigen-solver of the random-feature routes: the same modes as the full decomposition."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism import PromptSplit
from promptprism.datasets import gaussian_mixture
from promptprism.stats.eigen import symmetric_eigenpairs, symmetric_extreme_eigenpairs


def test_extreme_eigenpairs_equal_full_decomposition():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 300))
    a = a + a.T
    vals, vecs = symmetric_extreme_eigenpairs(a, 5)
    full_vals, full_vecs = symmetric_eigenpairs(a)
    np.testing.assert_allclose(vals, np.r_[full_vals[:5], full_vals[-5:]], rtol=1e-10)
    overlap = np.abs(np.einsum("ij,ij->j", vecs, np.c_[full_vecs[:, :5], full_vecs[:, -5:]]))
    np.testing.assert_allclose(overlap, 1.0, atol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize(("precision", "rtol", "score_rtol"),
                         [("float64", 1e-9, 1e-7), ("float32", 1e-6, 1e-5)])
def test_rff_auto_topk_equals_dense(precision, rtol, score_rtol):
    """Lanczos equals the dense solver on the same Lambda: to 1e-9 in float64; in float32 its products read
    Lambda rounded to float32, within the float32 round-off below which no mode is reported (1e-6; measured
    7e-8, scores 4e-7)."""
    test, ref, _ = gaussian_mixture(2, per_component=25, seed=0)
    common = dict(method="rff", n_features=1200, n_modes=4, permutations=0, seed=1, precision=precision)
    auto = PromptSplit(**common).fit(test, ref)
    dense = PromptSplit(solver="dense", **common).fit(test, ref)
    assert auto.eigenvalues_scope == "top 4 of each sign" and dense.eigenvalues_scope == "all"
    assert len(dense.eigenvalues) == 1200 and len(auto.eigenvalues) == 8
    np.testing.assert_allclose([m.eigenvalue for m in auto.modes], [m.eigenvalue for m in dense.modes],
                               rtol=rtol)
    for a, b in zip(auto.modes, dense.modes, strict=True):
        assert [s.index for s in a.top_samples] == [s.index for s in b.top_samples]
        np.testing.assert_allclose([s.score for s in a.top_samples], [s.score for s in b.top_samples],
                                   rtol=score_rtol, atol=1e-10)
    assert auto.distance == pytest.approx(dense.distance, rel=1e-12)
