"""float32 spectra: eigenvalues below float32's round-off floor are zeroed, and a warning says so when they
carried enough of the spectrum's mass to change the entropies."""

import warnings

import numpy as np
import pytest

from promptprism.methods.scendi.dual import round_off_zeroed


def test_float64_spectra_pass_through_untouched():
    vals = np.array([1.0, 1e-9, 1e-12])
    np.testing.assert_array_equal(round_off_zeroed(vals, 3), vals)


def test_a_concentrated_float32_spectrum_loses_only_noise_and_does_not_warn():
    vals = np.r_[1.0, 0.5, np.full(998, 1e-9)].astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = round_off_zeroed(vals, 1000)
    assert out.dtype == np.float64 and out[1] == 0.5 and not np.any(out[2:])


def test_a_float32_spectrum_with_a_heavy_tail_warns_and_names_float64():
    # 4,999 eigenvalues at 1e-5 of the largest: ~5 % of the mass, under 5000 * eps32 = 6e-4
    vals = np.r_[1.0, np.full(4999, 1e-5)].astype(np.float32)
    with pytest.warns(RuntimeWarning, match=r"precision='float64'"):
        out = round_off_zeroed(vals, 5000)
    assert not np.any(out[1:])
