"""K-way PromptSplit: brute-force distances and spectra from SPEC, K = 2 against the pairwise estimator, the
K-way permutation test (calibration over 200 null data sets, power, attribution of a planted deviation)."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from brute import cosine_psi, lambda_matrix, nonzero, padded_sorted
from promptprism.data.paired import PairedSet
from promptprism.errors import InputError, OptionError
from promptprism.methods.promptsplit import PromptSplit
from promptprism.methods.promptsplit import comparisons as kc
from promptprism.methods.promptsplit.kway import KWaySplit
from promptprism.methods.promptsplit.significance import permuted_labels
from promptprism.results import load_result


def model_sets(seed: int, k: int, *, prompts: int = 8, per: int = 4, shift: float = 0.0, planted: int = 0,
               shifted_prompts: int = 2, dim: int = 3) -> list[PairedSet]:
    """K sets on the same prompts, outputs = f(prompt) + noise; set ``planted`` moves its outputs by
    ``shift`` on the first ``shifted_prompts`` prompts."""
    rng = np.random.default_rng(seed)
    t = rng.normal(size=(prompts, dim))
    lab = np.repeat(np.arange(prompts), per)
    out = []
    for i in range(k):
        o = np.tanh(t[lab] @ np.ones((dim, dim))) + 0.5 * rng.normal(size=(lab.size, dim))
        if shift and i == planted:
            o[lab < shifted_prompts, 0] += shift
        out.append(PairedSet(t[lab], o, prompts=[f"prompt {g}" for g in lab],
                             outputs=[f"m{i} #{j}" for j in range(lab.size)], name=f"m{i}"))
    return out


def test_k2_reproduces_the_pairwise_result_to_the_bit():
    a, b = model_sets(1, 2, prompts=6, per=10, shift=1.5)
    pair = PromptSplit(method="exact", permutations=40, n_modes=4, aggregate="none").fit(a, b)
    kway = KWaySplit(method="exact", permutations=40, n_modes=4).fit([a, b])
    got = kway.pairs[0]
    assert got.distance == pair.distance
    assert got.eigenvalues == pair.eigenvalues
    assert got.modes == pair.modes
    route_note = pair.significance.pop("route_note")  # the pairwise test's note on its route (None: exact)
    # the pairwise test's stopping record (k-way draws every permutation; here the pair did too)
    stopping = [pair.significance.pop(k) for k in ("statistic", "permutations_drawn", "stopping")]
    assert stopping[1] == 40 and not stopping[2]["stopped_early"]
    assert route_note is None and got.significance == pair.significance
    assert got.prompt_ranking == pair.prompt_ranking
    assert kway.distances[0][1] == pair.distance and kway.one_vs_rest == []
    assert kway.against_rest("m1") is kway.pairs[0]


def test_k2_random_features_match_the_pairwise_route_to_round_off():
    a, b = model_sets(2, 2, prompts=6, per=10, shift=1.5)
    opts = dict(method="rff", n_features=200, permutations=0, n_modes=3, precision="float64")
    pair = PromptSplit(**opts).fit(a, b)
    got = KWaySplit(**opts).fit([a, b]).pairs[0]
    np.testing.assert_allclose(got.distance, pair.distance, rtol=1e-10)
    np.testing.assert_allclose(got.eigenvalues, pair.eigenvalues, rtol=1e-9, atol=1e-12)


def test_distances_and_spectra_against_brute_force_lambda():
    """Cosine kernel (explicit psi = t/|t| (x) z/|z|): every pair's and every one-vs-rest Lambda built as
    sums of outer products, SPEC's weights (1/n_a, -eta/n_b; the pooled rest's -eta/n_rest)."""
    sets = model_sets(3, 3, prompts=4, per=3, shift=1.0)
    keep = np.arange(12) % 3 != 2  # unequal sizes: 8 rows, every prompt kept
    sets[2] = PairedSet(sets[2].prompt_embeddings[keep], sets[2].output_embeddings[keep] + 1.0,
                        prompts=[p for p, k in zip(sets[2].prompts, keep, strict=True) if k], name="m2")
    eta = 0.7
    res = KWaySplit(kernel="cosine", method="exact", eta=eta, permutations=0, n_modes=20).fit(sets)
    psi = [cosine_psi(s.prompt_embeddings, s.output_embeddings) for s in sets]
    for a in range(3):
        for b in range(3):
            lam = lambda_matrix(psi[a], psi[b], eta)
            np.testing.assert_allclose(res.distances[a][b], np.sum(lam * lam), rtol=1e-10)
        rest = np.concatenate([psi[b] for b in range(3) if b != a])
        lam = lambda_matrix(psi[a], rest, eta)
        np.testing.assert_allclose(res.rest_distances[a], np.sum(lam * lam), rtol=1e-10)
        got, want = padded_sorted(nonzero(res.one_vs_rest[a].eigenvalues), nonzero(np.linalg.eigvalsh(lam)))
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12)
        assert res.one_vs_rest[a].distance == pytest.approx(res.rest_distances[a], rel=1e-12)
    for r in res.pairs:
        a, b = (res.names.index(r.config[s]) for s in ("test", "reference"))
        lam = lambda_matrix(psi[a], psi[b], eta)
        got, want = padded_sorted(nonzero(r.eigenvalues), nonzero(np.linalg.eigvalsh(lam)))
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12)


def test_permuted_model_labels_are_the_pairwise_draws_and_keep_each_groups_counts():
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 5, size=60)
    labels = rng.integers(0, 2, size=60)
    two = kc.permuted_model_labels(groups, labels, 30, np.random.default_rng(7))
    ref = permuted_labels(groups, labels == 0, 30, np.random.default_rng(7))
    np.testing.assert_array_equal(two == 0, ref)
    four = kc.permuted_model_labels(groups, rng.integers(0, 4, size=60), 30, np.random.default_rng(7))
    for g in range(5):
        counts = [np.bincount(four[groups == g, p], minlength=4) for p in range(30)]
        assert all(np.array_equal(c, counts[0]) for c in counts)


def test_result_round_trips_through_result_json(tmp_path):
    res = KWaySplit(method="exact", permutations=19, n_modes=2).fit(model_sets(4, 3, shift=1.0))
    res.save(tmp_path)
    back = load_result(tmp_path / "result.json")
    assert back == res
    assert "KWayResult" in repr(res) and "pairs differ" in repr(res)


@pytest.mark.parametrize("sets, message", [
    (lambda s: s[:1], "at least 2 sets"),
    (lambda s: [s[0], s[1], s[0]], "hold the same pairs"),
    (lambda s: [s[0], PairedSet(s[1].prompt_embeddings, s[1].output_embeddings[:, :2], name="m1")],
     "dimensions"),
    (lambda s: [s[0], PairedSet(s[1].prompt_embeddings[4:], s[1].output_embeddings[4:],
                                prompts=s[1].prompts[4:], name="m1")], "m1 lacks 'prompt 0'"),
])
def test_bad_input_is_one_clear_error(sets, message):
    with pytest.raises(InputError, match=message):
        KWaySplit(permutations=0).fit(sets(model_sets(5, 2)))


def test_bad_options():
    # K-way gained the 'stable' rule (issue 39): it was refused here, it is accepted now
    assert KWaySplit(sigma_prompt="stable").bandwidth("prompt").rule == "stable"
    with pytest.raises(OptionError, match="distinct"):
        KWaySplit(permutations=0).fit(model_sets(5, 2), names=["a", "a"])


def test_a_planted_deviation_is_attributed_to_its_model_and_prompts():
    sets = model_sets(6, 4, prompts=6, per=6, shift=2.0, planted=2)
    with threadpool_limits(1):
        res = KWaySplit(method="exact", permutations=59, n_modes=2).fit(sets)
    dev = {d["model"]: d for d in res.deviations}
    assert [name for name, d in dev.items() if d["deviates"]] == ["m2"]
    assert {p["prompt"] for p in dev["m2"]["prompts"][:2]} == {"prompt 0", "prompt 1"}
    assert dev["m2"]["top_samples"] and all(s["model"] == "m2" for s in dev["m2"]["top_samples"])
    assert all(s["model"] != "m2" for s in dev["m2"]["others_samples"])
    assert sorted(res.significant_pairs) == [("m0", "m2"), ("m1", "m2"), ("m2", "m3")]
    assert "m2" in res.verdict


def _rejects(res, alpha: float = 0.05) -> bool:
    """Whether any mode of any comparison is significant (the family-wise event)."""
    ps = [m.p_value for c in res.pairs + res.one_vs_rest for m in c.modes if m.p_value is not None]
    return bool(ps) and min(ps) <= alpha


@pytest.mark.slow
def test_family_wise_false_positive_rate_under_the_null():
    """K = 3 identically distributed sets, 200 data sets, 59 permutations (p <= 0.05 <=> at most 2 of 59
    relabellings reach the observed statistic): the rate of any false positive over all modes of all 6
    comparisons stays in [0.02, 0.08]."""
    est = KWaySplit(method="exact", permutations=59, n_modes=2)
    with threadpool_limits(1):
        hits = [_rejects(est.fit(model_sets(1000 + s, 3, prompts=6, per=3))) for s in range(200)]
    rate = float(np.mean(hits))
    assert 0.02 <= rate <= 0.08, rate


@pytest.mark.slow
def test_power_against_a_deviation_in_one_of_three_models():
    est = KWaySplit(method="exact", permutations=59, n_modes=2)
    with threadpool_limits(1):
        hits = [_rejects(est.fit(model_sets(2000 + s, 3, prompts=6, per=3, shift=2.5, planted=1)))
                for s in range(30)]
    assert np.mean(hits) >= 0.8, np.mean(hits)


def _principal_subspace_test(monkeypatch, rank: int) -> None:
    """K >= 3 above ``kway.WHOLE_OPERAND_MAX_ROWS``: the test in a principal subspace of ``rank`` (and at
    most 2 ``rank``) directions, on data small enough for the suite."""
    from promptprism.methods.promptsplit import kway
    from promptprism.methods.promptsplit import significance as sig

    monkeypatch.setattr(kway, "WHOLE_OPERAND_MAX_ROWS", 0)
    monkeypatch.setattr(sig, "FULL_MAX_ROWS", 10)
    monkeypatch.setattr(sig, "NULL_RANK", rank)
    monkeypatch.setattr(sig, "NULL_MAX_RANK", 2 * rank)
    monkeypatch.setattr(sig, "FALLBACK_MAX_ROWS", 0)


def _p_values(res) -> list:
    return [[m.p_value for m in c.modes] for c in res.pairs + res.one_vs_rest]


def test_kway_subspace_statistic_equals_the_whole_operands_when_it_holds_every_direction(monkeypatch):
    """Cosine kernel on 3-d prompts and outputs: the joint Gram matrix has rank <= 9, so a 16-direction
    principal subspace holds all of it, and the statistic there is the whole operand's: the same p-values
    for every mode of every comparison, the statistic recorded as the subspace's."""
    sets = model_sets(3, 3, prompts=6, per=10, shift=3.0, planted=1)
    est = KWaySplit(method="exact", kernel="cosine", permutations=59, n_modes=2)
    whole = est.fit(sets)
    assert "every direction" in whole.significance["statistic"]
    _principal_subspace_test(monkeypatch, 16)
    sub = est.fit(sets)
    assert "principal subspace of the pooled samples of rank 16" in sub.significance["statistic"]
    assert _p_values(sub) == _p_values(whole)
    assert min(p for ps in _p_values(sub) for p in ps if p is not None) <= 0.05  # (a difference is found)


