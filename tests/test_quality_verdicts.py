"""Which model is closer to real data on each finding (issue 43): the restricted metrics against brute force,
the planted case (each model better on one family), calibration and power of the within-prompt test, the
command."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _cli_run import run_cli
from promptprism.data.paired import PairedSet
from promptprism.datasets import colored_digits
from promptprism.io import atomic_save_npz
from promptprism.methods.metrics import FindingQuality
from promptprism.methods.metrics.findings import (
    gold_scores,
    precision_scores,
    prompt_bootstrap,
    stratified_permutation_test,
)


def brute_precision(gen, ref, k):
    """Kynkäänniemi et al.'s indicator from the definition: inside some real k-NN ball (open)."""
    d_rr = np.linalg.norm(ref[:, None] - ref[None], axis=2)
    radii = np.sort(d_rr, axis=1)[:, k]  # the k-th nearest other sample (index 0 is the sample itself)
    d_gr = np.linalg.norm(gen[:, None] - ref[None], axis=2)
    return (d_gr < radii[None]).any(axis=1).astype(float)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_restricted_precision_is_the_definition(seed):
    rng = np.random.default_rng(seed)
    ref, gen = rng.normal(size=(60, 5)), rng.normal(0.4, 1.2, size=(45, 5))
    np.testing.assert_array_equal(precision_scores(gen, ref, 4), brute_precision(gen, ref, 4))


def test_gold_scores_are_the_nearest_same_prompt_cosine():
    rng = np.random.default_rng(3)
    gen, ref = rng.normal(size=(6, 4)), rng.normal(size=(5, 4))
    prompts, ref_prompts = ["a", "a", "b", "b", "c", "c"], ["a", "b", "b", "a", "d"]
    got = gold_scores(gen, prompts, ref, ref_prompts)
    unit = lambda x: x / np.linalg.norm(x)  # noqa: E731
    for i, p in enumerate(prompts):
        refs = [unit(ref[j]) for j, q in enumerate(ref_prompts) if q == p]
        expected = max(float(unit(gen[i]) @ r) for r in refs) if refs else np.nan
        np.testing.assert_allclose(got[i], expected, equal_nan=True)


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_the_within_prompt_test_is_calibrated_and_has_power():
    """Same closeness on every prompt (prompts differ): rejections at alpha 0.05 over 300 data sets stay
    within alpha + 2 s.e.; a 0.25 gap in precision is found nearly always."""
    rng = np.random.default_rng(0)
    prompts = np.repeat(np.arange(10), 8)

    def rejections(gap, runs):
        hits = 0
        for r in range(runs):
            base = rng.uniform(0.2, 0.9, size=10)[prompts]  # each prompt its own rate
            a = (rng.random(prompts.size) < base).astype(float)
            b = (rng.random(prompts.size) < np.clip(base - gap, 0, 1)).astype(float)
            _, p = stratified_permutation_test(a, prompts, b, prompts, permutations=99, seed=r)
            hits += p <= 0.05
        return hits / runs

    null = rejections(0.0, 300)
    assert null <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 300), null
    assert rejections(0.25, 40) >= 0.9


