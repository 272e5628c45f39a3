"""PromptSplit guidance (PromptSplit paper, section 4, eq. 5) as a sampler-side guidance for :func:`sample`.

At each denoising step tau the sampler's update gets

    - s_tau * grad_z  N * (PromptSplit(x_1:N, y_1:m | t) + rho * Joint-Diversity(x_1:N, t))

with x_i = encoder(decode(x0(z_i))) the embedding of the predicted clean sample, y the reference set's
embeddings, t the prompts' embeddings, s_tau = ``scale`` x ``schedule``(tau). Minimising Joint-Diversity
(= 1/RKE of the joint distribution) spreads samples whose prompts are alike (eq. 5's rho term). The
objective is multiplied by the set size N so that the step of one sample does not shrink as the set grows
(each sample's gradient of PromptSplit is O(1/N)).

What the generated set is: the current batch's samples (those denoised together), plus, with
``history=True`` (the default), the final embeddings of every earlier batch of the same :func:`sample` call,
as constants: later batches then fill what the earlier ones left out, and the guided set as a whole moves
toward the reference. With ``history=False`` each batch is matched to the reference on its own.

Memory: the exact loss holds N x m Gram matrices; with ``features=r`` (or automatically when the reference
has more than ``max_exact`` rows) the loss is computed on r random Fourier features (gaussian kernel) or
tensor-sketch projections (cosine kernel) and the reference enters only through its r x r covariance,
computed once (``kernels/`` maps; ``losses.promptsplit_distance_rff``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._validation import check_positive_number, check_seed
from ..errors import InputError, OptionError
from .losses import (
    joint_diversity,
    joint_diversity_rff,
    promptsplit_distance,
    promptsplit_distance_rff,
)

#: named step-size schedules: progress p = step / (steps - 1), 0 at the noisiest step, 1 at the last
SCHEDULES: dict[str, Callable[[float], float]] = {
    "constant": lambda p: 1.0,
    "early": lambda p: 1.0 - p,  # strongest while the layout forms
    "late": lambda p: p,  # strongest on the details
    "cosine": lambda p: 0.5 * (1.0 + math.cos(math.pi * p)),
}


def _finite_nonnegative(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) or \
            not math.isfinite(float(value)) or value < 0:
        raise OptionError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def resolve_schedule(schedule: str | Callable[[int, int], float]) -> Callable[[int, int], float]:
    """A per-step multiplier ``f(step, n_steps)``: a name in :data:`SCHEDULES` or the callable itself."""
    if callable(schedule):
        return schedule
    if schedule not in SCHEDULES:
        raise OptionError(f"schedule must be a callable (step, n_steps) -> float or one of "
                          f"{', '.join(SCHEDULES)}, got {schedule!r}")
    rule = SCHEDULES[schedule]
    return lambda step, n: rule(step / max(n - 1, 1))


def _rows(a: Any, name: str) -> np.ndarray:
    arr = np.asarray(a.detach().cpu().numpy() if hasattr(a, "detach") else a, dtype=np.float64)
    if arr.ndim != 2 or not arr.shape[0]:
        raise InputError(f"{name}: expected a non-empty (n, d) array of embeddings, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name}: holds NaN or infinite values")
    return arr


class PromptSplitGuidance:
    """Guide :func:`~promptprism.guidance.sample` toward a reference set (eq. 5).

    ``reference_outputs`` (m, d): the reference's embeddings by ``encoder``; ``reference_prompts`` (m, d_t)
    and ``prompts`` (n, d_t): prompt embeddings of the reference rows and of each sample of the ``sample``
    call (one row per condition, in order). ``encoder``: a torch callable images (N, C, H, W) -> (N, d),
    differentiable (default: the flattened pixels); ``decode``: latents -> images for a latent model (a VAE
    decode), default none. ``scale`` >= 0 and ``schedule``: the step size s_tau = scale x schedule(tau, n);
    ``rho`` >= 0: the Joint-Diversity weight; ``toward=False`` pushes away from the reference instead.
    ``kernel``/``sigma_output``/``sigma_prompt``/``eta``: PromptSplit's (sigmas default to the median
    pairwise distance of the reference's rows; ``min_sigma_output``: a floor on that rule, for a tight
    reference, see docs/guidance.md). ``features``: r random features instead of the exact
    loss (automatic above ``max_exact`` reference rows); ``seed``: of those features. ``through_model``:
    the gradient goes through the denoiser (exact grad_z); False treats its prediction as a constant.
    """

    def __init__(self, reference_outputs: Any, reference_prompts: Any, prompts: Any, *,
                 encoder: Callable | None = None, decode: Callable | None = None, scale: float = 1.0,
                 rho: float = 0.0, schedule: str | Callable[[int, int], float] = "constant",
                 toward: bool = True, kernel: str = "gaussian", sigma_output: float | None = None,
                 sigma_prompt: float | None = None, eta: float = 1.0, features: int | None = None,
                 max_exact: int = 4096, seed: int = 0, history: bool = True, through_model: bool = True,
                 min_sigma_output: float = 0.0) -> None:
        from ..kernels import median_pairwise_distance
        from ..kernels.gram import check_kernel

        self.scale = _finite_nonnegative(scale, "scale")
        self.rho = _finite_nonnegative(rho, "rho")
        self.eta = float(check_positive_number(eta, "eta"))
        self.schedule = resolve_schedule(schedule)
        self.kernel = check_kernel(kernel)
        self.seed = check_seed(seed)
        self.ref_outputs = _rows(reference_outputs, "reference_outputs")
        self.ref_prompts = _rows(reference_prompts, "reference_prompts")
        self.prompts = _rows(prompts, "prompts")
        if len(self.ref_prompts) != len(self.ref_outputs):
            raise InputError(f"reference_prompts: {len(self.ref_prompts)} rows for {len(self.ref_outputs)} "
                             "reference outputs; there must be one per row")
        if self.prompts.shape[1] != self.ref_prompts.shape[1]:
            raise InputError(f"prompts: dimension {self.prompts.shape[1]} differs from the reference "
                             f"prompts' {self.ref_prompts.shape[1]}")

        def sigma(value: float | None, rows: np.ndarray, name: str) -> float | None:
            if self.kernel == "cosine":
                return None
            if value is None:
                med = median_pairwise_distance(rows, seed=self.seed)
                if not np.isfinite(med) or med <= 0:
                    raise InputError(f"reference: all {name.split('_')[1]} rows are identical, so the median "
                                     f"rule gives no bandwidth; pass {name}")
                return med
            return float(check_positive_number(value, name))

        floor = _finite_nonnegative(min_sigma_output, "min_sigma_output")
        if sigma_output is None and floor > 0 and len(self.ref_outputs) > 1:
            med = median_pairwise_distance(self.ref_outputs, seed=self.seed)
            sigma_output = max(med if np.isfinite(med) else 0.0, floor)
        self.sigma_output = sigma(sigma_output, self.ref_outputs, "sigma_output")
        self.sigma_prompt = sigma(sigma_prompt, self.ref_prompts, "sigma_prompt")
        if features is None and len(self.ref_outputs) > max_exact:
            features = 2048
        self.features = None if features is None else int(check_positive_number(
            features, "features", integer=True, even=self.kernel == "gaussian"))
        self.encoder, self.decode = encoder, decode
        self.toward, self.history, self.through_model = bool(toward), bool(history), bool(through_model)
        self._map = self._ref = self._ref_cov = None
        self._seen: list = []

    def describe(self) -> dict:
        """The settings, as recorded in result.json."""
        return {"scale": self.scale, "rho": self.rho, "toward": self.toward, "kernel": self.kernel,
                "sigma_output": self.sigma_output, "sigma_prompt": self.sigma_prompt, "eta": self.eta,
                "features": self.features, "seed": self.seed, "history": self.history,
                "through_model": self.through_model, "reference_rows": len(self.ref_outputs)}

    def embed(self, images: Any) -> Any:
        """encoder(decode(images)) as (N, d) rows (differentiable)."""
        x = self.decode(images) if self.decode is not None else images
        e = self.encoder(x) if self.encoder is not None else x
        return e.reshape(e.shape[0], -1)

    def start(self, n_samples: int, sample_shape: tuple, dtype: Any, device: Any) -> None:
        """Check the prompts, the encoder's output dimension and its gradients; set up the reference."""
        import torch

        if len(self.prompts) != n_samples:
            raise InputError(f"prompts: {len(self.prompts)} rows for {n_samples} samples; the guidance needs "
                             "one prompt embedding per sample")
        probe = torch.zeros((1, *sample_shape), dtype=dtype, device=device, requires_grad=True)
        with torch.enable_grad():
            out = self.embed(probe)
        if out.shape[1] != self.ref_outputs.shape[1]:
            raise InputError(f"reference_outputs: embeddings of dimension {self.ref_outputs.shape[1]}, but "
                             f"the encoder outputs dimension {out.shape[1]}: embed the reference with the "
                             "same encoder")
        if not out.requires_grad:
            raise InputError("encoder: its output has no gradient with respect to the images (does it run "
                             "under torch.no_grad or detach?); guidance needs a differentiable encoder")
        self._dtype, self._device = torch.float64, device
        as_t = lambda a: torch.as_tensor(a, dtype=torch.float64, device=device)  # noqa: E731
        self._prompts_t = as_t(self.prompts)
        self._seen = []
        if self.features is None:
            self._ref = (as_t(self.ref_outputs), as_t(self.ref_prompts))
            return
        from ..kernels import ProductRandomFourierFeatures, ProductRandomProjection

        d_t, d_x = self.ref_prompts.shape[1], self.ref_outputs.shape[1]
        self._map = (ProductRandomFourierFeatures(d_t, d_x, self.features, self.sigma_prompt,
                                                  self.sigma_output, seed=self.seed)
                     if self.kernel == "gaussian" else ProductRandomProjection(d_t, d_x, self.features,
                                                                               seed=self.seed))
        cov = np.zeros((self.features, self.features))
        for s in range(0, len(self.ref_outputs), 4096):  # the reference's covariance, chunk by chunk
            psi = self._map.transform(self.ref_prompts[s:s + 4096], self.ref_outputs[s:s + 4096])
            cov += psi.T @ psi
        self._ref_cov = as_t(cov / len(self.ref_outputs))

    def step_scale(self, step: int, n_steps: int) -> float:
        """s_tau = scale x schedule(step, n_steps)."""
        return self.scale * float(self.schedule(step, n_steps)) if self.scale else 0.0

    def loss(self, outputs: Any, prompts: Any) -> Any:
        """N (+-PromptSplit + rho Joint-Diversity) of embeddings ``outputs`` (N, d) with prompts (N, d_t)."""
        outputs = outputs.to(self._dtype)
        sign = 1.0 if self.toward else -1.0
        if self._map is None:
            opts = dict(kernel=self.kernel, sigma_output=self.sigma_output, sigma_prompt=self.sigma_prompt)
            total = sign * promptsplit_distance(outputs, prompts, *self._ref, eta=self.eta, **opts)
            if self.rho:
                total = total + self.rho * joint_diversity(outputs, prompts, **opts)
        else:
            psi = self._map.transform(prompts, outputs)
            total = sign * promptsplit_distance_rff(psi, self._ref_cov, eta=self.eta)
            if self.rho:
                total = total + self.rho * joint_diversity_rff(psi)
        return outputs.shape[0] * total

    def objective(self, x0: Any, index: Any) -> Any:
        """The loss of the batch's predicted clean samples, with earlier batches' samples as constants."""
        import torch

        out, prompts = self.embed(x0), self._prompts_t[index.to(self._prompts_t.device)]
        if self.history and self._seen:
            out = torch.cat([out.to(self._dtype), *(s[0] for s in self._seen)])
            prompts = torch.cat([prompts, *(s[1] for s in self._seen)])
        return self.loss(out, prompts)

    def finish(self, samples: Any, index: Any) -> None:
        """Remember the batch's final embeddings (for the next batches' objective, with ``history``)."""
        import torch

        if self.history:
            with torch.no_grad():
                emb = self.embed(samples).to(self._dtype)
            self._seen.append((emb, self._prompts_t[index.to(self._prompts_t.device)]))
