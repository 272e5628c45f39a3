"""Prompts only one set answered: the split says so (a warning naming how many and what the test does with
them) instead of switching the test's relabelling scheme silently."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from promptprism import PromptSplit
from promptprism.data.paired import PairedSet
from promptprism.methods.promptsplit.significance import shared_prompt_cover

CENTRES = np.random.default_rng(0).normal(size=(12, 6))


def _set(seed: int, names) -> PairedSet:
    rng = np.random.default_rng(seed)
    prompts = np.repeat(CENTRES, 8, axis=0)
    outputs = prompts[:, :4] + rng.normal(scale=0.3, size=(prompts.shape[0], 4))
    return PairedSet(prompts, outputs, prompts=[names(i // 8) for i in range(prompts.shape[0])])


def test_shared_prompt_cover_counts_prompts_and_samples():
    a, b = np.array([0, 0, 1, 2]), np.array([1, 1, 3, 3, 3, 3])
    alone, cover = shared_prompt_cover(a, b)
    assert alone == 3  # prompts 0, 2 and 3
    assert cover == pytest.approx(3 / 10)  # one test and two reference samples of prompt 1


def test_fully_shared_prompts_give_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = PromptSplit(method="exact", permutations=20, n_modes=2, seed=0).fit(
            _set(1, "p{}".format), _set(2, "p{}".format))
    assert res.significance["scheme"] == "within-prompt"


def test_disjoint_prompt_strings_warn_that_the_test_is_pooled():
    with pytest.warns(UserWarning, match=r"24 prompt\(s\) appear in one set only \(100% .*'pooled'"):
        res = PromptSplit(method="exact", permutations=20, n_modes=2, seed=0).fit(
            _set(1, "other {}".format), _set(2, "p{}".format))
    assert res.significance["scheme"] == "pooled"


def test_partly_shared_prompts_warn_what_happens_to_the_unshared_ones():
    half = _set(1, lambda k: f"p{k}" if k < 6 else f"new {k}")
    note = r"12 prompt\(s\) appear in one set only \(50% .*nothing to exchange"
    with pytest.warns(UserWarning, match=note):
        res = PromptSplit(method="exact", permutations=20, n_modes=2, seed=0).fit(half, _set(2, "p{}".format))
    assert res.significance["scheme"] == "within-prompt"


def test_without_the_test_the_note_speaks_of_the_ranking_only():
    with pytest.warns(UserWarning) as caught:
        PromptSplit(method="exact", permutations=0, n_modes=2, seed=0).fit(
            _set(1, "other {}".format), _set(2, "p{}".format))
    [note] = [str(w.message) for w in caught if "one set only" in str(w.message)]
    assert "permutation test" not in note and "prompt ranking" in note
