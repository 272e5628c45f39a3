"""check_matrix's finiteness scan: the sum fast path must never let a NaN or inf through, nor flag finite
values whose sum overflows; the first offending (row, column) is the one reported."""

import numpy as np
import pytest

from promptprism import _validation
from promptprism._validation import check_matrix
from promptprism.errors import InputError


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_planted_non_finite_value_is_found_at_its_place(dtype, monkeypatch):
    monkeypatch.setattr(_validation, "_SCAN_ROWS", 64)  # several blocks
    rng = np.random.default_rng(0)
    for _ in range(60):
        x = rng.standard_normal((300, 7)).astype(dtype)
        cells = {(int(rng.integers(300)), int(rng.integers(7))) for _ in range(int(rng.integers(1, 4)))}
        values = [np.nan, np.inf, -np.inf]
        for r, c in cells:
            x[r, c] = values[int(rng.integers(3))]
        row, col = min(cells)
        kind = "NaN" if np.isnan(x[row, col]) else "inf"
        with pytest.raises(InputError, match=rf"row {row} \(0-based\), column {col} is {kind}"):
            check_matrix(x, "x")


def test_opposite_infinities_are_caught():
    x = np.zeros((10, 3))
    x[4, 0], x[6, 2] = np.inf, -np.inf  # their sum is NaN, not inf
    with pytest.raises(InputError, match=r"row 4 \(0-based\), column 0 is inf"):
        check_matrix(x, "x")


@pytest.mark.filterwarnings("error")
def test_finite_values_whose_sum_overflows_pass_silently():
    x = np.full((50, 4), np.finfo(np.float32).max, dtype=np.float32)
    out = check_matrix(x, "x")
    assert out.dtype == np.float32 and np.array_equal(out, x)