def test_the_within_prompt_p_value_is_the_exact_one_within_monte_carlo_error():
    """Against every within-stratum relabelling enumerated (strata of unequal make-up, one with a's samples
    only, which says nothing and is left out): the difference is D = sum_s w_s (mean_a,s - mean_b,s) /
    sum_s w_s with w_s = n_a,s n_b,s / (n_a,s + n_b,s), the test's statistic D studentised (Welch on each
    stratum; a side of one sample there takes its variance pooled over the strata), and the Monte Carlo
    p-value lies within 4 s.e. of the exact share of relabellings at least as extreme."""
    from itertools import combinations, product

    rng = np.random.default_rng(5)
    make_up = [(2, 1), (1, 3), (2, 0), (2, 2)]  # (a's samples, b's samples) per stratum
    a = [rng.random(na) for na, _ in make_up]
    b = [rng.random(nb) + 0.45 for _, nb in make_up]
    strata_a = np.concatenate([np.full(na, s) for s, (na, _) in enumerate(make_up)])
    strata_b = np.concatenate([np.full(nb, s) for s, (_, nb) in enumerate(make_up)])
    shared = [s for s, (na, nb) in enumerate(make_up) if na and nb]
    w = {s: make_up[s][0] * make_up[s][1] / sum(make_up[s]) for s in shared}

    def difference(a_parts, b_parts):
        return sum(w[s] * (a_parts[s].mean() - b_parts[s].mean()) for s in shared) / sum(w.values())

    def statistic(a_parts, b_parts):
        c = {s: w[s] / sum(w.values()) for s in shared}
        spread = 0.0
        for parts in (a_parts, b_parts):
            squares = sum(((parts[s] - parts[s].mean()) ** 2).sum() for s in shared)
            pooled = squares / sum(parts[s].size - 1 for s in shared)  # (for a side of one sample there)
            spread += sum(c[s] ** 2 * (parts[s].var(ddof=1) if parts[s].size > 1 else pooled) / parts[s].size
                          for s in shared)
        return difference(a_parts, b_parts) / np.sqrt(spread)

    observed = statistic(a, b)
    null = []
    choices = [combinations(range(make_up[s][0] + make_up[s][1]), make_up[s][0]) for s in shared]
    for pick in product(*choices):
        a_parts, b_parts = {}, {}
        for s, chosen in zip(shared, pick, strict=True):
            pooled, mask = np.r_[a[s], b[s]], np.isin(np.arange(sum(make_up[s])), chosen)
            a_parts[s], b_parts[s] = pooled[mask], pooled[~mask]
        null.append(statistic(a_parts, b_parts))
    exact = np.mean(np.abs(null) >= abs(observed) - 1e-12)
    k = 20000
    diff, p = stratified_permutation_test(np.concatenate(a), strata_a, np.concatenate(b), strata_b,
                                          permutations=k, seed=3)
    assert diff == pytest.approx(difference(a, b), abs=1e-12)
    assert 0.05 < exact < 0.95 and abs(p - exact) <= 4 * np.sqrt(exact * (1 - exact) / k), (p, exact)
    nothing = stratified_permutation_test(np.ones(2), np.array([0, 0]), np.ones(3), np.array([1, 1, 1]),
                                          permutations=99, seed=0)
    assert np.isnan(nothing).all()  # no stratum holds both: nothing to test


def test_a_model_closer_on_every_prompt_leads_however_its_samples_spread_over_prompts():
    """Simpson's paradox: A is closer on both prompts but has most of its samples on the harder one; pooled
    means read A 0.31 vs B 0.56. The within-prompt statistic reads A ahead, and the test finds it."""
    rng = np.random.default_rng(0)
    prompts_a = np.r_[np.zeros(15, int), np.ones(85, int)]
    prompts_b = np.r_[np.zeros(85, int), np.ones(15, int)]
    a = np.r_[np.ones(15), (rng.random(85) < 0.2)].astype(float)         # easy prompt 1.0, hard one 0.2
    b = np.r_[(rng.random(85) < 0.76), np.zeros(15)].astype(float)       # easy prompt ~0.76, hard one 0.0
    assert a.mean() < b.mean()
    diff, p = stratified_permutation_test(a, prompts_a, b, prompts_b, permutations=1999, seed=0)
    assert diff > 0.15 and p <= 0.05, (diff, p)


def test_the_bootstrap_interval_over_prompts_holds_the_mean():
    rng = np.random.default_rng(1)
    prompts = np.repeat(np.arange(12), 5)
    scores = rng.random(prompts.size)
    iv = prompt_bootstrap(scores, prompts, replicates=400, level=0.9, seed=0)
    assert iv.low < scores.mean() < iv.high and iv.level == 0.9


def test_on_one_prompt_the_bootstrap_resamples_its_samples():
    """One prompt (a finding of one class prompt): resampling prompts could not vary, so its samples are
    resampled: the interval of 5 hits in 40 is the binomial-like spread around 0.125, not [0.125, 0.125]."""
    scores = np.r_[np.ones(5), np.zeros(35)]
    iv = prompt_bootstrap(scores, np.zeros(40, int), replicates=2000, level=0.95, seed=0)
    assert iv.low < 0.125 < iv.high and 0.02 <= iv.low <= 0.05 and 0.2 <= iv.high <= 0.25
    assert iv.method == "bootstrap over samples within its one prompt (percentile)"


