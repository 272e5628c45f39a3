"""Planted differences (paper, appendix A.6): 8 gaussian components, the reference moves k of them.

Criterion: with k moved components, the k-th largest eigenvalue is more than 3x the (k+1)-th, and the
k-th most negative is more than 3x (in magnitude) the (k+1)-th most negative; each of those modes' top
samples belong to moved components. With k = 0 the whole spectrum stays near zero: its largest |eigenvalue|
is below a third of the smallest leading eigenvalue seen with k > 0.

40 samples per component (the paper uses 100) keeps the exact route quick; the gaps are still wide.
"""

from __future__ import annotations

import numpy as np
import pytest

from promptprism import PromptSplit
from promptprism.datasets import gaussian_mixture

pytestmark = pytest.mark.slow  # minutes in all: run by `make test` / CI, not by -m 'not slow'

KS = (0, 1, 2, 3)


@pytest.fixture(scope="module")
def fits():
    out = {}
    for k in KS:
        test, ref, differ = gaussian_mixture(k, per_component=40, seed=0)
        res = PromptSplit(kernel="gaussian", method="exact", n_modes=k + 1, top_k=10, seed=0).fit(test, ref)
        out[k] = (res, differ)
    return out


def test_dataset_shape():
    test, ref, differ = gaussian_mixture(2, per_component=10, seed=3)
    assert len(test) == len(ref) == 80
    assert test.dim_prompt == 8 and test.dim_output == 50
    assert differ == [0, 1]
    np.testing.assert_array_equal(test.prompt_embeddings, ref.prompt_embeddings)
    assert set(test.prompts) == {f"component {c}" for c in range(8)}


@pytest.mark.parametrize("k", [1, 2, 3])
def test_k_modes_stand_out_on_each_side(fits, k):
    res, differ = fits[k]
    vals = np.array(res.eigenvalues)
    pos, neg = vals[vals > 0], -vals[vals < 0][::-1]
    assert pos[k - 1] > 3.0 * pos[k], (pos[: k + 1], k)
    assert neg[k - 1] > 3.0 * neg[k], (neg[: k + 1], k)
    moved = {f"component {c}" for c in differ}
    for mode in res.positive_modes[:k] + res.negative_modes[:k]:
        assert {s.prompt for s in mode.top_samples} <= moved, (mode.side, mode.rank)
        assert mode.top_samples[0].set == mode.side
        # the prompts carrying the mode are moved ones too
        assert mode.top_prompts[0].prompt in moved
    # the k positive modes between them cover every moved component, and so do the k negative ones
    for modes in (res.positive_modes[:k], res.negative_modes[:k]):
        assert {m.top_samples[0].prompt for m in modes} == moved
    assert {r["prompt"] for r in res.prompt_ranking[:k]} == moved


def test_no_difference_collapses_spectrum(fits):
    res0, _ = fits[0]
    floor = min(fits[k][0].eigenvalues[0] for k in (1, 2, 3))
    assert max(abs(v) for v in res0.eigenvalues) < floor / 3.0
    assert res0.distance < min(fits[k][0].distance for k in (1, 2, 3)) / 3.0


def test_distance_grows_with_k(fits):
    d = [fits[k][0].distance for k in KS]
    assert d == sorted(d)
