"""KID's U-statistic on sets of several outputs per prompt: on the same prompts with as many outputs each it
reads low (within-set pairs share a prompt less often than cross pairs), and the note that flags its
interval says so (it said "high", the direction of sets of other prompts). MMD² weights its within-set
pairs by the design there and does not (tests/test_metrics_design.py)."""

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
def test_two_draws_of_one_model_on_the_same_prompts_read_low_by_kid_and_the_note_says_so():
    runs = [ReferenceMetrics(bootstrap=0, seed=s).fit([_draw(1000 + s)], _draw(2000 + s)).models[0]
            for s in range(8)]
    assert all(m.kid < 0 for m in runs), [m.kid for m in runs]
    assert not all(m.mmd2 < 0 for m in runs), [m.mmd2 for m in runs]  # (the U-statistic: 40 of 40)
    with_intervals = ReferenceMetrics(bootstrap=50, seed=0).fit([_draw(1)], _draw(2)).models[0]
    validity = with_intervals.interval_validity
    assert "kid" in validity["not_calibrated"]
    assert "so it reads low" in validity["reason"] and "(S - 1) / (N - 1)" in validity["reason"]
    # 80 rows a set: below the rows MMD²'s interval was measured to cover from on the same prompts
    assert "mmd2" in validity["not_calibrated"] and "from 200 rows per set" in validity["reason"]


def test_mmd2_on_the_same_prompts_is_not_flagged_from_200_rows():
    model = ReferenceMetrics(bootstrap=0, seed=0).fit([_draw(1, per_prompt=25)], _draw(2, per_prompt=25))
    validity = model.models[0].interval_validity
    assert "kid" in validity["not_calibrated"] and "mmd2" not in validity["not_calibrated"]


def test_mmd2_on_other_prompts_is_flagged_as_reading_high():
    other = _draw(2)
    other = pp.PairedSet(other.prompt_embeddings, other.output_embeddings,
                         prompts=[f"q{p}" for p in other.prompts])
    validity = ReferenceMetrics(bootstrap=0, seed=0).fit([_draw(1)], other).models[0].interval_validity
    assert "mmd2" in validity["not_calibrated"] and "reads high" in validity["reason"]


def test_a_reference_of_one_embedding_is_named_not_blamed_on_mmd_sigma():
    """Every reference output the same: the error named --mmd-sigma, which the user never passed."""
    from promptprism.errors import InputError

    rng = np.random.default_rng(0)
    gen, ref = rng.standard_normal((40, 4)), np.ones((40, 4))
    with pytest.raises(InputError, match="reference \\(unnamed\\): every output is the same embedding"):
        ReferenceMetrics(bootstrap=0, subsets=2, subset_size=20).compare([gen], ref)
    assert ReferenceMetrics(bootstrap=0, subsets=2, subset_size=20, mmd_sigma=1.0).compare([gen], ref)