def test_on_two_prompts_the_bootstrap_resamples_samples_within_each():
    """Two prompts, one all hits and one all misses: resampling the prompts gives three values (0, 0.5, 1;
    the interval [0, 1]), and the same rule as the metrics' (fewer than 3 prompts: no interval over
    prompts) resamples the samples within each prompt: no spread at all where each prompt is constant, the
    spread of the sampling noise where it is not."""
    prompts = np.repeat([0, 1], 20)
    constant = prompt_bootstrap(np.r_[np.ones(20), np.zeros(20)], prompts, replicates=500, level=0.95, seed=0)
    assert (constant.low, constant.high) == (0.5, 0.5)
    assert constant.method == "bootstrap over samples within each of its 2 prompts (percentile)"
    noisy = np.r_[np.ones(15), np.zeros(5), np.ones(5), np.zeros(15)]
    iv = prompt_bootstrap(noisy, prompts, replicates=2000, level=0.95, seed=0)
    se = np.sqrt(0.75 * 0.25 / 20 + 0.25 * 0.75 / 20) / 2  # the mean of the two prompts' rates
    assert iv.low < 0.5 < iv.high and iv.high - iv.low == pytest.approx(2 * 1.96 * se, rel=0.2)


def _correct(seed: int, per_prompt: int = 20) -> PairedSet:
    """Digits drawn as every prompt asks (the demo's unaltered model on each prompt)."""
    other = colored_digits(per_prompt=per_prompt, seed=seed)
    wrong_in_test = set(other.altered_test)
    take_ref = np.array([p in wrong_in_test for p in other.reference.prompts])
    take_test = np.array([p not in wrong_in_test for p in other.test.prompts])
    return PairedSet(np.vstack([other.test.prompt_embeddings[take_test],
                                other.reference.prompt_embeddings[take_ref]]),
                     np.vstack([other.test.output_embeddings[take_test],
                                other.reference.output_embeddings[take_ref]]),
                     prompts=[p for p, t in zip(other.test.prompts, take_test, strict=True) if t]
                     + [p for p, t in zip(other.reference.prompts, take_ref, strict=True) if t], name="real")


@pytest.fixture(scope="module")
def digits_case():
    """The demo's planted case with real data: the test model draws grayscale digits for the colored prompts
    5-9 (where the reference is right) and the reference colored digits for the grayscale prompts 0-4 (where
    the test model is right); real data draws every prompt as asked."""
    return colored_digits(per_prompt=20, seed=0), _correct(5)


def test_each_model_is_closer_where_the_other_is_wrong(digits_case):
    data, real = digits_case
    findings = [{"id": "colored prompts 5-9", "prompts": list(data.altered_test)},
                {"id": "grayscale prompts 0-4", "prompts": list(data.altered_reference)},
                {"id": "unaltered prompts", "prompts": [
                    p for p in data.prompt_names if p not in {*data.altered_test, *data.altered_reference}]}]
    record = FindingQuality(permutations=499, bootstrap=200, seed=0).fit(
        findings, {"test": data.test, "reference": data.reference}, real)
    by_id = {e["id"]: e for e in record["findings"]}
    assert by_id["colored prompts 5-9"]["closer"] == "reference"
    assert by_id["grayscale prompts 0-4"]["closer"] == "test"
    assert by_id["unaltered prompts"]["closer"] is None  # both draw these as real data does
    wrong = by_id["colored prompts 5-9"]["models"]
    assert wrong["reference"]["mean"] > 0.5 > wrong["test"]["mean"]
    assert "reference is closer to the reference" not in record["verdict"]


