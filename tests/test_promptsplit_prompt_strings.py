"""Prompt strings that do not follow the prompt embeddings (strings shuffled against the rows) are said, as
a warning and in the result's notes, for split and compare alike (they silently credited the wrong prompts);
strings that name one embedding each say nothing; the caveats a fit warns of are recorded in its notes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from promptprism import KWaySplit, PairedSet, PromptSplit


def _set(rng, prompts, shift=0.0):
    centres = {p: rng.normal(size=4) for p in sorted(set(prompts))}
    t = np.array([centres[p] for p in prompts])
    return PairedSet(t, rng.normal(size=(len(prompts), 3)) + shift, prompts=list(prompts))


def test_shuffled_prompt_strings_are_noted_and_aligned_ones_are_not():
    rng = np.random.default_rng(0)
    prompts = [f"p{i % 5}" for i in range(40)]
    a, b = _set(rng, prompts), _set(np.random.default_rng(0), prompts, 0.2)
    est = PromptSplit(permutations=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clean = est.fit(a, b)
    assert clean.notes == []
    shuffled = PairedSet(b.prompt_embeddings, b.output_embeddings,
                         prompts=list(np.random.default_rng(1).permutation(prompts)))
    with pytest.warns(UserWarning, match="prompt strings group rows of different prompt embeddings"):
        result = est.fit(a, shuffled)
    assert any("group rows of different prompt embeddings" in n for n in result.notes)
    assert any("group rows" in n for n in type(result).from_dict(result.to_dict()).notes)
    with pytest.warns(UserWarning, match="prompt strings group rows"):
        kway = KWaySplit(permutations=0).fit([a, shuffled, _set(np.random.default_rng(0), prompts, 0.1)])
    assert any("group rows" in n for n in kway.notes)


def test_a_test_that_cannot_reject_is_recorded_in_the_notes():
    rng = np.random.default_rng(2)
    prompts = [f"p{i % 4}" for i in range(24)]
    with pytest.warns(UserWarning, match="can never reject"):
        result = PromptSplit(permutations=5).fit(_set(rng, prompts), _set(rng, prompts))
    assert any("can never reject" in n for n in result.notes)


def test_the_page_shows_the_fits_notes():
    from promptprism.report import render_report

    rng = np.random.default_rng(3)
    prompts = [f"p{i % 4}" for i in range(24)]
    with pytest.warns(UserWarning, match="can never reject"):
        result = PromptSplit(permutations=5).fit(_set(rng, prompts), _set(rng, prompts))
    assert "can never reject" in render_report(result)
