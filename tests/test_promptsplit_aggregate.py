"""The aggregated permutation test (min-p over a kernel family): its statistics against their definitions,
its level on exchangeable statistics, and its wiring into PromptSplit."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism import PromptSplit
from promptprism.errors import OptionError
from promptprism.methods.promptsplit import aggregate as agg
from promptprism.stats.permutation import (
    adjust_pvalues,
    labelling_pvalues,
    labelling_statistic,
    min_p_aggregate,
)


def _brute_pvalues(stat):
    return np.array([np.mean(stat >= s) for s in stat])


def test_labelling_pvalues_are_ranks_among_all_labellings():
    rng = np.random.default_rng(0)
    stat = np.r_[rng.standard_normal(30), 0.5, 0.5]  # ties count as at least as large
    np.testing.assert_allclose(labelling_pvalues(stat), _brute_pvalues(stat))


def test_min_p_aggregate_matches_its_definition():
    rng = np.random.default_rng(1)
    stats = rng.standard_normal((3, 41))
    p_agg, p_own, null_min = min_p_aggregate(stats)
    p = np.stack([_brute_pvalues(s) for s in stats])
    min_p = p.min(axis=0)
    assert p_agg == pytest.approx(np.mean(min_p <= min_p[0]))
    np.testing.assert_allclose(p_own, p[:, 0])
    np.testing.assert_allclose(null_min, min_p[1:])
    # one kernel: the aggregate is that kernel's own add-one p-value
    assert min_p_aggregate(stats[:1])[0] == pytest.approx(p[0, 0])


def test_adjusted_pvalues_count_relabelled_minima_and_never_undercut():
    rng = np.random.default_rng(2)
    stats = rng.standard_normal((4, 101))
    p_agg, p_own, null_min = min_p_aggregate(stats)
    raw = np.array([0.01, 0.05, 0.3, 1.0])
    adj = adjust_pvalues(raw, null_min)
    np.testing.assert_allclose(adj, [(1 + np.sum(null_min <= r)) / 101 for r in raw])
    assert np.all(adj >= raw - 1e-12)
    assert np.all(adjust_pvalues(p_own, null_min) >= p_agg - 1e-12)


def test_min_p_aggregate_holds_its_level_on_exchangeable_statistics():
    """Correlated kernels, exchangeable labellings: P(p_agg <= 0.05) must be at most 0.05 (+ MC error)."""
    rng = np.random.default_rng(3)
    sims, hits = 2000, 0
    for _ in range(sims):
        common = rng.standard_normal(100)
        stats = np.stack([common + s * rng.standard_normal(100) for s in (0.1, 0.5, 2.0)])
        hits += min_p_aggregate(stats)[0] <= 0.05
    assert 0.03 <= hits / sims <= 0.065


def test_labelling_statistic_is_the_scaled_larger_sign():
    pos, neg = np.array([2.0, 1.0, 1.0]), np.array([1.0, 4.0, 2.0])
    np.testing.assert_allclose(labelling_statistic(pos, neg), [2.0, 2.0, 1.0])
    # any number of keys (K-way: every comparison's two signs), each on its own median's scale
    third = np.array([3.0, 9.0, 3.0])
    np.testing.assert_array_equal(labelling_statistic(pos, neg, third), [2.0, 3.0, 1.0])


def test_modality_reads_unit_norm_rows_as_text():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((50, 8))
    assert agg.modality(x / np.linalg.norm(x, axis=1, keepdims=True)) == "text"
    assert agg.modality(x) == "image"


def _planted(seed=0, n=90):
    rng = np.random.default_rng(seed)
    t = rng.standard_normal((2 * n, 4))
    z = rng.standard_normal((2 * n, 6))
    z[:30, 0] += 3.0  # the test set answers some prompts differently
    return (t[:n], z[:n]), (t[n:], z[n:])


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_fit_reports_the_family_and_adjusts_the_fitted_kernels_pvalues():
    test, ref = _planted()
    res = PromptSplit(seed=0, permutations=99).fit(test, ref)
    a = res.significance["aggregation"]
    assert a["modality"] == "image"
    assert [k["name"] for k in a["kernels"]] == ["gaussian x1", "gaussian x0.5", "gaussian x2"]
    assert a["p"] <= 0.05 and "gaussian x1" in a["found_by"]
    raw = np.array(a["p_modes_fitted_kernel"])
    adj = np.array([m.p_value for m in res.modes])
    assert np.all(adj >= raw - 1e-12)
    assert min(adj) >= a["p"] - 1e-12  # another kernel may see more than the fitted one
    assert min(k["p_adjusted"] for k in a["kernels"]) == pytest.approx(a["p"])
    assert set(a["cost_s"]) == {"gaussian x0.5", "gaussian x2", "fitted kernel"}
    # the members' bandwidths: multiples of the pooled medians (the fitted kernel's own, reused)
    from promptprism.kernels.bandwidth import Bandwidth

    for i, key in enumerate(("prompt", "output")):
        pooled = [test[i], ref[i]]
        median = Bandwidth.parse("median").resolve_pooled(pooled, name=f"sigma_{key}", seed=0).value
        assert a["kernels"][1][f"sigma_{key}"] == pytest.approx(0.5 * median, rel=1e-12)
        assert a["kernels"][2][f"sigma_{key}"] == pytest.approx(2.0 * median, rel=1e-12)
    # without aggregation: the fitted kernel's own p-values, on the same permutations
    alone = PromptSplit(seed=0, permutations=99, aggregate="none").fit(test, ref)
    assert "aggregation" not in alone.significance
    np.testing.assert_allclose([m.p_value for m in alone.modes], raw)


def test_text_family_on_unit_norm_outputs_leaves_out_the_fitted_cosine():
    test, ref = _planted(1)
    unit = lambda s: (s[0], s[1] / np.linalg.norm(s[1], axis=1, keepdims=True))  # noqa: E731
    res = PromptSplit(kernel="cosine", seed=0, permutations=49).fit(unit(test), unit(ref))
    a = res.significance["aggregation"]
    assert a["modality"] == "text"
    assert [k["name"] for k in a["kernels"]] == ["cosine", "gaussian x1", "gaussian x2"]
    assert a["kernels"][0]["fitted"]


def test_aggregate_option_is_checked():
    with pytest.raises(OptionError, match="aggregate"):
        PromptSplit(aggregate="all")


@pytest.mark.parametrize("family", ["image", "text"])
def test_member_grams_equal_each_kernels_own_joint_gram(family):
    """The family's gaussians share one distance matrix: each Gram matrix is still its own joint_gram."""
    from promptprism.backend import NUMPY
    from promptprism.methods.promptsplit import core
    from promptprism.methods.promptsplit.family import member_grams

    rng = np.random.default_rng(6)
    emb = [rng.standard_normal((n, d)) + 5.0 for n in (40, 30) for d in (4, 6)]
    kernels = [{"kernel": kern, "sigma_prompt": None if c is None else c * 1.7,
                "sigma_output": None if c is None else c * 2.9} for _, kern, c in agg.FAMILIES[family]]
    kernels.append({"kernel": "gaussian", "sigma_prompt": 1.0, "sigma_output": 3.0})  # not a multiple
    grams = list(member_grams(emb, kernels, NUMPY, precision="float64"))
    singles = list(member_grams(emb, kernels, NUMPY))  # (the test's own: float32)
    for kernel, gram, single in zip(kernels, grams, singles, strict=True):
        want = core.joint_gram(*emb, kernel=kernel["kernel"], sigma_prompt=kernel["sigma_prompt"],
                               sigma_output=kernel["sigma_output"])
        np.testing.assert_allclose(gram, want, rtol=1e-12, atol=1e-14)
        assert single.dtype == np.float32
        np.testing.assert_allclose(single, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("family", ["image", "text"])
def test_member_grams_columns_are_the_gram_matrices_columns(family):
    """Above NULL_RANK rows the family's kernels are read at landmark columns only: G[:, L] of each
    kernel's own joint_gram (the shared gaussian distances too), by brute force."""
    from promptprism.backend import NUMPY
    from promptprism.methods.promptsplit import core
    from promptprism.methods.promptsplit.family import member_grams

    rng = np.random.default_rng(8)
    emb = [rng.standard_normal((n, d)) + 5.0 for n in (40, 30) for d in (4, 6)]
    kernels = [{"kernel": kern, "sigma_prompt": None if c is None else c * 1.7,
                "sigma_output": None if c is None else c * 2.9} for _, kern, c in agg.FAMILIES[family]]
    kernels.append({"kernel": "gaussian", "sigma_prompt": 1.0, "sigma_output": 3.0})  # not a multiple
    cols = np.array([0, 3, 39, 41, 69])
    for kernel, part in zip(kernels, member_grams(emb, kernels, NUMPY, precision="float64", columns=cols),
                            strict=True):
        want = core.joint_gram(*emb, kernel=kernel["kernel"], sigma_prompt=kernel["sigma_prompt"],
                               sigma_output=kernel["sigma_output"])[:, cols]
        assert part.shape == (70, 5)
        np.testing.assert_allclose(part, want, rtol=1e-12, atol=1e-14)


def test_landmark_factor_reproduces_a_gram_matrix_its_landmarks_span():
    """Nystrom from columns: exact when the landmark columns span G (rank 6 < 20 landmarks); the leading
    eigenvalues of a kernel matrix close to G's; the landmarks never read a label."""
    from promptprism.kernels.gram import gaussian_gram
    from promptprism.stats.subspaces import landmark_factor

    rng = np.random.default_rng(9)
    low = rng.standard_normal((300, 6))
    g = low @ low.T
    marks = np.sort(rng.choice(300, 20, replace=False))
    p = landmark_factor(g[:, marks], marks, 12)
    assert p.shape[0] == 300 and p.shape[1] <= 12
    np.testing.assert_allclose(p @ p.T, g, atol=1e-8 * np.abs(g).max())
    x = np.repeat(rng.standard_normal((6, 3)) * 4, 50, axis=0) + 0.3 * rng.standard_normal((300, 3))
    k = gaussian_gram(x, sigma=2.0)
    p = landmark_factor(k[:, marks], marks, 12)
    want = np.linalg.eigvalsh(k)[::-1][:6]  # six clusters: six large eigenvalues
    np.testing.assert_allclose(np.linalg.eigvalsh(p.T @ p)[::-1][:6], want, rtol=0.05)


def test_mode_findings_in_a_subspace_that_holds_the_whole_gram_match_the_exact_modes():
    """P P^T = G (a Gram matrix of rank 8 < the subspace's 12): the subspace's modes are G's own, with the
    same eigenvalues and the same top prompts as the exact spectrum's."""
    from promptprism.stats.batched_eigen import principal_factor

    rng = np.random.default_rng(7)
    n, m, eta = 60, 50, 0.9
    groups = np.r_[np.arange(n) % 5, np.arange(m) % 5]
    psi = rng.standard_normal((n + m, 8)) + np.eye(5, 8)[groups] * 3 * (np.arange(n + m) < 12)[:, None]
    gram = psi @ psi.T
    factor = principal_factor(("gram", gram), 12, seed=0)
    names = [f"p{i}" for i in range(5)]
    p = np.full(3, 0.01)
    exact = agg.mode_findings(("gram", gram), groups, n, m, eta=eta, p_pos=p, p_neg=p, names=names)
    sub = agg.mode_findings(("subspace", factor), groups, n, m, eta=eta, p_pos=p, p_neg=p, names=names)
    assert [f["side"] for f in sub] == [f["side"] for f in exact] and len(exact) == 6
    np.testing.assert_allclose([f["eigenvalue"] for f in sub], [f["eigenvalue"] for f in exact], rtol=1e-8)
    assert [f["top_prompts"] for f in sub] == [f["top_prompts"] for f in exact]
