"""The sampling loop (batched, seeded per sample, CFG) and PromptSplit guidance inside it (paper eq. 5)."""

import math
from importlib.util import find_spec

import numpy as np
import pytest

torch = pytest.importorskip("torch")
# (looked up, not imported: collecting the suite stays free of diffusers' import; the tests that need it run
# in one test process under --dist loadgroup)
# every test here runs diffusers' UNet (importing diffusers alone takes ~3.5 s a test process): the slow tier
pytestmark = [pytest.mark.skipif(find_spec("diffusers") is None, reason="diffusers is not installed"),
              pytest.mark.slow]

from _tiny_unet import ddpm, tiny_class_unet  # noqa: E402
from promptprism.errors import InputError, OptionError  # noqa: E402
from promptprism.guidance import (  # noqa: E402
    PromptSplitGuidance,
    promptsplit_distance,
    promptsplit_distance_rff,
    reference_covariance,
    sample,
    sample_seeds,
)
from promptprism.kernels import ProductRandomFourierFeatures  # noqa: E402

LABELS = np.array([0, 1, 2, 0, 1, 2])
PROMPTS = np.eye(3)[LABELS]
KW = dict(sigma_output=4.0, sigma_prompt=0.5)


@pytest.fixture(scope="module")
def model():
    return tiny_class_unet(), ddpm()


def _reference(seed=0, per_class=8):
    """Images the random model does not make: class c is a flat image of brightness (0.8, -0.8, 0)[c]."""
    rng = np.random.default_rng(seed)
    lab = np.repeat([0, 1, 2], per_class)
    ref = np.clip(np.array([0.8, -0.8, 0.0])[lab][:, None] + 0.1 * rng.standard_normal((len(lab), 64)), -1, 1)
    return ref, np.eye(3)[lab]


def _distance(x, ref, ref_prompts):
    return promptsplit_distance(x.reshape(len(x), -1).double(), torch.tensor(PROMPTS), torch.tensor(ref),
                                torch.tensor(ref_prompts), **KW).item()


def _run(model, guidance=None, batch_size=6, **kw):
    unet, sched = model
    return sample(unet, sched, LABELS, null_condition=3, guidance_scale=2.0, steps=3, seed=1,
                  batch_size=batch_size, guidance=guidance, **kw)


def test_seeds_per_sample_do_not_depend_on_the_batch_size(model):
    whole, split = _run(model, batch_size=6), _run(model, batch_size=4)
    assert whole.shape == (6, 1, 8, 8)
    assert torch.allclose(whole, split, atol=1e-5)
    # a stochastic scheduler (DDPM as given) draws each sample's noise from its own generator too
    a, b = _run(model, batch_size=6, sampler="as-given"), _run(model, batch_size=1, sampler="as-given")
    assert torch.allclose(a, b, atol=1e-5)
    assert not torch.allclose(a[0], a[3], atol=1e-2)  # same class, different seeds: different images
    assert sample_seeds(1, 3) == sample_seeds(1, 6)[:3]


def test_cfg_scale_changes_the_samples_and_needs_a_null_condition(model):
    unet, sched = model
    plain = sample(unet, sched, LABELS, steps=3, seed=1)
    assert not torch.allclose(plain, _run(model), atol=1e-4)
    with pytest.raises(OptionError, match="null_condition"):
        sample(unet, sched, LABELS, guidance_scale=3.0, steps=3)


@pytest.mark.slow
def test_guidance_lowers_the_distance_and_raises_it_with_the_opposite_sign(model):
    ref, ref_prompts = _reference()
    base = _distance(_run(model), ref, ref_prompts)
    toward = _distance(_run(model, PromptSplitGuidance(ref, ref_prompts, PROMPTS, scale=30.0, **KW)),
                       ref, ref_prompts)
    away = _distance(_run(model, PromptSplitGuidance(ref, ref_prompts, PROMPTS, scale=30.0, toward=False,
                                                     **KW)), ref, ref_prompts)
    assert toward < 0.8 * base
    assert away > base


@pytest.mark.slow
def test_zero_scale_leaves_samples_exactly_unchanged_and_a_seed_repeats(model):
    ref, ref_prompts = _reference()
    base = _run(model)
    assert torch.equal(_run(model, PromptSplitGuidance(ref, ref_prompts, PROMPTS, scale=0.0, **KW)), base)
    g = dict(scale=10.0, rho=0.5, schedule="early", **KW)
    one = _run(model, PromptSplitGuidance(ref, ref_prompts, PROMPTS, **g))
    two = _run(model, PromptSplitGuidance(ref, ref_prompts, PROMPTS, **g))
    assert torch.equal(one, two)
    assert not torch.allclose(one, base, atol=1e-4)


