"""Mergeable accumulators: chunked updates and merges in any order equal the one-shot brute force."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptprism.errors import InputError
from promptprism.stats import CovarianceAccumulator, GroupSumAccumulator, TopKAccumulator


def _splits(n, cuts):
    edges = [0, *cuts, n]
    return list(itertools.pairwise(edges))


@pytest.fixture
def feats():
    return np.random.default_rng(0).standard_normal((37, 5))


# ------------------------------------------------------------------------------------ covariance
def test_covariance_chunks_equal_one_shot_equal_brute_force(feats):
    brute = sum(np.outer(f, f) for f in feats) / len(feats)
    one = CovarianceAccumulator(5).update(feats).compute()
    chunked = CovarianceAccumulator(5)
    for a, b in _splits(len(feats), [1, 2, 10, 10, 30]):  # includes an empty chunk
        chunked.update(feats[a:b])
    assert chunked.count == len(feats)
    np.testing.assert_allclose(one, brute, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(chunked.compute(), brute, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(one, one.T)


@pytest.mark.parametrize("cuts", [[5], [3, 20], [1, 2, 36], [12, 24, 30]])
def test_covariance_merge_any_split_any_order(feats, cuts):
    whole = CovarianceAccumulator(5).update(feats).compute()
    parts = [CovarianceAccumulator(5).update(feats[a:b]) for a, b in _splits(len(feats), cuts)]
    for perm in itertools.permutations(range(len(parts))):
        acc = CovarianceAccumulator(5)
        for i in perm:
            acc.merge(copy.deepcopy(parts[i]))
        assert acc.count == len(feats)
        np.testing.assert_allclose(acc.compute(), whole, rtol=1e-12, atol=1e-14)


def test_covariance_errors_and_reset(feats):
    acc = CovarianceAccumulator(5)
    with pytest.raises(InputError, match="empty"):
        acc.compute()
    with pytest.raises(InputError, match=r"\(n, 5\)"):
        acc.update(np.ones((3, 4)))
    with pytest.raises(InputError):
        acc.update(np.ones(5))
    with pytest.raises(InputError, match="dimension"):
        acc.merge(CovarianceAccumulator(4))
    acc.update(feats)
    acc.reset()
    assert acc.count == 0
    with pytest.raises(InputError, match="empty"):
        acc.compute()
    np.testing.assert_allclose(acc.update(feats[:3]).compute(), feats[:3].T @ feats[:3] / 3, atol=1e-14)


# ------------------------------------------------------------------------------------ group sums
def test_group_sums_match_loops():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 6, size=50)
    labels[labels == 4] = 5  # group 4 stays empty
    values = rng.standard_normal((50, 3))
    acc = GroupSumAccumulator(6, 3)
    for a, b in _splits(50, [7, 7, 33]):
        acc.update(labels[a:b], values[a:b])
    sums, counts = acc.compute()
    for g in range(6):
        rows = [values[i] for i in range(50) if labels[i] == g]
        np.testing.assert_allclose(sums[g], np.sum(rows, axis=0) if rows else np.zeros(3), atol=1e-12)
        assert counts[g] == len(rows)
    assert counts[4] == 0


def test_group_sums_merge_equals_whole():
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 4, size=40)
    values = rng.standard_normal((40, 2))
    whole = GroupSumAccumulator(4, 2).update(labels, values)
    a = GroupSumAccumulator(4, 2).update(labels[:15], values[:15])
    b = GroupSumAccumulator(4, 2).update(labels[15:], values[15:])
    merged = b.merge(a)
    np.testing.assert_allclose(merged.sums, whole.sums, atol=1e-12)
    np.testing.assert_array_equal(merged.counts, whole.counts)


def test_group_sums_dimension_mismatch():
    acc = GroupSumAccumulator(3, 2)
    with pytest.raises(InputError):
        acc.merge(GroupSumAccumulator(3, 4))
    with pytest.raises(InputError):
        acc.update(np.array([0, 1]), np.ones((2, 3)))


# ----------------------------------------------------------------------------------------- top-k
def _brute_topk(ids, scores, k):
    out_ids, out_scores = [], []
    for j in range(scores.shape[1]):
        order = sorted(range(len(ids)), key=lambda i, j=j: (-abs(scores[i, j]), ids[i]))[:k]
        out_ids.append([ids[i] for i in order])
        out_scores.append([scores[i, j] for i in order])
    return np.array(out_ids).T, np.array(out_scores).T


def test_topk_matches_full_sort_with_ties():
    rng = np.random.default_rng(3)
    ids = rng.permutation(60)
    # few distinct magnitudes and both signs: many ties, which must keep the smaller id
    scores = rng.integers(-4, 5, size=(60, 3)).astype(float)
    acc = TopKAccumulator(7, 3)
    for a, b in _splits(60, [11, 30, 31]):
        acc.update(ids[a:b], scores[a:b])
    got_ids, got_scores = acc.compute()
    exp_ids, exp_scores = _brute_topk(ids, scores, 7)
    np.testing.assert_array_equal(got_ids, exp_ids)
    np.testing.assert_array_equal(got_scores, exp_scores)


def test_topk_merge_equals_single():
    rng = np.random.default_rng(4)
    ids = np.arange(45)
    scores = np.round(rng.standard_normal((45, 2)), 1)
    single = TopKAccumulator(5, 2).update(ids, scores)
    parts = [TopKAccumulator(5, 2).update(ids[a:b], scores[a:b]) for a, b in _splits(45, [9, 20, 40])]
    for perm in itertools.permutations(parts):
        acc = TopKAccumulator(5, 2)
        for p in perm:
            acc.merge(p)
        np.testing.assert_array_equal(acc.compute()[0], single.compute()[0])
        np.testing.assert_array_equal(acc.compute()[1], single.compute()[1])


def test_topk_fewer_rows_than_k():
    acc = TopKAccumulator(10, 1).update(np.array([3, 1]), np.array([[0.5], [-2.0]]))
    ids, scores = acc.compute()
    np.testing.assert_array_equal(ids[:, 0], [1, 3])
    np.testing.assert_array_equal(scores[:, 0], [-2.0, 0.5])
    empty_ids, _ = TopKAccumulator(3, 2).compute()
    assert empty_ids.shape == (0, 2)


def test_topk_dimension_mismatch():
    acc = TopKAccumulator(3, 2)
    with pytest.raises(InputError):
        acc.update(np.arange(4), np.ones((4, 3)))
    with pytest.raises(InputError):
        acc.merge(TopKAccumulator(3, 5).update(np.arange(2), np.ones((2, 5))))


def test_mismatched_shapes_of_equal_size_are_not_reshaped_silently():
    # (3, 2) values hold as many numbers as 2 rows of dimension 3: that must be an error, not a reshape
    with pytest.raises(InputError):
        GroupSumAccumulator(3, 3).update(np.array([0, 1]), np.ones((3, 2)))
    with pytest.raises(InputError):
        GroupSumAccumulator(3, 1).update(np.array([0, 3]), np.ones((2, 1)))  # label out of range
    with pytest.raises(InputError):
        TopKAccumulator(2, 2).update(np.arange(3), np.ones((6, 1)))


# ------------------------------------------------------------------- property: any split, any order
@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.integers(1, 30), k=st.integers(1, 6), cuts=st.lists(st.integers(0, 30), max_size=4),
       order_seed=st.integers(0, 1000))
def test_merges_of_any_partition_equal_single_pass(n, k, cuts, order_seed):
    rng = np.random.default_rng(n * 1000 + k)
    feats = rng.standard_normal((n, 3))
    scores = rng.integers(-3, 4, size=(n, 2)).astype(float)  # ties on purpose
    labels = rng.integers(0, 4, size=n)
    bounds = _splits(n, sorted(min(c, n) for c in cuts))
    order = np.random.default_rng(order_seed).permutation(len(bounds))
    cov, top, grp = CovarianceAccumulator(3), TopKAccumulator(k, 2), GroupSumAccumulator(4, 3)
    for i in order:
        a, b = bounds[i]
        cov.merge(CovarianceAccumulator(3).update(feats[a:b]))
        top.merge(TopKAccumulator(k, 2).update(np.arange(a, b), scores[a:b]))
        grp.merge(GroupSumAccumulator(4, 3).update(labels[a:b], feats[a:b]))
    np.testing.assert_allclose(cov.compute(), feats.T @ feats / n, atol=1e-12)
    exp_ids, exp_scores = _brute_topk(np.arange(n), scores, k)
    np.testing.assert_array_equal(top.compute()[0], exp_ids)
    np.testing.assert_array_equal(top.compute()[1], exp_scores)
    np.testing.assert_allclose(grp.compute()[0], [feats[labels == g].sum(axis=0) for g in range(4)],
                               atol=1e-12)


def test_sums_accumulator_merges_sums_and_log_sums_in_any_order():
    from promptprism.stats import SumsAccumulator

    rng = np.random.default_rng(4)
    # terms that underflow one by one (exp(-800) == 0 in float64) still add up in log space
    logs = -800.0 + rng.normal(size=(6, 3))
    vals = rng.normal(size=(6, 2))
    parts = [SumsAccumulator().update(sums={"v": vals[i], f"only_{i % 2}": 1.0}, log_sums={"l": logs[i]})
             for i in range(6)]
    for order in ([0, 1, 2, 3, 4, 5], [5, 3, 1, 0, 2, 4]):
        acc = copy.deepcopy(parts[order[0]])
        for i in order[1:]:
            acc.merge(parts[i])
        sums, log_sums = acc.compute()
        np.testing.assert_allclose(sums["v"], vals.sum(0), rtol=1e-12)
        assert sums["only_0"] == 3.0 and sums["only_1"] == 3.0
        mx = logs.max(0)
        np.testing.assert_allclose(log_sums["l"], mx + np.log(np.exp(logs - mx).sum(0)), rtol=1e-13)
    assert np.all(np.isfinite(log_sums["l"]))


def test_minmax_accumulator_equals_brute_force():
    from promptprism.stats import MinMaxAccumulator

    x = np.random.default_rng(5).normal(size=(50, 4, 3))
    parts = [MinMaxAccumulator().update(x[a:b]) for a, b in _splits(50, [7, 20, 21])]
    acc = MinMaxAccumulator()
    for p in reversed(parts):
        acc.merge(p)
    lo, hi = acc.compute()
    assert np.array_equal(lo, x.min(0)) and np.array_equal(hi, x.max(0)) and acc.count == 50
    with pytest.raises(InputError):
        MinMaxAccumulator().compute()


def test_signed_weighted_updates_sum_to_the_covariance_difference():
    """C_a - 0.7 C_b accumulated in one running sum (weights 1/n_a and -0.7/n_b), chunks of either sign in
    any order, equals the brute-force difference; sum_outer(copy=False) is symmetric in place."""
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((70, 600)), rng.standard_normal((50, 600))
    want = a.T @ a / 70 - 0.7 * b.T @ b / 50
    for precision, tol in (("float64", 1e-13), ("float32", 1e-5)):
        acc = CovarianceAccumulator(600, precision=precision)
        acc.update(a[:30], 1 / 70).update(b[:20], -0.7 / 50).update(a[30:], 1 / 70).update(b[20:], -0.7 / 50)
        other = CovarianceAccumulator(600, precision=precision).update(a, 1 / 70)
        other.merge(CovarianceAccumulator(600, precision=precision).update(b, -0.7 / 50))
        for got in (acc.sum_outer(), other.sum_outer(copy=False)):
            np.testing.assert_allclose(got, want, atol=tol)
            np.testing.assert_array_equal(got, got.T)
        assert other.sum_outer(copy=False) is other.sum_upper and acc.count == 120


@pytest.mark.parametrize("size", [1, 7, 512, 513, 1100])
def test_mirror_upper_copies_the_upper_triangle_down(size):
    from promptprism.array_ops import mirror_upper

    a = np.random.default_rng(size).standard_normal((size, size))
    expected = np.triu(a) + np.triu(a, 1).T
    np.testing.assert_array_equal(mirror_upper(np.asfortranarray(a)), expected)
    np.testing.assert_array_equal(mirror_upper(a.copy()), expected)


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_sum_outer_skips_the_mirror_only_when_every_update_was_exactly_symmetric(monkeypatch, precision):
    """numpy's f.T @ f has bit-equal triangles (chunks of 1 to 400 rows, tiny and BLAS-sized), so the sum of
    such updates needs no mirror and equals the mirrored sum bit for bit; a sum given by the caller (its upper
    triangle counts, the lower may be anything) is still mirrored."""
    import promptprism.stats.accumulators as accumulators

    rng = np.random.default_rng(5)
    feats = rng.standard_normal((700, 90))
    acc = CovarianceAccumulator(90, precision=precision)
    for a, b in _splits(700, [1, 3, 50, 300]):
        acc.update(feats[a:b], weight=0.3 if a else 1.0)
    acc.merge(CovarianceAccumulator(90, precision=precision).update(feats[:17]))
    assert acc.exactly_symmetric
    np.testing.assert_array_equal(acc.sum_upper, acc.sum_upper.T)
    real_mirror = accumulators.mirror_upper
    mirrored = real_mirror(acc.sum_upper.copy(order="F"))
    calls = []
    monkeypatch.setattr(accumulators, "mirror_upper", lambda a: calls.append(1) or real_mirror(a))
    np.testing.assert_array_equal(acc.sum_outer(), mirrored)
    assert not calls
    upper = np.triu(rng.standard_normal((4, 4))) + np.tril(np.full((4, 4), 99.0), -1)
    given_sum = CovarianceAccumulator(4, sum_upper=upper.copy(order="F"), count=3)
    want = np.triu(upper) + np.triu(upper, 1).T
    np.testing.assert_array_equal(given_sum.sum_outer(), want)
    merged = CovarianceAccumulator(4).update(np.zeros((1, 4))).merge(given_sum)
    np.testing.assert_array_equal(merged.sum_outer(), want)
    assert len(calls) == 2