@pytest.mark.slow
def test_kway_subspace_statistic_calibration_and_power(monkeypatch):
    """The principal-subspace statistic (gaussian kernel: a subspace of 8-16 directions leaves energy out)
    keeps the family-wise false-positive rate near alpha on 150 null data sets (59 permutations), and
    finds a deviation in one of three models in at least 80 % of 30 data sets."""
    _principal_subspace_test(monkeypatch, 8)
    est = KWaySplit(method="exact", permutations=59, n_modes=2)
    with threadpool_limits(1):
        null = [_rejects(est.fit(model_sets(3000 + s, 3, prompts=6, per=4))) for s in range(150)]
        power = [_rejects(est.fit(model_sets(4000 + s, 3, prompts=6, per=4, shift=2.5, planted=1)))
                 for s in range(30)]
    assert "principal subspace" in est.fit(model_sets(3000, 3, prompts=6, per=4)).significance["statistic"]
    assert 0.01 <= float(np.mean(null)) <= 0.09, np.mean(null)
    assert float(np.mean(power)) >= 0.8, np.mean(power)


def _leading_by_hand(modes, alpha):
    """The modes 'leading' details: significant, or the largest |eigenvalue| of its sign (SPEC's modes are
    sorted by |eigenvalue| within a sign, so the first of each side)."""
    first = {side: max((m for m in modes if m.side == side), key=lambda m: abs(m.eigenvalue), default=None)
             for side in ("test", "reference")}
    return [bool(m.significant) or m is first[m.side] for m in modes]


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_pair_details_leading_lists_the_significant_and_largest_modes_of_each_pair_only():
    sets = model_sets(6, 4, prompts=6, per=6, shift=2.0, planted=2)
    opts = dict(method="exact", permutations=59, n_modes=4)
    with threadpool_limits(1):
        brief = KWaySplit(**opts).fit(sets)
        full = KWaySplit(**opts, pair_details="all").fit(sets)
    assert brief.config["pair_details"] == "leading" and full.config["pair_details"] == "all"
    assert brief.distances == full.distances and brief.pair_p_values == full.pair_p_values
    assert brief.deviations == full.deviations
    for b, f in zip(brief.one_vs_rest, full.one_vs_rest, strict=True):  # (the configs name the option)
        assert (b.modes, b.eigenvalues, b.significance) == (f.modes, f.eigenvalues, f.significance)
    assert any(m.significant for c in brief.pairs for m in c.modes)  # (the case this is about)
    shown = hidden = 0
    for b, f in zip(brief.pairs, full.pairs, strict=True):
        assert b.prompt_ranking == f.prompt_ranking and b.significance == f.significance
        assert {**b.config, "pair_details": "all"} == f.config
        want = _leading_by_hand(f.modes, 0.05)
        for mb, mf, keep in zip(b.modes, f.modes, want, strict=True):
            assert (mb.eigenvalue, mb.side, mb.rank, mb.p_value, mb.significant) == \
                   (mf.eigenvalue, mf.side, mf.rank, mf.p_value, mf.significant)
            assert mf.top_samples and mf.top_prompts  # 'all': every mode lists them
            if keep:
                assert mb == mf
                shown += 1
            else:
                assert mb.top_samples == mb.top_samples_other == mb.top_prompts == []
                hidden += 1
    assert shown and hidden
    assert all(m.top_samples and m.top_prompts for c in brief.one_vs_rest for m in c.modes)
    assert len(brief.to_json()) < len(full.to_json())
    assert brief.findings() == full.findings()  # the findings read significant modes only


