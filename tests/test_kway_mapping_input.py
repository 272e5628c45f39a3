"""KWaySplit takes its sets as a mapping name -> set (the keys name them), as the CLI's NAME=FILE does: the
same result as the list with ``names``; a mapping with ``names`` too is refused."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism import KWaySplit, PairedSet
from promptprism.errors import OptionError


def test_a_mapping_of_named_sets_equals_the_list_with_names():
    rng = np.random.default_rng(0)
    prompts = [f"p{i // 5}" for i in range(30)]
    t = np.repeat(rng.normal(size=(6, 3)), 5, axis=0)
    sets = {name: PairedSet(t, rng.normal(size=(30, 4)) + shift, prompts=prompts)
            for name, shift in (("base", 0.0), ("tuned", 0.3), ("other", 0.0))}
    est = KWaySplit(permutations=0, seed=1)
    by_map, by_list = est.fit(sets), est.fit(list(sets.values()), names=list(sets))
    assert by_map.names == ["base", "tuned", "other"]
    assert by_map.to_dict()["distances"] == by_list.to_dict()["distances"]
    with pytest.raises(OptionError, match="names: the sets came as a mapping") as info:
        est.fit(sets, names=["a", "b", "c"])
    assert info.value.parameter == "names"


def test_each_comparison_in_result_json_names_its_sides():
    """result.json's pairs carried their sides only in config.test/reference (the --json summary added
    'pair'): each comparison now records config.names as split does, so given_names() reads them."""
    rng = np.random.default_rng(1)
    prompts = [f"p{i // 5}" for i in range(30)]
    t = np.repeat(rng.normal(size=(6, 3)), 5, axis=0)
    sets = {n: PairedSet(t, rng.normal(size=(30, 4)) + s, prompts=prompts)
            for n, s in (("d", 0.0), ("c", 0.2), ("a", 0.4))}
    result = KWaySplit(permutations=0).fit(sets)
    loaded = type(result).from_dict(result.to_dict())
    assert [p.given_names() for p in loaded.pairs] == [("d", "c"), ("d", "a"), ("c", "a")]
    assert loaded.one_vs_rest[0].config["names"] == ["d", "rest (c, a)"]
