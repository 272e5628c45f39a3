"""MMD² on two sets of the same prompts: each set's within-set term weighted as its prompt design is
(``methods/metrics/design.py``). Checked against the design-weighted statistic written out from kernel
blocks, for bias and interval coverage under the null and against a known population value, and left as the
plain U-statistic where the sets' prompts differ."""

from __future__ import annotations

import numpy as np
import pytest

import promptprism as pp
from promptprism.methods.metrics import ReferenceMetrics
from promptprism.methods.metrics.design import design_correction
from promptprism.methods.metrics.kid import conditional_variance

SIGMA = 1.5
COUNTS = [5, 2, 3, 7, 2, 4]


def _gauss(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.exp(-((u[:, None, :] - v[None, :, :]) ** 2).sum(-1) / (2 * SIGMA**2))


def _design_within(x: np.ndarray, labels: np.ndarray) -> float:
    """sum_{s != t} pi_s pi_t kappa_st + sum_s pi_s^2 kappa_ss, kappa from the kernel's blocks (a prompt of
    one row: kappa_ss = the mean over all pairs of distinct rows)."""
    k, n = _gauss(x, x), x.shape[0]
    every = (k.sum() - np.trace(k)) / (n * (n - 1))
    codes, counts = np.unique(labels, return_counts=True)
    total = 0.0
    for s, n_s in zip(codes, counts, strict=True):
        for t, n_t in zip(codes, counts, strict=True):
            block = k[np.ix_(labels == s, labels == t)]
            if s != t:
                kappa = block.mean()
            else:
                kappa = every if n_s == 1 else (block.sum() - np.trace(block)) / (n_s * (n_s - 1))
            total += n_s * n_t / n**2 * kappa
    return float(total)


def _set(labels: np.ndarray, seed: int, shift: float = 0.0, prompts: int | None = None) -> pp.PairedSet:
    centres = np.random.default_rng(7).normal(size=(labels.max() + 1, 3)) * 2
    rng = np.random.default_rng(seed)
    out = centres[labels] + 0.7 * rng.normal(size=(labels.size, 3))
    out[labels < 2] += shift
    return pp.PairedSet(np.eye(prompts or labels.max() + 1)[labels], out, prompts=[f"p{p}" for p in labels])


def test_mmd2_on_the_same_prompts_is_the_design_weighted_statistic_written_out():
    labels = np.repeat(np.arange(len(COUNTS)), COUNTS)
    a, b = _set(labels, 1, shift=0.4), _set(labels[::-1].copy(), 2)  # (the same design in another order)
    x, y = a.output_embeddings, b.output_embeddings
    want = _design_within(x, labels) + _design_within(y, labels[::-1]) - 2 * _gauss(x, y).mean()
    got = ReferenceMetrics(bootstrap=0, subsets=1, subset_size=labels.size,
                           mmd_sigma=SIGMA).fit([a], b).models[0].mmd2
    assert got == pytest.approx(want, abs=1e-12)
    u_stat = (_gauss(x, x).sum() - np.trace(_gauss(x, x))) / (x.shape[0] * (x.shape[0] - 1))
    assert abs(_design_within(x, labels) - u_stat) > 1e-4  # (the weighting moves the number here)
    # the correction alone, with a prompt of one row (its own pairs unseen: taken at the mean of all pairs)
    single = np.repeat(np.arange(4), [5, 1, 3, 6])
    z = _set(single, 4).output_embeddings
    u_z = (_gauss(z, z).sum() - np.trace(_gauss(z, z))) / (z.shape[0] * (z.shape[0] - 1))
    got = design_correction(z, single, kernel="gaussian", sigma=SIGMA, cap=100)
    assert got == pytest.approx(_design_within(z, single) - u_z, abs=1e-12)


def test_sets_of_other_prompts_keep_the_u_statistic():
    gen, ref = np.repeat(np.arange(4), 6), np.repeat(np.arange(4, 8), 6)
    a, b = _set(gen, 1, prompts=8), _set(ref, 2, prompts=8)
    x, y = a.output_embeddings, b.output_embeddings

    def u(v: np.ndarray) -> float:
        k = _gauss(v, v)
        return (k.sum() - np.trace(k)) / (v.shape[0] * (v.shape[0] - 1))

    got = ReferenceMetrics(bootstrap=0, subsets=1, subset_size=gen.size,
                           mmd_sigma=SIGMA).fit([a], b).models[0].mmd2
    assert got == pytest.approx(u(x) + u(y) - 2 * _gauss(x, y).mean(), abs=1e-12)


def test_the_correction_is_zero_without_pairs_of_a_prompt_or_with_one_prompt():
    x = np.random.default_rng(0).normal(size=(12, 3))
    assert design_correction(x, None, kernel="gaussian", sigma=1.0) == 0.0
    assert design_correction(x, np.arange(12), kernel="gaussian", sigma=1.0) == 0.0
    assert design_correction(x, np.zeros(12, int), kernel="gaussian", sigma=1.0) == 0.0


def test_the_conditional_variance_is_each_prompts_own_spread():
    h = np.array([1.0, 3.0, 10.0, 14.0, 5.0])
    groups = np.array([0, 0, 1, 1, 2])  # (prompt 2: one row, taken about the mean of all rows)
    want = ((1 + 1) * 2 + (4 + 4) * 2 + (5 - h.mean()) ** 2) / 25
    assert conditional_variance(h, groups) == pytest.approx(want)


def _draws(prompts: int, per_prompt: int, runs: int, shift: float) -> list:
    labels = np.repeat(np.arange(prompts), per_prompt)
    fitter = ReferenceMetrics(bootstrap=0, mmd_sigma=SIGMA)
    return [fitter.fit([_set(labels, 2 * r + 1, shift)], _set(labels, 2 * r + 2)).models[0]
            for r in range(runs)]


@pytest.mark.slow  # (about 3 s)
def test_two_draws_of_one_model_read_zero_on_average_and_the_interval_covers_it():
    runs = _draws(10, 8, 200, shift=0.0)
    values = np.array([m.mmd2 for m in runs])
    se = values.std(ddof=1) / np.sqrt(values.size)
    assert abs(values.mean()) < 3 * se, (values.mean(), se)  # the U-statistic read -25 se here
    assert 0.3 < np.mean(values < 0) < 0.7
    covered = np.mean([m.intervals["mmd2"]["low"] <= 0 <= m.intervals["mmd2"]["high"] for m in runs])
    assert covered >= 0.92  # (measured 0.985; the U-statistic's held 0 in 4 of 40)


@pytest.mark.slow  # (about 6 s)
def test_a_difference_on_some_prompts_is_estimated_without_bias_and_covered():
    labels = np.repeat(np.arange(10), 300)
    population = ReferenceMetrics(bootstrap=0, subsets=1, subset_size=labels.size, mmd_sigma=SIGMA).fit(
        [_set(labels, 10**6, 0.8)], _set(labels, 10**6 + 1)).models[0].mmd2
    runs = _draws(10, 8, 200, shift=0.8)
    values = np.array([m.mmd2 for m in runs])
    se = values.std(ddof=1) / np.sqrt(values.size)
    assert abs(values.mean() - population) < 4 * se + 2e-4, (values.mean(), population, se)
    covered = np.mean([m.intervals["mmd2"]["low"] <= population <= m.intervals["mmd2"]["high"]
                       for m in runs])
    assert covered >= 0.88  # (measured 0.91-0.96 at 80 rows a set; 200 runs: +-0.02)
    found = np.mean([m.intervals["mmd2"]["low"] > 0 for m in _draws(10, 8, 50, shift=2.5)])
    assert found > 0.9  # power: a larger difference is seen (measured 1.0; 0.49 at 1.5, 0.01 at 0.8)


def test_a_set_of_one_row_per_prompt_keeps_the_u_statistic_and_its_flag():
    """Real data often holds one row per prompt: its own pairs of a prompt are not seen, so the design's
    weighting cannot be taken; MMD² stays the U-statistic, flagged (it read -3 sd, unflagged)."""
    gen_labels, ref_labels = np.repeat(np.arange(6), 4), np.arange(6)
    a, b = _set(gen_labels, 1), _set(ref_labels, 2)
    x, y = a.output_embeddings, b.output_embeddings

    def u(v: np.ndarray) -> float:
        k = _gauss(v, v)
        return (k.sum() - np.trace(k)) / (v.shape[0] * (v.shape[0] - 1))

    fit = ReferenceMetrics(bootstrap=0, subsets=1, subset_size=6, mmd_sigma=SIGMA).fit([a], b).models[0]
    assert "mmd2" in fit.interval_validity["not_calibrated"]
    assert "a prompt in one row" in fit.interval_validity["reason"]
    same = ReferenceMetrics(bootstrap=0, subsets=1, subset_size=6, mmd_sigma=SIGMA).fit(
        [_set(ref_labels, 3)], b).models[0]
    want = u(_set(ref_labels, 3).output_embeddings) + u(y) - 2 * _gauss(_set(ref_labels, 3).output_embeddings,
                                                                      y).mean()
    assert same.mmd2 == pytest.approx(want, abs=1e-12)  # (one row a prompt on both sides: the U-statistic)
    assert x.shape[0] == 24