def test_gradient_through_an_encoder_matches_finite_differences():
    torch.manual_seed(0)
    encoder = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Tanh(), torch.nn.Flatten()).double()
    rng = np.random.default_rng(0)
    with torch.no_grad():
        ref = encoder(torch.tensor(rng.standard_normal((5, 1, 4, 4)))).numpy()
    prompts = np.eye(2)[[0, 1, 0]]
    g = PromptSplitGuidance(ref, np.eye(2)[[0, 1, 1, 0, 1]], prompts, encoder=encoder, rho=0.3,
                            sigma_output=1.5, sigma_prompt=1.0)
    g.start(3, (1, 4, 4), torch.float64, "cpu")
    x = torch.tensor(rng.standard_normal((3, 1, 4, 4)), requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: g.objective(a, torch.arange(3)), (x,), eps=1e-6, atol=1e-6)


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_random_feature_loss_is_the_feature_space_distance_and_close_to_the_exact_one():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((10, 3)), rng.standard_normal((40, 3)) + 0.5
    t, ty = np.eye(2)[rng.integers(0, 2, 10)], np.eye(2)[rng.integers(0, 2, 40)]
    exact = promptsplit_distance(torch.tensor(x), torch.tensor(t), torch.tensor(y), torch.tensor(ty),
                                 sigma_output=2.0, sigma_prompt=1.0, eta=0.8).item()
    errors = []
    for r in (64, 4096):
        fmap = ProductRandomFourierFeatures(2, 3, r, 1.0, 2.0, seed=3)
        psi_x, psi_y = fmap.transform(torch.tensor(t), torch.tensor(x)), fmap.transform(ty, y)
        got = promptsplit_distance_rff(psi_x, reference_covariance(torch.tensor(psi_y)), eta=0.8).item()
        brute = np.linalg.norm(psi_x.numpy().T @ psi_x.numpy() / 10 - 0.8 * psi_y.T @ psi_y / 40) ** 2
        assert got == pytest.approx(brute, rel=1e-10)
        errors.append(abs(got - exact))
    # the Monte-Carlo error of r features is O(1/sqrt(r)): small at r = 4096, and smaller than at r = 64
    assert errors[1] < 0.02 and errors[1] < errors[0] + 1e-3


def test_random_feature_guidance_moves_toward_the_reference(model):
    ref, ref_prompts = _reference()
    base = _distance(_run(model), ref, ref_prompts)
    g = PromptSplitGuidance(ref, ref_prompts, PROMPTS, scale=30.0, features=1024, **KW)
    assert g.describe()["features"] == 1024
    assert _distance(_run(model, g), ref, ref_prompts) < 0.8 * base


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, "2"])
def test_bad_scale_or_rho(bad):
    ref, ref_prompts = _reference()
    with pytest.raises(OptionError, match="^scale must be a finite number >= 0"):
        PromptSplitGuidance(ref, ref_prompts, PROMPTS, scale=bad)
    with pytest.raises(OptionError, match="^rho must be"):
        PromptSplitGuidance(ref, ref_prompts, PROMPTS, rho=bad)


def test_reference_of_another_embedding_space(model):
    _, ref_prompts = _reference()
    g = PromptSplitGuidance(np.ones((24, 10)), ref_prompts, PROMPTS, **KW)
    with pytest.raises(InputError, match="dimension 10, but the encoder outputs dimension 64"):
        _run(model, g)


def test_encoder_or_generator_without_gradients(model):
    ref, ref_prompts = _reference()

    def detached(images):
        return images.detach().flatten(1)

    g = PromptSplitGuidance(ref, ref_prompts, PROMPTS, encoder=detached, scale=1.0, **KW)
    with pytest.raises(InputError, match="^encoder: its output has no gradient"):
        _run(model, g)
    unet, sched = model

    class NoGrad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner, self.config = unet, unet.config

        def forward(self, *a, **k):
            with torch.no_grad():
                return self.inner(*a, **k)

    g = PromptSplitGuidance(ref, ref_prompts, PROMPTS, scale=1.0, **KW)
    with pytest.raises(InputError, match="generator returned its prediction without gradients"):
        sample(NoGrad(), sched, LABELS, steps=2, guidance=g)
    # treating the prediction as a constant is the documented way round
    g = PromptSplitGuidance(ref, ref_prompts, PROMPTS, scale=1.0, through_model=False, **KW)
    assert sample(NoGrad(), sched, LABELS, steps=2, guidance=g).shape == (6, 1, 8, 8)


def test_prompts_must_match_the_samples(model):
    ref, ref_prompts = _reference()
    g = PromptSplitGuidance(ref, ref_prompts, PROMPTS[:4], scale=1.0, **KW)
    with pytest.raises(InputError, match="^prompts: 4 rows for 6 samples"):
        _run(model, g)
    with pytest.raises(InputError, match="^prompts: dimension 2"):
        PromptSplitGuidance(ref, ref_prompts, np.eye(2), **KW)
