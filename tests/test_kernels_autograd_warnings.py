"""The kernels on torch tensors autograd records: gradients flow and torch warns about nothing (the guidance
losses are these functions; torch's requires_grad warnings came from torch.asarray and float(tensor))."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("n", [8, 700])  # 700 x 700 x 12 pairs: the expansion route of squared_distances
def test_promptsplit_distance_on_tracked_tensors_warns_nothing_and_has_gradients(n):
    from promptprism.guidance import promptsplit_distance

    rng = np.random.default_rng(0)
    a = torch.tensor(rng.normal(size=(n, 12)), requires_grad=True)
    b = torch.tensor(rng.normal(size=(n, 12)))
    p, q = torch.ones((n, 1), dtype=torch.float64), torch.ones((n, 1), dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = promptsplit_distance(a, p, b, q, sigma_output=3.0, sigma_prompt=1.0)
        loss.backward()
    assert a.grad is not None and bool(torch.isfinite(a.grad).all()) and float(a.grad.abs().sum()) > 0
