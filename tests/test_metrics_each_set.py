"""K generated sets against one reference with the reference's own k-NN pass made once
(:func:`.prdc.neighbour_indicators_each`, :meth:`ReferenceMetrics.fit` of a list): every indicator, radius and
KID/MMD subset sum is exactly what each set gets alone, whatever the sets' sizes, spreads and duplicates."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from promptprism.methods.metrics import kid as kid_module
from promptprism.methods.metrics.estimator import ReferenceMetrics
from promptprism.methods.metrics.prdc import neighbour_indicators, neighbour_indicators_each


def _sets(seed: int = 0):
    rng = np.random.default_rng(seed)
    ref = rng.normal(size=(900, 16)).astype(np.float32)
    # the second set's spread changes the reference form's power-of-two scale for its memberships (the sets
    # after it must still see the reference at its own scale); the third repeats rows; the last is smaller
    spreads, sizes = (1.0, 40.0, 1.1, 0.9), (900, 700, 900, 300)
    fakes = [(rng.normal(size=(n, 16)) * s).astype(np.float32) for n, s in zip(sizes, spreads, strict=True)]
    fakes[2][:40] = fakes[2][40:80]
    return ref, fakes


def _gather(x, ref):
    return kid_module.gather_subsets(x, ref, kernel="gaussian", sigma=4.0, n_subsets=5, subset_size=200,
                                     seed=1)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_each_set_gets_what_it_gets_alone(threads, monkeypatch):
    import importlib

    array_ops = importlib.import_module("promptprism.array_ops")
    prdc = importlib.import_module("promptprism.methods.metrics.prdc")  # (the module, not the function)

    # (the batches and the threads both follow the count; every set on threads, however small)
    monkeypatch.setattr(array_ops, "pool_workers", lambda cap=None: threads)
    monkeypatch.setattr(prdc, "pool_workers", lambda cap=None: threads)
    monkeypatch.setattr(prdc, "PARALLEL_ENTRIES", 0)
    ref, fakes = _sets()
    gathers = [_gather(f, ref) for f in fakes]
    together = neighbour_indicators_each(ref, fakes, 5, gathers=gathers)
    assert len(together) == len(fakes)
    for fake, got, gather in zip(fakes, together, gathers, strict=True):
        alone_gather = _gather(fake, ref)
        alone = neighbour_indicators(ref, fake, 5, gather=alone_gather)
        for field in dataclasses.fields(alone):
            a, b = getattr(got, field.name), getattr(alone, field.name)
            assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, field.name
        for mine, theirs in zip(gather.sums(), alone_gather.sums(), strict=True):
            for g, w in zip(mine, theirs, strict=True):
                for name in ("rows_aa", "diag_aa", "rows_bb", "diag_bb", "rows_ab", "cols_ab"):
                    assert np.array_equal(getattr(g, name), getattr(w, name)), name


def test_reference_metrics_of_a_list_equal_each_set_alone():
    ref, fakes = _sets(1)
    metrics = ReferenceMetrics(bootstrap=20, subsets=5, subset_size=200, seed=2)
    together = metrics.fit(fakes, ref, names=[f"m{i}" for i in range(len(fakes))])
    for i, fake in enumerate(fakes):
        alone = metrics.fit(fake, ref, names=[f"m{i}"])
        assert dataclasses.asdict(together.models[i]) == dataclasses.asdict(alone.models[0])


def test_a_set_of_other_width_is_refused_before_any_pass():
    ref, fakes = _sets()
    with pytest.raises(Exception, match="m1: outputs have 8 dimensions but the reference's have 16"):
        ReferenceMetrics(bootstrap=0, subsets=5, subset_size=200).fit([fakes[0], fakes[1][:, :8]], ref,
                                                                       names=["m0", "m1"])
