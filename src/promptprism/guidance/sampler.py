"""One sampling loop for diffusers-style denoisers: batched over prompts, seeded per sample, with
classifier-free guidance (CFG) and an optional sampler-side guidance (PromptSplit paper, eq. 5).

    z_{tau-1} = Sampler(z_tau, eps_cfg(z_tau, tau, t_n)) - s_tau * grad_{z_tau} L(x0(z_1:n), t_1:n)

with eps_cfg = eps(z, null) + w (eps(z, t) - eps(z, null)) (Ho & Salimans; w = ``guidance_scale``, 1 = no
CFG), x0(z) the scheduler's predicted clean sample and L the guidance objective (see ``guide.py``).

The model is any callable with the diffusers UNet signature ``unet(z, timestep, **condition).sample``:
``UNet2DModel`` with ``class_labels``, ``UNet2DConditionModel`` with ``encoder_hidden_states`` (Stable
Diffusion), or more keyword arguments (SDXL's ``added_cond_kwargs``) given as a dict of batched tensors.
torch and diffusers are imported here only, inside the functions.

Reproducibility: sample i starts from noise drawn by its own ``torch.Generator`` seeded with ``seeds[i]``,
which also draws any noise a stochastic scheduler adds for it (DDPM, DDIM with ``eta > 0``). The images do
not depend on how the samples are split into batches, up to floating-point rounding of the batched
convolutions (about 1e-6), except through a guidance whose objective couples the samples of a batch.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from .._validation import check_choice, check_positive_number, check_seed
from ..errors import InputError, OptionError

SAMPLERS = ("ddim", "as-given")


class Guidance(Protocol):
    """What :func:`sample` asks of a sampler-side guidance (``PromptSplitGuidance`` is one)."""

    #: False: the noise prediction is treated as a constant in the gradient (one model call, no backward
    #: through the model); True: the gradient goes through the model
    through_model: bool

    def start(self, n_samples: int, sample_shape: tuple, dtype: Any, device: Any) -> None:
        """Called once before the first batch: check the set-up, forget earlier runs."""

    def step_scale(self, step: int, n_steps: int) -> float:
        """The step size s_tau of step ``step`` (0 = the noisiest) of ``n_steps``; 0 skips the gradient."""

    def objective(self, x0: Any, index: Any) -> Any:
        """The scalar L whose gradient is descended, from the batch's predicted clean samples ``x0`` and
        their sample indices ``index`` (positions in the ``conditions`` of :func:`sample`)."""

    def finish(self, samples: Any, index: Any) -> None:
        """Called with each batch's final samples (e.g. to count them in later batches' objective)."""


def sample_seeds(seed: int, n: int) -> list[int]:
    """Seeds of ``n`` samples derived from one ``seed`` (numpy's SeedSequence of (seed, i)): distinct,
    and sample i's seed does not depend on ``n``."""
    check_seed(seed)
    return [int(np.random.SeedSequence([seed, i]).generate_state(1)[0]) for i in range(n)]


def _tree_map(fn: Callable, tree: Any) -> Any:
    if isinstance(tree, Mapping):
        return {k: _tree_map(fn, v) for k, v in tree.items()}
    return fn(tree)


def _tree_leaves(tree: Any) -> list:
    if isinstance(tree, Mapping):
        return [leaf for v in tree.values() for leaf in _tree_leaves(v)]
    return [tree]


def as_condition_kwargs(conditions: Any, device: Any, dtype: Any) -> dict:
    """The model keyword arguments of every sample, each a tensor with one row per sample:

    * integers (n,) -> ``class_labels`` (``UNet2DModel`` with class embeddings);
    * a float (n, L, D) array -> ``encoder_hidden_states`` (``UNet2DConditionModel``);
    * a dict of such arrays (nested dicts allowed, e.g. SDXL's ``added_cond_kwargs``) -> as given.
    """
    import torch

    def tensor(v: Any) -> Any:
        t = torch.as_tensor(v if not isinstance(v, np.ndarray) else np.ascontiguousarray(v), device=device)
        return t if not t.is_floating_point() else t.to(dtype)

    if isinstance(conditions, Mapping):
        return _tree_map(tensor, conditions)
    stacked = isinstance(conditions, (list, tuple)) and conditions and getattr(conditions[0], "ndim", 0) > 0
    t = torch.stack([tensor(c) for c in conditions]) if stacked else tensor(conditions)
    if t.is_floating_point():
        if t.ndim != 3:
            raise InputError(f"conditions: float conditions are encoder_hidden_states of shape (n, L, D), "
                             f"got shape {tuple(t.shape)}")
        return {"encoder_hidden_states": t}
    if t.ndim != 1:
        raise InputError(f"conditions: class labels must be one integer per sample, got shape "
                         f"{tuple(t.shape)}")
    return {"class_labels": t.long()}


def _null_kwargs(null_condition: Any, like: dict, device: Any, dtype: Any) -> dict:
    """The null condition in the structure of ``like``, with a leading dimension of 1."""
    if isinstance(null_condition, (int, np.integer)) and "class_labels" in like:
        null_condition = [int(null_condition)]
    elif "encoder_hidden_states" in like and not isinstance(null_condition, Mapping):
        null_condition = {"encoder_hidden_states": null_condition}
    null = _tree_map(lambda v: v, null_condition) if isinstance(null_condition, Mapping) else null_condition
    import torch

    def one(v: Any, ref: Any) -> Any:
        t = torch.as_tensor(np.asarray(v) if not hasattr(v, "shape") else v, device=device)
        t = t.to(dtype) if t.is_floating_point() else t.long()
        if t.ndim == ref.ndim - 1:
            t = t.unsqueeze(0)
        if t.shape[1:] != ref.shape[1:] or t.shape[0] != 1:
            raise InputError(f"null_condition: expected one condition of shape {tuple(ref.shape[1:])}, "
                             f"got {tuple(t.shape)}")
        return t

    def zip_map(a: Any, b: Any) -> Any:
        if isinstance(b, Mapping):
            if not isinstance(a, Mapping) or set(a) != set(b):
                raise InputError(f"null_condition: expected the keys {sorted(b)} of the conditions")
            return {k: zip_map(a[k], b[k]) for k in b}
        return one(a, b)

    return zip_map(null if isinstance(null, Mapping) else {"class_labels": null}, like)


def predicted_x0(scheduler: Any, model_output: Any, z: Any, timestep: Any) -> Any:
    """x0(z_t): the clean sample the model predicts at ``timestep`` (DDPM/DDIM parameterisations:
    epsilon, v or sample prediction), differentiable in ``z`` and ``model_output``."""
    kind = getattr(scheduler.config, "prediction_type", "epsilon")
    if kind == "sample":
        return model_output
    alphas = getattr(scheduler, "alphas_cumprod", None)
    if alphas is None:
        raise OptionError(f"guidance needs a scheduler with alphas_cumprod (DDIM, DDPM, PNDM...), got "
                          f"{type(scheduler).__name__}")
    a = alphas.to(z.device)[int(timestep)].to(z.dtype)
    if kind == "epsilon":
        return (z - (1.0 - a).sqrt() * model_output) / a.sqrt()
    if kind == "v_prediction":
        return a.sqrt() * z - (1.0 - a).sqrt() * model_output
    raise OptionError(f"unknown prediction_type {kind!r} of the scheduler")


def _check_options(guidance_scale: float, steps: int, batch_size: int, sampler: str) -> None:
    if isinstance(guidance_scale, bool) or not isinstance(guidance_scale, (int, float)) or \
            not math.isfinite(guidance_scale) or guidance_scale < 0:
        raise OptionError(f"guidance_scale must be a finite number >= 0, got {guidance_scale!r}")
    check_positive_number(steps, "steps", integer=True)
    check_positive_number(batch_size, "batch_size", integer=True)
    check_choice(sampler, SAMPLERS, parameter="sampler")


def _scheduler_for(scheduler: Any, sampler: str) -> Any:
    if sampler == "ddim":
        from diffusers import DDIMScheduler

        if not isinstance(scheduler, DDIMScheduler):
            # every value as it stands: from_config would reset those marked as defaults at construction
            # (``_use_default_values``) even when a pipeline changed them since (clip_sample, steps_offset)
            config = {k: v for k, v in dict(scheduler.config).items() if k != "_use_default_values"}
            return DDIMScheduler.from_config(config)
    return copy.deepcopy(scheduler)


def _sample_shape(unet: Any, shape: Sequence[int] | None) -> tuple:
    if shape is not None:
        return tuple(int(s) for s in shape)
    cfg = unet.config
    size = cfg.sample_size
    hw = (size, size) if isinstance(size, int) else tuple(size)
    return (int(cfg.in_channels), *hw)


def sample(
    unet: Any, scheduler: Any, conditions: Any, *, null_condition: Any = None, guidance_scale: float = 1.0,
    steps: int = 50, seed: int = 0, seeds: Sequence[int] | None = None, batch_size: int = 64,
    guidance: Guidance | None = None, sampler: str = "ddim", eta: float = 0.0,
    shape: Sequence[int] | None = None, device: Any = None, progress: Callable[[int], None] | None = None,
) -> Any:
    """Denoise one sample per entry of ``conditions`` and return them, a tensor (n, C, H, W) on the CPU
    (pixels in [-1, 1] for a pixel model; latents for a latent model: decode them with its VAE).

    ``unet``: a diffusers-style denoiser (``unet(z, t, **condition).sample``); ``scheduler``: its noise
    schedule (any diffusers scheduler; with ``sampler='ddim'``, the default, a ``DDIMScheduler`` is built
    from its config, so a model trained with DDPM samples with DDIM in ``steps`` steps; ``'as-given'`` uses
    a copy of ``scheduler`` itself). ``conditions``: one per sample (see :func:`as_condition_kwargs`).
    ``null_condition``: the unconditional input for CFG (the null class label, or the empty prompt's
    encoder states), needed when ``guidance_scale`` != 1. ``seed``/``seeds``: sample i uses ``seeds[i]``
    (default :func:`sample_seeds` of ``seed``). ``batch_size``: samples denoised together (the CFG pass
    doubles it). ``guidance``: a sampler-side guidance (:class:`~promptprism.guidance.PromptSplitGuidance`);
    at a step where its scale is 0 no gradient is computed, so a zero scale gives exactly the unguided
    samples. ``eta``: DDIM's stochasticity (0 = deterministic). ``shape``: (C, H, W) of a sample (default:
    the model config's ``in_channels`` and ``sample_size``). ``progress``: called with the number of
    samples finished after each batch.
    """
    import torch

    _check_options(guidance_scale, steps, batch_size, sampler)
    check_positive_number(eta, "eta", allow_zero=True)
    params = next(iter(unet.parameters()), None) if hasattr(unet, "parameters") else None
    device = device if device is not None else (params.device if params is not None else "cpu")
    dtype = params.dtype if params is not None else torch.float32
    cond = as_condition_kwargs(conditions, device, dtype)
    n = _tree_leaves(cond)[0].shape[0]
    if any(leaf.shape[0] != n for leaf in _tree_leaves(cond)):
        raise InputError("conditions: every condition tensor needs one row per sample")
    use_cfg = float(guidance_scale) != 1.0
    if use_cfg and null_condition is None:
        raise OptionError(f"guidance_scale {guidance_scale} needs a null_condition (the unconditional input)")
    null = _null_kwargs(null_condition, cond, device, dtype) if use_cfg else None
    seeds = sample_seeds(seed, n) if seeds is None else [check_seed(s) for s in seeds]
    if len(seeds) != n:
        raise OptionError(f"seeds: expected one per sample ({n}), got {len(seeds)}")
    sshape = _sample_shape(unet, shape)
    if guidance is not None:
        guidance.start(n, sshape, dtype, device)
    out = []
    for start in range(0, n, batch_size):
        index = torch.arange(start, min(start + batch_size, n))
        batch = _tree_map(lambda t, i=index: t[i.to(t.device)], cond)
        gens = [torch.Generator().manual_seed(seeds[int(i)]) for i in index]
        z = _denoise(unet, _scheduler_for(scheduler, sampler), batch, null, gens, index, sshape=sshape,
                     steps=steps, w=float(guidance_scale), guidance=guidance, eta=eta, device=device,
                     dtype=dtype)
        if guidance is not None:
            guidance.finish(z, index)
        out.append(z.cpu())
        if progress is not None:
            progress(int(index[-1]) + 1)
    return torch.cat(out) if out else torch.zeros((0, *sshape))


def _denoise(unet: Any, scheduler: Any, batch: dict, null: dict | None, gens: list, index: Any, *,
             sshape: tuple, steps: int, w: float, guidance: Guidance | None, eta: float, device: Any,
             dtype: Any) -> Any:
    """One batch from noise to sample: the loop of :func:`sample`."""
    import torch

    b = len(gens)
    z = torch.stack([torch.randn(sshape, generator=g) for g in gens]).to(device=device, dtype=dtype)
    scheduler.set_timesteps(steps)
    z = z * scheduler.init_noise_sigma
    both = _pair(null, batch, b) if null is not None else None
    step_params = inspect.signature(scheduler.step).parameters

    def eps_of(zz: Any, t: Any) -> Any:
        zin = scheduler.scale_model_input(zz, t)
        if null is None:
            return unet(zin, t, **batch).sample
        e_null, e_cond = unet(torch.cat([zin, zin]), t, **both).sample.chunk(2)
        return e_null + w * (e_cond - e_null)

    for i, t in enumerate(scheduler.timesteps):
        scale = guidance.step_scale(i, steps) if guidance is not None else 0.0
        grad = None
        if scale != 0.0:
            eps, grad = _guided_eps(eps_of, scheduler, guidance, z, t, index)
        else:
            with torch.no_grad():
                eps = eps_of(z, t)
        kw = {}
        if "generator" in step_params:
            kw["generator"] = gens
        if "eta" in step_params:
            kw["eta"] = eta
        if "variance_noise" in step_params and eta > 0:
            kw["variance_noise"] = torch.stack([torch.randn(sshape, generator=g) for g in gens]).to(
                device=device, dtype=dtype)
        z = scheduler.step(eps, t, z, **kw).prev_sample
        if grad is not None:
            z = z - scale * grad
            if not bool(torch.isfinite(z).all()):  # (a NaN sample decodes to a black image: never written)
                raise OptionError(f"guidance: the guided sample is not finite after step {i + 1} of {steps} "
                                  "(too large a step for the model's numbers); use a smaller scale",
                                  parameter="scale")
    return z.detach()


def _pair(null: dict, batch: dict, b: int) -> dict:
    """Model inputs of the CFG pass: b null conditions, then the batch's."""
    import torch

    def cat(nv: Any, bv: Any) -> Any:
        return torch.cat([nv.expand(b, *nv.shape[1:]), bv])

    def zip_map(nv: Any, bv: Any) -> Any:
        if isinstance(bv, Mapping):
            return {k: zip_map(nv[k], bv[k]) for k in bv}
        return cat(nv, bv)

    return zip_map(null, batch)


def _guided_eps(eps_of: Callable, scheduler: Any, guidance: Guidance, z: Any, t: Any, index: Any
                ) -> tuple[Any, Any]:
    """The noise prediction and grad_z of the guidance objective at x0(z)."""
    import torch

    zg = z.detach().requires_grad_(True)
    with torch.enable_grad():
        if guidance.through_model:
            eps = eps_of(zg, t)
            if not eps.requires_grad:
                raise InputError("the generator returned its prediction without gradients (is it run under "
                                 "torch.no_grad or does it detach?); guide with through_model=False to treat "
                                 "its prediction as a constant")
        else:
            with torch.no_grad():
                eps = eps_of(z, t)
        loss = guidance.objective(predicted_x0(scheduler, eps, zg, t), index)
        if not loss.requires_grad:
            raise InputError("the guidance objective has no gradient with respect to the samples (does the "
                             "encoder or the decoder run under torch.no_grad or detach its output?)")
        (grad,) = torch.autograd.grad(loss, zg)
    return eps.detach(), grad
