"""CompCon's CLIP verification and scoring as pure functions, on embeddings where the truth is known."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism import InputError, OptionError
from promptprism.methods.compcon import verify


def test_similarity_matrix_is_brute_force_cosine_and_scale_free():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(7, 5)), rng.normal(size=(3, 5))
    s = verify.similarity_matrix(a, b)
    brute = [[x @ y / np.linalg.norm(x) / np.linalg.norm(y) for y in b] for x in a]
    np.testing.assert_allclose(s, brute, rtol=1e-12)
    np.testing.assert_allclose(verify.similarity_matrix(3 * a, 0.1 * b), s, rtol=1e-12)


def test_similarity_matrix_rejects_bad_embeddings():
    with pytest.raises(InputError, match="same CLIP model"):
        verify.similarity_matrix(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(InputError, match="all zeros"):
        verify.similarity_matrix(np.array([[1.0, 0], [0, 0]]), np.ones((1, 2)))
    with pytest.raises(InputError, match="NaN"):
        verify.similarity_matrix(np.array([[np.nan, 1.0]]), np.ones((1, 2)))


def test_calibrated_threshold_is_the_null_quantile():
    null = np.column_stack([np.arange(11) / 10.0, np.arange(11)[::-1] * 2.0])
    np.testing.assert_allclose(verify.calibrate_thresholds(null, 0.9), [0.9, 18.0])
    np.testing.assert_allclose(verify.calibrate_thresholds(null, 0.5), [0.5, 10.0])
    with pytest.raises(OptionError):
        verify.calibrate_thresholds(null, 1.0)
    with pytest.raises(InputError, match="empty"):
        verify.calibrate_thresholds(np.zeros((0, 2)))


def test_under_the_null_about_one_minus_q_of_images_pass():
    rng = np.random.default_rng(1)
    null = rng.normal(size=(20000, 4))
    fresh = rng.normal(size=(20000, 4))  # same distribution, other draws
    tau = verify.calibrate_thresholds(null, 0.9)
    rate = verify.has_attribute(fresh, tau).mean(axis=0)
    np.testing.assert_allclose(rate, 0.1, atol=0.01)


def test_has_attribute_is_strictly_above_threshold():
    s = np.array([[0.2, 0.5], [0.3, 0.1]])
    np.testing.assert_array_equal(verify.has_attribute(s, [0.2, 0.1]), [[False, True], [True, False]])


def test_prompt_fractions_and_missing_prompts():
    has = np.array([[1, 0], [1, 1], [0, 1], [1, 1]], dtype=bool)
    groups = [0, 0, 0, 2]
    f = verify.prompt_fractions(has, groups, 3)
    np.testing.assert_allclose(f[0], [2 / 3, 2 / 3])
    assert np.isnan(f[1]).all()
    np.testing.assert_allclose(f[2], [1, 1])
    with pytest.raises(InputError):
        verify.prompt_fractions(has, [0, 0, 0, 3], 3)


def test_diverging_matrix_rule_and_boundaries():
    fa = np.array([[0.5], [1.0], [0.4], [1.0], [np.nan]])
    fb = np.array([[0.0], [0.5], [0.0], [0.49], [0.0]])
    d = verify.diverging_matrix(fa, fb, 0.5)[:, 0]
    # A at exactly min_fraction shows it; B at exactly min_fraction also shows it; no images never diverges
    assert d.tolist() == [True, False, False, True, False]


def _synthetic(seed=0, n_prompts=40, per_prompt=4, dim=32, strength=(3.0, 3.0)):
    """Attribute k lives along direction e_k. A's images carry it on prompts S_k, B's never.

    |S_0| = 12, |S_1| = 6; attribute 2 is a hallucination (a random direction nobody carries).
    """
    rng = np.random.default_rng(seed)
    dirs = np.linalg.qr(rng.normal(size=(dim, dim)))[0][:, :3].T  # orthonormal rows
    truth = [set(range(0, 12)), set(range(20, 26))]
    emb_a, emb_b, ga, gb = [], [], [], []
    for p in range(n_prompts):
        base = rng.normal(size=dim)  # the prompt's content, shared by both models, free of the attributes
        base -= dirs.T @ (dirs @ base)
        for _ in range(per_prompt):
            xa = base + rng.normal(scale=0.5, size=dim)
            xb = base + rng.normal(scale=0.5, size=dim)
            for k, s in enumerate(truth):
                if p in s:
                    xa = xa + strength[k] * dirs[k] * np.sqrt(dim) / 2
            emb_a.append(xa)
            emb_b.append(xb)
            ga.append(p)
            gb.append(p)
    return np.array(emb_a), np.array(ga), np.array(emb_b), np.array(gb), dirs, truth


def test_known_truth_recovered_and_ranked():
    ea, ga, eb, gb, dirs, truth = _synthetic()
    sa, sb = verify.similarity_matrix(ea, dirs), verify.similarity_matrix(eb, dirs)
    tau = verify.calibrate_thresholds(sb)  # default: 0.95-quantile of B's images
    d = verify.diverging_prompts(sa, ga, sb, gb, tau, 40)
    for k in (0, 1):  # every true prompt found; by chance at most one more (P ~ 1.4% per prompt at q = 0.95)
        found = set(np.flatnonzero(d[:, k]).tolist())
        assert truth[k] <= found and len(found - truth[k]) <= 1
    assert d[:, 2].sum() <= 1  # the hallucinated attribute
    names = ["glowing runes", "fog", "hallucinated"]
    fa = verify.prompt_fractions(verify.has_attribute(sa, tau), ga, 40)
    fb = verify.prompt_fractions(verify.has_attribute(sb, tau), gb, 40)
    assert verify.rank_attributes(d, names, fa, fb) == [0, 1, 2]
    np.testing.assert_allclose(verify.attribute_scores(d)[:2], [12 / 40, 6 / 40])


def test_swapping_models_finds_nothing():
    ea, ga, eb, gb, dirs, _ = _synthetic(seed=3)
    sa, sb = verify.similarity_matrix(ea, dirs), verify.similarity_matrix(eb, dirs)
    # B as "A": B never shows the attributes, so almost no prompt diverges
    tau = verify.calibrate_thresholds(sa)
    d = verify.diverging_prompts(sb, gb, sa, ga, tau, 40)
    assert d[:, :2].sum() <= 2


def test_rank_ties_broken_by_gap_then_name():
    d = np.array([[1, 1, 1], [0, 0, 0]], dtype=bool)
    fa = np.array([[1.0, 1.0, 1.0], [0.4, 0.2, 0.2]])
    fb = np.zeros((2, 3))
    assert verify.rank_attributes(d, ["b", "z", "a"], fa, fb) == [0, 2, 1]
    assert verify.rank_attributes(d, ["b", "z", "a"]) == [2, 0, 1]


def test_description_score_is_the_diverging_fraction():
    assert verify.description_score([True, False, True, True]) == 0.75
    assert verify.description_score([]) == 0.0
    assert verify.description_score(np.zeros(25, bool)) == 0.0
