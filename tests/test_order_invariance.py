"""Giving the sets in another order gives the same answer: every seeded draw over sets or rows (the median
rule's pool, the test's subsample, relabellings, sketches, landmarks, Lanczos starts) is made in the sets'
canonical order, so ``split A B`` mirrors ``split B A`` and ``compare A B C`` equals ``compare C A B``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from promptprism import KWaySplit, PairedSet, PromptSplit
from promptprism.array_ops import canonical_order, edge_digest
from promptprism.kernels.bandwidth import pooled_rows
from promptprism.methods.promptsplit.comparisons import null_rows, null_rows_in_order
from promptprism.methods.promptsplit.labellings import Labellings
from promptprism.methods.promptsplit.relabel import canonical_positions
from promptprism.stats.batched_eigen import principal_factor
from promptprism.stats.subspace_spectra import column_signs


def test_canonical_positions_stack_the_rows_in_the_canonical_order():
    """Brute force: the rows stacked set after set in the given order, moved to their canonical positions,
    read set after set in the canonical order."""
    counts, order = np.array([3, 1, 4, 2]), np.array([2, 0, 3, 1])
    given = np.concatenate([np.full(c, k) * 10 + np.arange(c) for k, c in enumerate(counts)])
    placed = np.empty_like(given)
    placed[canonical_positions(counts, order)] = given
    want = np.concatenate([np.full(counts[k], k) * 10 + np.arange(counts[k]) for k in order])
    np.testing.assert_array_equal(placed, want)
    np.testing.assert_array_equal(canonical_positions(counts, np.arange(4)), np.arange(counts.sum()))


def test_the_median_rules_pool_does_not_depend_on_the_order_of_the_sets():
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((n, 3)) for n in (700, 900, 400)]
    pools = [np.sort(pooled_rows([arrays[i] for i in p], 1000, 4), axis=0)
             for p in itertools.permutations(range(3))]
    for pool in pools[1:]:
        np.testing.assert_array_equal(pool, pools[0])
    assert pools[0].shape == (1000, 3)


def test_the_tests_subsample_and_kway_relabellings_follow_each_row():
    """Three sets in every order: each set keeps the same subsampled rows, and every row the same model under
    every relabelling (the labels drawn at canonical positions, in canonical label order)."""
    counts = np.array([5, 7, 6])
    digests = [edge_digest(np.full((c, 2), float(k))) for k, c in enumerate(counts)]
    reference = None
    for perm in itertools.permutations(range(3)):
        perm = np.array(perm)  # (given position i holds set perm[i])
        order = canonical_order([digests[k] for k in perm])
        rows = null_rows_in_order(counts[perm], order, 12, seed=3)
        offsets = np.r_[0, np.cumsum(counts[perm])]
        groups = np.concatenate([np.arange(counts[k]) % 3 for k in perm])  # (each set: prompts 0-2)
        labels = Labellings(groups, counts[perm], 40, seed=9, order=order)
        by_set = {int(perm[i]): (rows[i], perm[labels.model[offsets[i]:offsets[i + 1]]]) for i in range(3)}
        if reference is None:
            reference = by_set
            assert sum(r.size for r, _ in by_set.values()) == 12
        for k in range(3):
            np.testing.assert_array_equal(by_set[k][0], reference[k][0])
            np.testing.assert_array_equal(by_set[k][1], reference[k][1])
    # with the given order canonical, the draws are those of before (null_rows, unpermuted)
    assert all(np.array_equal(a, b) for a, b in
               zip(null_rows_in_order(counts, np.arange(3), 12, 3), null_rows(counts, 12, 3), strict=True))


def test_the_sketched_factor_follows_its_rows_and_column_signs_ignore_them():
    """principal_factor with positions: the rows of G permuted (and the positions with them) give the same
    factor, rows permuted; column_signs is the same for a factor with rows permuted and columns negated."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((60, 5))
    g = np.exp(-0.1 * ((x[:, None] - x[None]) ** 2).sum(-1))
    perm = rng.permutation(60)
    at = np.arange(60)
    p0 = principal_factor(("gram", g), 8, seed=2, positions=at)
    p1 = principal_factor(("gram", g[np.ix_(perm, perm)]), 8, seed=2, positions=at[perm])
    np.testing.assert_allclose(p1 @ p1.T, (p0 @ p0.T)[np.ix_(perm, perm)], atol=1e-8)
    flip = np.where(rng.random(8) < 0.5, -1.0, 1.0)
    np.testing.assert_array_equal(column_signs(p0[perm] * flip) * flip, column_signs(p0))
    brute = [np.sign(col[max(range(col.size), key=lambda i: abs(col[i]))]) for col in p0.T]
    np.testing.assert_array_equal(column_signs(p0), brute)
    np.testing.assert_array_equal(column_signs(p0, transposed=np.ascontiguousarray(p0.T)), brute)


