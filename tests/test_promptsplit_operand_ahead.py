"""On two BLAS threads the rff route makes the permutation test's label-free operand (V on a thread of its
own, then P = psi(rows) V in pieces both threads claim) on one BLAS thread whatever the timing, while the
spectra, the scoring and the test's plan (its relabellings and kernel family) run: the test and every number
it prints are those of the test computed in turn, for the test's own rows and for others; no thread starts
when no test runs."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from promptprism import KWaySplit, PairedSet, PromptSplit
from promptprism.array_ops import blas_limits, blas_thread_count
from promptprism.methods.promptsplit import routes, testing
from promptprism.methods.promptsplit.operand_ahead import OperandAhead


def _sets(n: int = 600, k: int = 2, seed: int = 0) -> list[PairedSet]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((6, 5))
    out = []
    for i in range(k):
        c = np.arange(n) % 6
        t = (centres[c] + 0.3 * rng.standard_normal((n, 5))).astype(np.float32)
        z = (centres[(c + (i if i < 2 else 0) * (c < 2)) % 6] + 0.4 * rng.standard_normal((n, 5))).astype(
            np.float32)
        out.append(PairedSet(t, z, prompts=[f"p{g}" for g in c], name=f"model {i}"))
    return out


def _test_record(monkeypatch, threads: int, fit) -> tuple[dict, list[str]]:
    """The fit's significance record with the BLAS seen as having ``threads`` threads, and the names of the
    threads that computed the directions (and 'plan' for each test plan made ahead)."""
    ran: list[str] = []
    directions, plan = routes.FeatureRoute._directions, testing.plan_test

    def spy(self):
        ran.append(threading.current_thread().name)
        return directions(self)

    def planned(*args, **kwargs):
        ran.append("plan")
        return plan(*args, **kwargs)

    monkeypatch.setattr(routes, "blas_thread_count", lambda: threads)
    monkeypatch.setattr(routes.FeatureRoute, "_directions", spy)
    monkeypatch.setattr(testing, "plan_test", planned)
    return fit(), ran


def _two_way():
    test, ref = _sets()
    return PromptSplit(method="rff", n_features=400, n_modes=3, permutations=30, seed=3).fit(
        test, ref).significance


@pytest.mark.parametrize("other_rows", [False, True])
def test_operand_ahead_gives_the_test_of_the_operand_in_turn(monkeypatch, other_rows):
    in_turn, ran = _test_record(monkeypatch, 1, _two_way)
    assert ran == ["MainThread"] and in_turn["subspace"]["full"] is False  # (projected: 1,200 rows)
    if other_rows:  # the rows the route expected are not the test's: V is the same, P is the test's rows'
        rows_of = routes.FeatureRoute._test_rows
        monkeypatch.setattr(routes.FeatureRoute, "_test_rows",
                            lambda self: [r[:-1] for r in rows_of(self)])
    ahead, ran = _test_record(monkeypatch, 2, _two_way)
    assert sorted(ran) == ["plan", "promptprism-test-directions_0"]
    for key in ("p_largest", "n_significant", "null_top", "threshold", "subspace", "statistic",
                "permutations_drawn"):
        assert ahead[key] == in_turn[key], key
    for key in ahead["aggregation"]:  # (its cost_s: seconds)
        assert key == "cost_s" or ahead["aggregation"][key] == in_turn["aggregation"][key], key


def test_kway_operand_ahead_gives_the_same_test(monkeypatch):
    def fit():
        res = KWaySplit(method="rff", n_features=400, n_modes=2, permutations=20, seed=1).fit(_sets(500, 3))
        return [(c.significance["p_largest"], c.significance["null_top"])
                for c in res.pairs + res.one_vs_rest]

    in_turn, ran = _test_record(monkeypatch, 1, fit)
    assert ran == ["MainThread"]
    ahead, ran = _test_record(monkeypatch, 2, fit)
    assert ran == ["promptprism-test-directions_0"]  # (K-way: no plan ahead)
    assert ahead == in_turn


def test_no_operand_ahead_without_a_test(monkeypatch):
    test, ref = _sets()
    _, ran = _test_record(monkeypatch, 2, lambda: PromptSplit(method="rff", n_features=400, permutations=0,
                                                                seed=3).fit(test, ref))
    assert ran == []


def test_two_sets_distance_matrix_once_the_operand_pooled_the_reference_sum(monkeypatch):
    """K-way of two sets is the two-way arithmetic, whose test pools S_ref in place: the distance matrix
    read after the fit (while the operand's thread may be pooling it) is the one read before any pooling."""
    from promptprism.methods.promptsplit import comparisons as kc

    sets = _sets()

    def fit():
        return np.array(KWaySplit(method="rff", n_features=400, n_modes=2, permutations=20, seed=1,
                                  eta=0.7).fit(sets).distances)

    in_turn, ran = _test_record(monkeypatch, 1, fit)
    assert ran == ["MainThread"] and kc.TEST_VS_REFERENCE == (0, (1,))
    ahead, ran = _test_record(monkeypatch, 2, fit)
    assert ran == ["promptprism-test-directions_0"]
    np.testing.assert_allclose(ahead, in_turn, rtol=1e-10, atol=0)
    assert ahead[1, 1] > 0 and ahead[1, 0] != ahead[0, 1]  # (eta 0.7: C_ref in every entry)


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_directions_on_one_blas_thread_whatever_the_timing(monkeypatch):
    """OpenBLAS's products round differently on one and on two threads: V must be computed on one from its
    first product to its last, also when the fit's other steps end first (a slow V here), or two runs of
    the same command could print different tests."""
    seen: list[int] = []
    directions = routes.FeatureRoute._directions

    def slow(self):
        seen.append(blas_thread_count())
        time.sleep(0.5)  # (the spectra and the scoring end meanwhile)
        out = directions(self)
        seen.append(blas_thread_count())
        return out

    monkeypatch.setattr(routes.FeatureRoute, "_directions", slow)
    test, ref = _sets()
    with blas_limits(2):
        if blas_thread_count() != 2:
            pytest.skip("the BLAS cannot run two threads here")
        PromptSplit(method="rff", n_features=400, n_modes=3, permutations=10, seed=3).fit(test, ref)
        assert seen == [1, 1]
        assert blas_thread_count() == 2  # (restored)


def _pieces_data(seed: int = 0):
    rng = np.random.default_rng(seed)
    feats = [rng.standard_normal((n, 40)).astype(np.float32) for n in (700, 500)]
    rows = [np.sort(rng.choice(700, 600, replace=False)), np.sort(rng.choice(500, 450, replace=False))]
    return feats, rows, rng.standard_normal((40, 7)).astype(np.float32)


def test_operand_ahead_is_the_projection_of_the_rows_it_was_made_for():
    feats, rows, v = _pieces_data()
    ahead = OperandAhead(rows, feats, lambda: v)
    with ahead.start():
        time.sleep(0.05)  # (the fit's steps)
    got_v, p = ahead.operand(rows)
    want = np.concatenate([feats[k][r] for k, r in enumerate(rows)]) @ v
    assert got_v is not None and p.dtype == np.float32 and p.shape == (1050, 7)
    np.testing.assert_allclose(p, want, rtol=1e-5, atol=1e-5)
    assert ahead.operand([r[:-1] for r in rows])[1] is None  # (other rows: V only)


def test_operand_ahead_raises_what_v_raised_and_stops_when_the_fit_fails():
    feats, rows, v = _pieces_data()

    def broken():
        raise RuntimeError("no directions")

    ahead = OperandAhead(rows, feats, broken)
    with ahead.start():
        pass
    with pytest.raises(RuntimeError, match="no directions"):
        ahead.operand(rows)
    before = blas_thread_count()
    ahead = OperandAhead(rows, feats, lambda: v)
    with pytest.raises(ValueError, match="the fit"), ahead.start():
        raise ValueError("the fit")
    assert ahead._done.done() and blas_thread_count() == before  # (waited for; the BLAS given back)
