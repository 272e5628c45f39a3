"""PromptSplit's permutation test: batched permuted spectra against brute force, the step-down p-values,
calibration under the null (exact and rff routes), power on planted differences, words and bad options."""

from __future__ import annotations

import json

import numpy as np
import pytest

from brute import two_set_weights
from promptprism import PairedSet, PromptSplit
from promptprism.backend import resolve_backend
from promptprism.cli import main
from promptprism.datasets import colored_digits, gaussian_mixture
from promptprism.errors import OptionError
from promptprism.methods.promptsplit import significance as sig
from promptprism.methods.promptsplit.comparisons import null_rows
from promptprism.methods.promptsplit.estimator import replace_config
from promptprism.methods.promptsplit.significance import permuted_labels, permuted_spectra
from promptprism.stats.batched_eigen import weighted_gram_extremes
from promptprism.stats.eigen import signed_extremes
from promptprism.stats.permutation import step_down_pvalues


def _brute_extremes(psi: np.ndarray, w: np.ndarray, n_top: int) -> tuple[np.ndarray, np.ndarray]:
    """One eigensolve per permutation of Lambda_k = sum_i w_ik psi_i psi_i^T (a sum of outer products)."""
    pos, neg = [], []
    for k in range(w.shape[1]):
        lam = sum(w[i, k] * np.outer(psi[i], psi[i]) for i in range(psi.shape[0]))
        p, q = signed_extremes(np.linalg.eigvalsh(lam), n_top)
        pos.append(p)
        neg.append(q)
    return np.array(pos), np.array(neg)


@pytest.mark.parametrize(("size", "dim", "device"), [
    (60, 40, "cpu"), (60, 40, "torch"), (300, 280, "cpu"),
    # torch's CPU batched matrix-vector products are slow (the 400-step exact run: ~8 CPU s); the others
    # about a second or more each: out of the quick loop
    *(pytest.param(*case, marks=pytest.mark.slow)
      for case in ((300, 280, "torch"), (400, 120, "cpu"), (400, 120, "torch")))])
