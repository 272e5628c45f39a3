"""Differentiable PromptSplit losses in torch, for guiding a generator (PromptSplit paper, section 4).

    PromptSplit(x, y | t) = ||Lambda||_F^2 = tr(D G D G)
                          = (1/n^2) sum G_xx^2 + (eta^2/m^2) sum G_yy^2 - (2 eta/(n m)) sum G_xy^2
    Joint-Diversity(x | t) = ||C_{X (x) T}||_F^2 = (1/n^2) sum_ij (k_T(t_i, t_j) k_X(x_i, x_j))^2

with G the joint Gram matrix k_T k_X. Both are smooth functions of the output embeddings (and prompts), so
``loss.backward()`` gives the guidance gradient. torch is imported here only; the rest of the package does
not need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import OptionError

if TYPE_CHECKING:  # pragma: no cover
    import torch


def _gram(kernel: str, a: torch.Tensor, b: torch.Tensor, sigma: float | None) -> torch.Tensor:
    if kernel == "cosine":
        return (a / a.norm(dim=1, keepdim=True)) @ (b / b.norm(dim=1, keepdim=True)).T
    if kernel == "gaussian":
        if sigma is None or not sigma > 0:
            raise OptionError(f"the gaussian kernel needs a bandwidth sigma > 0, got {sigma!r}")
        # |a - b|^2 without cdist, whose sqrt has no gradient at distance 0
        d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
        return (-d2.clamp_min(0.0) / (2.0 * sigma * sigma)).exp()
    raise OptionError(f"unknown kernel {kernel!r}; choose 'cosine' or 'gaussian'")


def promptsplit_distance(
    outputs: torch.Tensor, prompts: torch.Tensor, reference_outputs: torch.Tensor,
    reference_prompts: torch.Tensor, *, kernel: str = "gaussian", sigma_output: float | None = None,
    sigma_prompt: float | None = None, eta: float = 1.0,
) -> torch.Tensor:
    """||C_test - eta C_ref||_F^2 of the joint prompt (x) output covariances, as a differentiable scalar."""
    n, m = outputs.shape[0], reference_outputs.shape[0]
    g_xx = _gram(kernel, prompts, prompts, sigma_prompt) * _gram(kernel, outputs, outputs, sigma_output)
    g_yy = (_gram(kernel, reference_prompts, reference_prompts, sigma_prompt)
            * _gram(kernel, reference_outputs, reference_outputs, sigma_output))
    g_xy = (_gram(kernel, prompts, reference_prompts, sigma_prompt)
            * _gram(kernel, outputs, reference_outputs, sigma_output))
    return ((g_xx ** 2).sum() / n**2 + eta**2 * (g_yy ** 2).sum() / m**2
            - 2.0 * eta * (g_xy ** 2).sum() / (n * m))


def joint_diversity(
    outputs: torch.Tensor, prompts: torch.Tensor, *, kernel: str = "gaussian",
    sigma_output: float | None = None, sigma_prompt: float | None = None,
) -> torch.Tensor:
    """||C_{X (x) T}||_F^2 = (1/n^2) sum_ij (k_T k_X)_ij^2: large when samples with similar prompts collapse.

    (Section 4 adds rho * grad of this term to the update to promote diversity among samples whose prompts
    are correlated; it equals 1/RKE of the joint distribution.)
    """
    n = outputs.shape[0]
    g = _gram(kernel, prompts, prompts, sigma_prompt) * _gram(kernel, outputs, outputs, sigma_output)
    return (g ** 2).sum() / n**2
