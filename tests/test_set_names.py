"""Every set of a result has its own name: Python-built sets (all named 'set') are numbered, the reference is
named apart from the generated sets, names given twice are refused, and duplicated inputs are named by
position; rows matched by name (``check --baseline``) can then never be ambiguous."""

from __future__ import annotations

import numpy as np
import pytest

import promptprism as pp
from promptprism.data.paired import reference_name, set_names
from promptprism.errors import InputError, OptionError
from promptprism.methods.metrics import ReferenceMetrics
from promptprism.methods.scendi import compare


def _sets(k=2, seed=0):
    r = np.random.default_rng(seed)
    pe = np.repeat(r.normal(size=(6, 4)), 5, axis=0)
    prompts = [f"p{i // 5}" for i in range(30)]
    return [pp.PairedSet(pe, r.normal(size=(30, 3)), prompts=prompts) for _ in range(k)]


def test_default_names_are_numbered_and_given_ones_kept_or_refused():
    a, b = _sets()
    assert set_names([a, b]) == ["set 1", "set 2"]
    assert set_names([a, b], ["x", "y"]) == ["x", "y"]
    with pytest.raises(OptionError, match="distinct"):
        set_names([a, b], ["x", "x"])
    named = [pp.PairedSet(a.prompt_embeddings, a.output_embeddings, name="m") for _ in range(2)]
    assert set_names(named) == ["m 1", "m 2"]
    assert reference_name(a, ["set 1", "set 2"]) == "reference"
    assert reference_name(a, ["x"], "real") == "real" and reference_name(a, ["real"], "real") == "reference"


def test_metrics_and_scendi_name_python_built_sets_apart():
    a, b = _sets()
    m = ReferenceMetrics(seed=0, bootstrap=0, subsets=5, subset_size=20).fit([a, b], a)
    assert [s.name for s in m.models] == ["set 1", "set 2"] and m.reference == "reference"
    c = compare([a, b], pp.Scendi(bootstrap=0))
    assert [r.name for r in c.models] == ["set 1", "set 2"]


def test_a_duplicated_kway_input_is_named_by_position():
    a, b = _sets()
    with pytest.raises(InputError, match=r"sets 1 and 3 \(set\) hold the same pairs"):
        pp.KWaySplit(permutations=0).fit([a, b, a])


def test_a_numbered_default_never_meets_a_sets_own_name():
    a, b = _sets()
    own = pp.PairedSet(a.prompt_embeddings, a.output_embeddings, name="set 1")
    names = set_names([b, own])
    assert len(set(names)) == 2, names