def _two_sets(n: int, seed: int) -> tuple[PairedSet, PairedSet]:
    rng = np.random.default_rng(seed)
    lab = np.arange(n) % 40
    t = rng.standard_normal((40, 6))[lab]
    names = [f"p{g}" for g in lab]
    shift = 0.6 * (lab < 8)[:, None]
    return (PairedSet(t, rng.standard_normal((n, 4)) + shift, prompts=names, name="a"),
            PairedSet(t, rng.standard_normal((n, 4)), prompts=names, name="b"))


@pytest.mark.slow
@pytest.mark.parametrize("method", ["exact", "rff"])
def test_split_either_way_round_mirrors_above_the_median_pool_and_the_dense_test(method):
    """1,200 rows a set: the median rule pools 1,000 of 2,400 rows, the exact test sketches its Gram
    matrix (above 1,000 rows) and the kernel family draws landmarks; before they were drawn in canonical
    order, sigma moved with the order (3rd digit of the distance) and deeper p-values by up to 0.04."""
    a, b = _two_sets(1200, 0)
    fit = PromptSplit(method=method, n_modes=3, permutations=99, seed=4, n_features=600)
    ab, ba = fit.fit(a, b), fit.fit(b, a)
    assert ab.config["sigma_prompt"] == ba.config["sigma_prompt"]
    assert ab.config["sigma_output"] == ba.config["sigma_output"]
    assert ab.distance == pytest.approx(ba.distance, rel=1e-6)
    mirrored = {(m.side, m.rank): m for m in ba.modes}
    other = {"test": "reference", "reference": "test"}
    for m in ab.modes:
        twin = mirrored[(other[m.side], m.rank)]
        assert m.eigenvalue == pytest.approx(-twin.eigenvalue, rel=1e-5, abs=1e-9)
        assert m.p_value == twin.p_value
    assert ab.significance["p_largest"] == ba.significance["p_largest"] < 0.05


def _three_sets(n: int, prompts: int, planted: int, shifts: tuple) -> list[PairedSet]:
    rng = np.random.default_rng(3)
    lab = np.arange(n) % prompts
    t = rng.standard_normal((prompts, 5))[lab]
    return [PairedSet(t, rng.standard_normal((n, 4)) + shift * (lab < planted)[:, None],
                      prompts=[f"p{g}" for g in lab], name=name)
            for name, shift in zip(("k1", "k2", "k3"), shifts, strict=True)]


def _same_in_every_order(sets: list, orders: list, statistic: str = "") -> dict:
    """{(a, b): (p, distance)} of compare on ``sets``, asserted the same (p exactly, distances to 1e-9),
    pair by name, in each of ``orders``; the first order's answer."""
    est = KWaySplit(method="exact", permutations=49, n_modes=2, seed=0)
    answers = []
    for perm in orders:
        res = est.fit([sets[i] for i in perm])
        assert statistic in res.significance["statistic"]
        at = {name: i for i, name in enumerate(res.names)}
        answers.append({(x, y): (res.pair_p_values[at[x]][at[y]], res.distances[at[x]][at[y]])
                        for x in at for y in at if x != y})
    for got in answers[1:]:
        for key, (p, d) in answers[0].items():
            assert got[key][0] == p
            assert got[key][1] == pytest.approx(d, rel=1e-9)
    return answers[0]


@pytest.mark.slow
def test_compare_gives_the_same_answer_in_any_order_of_its_sets():
    """Three sets, every order: the same pair distances and p-values, name by name (before, the K-way
    relabellings were drawn in the given order: here a pair's p moved from 0.02 to 0.04 with the order)."""
    orders = list(itertools.permutations(range(3)))
    answer = _same_in_every_order(_three_sets(120, 12, 4, (0.0, 2.0, 1.0)), orders)
    assert any(p is not None and p < 0.05 for p, _ in answer.values())


@pytest.mark.slow
def test_the_stable_bandwidth_scan_draws_its_rows_in_canonical_order():
    """sigma_output='stable' scans 500 rows a set: drawn in the given order, 800-row sets read sigma_output
    1.32 one way and 1.87 the other (distance 0.0029 against 0.0035)."""
    a, b = _two_sets(800, 1)
    fit = PromptSplit(method="exact", permutations=0, seed=4, sigma_output="stable")
    ab, ba = fit.fit(a, b), fit.fit(b, a)
    assert ab.config["sigma_output"] == ba.config["sigma_output"]
    assert ab.distance == pytest.approx(ba.distance, rel=1e-9)


@pytest.mark.slow
def test_compare_on_its_shared_subspace_route_gives_the_same_answer_in_any_order(monkeypatch):
    """Above SUBSPACE_MIN_ROWS, K-way draws the pivots of its shared factor over all rows: in canonical
    positions, the same pivots in any order of the sets (distances moved by up to 3e-4 before)."""
    from promptprism.methods.promptsplit import kway_subspace

    monkeypatch.setattr(kway_subspace, "SUBSPACE_MIN_ROWS", 1000)
    _same_in_every_order(_three_sets(500, 40, 13, (0.0, 0.8, 0.4)), [(0, 1, 2), (2, 0, 1)],
                         statistic="restricted to the test rows'")