@pytest.mark.slow  # a split, its verdicts and the command's output (~2.7 s)
def test_the_command_adds_the_verdicts_to_a_split_result(tmp_path, digits_case):
    """A test model wrong on the colored prompts 5-9 against a reference model right everywhere: both modes
    sit on those prompts, and on both the reference model is the closer to real data."""
    data, real = digits_case

    def save(path, s):
        atomic_save_npz(path, prompt_embeddings=s.prompt_embeddings, output_embeddings=s.output_embeddings,
                        prompts=np.array(s.prompts))
        return path

    t, r = save(tmp_path / "t.npz", data.test), save(tmp_path / "r.npz", _correct(7))
    x = save(tmp_path / "real.npz", real)
    code, _, err = run_cli("split", t, r, "--out", tmp_path / "s", "--quiet", "--permutations", "100")
    assert code == 0, err
    code, out, err = run_cli("quality", tmp_path / "s", "--real", x, "--permutations", "299", "--bootstrap",
                             "100")
    assert code == 0, err
    record = json.loads((tmp_path / "s" / "result.json").read_text())["quality"]
    closer = {e["id"]: e["closer"] for e in record["findings"]}
    assert closer and set(closer.values()) == {"reference"}, record["findings"]
    assert "reference is closer to real data" in out
    code, _, err = run_cli("quality", tmp_path / "s", "--real", x, "--permutations", "5")
    assert code == 2 and "--permutations" in err and len(err.strip().splitlines()) == 1


def test_real_data_on_other_prompts_is_refused_and_a_thin_reference_is_noted():
    """Real data whose prompts are none of the models' (here: upper-cased) is refused, as K models' ranking
    refuses it: scored against the whole reference, a finding read "reference is closer: 1.00 vs 0.00,
    p = 0.002". A finding with k or fewer real samples on its prompts is scored against the whole reference
    with a note that counts them."""
    from promptprism.errors import InputError

    rng = np.random.default_rng(0)
    prompts = [f"prompt {i}" for i in range(4) for _ in range(8)]

    def paired(names, shift=0.0):
        return PairedSet(np.zeros((len(names), 2)), rng.normal(size=(len(names), 3)) + shift, prompts=names)
    models = {"a": paired(prompts), "b": paired(prompts, 0.5)}
    finding = [{"id": "f", "prompts": ["prompt 0"]}]
    estimator = FindingQuality(permutations=99, bootstrap=50)
    with pytest.raises(InputError, match="shares no prompt with the models"):
        estimator.fit(finding, models, paired([p.upper() for p in prompts]))
    entry = estimator.fit(finding, models, paired(["prompt 0"] * 2 + prompts[8:]))["findings"][0]
    assert entry["note"].startswith("the reference has 2 sample(s) on these prompts, 5 or fewer"), entry


