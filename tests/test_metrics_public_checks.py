"""The public metric functions check what they are given (one InputError naming the argument), as the
estimator does: lists and 1-D arrays, NaN, mismatched encoders; a list of rows given as the generated sets."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.errors import InputError
from promptprism.methods.metrics import ReferenceMetrics, frechet_distance, prdc
from promptprism.methods.metrics.kid import kernel_inception_distance


def test_public_metric_functions_refuse_bad_features_in_one_line():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(30, 4)), rng.normal(size=(25, 4))
    with_nan = x.copy()
    with_nan[19, 0] = np.nan
    assert frechet_distance(x.tolist(), y.tolist()) == pytest.approx(frechet_distance(x, y))  # lists: rows
    cases = [(lambda: frechet_distance(x[:, 0], y[:, 0]), "x: expected a 2-D array"),
             (lambda: frechet_distance(with_nan, y), r"x: row 19 \(0-based\), column 0 is NaN"),
             (lambda: frechet_distance(x[:1], y), "x: has 1 rows; at least 2"),
             (lambda: frechet_distance(x, y[:, :3]), "x and y have 4 and 3 dimensions"),
             (lambda: prdc(with_nan, y), r"real: row 19 \(0-based\), column 0 is NaN"),
             (lambda: prdc(x, y[:, :2]), "real and fake have 4 and 2 dimensions"),
             (lambda: kernel_inception_distance(x, with_nan, subset_size=10), "y: row 19"),
             (lambda: ReferenceMetrics(bootstrap=0).fit(x.tolist(), y), "a list is read as a list of sets")]
    for call, words in cases:
        with pytest.raises(InputError, match=words):
            call()
    assert prdc(y, x, nearest_k=3) == prdc(y, x, 3)  # the prdc package's name for k
    with pytest.raises(TypeError):
        prdc(y, x, nearest_k=3, k=3)  # (a misspelt option is no longer passed on silently)


def test_a_random_feature_bandwidth_too_small_is_named_without_nan():
    """--sigma-output 1e-100 read "phases up to nan ... sigma:"; the overflowing bandwidth is now named."""
    from promptprism.errors import OptionError
    from promptprism.kernels.features import ProductRandomFourierFeatures

    with pytest.raises(OptionError, match="sigma_output: 1e-100 is too small.*overflow float32") as info:
        ProductRandomFourierFeatures(3, 4, n_features=8, sigma_prompt=1.0, sigma_output=1e-100,
                                     precision="float32")
    assert info.value.parameter == "sigma_output"
    fmap = ProductRandomFourierFeatures(3, 4, n_features=8, sigma_prompt=1.0, sigma_output=1e-30,
                                        precision="float32")
    with pytest.raises(OptionError, match=r"sigma_output \(1e-30\) is too small.*phases up to") as info:
        fmap.transform(np.ones((2, 3)), np.ones((2, 4)) * 10.0)
    assert "nan" not in str(info.value) and info.value.parameter == "sigma_output"