def test_pair_details_leave_two_sets_whole_and_refuse_an_unknown_value():
    a, b = model_sets(1, 2, prompts=6, per=10, shift=1.5)
    res = KWaySplit(method="exact", permutations=0, n_modes=3).fit([a, b])
    assert all(m.top_samples and m.top_prompts for m in res.pairs[0].modes)  # K = 2: the pair is the rest
    with pytest.raises(OptionError, match="pair_details"):
        KWaySplit(pair_details="some")


def test_leading_modes_without_a_test_are_the_largest_of_each_sign():
    from promptprism.methods.promptsplit.kway_result import leading_modes

    vals = np.array([3.0, -2.5, 1.0, -0.5, 0.25])
    assert leading_modes(vals, None, None) == [True, True, False, False, False]
    assert leading_modes(vals, [0.5, 0.5, 0.01, 0.2, 0.04], 0.05) == [True, True, True, False, True]
    assert leading_modes(np.array([2.0, 1.0]), [None, None], 0.05) == [True, False]
    assert leading_modes(np.array([]), None, None) == []


def test_with_eta_other_than_one_only_the_tested_direction_carries_a_p_value():
    """C_a - eta C_b and C_b - eta C_a are different operators: the untested one holds no p-value (it was
    copied from the other), and 'separated_from' still reads the tested pair both ways."""
    sets = model_sets(3, 3, prompts=6, per=8, shift=2.0, planted=0)
    res = KWaySplit(method="exact", permutations=40, n_modes=3, eta=2.0).fit(sets)
    assert res.distances[0][1] != pytest.approx(res.distances[1][0])
    for a in range(3):
        for b in range(3):
            assert (res.pair_p_values[a][b] is not None) == (a < b)
    assert res.pair_p_values[0][1] <= 0.05  # (the planted shift: the tested direction separates them)
    assert "m0" in res.deviations[1]["separated_from"] and "m1" in res.deviations[0]["separated_from"]
    same = KWaySplit(method="exact", permutations=40, n_modes=3).fit(sets)
    assert same.pair_p_values[1][0] == same.pair_p_values[0][1] is not None


def test_the_distance_of_sets_that_agree_is_never_below_zero():
    """||Lambda||_F^2 expanded over block sums cancelled to about -1e-16 on a set against a shuffled,
    jittered copy; the same pairs in another order read exactly 0."""
    (a,) = model_sets(4, 1, prompts=6, per=8)
    order = np.random.default_rng(0).permutation(len(a))
    shuffled = PairedSet(a.prompt_embeddings[order], a.output_embeddings[order],
                         prompts=[a.prompts[i] for i in order])
    fit = PromptSplit(method="exact", permutations=0, n_modes=2)
    same = fit.fit(a, shuffled)
    assert same.identical and same.distance == 0.0
    for seed in range(8):
        jitter = np.random.default_rng(seed).normal(size=a.output_embeddings.shape) * 1e-9
        near = PairedSet(shuffled.prompt_embeddings, shuffled.output_embeddings + jitter,
                         prompts=shuffled.prompts)
        assert fit.fit(a, near).distance >= 0.0
    sums = np.array([[1.0, 1.0 + 1e-15], [1.0 + 1e-15, 1.0]])
    assert kc.comparison_distance(sums, np.array([1, 1]), (0, (1,)), 1.0) == 0.0