def test_batched_permuted_spectra_equal_per_permutation_eigensolves(size, dim, device):
    """Dense (small) and Lanczos (large) paths, Gram and feature forms, against a plain eigensolve each;
    on numpy and on torch (CPU; skipped where torch is not installed)."""
    if device == "torch":
        pytest.importorskip("torch")
    rng = np.random.default_rng(size)
    psi = rng.standard_normal((size, dim)) * np.linspace(1.0, 0.2, dim)  # decaying spectrum, like kernels
    n = size // 2
    groups = np.arange(size) % 5
    labels = permuted_labels(groups, np.r_[np.ones(n, bool), np.zeros(size - n, bool)], 6, rng)
    w = two_set_weights(labels, n, size - n, 0.8)
    want = _brute_extremes(psi, w, 4)
    on = resolve_backend(device)
    for operand in (("gram", on.asarray(psi @ psi.T)), ("features", on.asarray(psi))):
        got = permuted_spectra(operand, w, 4, seed=1)
        for side in (0, 1):
            # the largest (what the test decides on) to float32 precision; the next ranks (the chart's band)
            # within 2 %, never above the truth (Ritz values interlace)
            np.testing.assert_allclose(got[side][:, 0], want[side][:, 0], rtol=1e-5)
            np.testing.assert_allclose(got[side][:, 1:], want[side][:, 1:], rtol=2e-2)
            assert (got[side] <= want[side] * (1 + 1e-5)).all()
    # run to the full dimension, the batched Lanczos is exact at every rank
    full = weighted_gram_extremes(on.asarray(psi @ psi.T), w, 4, steps=size, dtype=np.float64)
    np.testing.assert_allclose(full[0], want[0], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(full[1], want[1], rtol=1e-8, atol=1e-12)


def test_permuted_labels_keep_each_groups_test_count():
    rng = np.random.default_rng(0)
    groups = np.r_[np.repeat([0, 1, 2], [5, 3, 4]), np.repeat([0, 1, 2], [2, 6, 4])]
    is_test = np.r_[np.ones(12, bool), np.zeros(12, bool)]
    labels = permuted_labels(groups, is_test, 500, rng)
    for g, count in zip(range(3), (5, 3, 4), strict=True):
        np.testing.assert_array_equal(labels[groups == g].sum(axis=0), count)
    # every member of a group is 'test' with probability (test count) / (group size)
    freq = labels.mean(axis=1)
    np.testing.assert_allclose(freq[groups == 0], 5 / 7, atol=0.08)
    assert len({labels[:, k].tobytes() for k in range(500)}) > 400  # not the same draw over and over


@pytest.mark.parametrize("n_groups", [1, 3, 40])
def test_permuted_labels_by_selection_are_the_sorts_draws(monkeypatch, n_groups):
    """The selection path (a group's 'test' members: its smallest keys, one partition per relabelling) gives
    the sort's labellings bit for bit, from the same draws; with tied keys it defers to the sort."""
    rng = np.random.default_rng(n_groups)
    groups = rng.integers(0, n_groups, 3000)
    is_test = rng.random(3000) < 0.4
    selected = permuted_labels(groups, is_test, 60, np.random.default_rng(9))
    monkeypatch.setattr(sig, "SELECT_MAX_GROUPS", -1)  # (the sort, always)
    np.testing.assert_array_equal(selected, permuted_labels(groups, is_test, 60, np.random.default_rng(9)))

    class Coarse:  # keys on a grid of ten values: ties at every threshold
        def random(self, shape):
            return np.floor(np.random.default_rng(3).random(shape) * 10) / 10

    monkeypatch.setattr(sig, "SELECT_MAX_GROUPS", 16)
    tied = permuted_labels(groups, is_test, 20, Coarse())
    for g in range(n_groups):
        np.testing.assert_array_equal(tied[groups == g].sum(axis=0), is_test[groups == g].sum())


def test_step_down_pvalues_by_hand():
    null_pos = np.array([[1.0, 0.5], [2.0, 0.4], [3.0, 0.3], [4.0, 0.2]])
    null_neg = null_pos.copy()
    # a huge first positive mode, an unremarkable second one; the negative side: 2.5, 0.1
    p = step_down_pvalues({"+": np.array([10.0, 0.45]), "-": np.array([2.5, 0.1])},
                          {"+": null_pos[:, 0], "-": null_neg[:, 0]})
    p_pos, p_neg = p["+"], p["-"]
    # medians of the largest permuted values (observed included) put both signs on one scale; the first
    # step compares 10 with the max over both signs of the rank-1 null: none reaches it -> 1/5
    assert p_pos[0] == pytest.approx(1 / 5)
    # then -2.5 against the max over both signs of the scaled largest permuted value: 2 of 4 reach it
    assert p_neg[0] == pytest.approx(3 / 5)
    # 0.45 / 3 = 0.15 (positive rank 2): every permutation's max reaches it
    assert p_pos[1] == pytest.approx(1.0)
    # monotone along the step-down order
    assert p_pos[1] >= p_neg[0] and p_neg[1] >= p_pos[1]
    assert (p_pos <= 1).all() and (p_neg <= 1).all()


# ------------------------------------------------------------------------------------------ calibration
def _null_sets(rng: np.random.Generator, per_prompt: int = 10, n_prompts: int = 4, dim: int = 5):
    means = np.random.default_rng(123).standard_normal((n_prompts, dim)) * 2.0
    sets = []
    for name in ("test", "reference"):
        lab = np.repeat(np.arange(n_prompts), per_prompt)
        prompts = np.eye(n_prompts)[lab]
        outputs = means[lab] + rng.standard_normal((lab.size, dim))
        sets.append(PairedSet(prompts, outputs, prompts=[f"p{c}" for c in lab], name=name))
    return sets


@pytest.mark.slow
@pytest.mark.parametrize("method", ["exact", "rff"])
def test_calibration_under_the_null(method):
    """Over 250 data sets with test and reference from one distribution, the rate of runs with any mode
    significant at alpha = 0.05 (family-wise over both signs) lies in [0.02, 0.08]."""
    rng = np.random.default_rng(2024 if method == "exact" else 7)
    est = PromptSplit(method=method, n_modes=3, n_features=200, permutations=100, top_k=2, top_prompts=2)
    hits = []
    for i in range(250):
        test, ref = _null_sets(rng)
        res = PromptSplit(**{**est.__dict__, "seed": i}).fit(test, ref)
        hits.append(res.significance["n_significant"] > 0)
        assert res.significance["scheme"] == "within-prompt"
    rate = float(np.mean(hits))
    print(f"{method}: any mode significant in {rate:.3f} of the null data sets")
    assert 0.02 <= rate <= 0.08, rate


@pytest.mark.slow
def test_power_on_one_moved_component():
    """Planted A.6 mixture, one component moved: the test finds it in at least 90 % of data sets, and the
    significant modes are that component's."""
    found = []
    for seed in range(12):
        test, ref, differ = gaussian_mixture(1, per_component=15, seed=seed)
        res = PromptSplit(method="exact", n_modes=3, permutations=100, seed=seed).fit(test, ref)
        sig = [m for m in res.modes if m.significant]
        found.append(bool(sig))
        moved = f"component {differ[0]}"
        for m in sig:
            assert m.top_prompts[0].prompt == moved, (seed, m.side, m.rank)
        if sig:
            assert res.prompt_ranking[0]["prompt"] == moved
            assert res.ranking_basis == "significant modes"
    assert np.mean(found) >= 0.9, found


def _shifted_sets(rng: np.random.Generator, shift: float, per_prompt: int = 20):
    """_null_sets, with the test set's outputs of prompt 0 moved by ``shift`` along one axis (0: the null)."""
    test, ref = _null_sets(rng, per_prompt=per_prompt)
    outputs = np.array(test.output_embeddings)
    outputs[np.array(test.prompts) == "p0", 0] += shift
    return PairedSet(test.prompt_embeddings, outputs, prompts=test.prompts, name="test"), ref


@pytest.mark.slow
def test_subsampled_test_is_calibrated_and_has_power():
    """Above ``null_samples`` the test runs on a seeded subsample, exact there. Scaled down (80 of 160
    samples): over 400 null data sets the rate of any mode significant at alpha = 0.05 is alpha's (here
    0.045; 0.044-0.08 over 1,000 such sets; the rescaled null it replaces: 0-0.02, and no power at scale),
    and a moved prompt is found in most data sets (here 65 % at 2.5 noise s.d.)."""
    # the fitted kernel's own test (the kernel-family aggregate is calibrated in test_promptsplit_power.py)
    est = dict(method="exact", n_modes=3, permutations=100, top_k=2, top_prompts=2, null_samples=80,
               aggregate="none")
    rng = np.random.default_rng(7)
    hits = []
    for i in range(400):
        res = PromptSplit(**est, seed=i).fit(*_shifted_sets(rng, 0.0))
        s = res.significance
        assert s["null_samples"] == 80 and "subsample" in s["approximation"]
        assert len(s["subsample_eigenvalues"]["test"]) == sum(m.side == "test" for m in res.modes)
        hits.append(s["n_significant"] > 0)
    assert 0.025 <= np.mean(hits) <= 0.08, np.mean(hits)
    found = [PromptSplit(**est, seed=i).fit(*_shifted_sets(rng, 2.5)).significance["n_significant"] > 0
             for i in range(60)]
    assert np.mean(found) >= 0.5, np.mean(found)


# ------------------------------------------------------------------------------------------------ digits
@pytest.fixture(scope="module")
def digits():
    return colored_digits(per_prompt=20, seed=1)


@pytest.mark.slow
def test_digits_altered_prompts_are_significant_and_nothing_else(digits):
    altered = set(digits.altered_test) | set(digits.altered_reference)
    res = PromptSplit(seed=0, method="exact", n_modes=5, permutations=100).fit(digits.test, digits.reference)
    assert res.significance["n_significant"] >= 2
    for m in res.modes:
        if m.significant:
            assert m.top_prompts[0].prompt in altered
    top = [r["prompt"] for r in res.prompt_ranking[: len(altered)]]
    assert set(top) == altered
    assert sum(r["share"] for r in res.prompt_ranking if r["prompt"] not in altered) < 0.05
    # the unaltered prompts alone: the same models agree there, and no mode is significant
    sub = []
    for s in (digits.test, digits.reference):
        keep = np.flatnonzero([p not in altered for p in s.prompts])
        sub.append(PairedSet(s.prompt_embeddings[keep], s.output_embeddings[keep],
                             prompts=[s.prompts[i] for i in keep]))
    null = PromptSplit(seed=0, method="exact", n_modes=5, permutations=100).fit(*sub)
    assert null.significance["n_significant"] == 0
    assert null.prompt_ranking == [] and null.ranking_basis == "none: no mode is significant"
    assert null.significance["verdict"].startswith(
        "no significant difference between test and reference at alpha = 0.05; largest eigenvalue p = ")


# ---------------------------------------------------------------------------------------- words, options
def test_identical_sets_say_so():
    test, _ = _null_sets(np.random.default_rng(0))
    res = PromptSplit(method="exact").fit(test, test)
    assert res.identical and res.modes == [] and res.prompt_ranking == []
    assert "same pairs" in res.significance["verdict"] and "same pairs" in res.verdict


def test_result_json_fields(tmp_path):
    test, ref, _ = gaussian_mixture(1, per_component=15, seed=0)
    res = PromptSplit(method="exact", n_modes=3, permutations=50, alpha=0.1, seed=3).fit(test, ref)
    res.save(tmp_path)
    data = json.loads((tmp_path / "result.json").read_text())
    s = data["significance"]
    assert (s["test"], s["permutations"], s["alpha"], s["seed"]) == ("permutation", 50, 0.1, 3)
    assert s["correction"] == "max-statistic step-down (FWER)" and s["approximation"] is None
    assert len(s["null_top"]["test"]) == 3 and len(s["null_top"]["reference"]) == 3
    assert all(isinstance(m["p_value"], float) and isinstance(m["significant"], bool) for m in data["modes"])
    assert s["n_significant"] == sum(m["significant"] for m in data["modes"])
    # above the family-wise line means significant (the chart's band is that line)
    for m in res.modes:
        if abs(m.eigenvalue) > s["threshold"][m.side] * (1 + 1e-9):
            assert m.significant, m
    assert s["null_top"]["test"] == [s["threshold"]["test"]] * 3
    assert data["eigenvalues_scope"] == "all" and len(data["eigenvalues"]) > 6
    off = PromptSplit(method="exact", n_modes=3, permutations=0).fit(test, ref)
    assert off.significance == {} and all(m.p_value is None for m in off.modes)
    assert off.ranking_basis == "all reported modes (no significance test)"
    lanczos = PromptSplit(method="exact", n_modes=3, permutations=0, solver="lanczos").fit(test, ref)
    assert lanczos.eigenvalues_scope == "top 3 of each sign" and len(lanczos.eigenvalues) == 6


@pytest.mark.parametrize(("kwargs", "word"), [({"permutations": -1}, "permutations must be >= 0"),
                                              ({"alpha": 0}, "alpha"), ({"alpha": 1.5}, "alpha"),
                                              ({"permutations": 2.5}, "permutations"),
                                              ({"null_samples": 3}, "null_samples must be at least 4"),
                                              ({"null_samples": 0}, "null_samples must be > 0")])
def test_bad_options(kwargs, word):
    with pytest.raises(OptionError, match=word):
        PromptSplit(**kwargs)


@pytest.fixture()
def npz_files(tmp_path):
    rng = np.random.default_rng(0)
    out = []
    for name in ("test", "reference"):
        test, ref = _null_sets(rng, per_prompt=8)
        s = test if name == "test" else ref
        np.savez(tmp_path / f"{name}.npz", prompt_embeddings=s.prompt_embeddings,
                 output_embeddings=s.output_embeddings, prompts=np.array(s.prompts))
        out.append(tmp_path / f"{name}.npz")
    return out


@pytest.mark.parametrize(("argv", "flag"), [(["--permutations", "-1"], "--permutations"),
                                            (["--alpha", "0"], "--alpha"), (["--alpha", "1.5"], "--alpha"),
                                            (["--alpha", "x"], "--alpha")])
def test_cli_bad_test_options(tmp_path, npz_files, capsys, argv, flag):
    out = tmp_path / "out"
    code = main(["split", str(npz_files[0]), str(npz_files[1]), "--out", str(out), "--quiet", "--no-report",
                 *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and flag in err[0], err
    assert not (out / "result.json").exists()


def test_cli_no_significant_mode_prints_one_sentence(tmp_path, npz_files, capsys):
    out = tmp_path / "out"
    code = main(["split", str(npz_files[0]), str(npz_files[1]), "--out", str(out), "--no-report",
                 "--method", "exact", "--permutations", "100", "--modes", "3"])
    text = capsys.readouterr().out
    assert code == 0
    sentence = "no significant difference between test and reference at alpha = 0.05; largest eigenvalue p = "
    assert sentence in text
    assert "Prompts where the models disagree most" not in text
    assert "the others are not" in text
    data = json.loads((out / "result.json").read_text())
    assert data["prompt_ranking"] == [] and data["significance"]["n_significant"] == 0


def test_cli_identical_sets(tmp_path, npz_files, capsys):
    code = main(["split", str(npz_files[0]), str(npz_files[0]), "--out", str(tmp_path / "o"), "--no-report"])
    text = capsys.readouterr().out
    assert code == 0 and "same pairs" in text and "disagree most" not in text


def test_a_subsampled_test_draws_no_null_band_on_the_full_sets_chart():
    """The subsample's null quantiles are on the subsample's scale: the report keeps the significance flags
    but draws no band beside the full sets' eigenvalues; without a subsample the band is drawn."""
    from promptprism.report.significance import null_and_flags

    test, ref = _shifted_sets(np.random.default_rng(3), 3.0)
    est = PromptSplit(method="exact", n_modes=3, permutations=50, seed=0)
    full = est.fit(test, ref)
    assert full.significance["subsample_eigenvalues"] is None
    null, flags = null_and_flags(full, 0.05)
    assert null == full.significance["null_top"] and len(flags["test"]) == len(full.positive_modes)
    sub = replace_config(est, null_samples=100).fit(test, ref)
    assert sub.eigenvalues == full.eigenvalues and sub.significance["null_samples"] == 100
    null, flags = null_and_flags(sub, 0.05)
    assert null is None and flags["test"] == [m.significant for m in sub.modes if m.side == "test"]


@pytest.mark.parametrize(("n", "m"), [(1, 40), (40, 1), (2, 60)])
def test_subsample_of_a_tiny_set_takes_it_whole(n, m):
    """A set smaller than the subsample's share (even one row) is tested whole, the other set subsampled."""
    rng = np.random.default_rng(0)
    test = PairedSet(rng.standard_normal((n, 3)), rng.standard_normal((n, 2)), name="test")
    ref = PairedSet(rng.standard_normal((m, 3)), rng.standard_normal((m, 2)), name="reference")
    res = PromptSplit(method="exact", n_modes=2, permutations=20, null_samples=10).fit(test, ref)
    rows_t, rows_r = null_rows([n, m], 10, 0)
    assert rows_t.size == min(n, max(2, round(10 * n / (n + m)))) and np.unique(rows_t).size == rows_t.size
    # (the test draws its subsample in the two sets' canonical order, either argument order the same rows)
    either = {sum(r.size for r in null_rows(list(order), 10, 0)) for order in ((n, m), (m, n))}
    assert res.significance["null_samples"] in either and res.significance["null_samples"] <= 10 + min(n, m)
    assert all(0 < p <= 1 for p in (m.p_value for m in res.modes))


@pytest.mark.parametrize("rank", [None, 6])
def test_lanczos_steps_in_row_pieces_on_threads_equal_the_whole_block(monkeypatch, rank):
    """The batched Lanczos with its steps' row-wise work in pieces on threads (three here) gives every
    labelling the numbers of the whole block on one thread, against the brute force; also where every run
    breaks down (a rank-6 Gram matrix: fresh vectors drawn on the calling thread, in the same order)."""
    from promptprism.stats import batched_eigen

    rng = np.random.default_rng(3)
    size = 300
    psi = rng.standard_normal((size, rank or 280)) * np.linspace(1.0, 0.2, rank or 280)
    labels = permuted_labels(np.arange(size) % 5, np.r_[np.ones(150, bool), np.zeros(150, bool)], 9, rng)
    w = two_set_weights(labels, 150, 150, 0.8)
    gram = psi @ psi.T
    whole = [batched_eigen.weighted_gram_extremes(gram, w, 4, dtype=np.float64, seed=5),
             batched_eigen.weighted_factor_extremes(psi, w, 4, dtype=np.float64, seed=5)]
    calls = []
    monkeypatch.setattr(batched_eigen, "blas_thread_count", lambda: 3)
    monkeypatch.setattr(batched_eigen, "PIECE_MIN_DIM", 4)
    real = batched_eigen._row_pieces

    def counted(wt, dim):
        calls.append(wt.shape[0])
        return real(wt, dim)

    monkeypatch.setattr(batched_eigen, "_row_pieces", counted)
    pieces = [batched_eigen.weighted_gram_extremes(gram, w, 4, dtype=np.float64, seed=5),
              batched_eigen.weighted_factor_extremes(psi, w, 4, dtype=np.float64, seed=5)]
    assert calls  # (the Lanczos route ran, in pieces)
    want = _brute_extremes(psi, w, 4)
    for got, ref in zip(pieces, whole, strict=True):
        for side in (0, 1):
            np.testing.assert_allclose(got[side], ref[side], rtol=1e-12, atol=1e-12 * np.abs(ref[0]).max())
            np.testing.assert_allclose(got[side][:, 0], want[side][:, 0], rtol=1e-6)


@pytest.mark.slow  # (over 0.5 s)
def test_either_order_of_the_two_sets_gives_the_same_p_values():
    """split(a, b) and split(b, a) draw the same relabellings, mirrored: the same p-values, each mode's at
    the other sign (a borderline verdict flipped with the order on 1 in 6 planted data sets)."""
    lab = np.repeat(np.arange(8), 6)
    moved = 0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        t = rng.standard_normal((8, 3))[lab]
        names = [f"p{g}" for g in lab]
        a = PairedSet(t, rng.standard_normal((48, 2)) + 0.5 * (lab < 2)[:, None], prompts=names, name="a")
        b = PairedSet(t, rng.standard_normal((48, 2)), prompts=names, name="b")
        fit = PromptSplit(method="exact", n_modes=3, permutations=99, seed=5)
        ab, ba = fit.fit(a, b), fit.fit(b, a)
        assert ab.significance["p_largest"] == ba.significance["p_largest"]
        for m in ab.modes:
            other = next(x for x in ba.modes if x.rank == m.rank and x.side != m.side)
            assert m.p_value == pytest.approx(other.p_value, abs=1e-12)
        moved += 0.02 < ab.significance["p_largest"] < 0.98  # (p-values that draws could move)
    assert moved >= 3