def test_k_models_are_ranked_by_their_pair_tests_and_a_third_model_changes_no_pair():
    """Three models; A is closer than B on both prompts but has most samples on the harder one (pooled: A
    reads lower). The means shown are within-prompt means over the prompts every model holds, and A ranks
    above B; each pair is tested on the prompts it holds, so A vs B is the same test with C or without it;
    and no separated pair is ranked against its own difference (C lacks prompt Y in the last fit)."""
    from promptprism.methods.metrics import FindingRanking

    rng = np.random.default_rng(0)

    def block(centre, n, hits, prompt):
        inside = centre + rng.normal(size=(hits, 4)) * 0.3
        return np.vstack([inside, centre + 6 + rng.normal(size=(n - hits, 4)) * 0.3]), [prompt] * n

    def paired(parts):
        outputs = np.vstack([o for o, _ in parts])
        prompts = sum((p for _, p in parts), [])
        return PairedSet(np.array([[1.0, 0.0] if p == "X" else [0.0, 1.0] for p in prompts]), outputs,
                         prompts=prompts)

    x, y = np.zeros(4), np.full(4, 20.0)
    real = paired([block(x, 40, 40, "X"), block(y, 40, 40, "Y")])
    models = {"A": paired([block(x, 15, 15, "X"), block(y, 85, 17, "Y")]),   # 1.0 and 0.2
              "B": paired([block(x, 85, 65, "X"), block(y, 15, 0, "Y")]),    # ~0.76 and 0.0
              "C": paired([block(x, 50, 25, "X"), block(y, 50, 5, "Y")])}    # 0.5 and 0.1
    assert np.mean([1.0] * 15 + [0.2] * 85) < np.mean([0.76] * 85 + [0.0] * 15)  # pooled: A below B
    entry = FindingRanking(permutations=999, bootstrap=100).fit(
        [{"id": "f", "prompts": ["X", "Y"]}], models, real)["findings"][0]
    means = {n: entry["models"][n]["mean"] for n in models}
    pooled = {n: entry["models"][n]["pooled_mean"] for n in models}
    assert means["A"] > means["B"] and pooled["A"] < pooled["B"]
    ranks = {r["name"]: r["rank"] for r in entry["ranking"]["rows"]}
    assert ranks["A"] == 1 and ranks["B"] > 1, entry["ranking"]
    ab = next(t for t in entry["pairs"] if (t["a"], t["b"]) == ("A", "B"))
    two = FindingRanking(permutations=999, bootstrap=100).fit(
        [{"id": "f", "prompts": ["X", "Y"]}], {"A": models["A"], "B": models["B"]}, real)["findings"][0]
    assert two["pairs"][0]["difference"] == ab["difference"] and two["pairs"][0]["p_value"] == ab["p_value"]
    models["C"] = paired([block(x, 50, 25, "X")])  # C holds X only: no prompt common to every model but X
    entry = FindingRanking(permutations=999, bootstrap=100).fit(
        [{"id": "f", "prompts": ["X", "Y"]}], models, real)["findings"][0]
    ranks = {r["name"]: r["rank"] for r in entry["ranking"]["rows"]}
    for t in entry["pairs"]:
        if t["p_adjusted"] is not None and t["p_adjusted"] <= 0.05:
            ahead, behind = (t["a"], t["b"]) if t["difference"] > 0 else (t["b"], t["a"])
            assert ranks[ahead] < ranks[behind], (t, ranks)
    assert "every model holds" in entry["note"]


def test_the_within_prompt_test_refuses_what_would_read_as_most_significant():
    """A NaN score, or a given weighting with a prompt one side lacks, made the statistic NaN, no null value
    reached it and p read 1 / (K + 1): the smallest p possible. Refused, naming the row or the stratum."""
    from promptprism.errors import InputError, OptionError

    with pytest.raises(InputError, match="a: score nan at row 1"):
        stratified_permutation_test(np.array([0.0, np.nan]), np.zeros(2), np.ones(2), np.zeros(2),
                                    permutations=99, seed=0)
    with pytest.raises(OptionError, match="weights: stratum 1"):
        stratified_permutation_test(np.array([0.0, 1.0]), np.zeros(2), np.array([0.0, 1.0, 1.0]),
                                    np.array([0, 1, 1]), permutations=99, seed=0, weights={0: 1.0, 1: 1.0})


def _unequal_spreads(seed: int, prompts: int, n_a: int, n_b: int) -> tuple:
    """Scores of equal means (0.5) on every prompt: a spread (0.5 + 0.25 N(0, 1), clipped), b tight."""
    rng = np.random.default_rng(seed)
    a = np.clip(0.5 + 0.25 * rng.standard_normal(prompts * n_a), 0.01, 0.99)
    b = 0.5 + 0.02 * rng.standard_normal(prompts * n_b)
    return a, np.repeat(np.arange(prompts), n_a), b, np.repeat(np.arange(prompts), n_b)


@pytest.mark.slow  # (over 0.5 s)
def test_equal_means_of_unequal_spreads_and_counts_are_not_called_different():
    """Behrens-Fisher: the raw difference's permutation test rejected 0.26 of such null sets at 0.05 (the
    few spread samples against many tight ones); studentised it holds its level (measured 0.058), and the
    other way round (many spread, few tight) it is not dead (the raw test rejected none)."""
    def rate(n_a: int, n_b: int, runs: int = 300) -> float:
        tests = (stratified_permutation_test(*_unequal_spreads(s, 10, n_a, n_b), permutations=199, seed=s)
                 for s in range(runs))
        return float(np.mean([p <= 0.05 for _, p in tests]))

    assert rate(4, 12) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 300)
    assert 0.02 <= rate(12, 4) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 300)


