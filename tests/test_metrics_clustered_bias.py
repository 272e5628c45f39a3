"""KID's and MMD²'s U-statistics on sets of several outputs per prompt: on the same prompts with as many
outputs each they read low (within-set pairs share a prompt less often than cross pairs), and the note
that flags their intervals says so (it said "high", the direction of sets of other prompts)."""

from __future__ import annotations

import numpy as np
import pytest

import promptprism as pp
from promptprism.methods.metrics import ReferenceMetrics


def _draw(seed: int, prompts: int = 10, per_prompt: int = 8) -> pp.PairedSet:
    """Outputs around per-prompt centres well apart (one model: the centres are fixed)."""
    centres = np.random.default_rng(456).normal(size=(prompts, 4)) * 3
    rows = np.repeat(np.arange(prompts), per_prompt)
    noise = np.random.default_rng(seed).normal(size=(rows.size, 4)) * 0.5
    return pp.PairedSet(np.eye(prompts)[rows], centres[rows] + noise, prompts=[f"p{p}" for p in rows])


@pytest.mark.slow  # (about 0.7 s)
def test_two_draws_of_one_model_on_the_same_prompts_read_low_and_the_note_says_so():
    runs = [ReferenceMetrics(bootstrap=0, seed=s).fit([_draw(1000 + s)], _draw(2000 + s)).models[0]
            for s in range(8)]
    assert all(m.mmd2 < 0 for m in runs), [m.mmd2 for m in runs]
    with_intervals = ReferenceMetrics(bootstrap=50, seed=0).fit([_draw(1)], _draw(2)).models[0]
    validity = with_intervals.interval_validity
    assert {"kid", "mmd2"} <= set(validity["not_calibrated"])
    assert "so they read low" in validity["reason"] and "(S - 1) / (N - 1)" in validity["reason"]
