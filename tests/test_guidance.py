"""The torch guidance losses equal the numpy PromptSplit quantities and have correct gradients."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from promptprism import PromptSplit  # noqa: E402
from promptprism.guidance import joint_diversity, promptsplit_distance  # noqa: E402
from promptprism.kernels import gaussian_gram  # noqa: E402


def _data(seed=0, n=12, m=9, dt=3, dz=4):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, dt)), rng.standard_normal((n, dz)),
            rng.standard_normal((m, dt)), rng.standard_normal((m, dz)))


@pytest.mark.parametrize("kernel", ["cosine", "gaussian"])
def test_distance_equals_exact_promptsplit(kernel):
    t, x, tr, y = _data()
    est = PromptSplit(kernel=kernel, method="exact", sigma_prompt=1.3, sigma_output=2.1, eta=0.7,
                      solver="dense")
    expected = est.fit((t, x), (tr, y)).distance
    got = promptsplit_distance(torch.tensor(x), torch.tensor(t), torch.tensor(y), torch.tensor(tr),
                               kernel=kernel, sigma_output=2.1, sigma_prompt=1.3, eta=0.7)
    assert got.item() == pytest.approx(expected, rel=1e-10)


def test_distance_is_sum_of_squared_eigenvalues():
    t, x, tr, y = _data(1)
    res = PromptSplit(kernel="gaussian", method="exact", sigma_prompt=1.0, sigma_output=1.5,
                      solver="dense").fit((t, x), (tr, y))
    got = promptsplit_distance(torch.tensor(x), torch.tensor(t), torch.tensor(y), torch.tensor(tr),
                               sigma_output=1.5, sigma_prompt=1.0)
    assert got.item() == pytest.approx(float(np.sum(np.square(res.eigenvalues))), rel=1e-8)


def test_joint_diversity_brute_force():
    t, x, _, _ = _data(2)
    k = gaussian_gram(t, sigma=0.8) * gaussian_gram(x, sigma=1.7)
    psi_cov_frob2 = float((k ** 2).sum() / len(x) ** 2)
    got = joint_diversity(torch.tensor(x), torch.tensor(t), sigma_output=1.7, sigma_prompt=0.8)
    assert got.item() == pytest.approx(psi_cov_frob2, rel=1e-12)
    # identical outputs and prompts: every kernel value is 1, so the diversity term is maximal (= 1)
    same = torch.ones((5, 3), dtype=torch.float64)
    assert joint_diversity(same, same, sigma_output=1.0, sigma_prompt=1.0).item() == pytest.approx(1.0)


@pytest.mark.parametrize("kernel", ["cosine", "gaussian"])
def test_gradients_match_finite_differences(kernel):
    t, x, tr, y = _data(3, n=6, m=5)
    xt = torch.tensor(x, requires_grad=True)
    yt = torch.tensor(y, requires_grad=True)

    def f(a, b):
        return promptsplit_distance(a, torch.tensor(t), b, torch.tensor(tr), kernel=kernel,
                                    sigma_output=1.2, sigma_prompt=0.9, eta=1.3)

    assert torch.autograd.gradcheck(f, (xt, yt), eps=1e-6, atol=1e-7)
    assert torch.autograd.gradcheck(
        lambda a: joint_diversity(a, torch.tensor(t), kernel=kernel, sigma_output=1.2, sigma_prompt=0.9),
        (xt,), eps=1e-6, atol=1e-7)


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_gradient_step_reduces_distance():
    """Guidance: a few gradient steps on the test outputs move them towards the reference."""
    t, x, _, y = _data(4, n=10, m=10)
    xt = torch.tensor(x, requires_grad=True)
    args = dict(sigma_output=2.0, sigma_prompt=1.0)
    start = promptsplit_distance(xt, torch.tensor(t), torch.tensor(y), torch.tensor(t), **args).item()
    opt = torch.optim.Adam([xt], lr=0.05)
    for _ in range(200):
        opt.zero_grad()
        loss = promptsplit_distance(xt, torch.tensor(t), torch.tensor(y), torch.tensor(t), **args)
        loss.backward()
        opt.step()
    assert loss.item() < 0.2 * start


def test_bad_sigma():
    t, x, tr, y = _data()
    with pytest.raises(ValueError, match="sigma"):
        promptsplit_distance(torch.tensor(x), torch.tensor(t), torch.tensor(y), torch.tensor(tr))
