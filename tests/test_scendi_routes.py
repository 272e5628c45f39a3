"""Scendi's routes as objects: the three give SPEC's numbers (brute force in feature space) on one set, the
choice follows the documented sizes, and ``config`` records the fields as given."""

from __future__ import annotations

import numpy as np
import pytest

import promptprism as pp
from promptprism.backend import resolve_backend
from promptprism.data.paired import PairedSet, prompt_groups
from promptprism.methods.scendi.nullifier import resolve_feature_maps
from promptprism.methods.scendi.routes import (
    FitInputs,
    GroupedRoute,
    SampleSpaceRoute,
    StreamingRoute,
    choose_route,
)

METRICS = ("scendi", "scendi_prompt", "vendi", "rke", "model_share", "prompt_share")


def paired(n=90, groups=6, d_t=5, d_z=7, seed=0):
    rng = np.random.default_rng(seed)
    bank = rng.standard_normal((groups, d_t))
    which = np.arange(n) % groups
    x = bank[which] @ rng.standard_normal((d_t, d_z)) + rng.standard_normal((n, d_z))
    return PairedSet(bank[which], x, name="set")


def inputs_for(data, gamma_estimator="in-sample"):
    maps = resolve_feature_maps(data, kernel="cosine", sigma_output="median", sigma_prompt="median",
                                n_features=2, shared_frequencies=False, seed=0, notes=[])
    return FitInputs(data=data, maps=maps, groups=prompt_groups(data)[0][0], dtype=np.float64,
                     backend=resolve_backend("cpu"), chunk_size=32, partition_rows=64, progress=False,
                     gamma_estimator=gamma_estimator, n_folds=3, ridge="cv", seed=0)


def brute_in_sample(data):
    """SPEC in feature space: C, Gamma* = C_IT C_TT^+, Lambda_I = C_II - C_IT C_TT^+ C_TI."""
    fi = data.output_embeddings / np.linalg.norm(data.output_embeddings, axis=1, keepdims=True)
    ft = data.prompt_embeddings / np.linalg.norm(data.prompt_embeddings, axis=1, keepdims=True)
    n = len(fi)
    c_ii, c_it, c_tt = fi.T @ fi / n, fi.T @ ft / n, ft.T @ ft / n
    lam_t = c_it @ np.linalg.pinv(c_tt, rcond=1e-10, hermitian=True) @ c_it.T
    return {"model_share": np.trace(c_ii - lam_t), "prompt_share": np.trace(lam_t)}


def test_every_route_gives_the_brute_force_numbers():
    data = paired()
    inputs = inputs_for(data)
    routes = [StreamingRoute.build(inputs), GroupedRoute.build(inputs), SampleSpaceRoute.build(inputs)]
    assert [r.name for r in routes] == ["feature space", "feature space, grouped prompts", "sample space"]
    assert {r.rank for r in routes} == {5}  # 6 distinct prompts in 5 dimensions
    tables = [r.spectrum("in-sample", 2).table for r in routes]
    brute = brute_in_sample(data)
    for table in tables:
        assert table["model_share"] == pytest.approx(brute["model_share"], rel=1e-9)
        assert table["prompt_share"] == pytest.approx(brute["prompt_share"], rel=1e-9)
        for m in METRICS:
            assert table[m] == pytest.approx(tables[0][m], rel=1e-9), m
    # the clusters' top samples agree across the in-memory and streamed scores
    ids = [r.mode_stats(r.spectrum("in-sample", 2), 3)[0] for r in routes]
    assert all(np.array_equal(ids[0][:, 0], i[:, 0]) for i in ids[1:])


def test_settle_hands_the_cross_fit_to_sample_space_and_keeps_the_others():
    inputs = inputs_for(paired())
    for route in (StreamingRoute.build(inputs), GroupedRoute.build(inputs)):
        settled, estimator = route.settle("cross-fit", [])
        assert isinstance(settled, SampleSpaceRoute) and estimator == "cross-fit"
        assert settled.rank == route.rank == 5
        same, estimator = route.settle("in-sample", [])
        assert same is route and estimator == "in-sample"
    notes = []
    settled, estimator = StreamingRoute.build(inputs).settle("debiased", notes)  # prompts repeat: in-sample
    assert estimator == "in-sample" and "needs the prompts grouped" in notes[0]


@pytest.mark.parametrize("n, groups, estimator, expect", [
    (90, 6, "in-sample", GroupedRoute),  # prompts repeat, n above the dimension
    (8, 8, "in-sample", SampleSpaceRoute),  # n below the dimension (12)
    (90, 90, "in-sample", StreamingRoute),  # every prompt distinct: the grouped split saves nothing
    (90, 6, "cross-fit", SampleSpaceRoute),
])
def test_choose_route_by_size(n, groups, estimator, expect):
    assert isinstance(choose_route(inputs_for(paired(n=n, groups=groups), estimator)), expect)


def test_config_records_the_fields_as_given():
    est = pp.Scendi(n_clusters=2, top_k=3, chunk_size=50, gamma_estimator="cross-fit", n_folds=3, ridge=0.1)
    r = est.fit(paired())
    assert {k: r.config[k] for k in ("n_clusters", "top_k", "chunk_size", "precision", "kernel")} == {
        "n_clusters": 2, "top_k": 3, "chunk_size": 50, "precision": "float64", "kernel": "cosine"}
    assert r.config["n_folds"] == 3 and r.config["ridge"] == 0.1 and r.config["route"] == "sample space"
    assert r.config["sigma_prompt_rule"] is None and r.config["shared_frequencies"] is False