@pytest.mark.slow  # (over 0.5 s)
def test_spreads_that_vary_by_prompt_with_the_counts_are_studentised_per_prompt():
    """One spread per model pooled over the prompts rejected 0.21 of null sets where a model's spread and
    count vary together by prompt (2 wide samples on odd prompts, 8 tight ones on even); per prompt, 0.065."""
    rng = np.random.default_rng(2)
    hits = 0
    for t in range(300):
        n_a = np.where(np.arange(30) % 2, 2, 8)
        a = np.concatenate([rng.normal(0, 2.0 if s % 2 else 0.3, n) for s, n in enumerate(n_a)])
        b = rng.normal(0, 0.5, 30 * 8)
        _, p = stratified_permutation_test(a, np.repeat(np.arange(30), n_a), b, np.repeat(np.arange(30), 8),
                                           permutations=199, seed=t)
        hits += p <= 0.05
    assert hits / 300 <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 300)


def test_the_models_order_changes_no_test_and_no_judged_pair():
    """The pair tests run with each pair's models in name order (seeded by the pair's place in name order),
    and the judge's pairs are drawn the same way: the models given in any order give the same p-values, the
    mirrored differences and the same judged pairs (a judge whose answer is a function of the two outputs)."""
    import hashlib
    import re
    from types import SimpleNamespace

    from promptprism.methods.metrics import FindingPreference, FindingRanking

    rng = np.random.default_rng(4)
    prompts = [f"prompt {i}" for i in range(6) for _ in range(6)]

    def paired(shift):
        return PairedSet(np.zeros((len(prompts), 2)), rng.normal(size=(len(prompts), 3)) + shift,
                         prompts=prompts)
    models, real = {"b": paired(0.4), "a": paired(0.0), "c": paired(0.15)}, paired(0.0)
    finding = [{"id": "f", "prompts": prompts[:24]}]
    two = [FindingQuality(closeness="gold", permutations=99, bootstrap=50, seed=3).fit(finding, m, real)[
        "findings"][0]
           for m in ({"b": models["b"], "a": models["a"]}, {"a": models["a"], "b": models["b"]})]
    assert two[0]["p_value"] == two[1]["p_value"] and two[0]["difference"] == -two[1]["difference"]
    pairs = []
    for order in (("b", "a", "c"), ("c", "a", "b"), ("a", "b", "c")):
        entry = FindingRanking(closeness="gold", permutations=99, bootstrap=50, seed=3).fit(
            finding, {n: models[n] for n in order}, real)["findings"][0]
        pairs.append({tuple(sorted((t["a"], t["b"]))): (t["p_value"], t["difference"] * (1 if t["a"] < t["b"]
                                                                                          else -1))
                      for t in entry["pairs"]})
    assert pairs[0] == pairs[1] == pairs[2] and 0.05 < two[0]["p_value"] < 0.95
    assert all(0.02 < p < 0.98 for p, _ in pairs[0].values()), pairs[0]

    class ByContent:
        model = "fake"

        def chat(self, messages):
            first, second = re.findall(r'answer: """([^"]*)"""', messages[0]["content"])
            pick = hashlib.sha256(min(first, second).encode() + max(first, second).encode()).digest()[0] % 3
            return "tie" if pick == 0 else "first" if (pick == 1) == (first < second) else "second"

    texts = {n: SimpleNamespace(prompts=prompts, outputs=[f"{n} answer {i}" for i in range(len(prompts))])
             for n in ("a", "b", "c")}
    counts = []
    for order in (("b", "a", "c"), ("c", "a", "b")):
        record = FindingPreference(pairs=12, seed=5).fit(finding, {n: texts[n] for n in order}, ByContent())
        counts.append({tuple(sorted((c["a"], c["b"]))): (c["wins"], c["losses"]) if c["a"] < c["b"]
                       else (c["losses"], c["wins"]) for c in record["findings"][0]["comparisons"]})
    assert counts[0] == counts[1]
