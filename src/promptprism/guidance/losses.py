"""Differentiable PromptSplit losses in torch, for guiding a generator (PromptSplit paper, section 4).

    PromptSplit(x, y | t) = ||Lambda||_F^2 = tr(D G D G)
                          = (1/n^2) sum G_xx^2 + (eta^2/m^2) sum G_yy^2 - (2 eta/(n m)) sum G_xy^2
    Joint-Diversity(x | t) = ||C_{X (x) T}||_F^2 = (1/n^2) sum_ij (k_T(t_i, t_j) k_X(x_i, x_j))^2

with G the joint Gram matrix k_T k_X (:func:`promptprism.kernels.gram.joint_gram`, PromptSplit's own code
path, differentiable on torch tensors). Both are smooth functions of the output embeddings (and prompts), so
``loss.backward()`` gives the guidance gradient.

The random-feature forms (:func:`promptsplit_distance_rff`, :func:`joint_diversity_rff`) take joint feature
rows psi(t_i, x_i) (``kernels.ProductRandomFourierFeatures``) and the reference's r x r covariance
C_ref = Psi_Y^T Psi_Y / m, computed once:

    PromptSplit_rff = ||Psi_X^T Psi_X / n - eta C_ref||_F^2
                    = ||Psi_X Psi_X^T||_F^2 / n^2 - (2 eta / n) tr(Psi_X C_ref Psi_X^T) + eta^2 ||C_ref||_F^2

in O(n^2 + n r + r^2) memory, whatever the reference's size m.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..kernels.gram import covariance_difference_norm, joint_gram

if TYPE_CHECKING:  # pragma: no cover
    import torch


def _precision(x: torch.Tensor) -> str:
    """The precision the Gram matrix is computed in: that of ``x`` (float32 stays float32)."""
    return "float32" if str(x.dtype).endswith("float32") else "float64"


def promptsplit_distance(
    outputs: torch.Tensor, prompts: torch.Tensor, reference_outputs: torch.Tensor,
    reference_prompts: torch.Tensor, *, kernel: str = "gaussian", sigma_output: float | None = None,
    sigma_prompt: float | None = None, eta: float = 1.0,
) -> torch.Tensor:
    """||C_test - eta C_ref||_F^2 of the joint prompt (x) output covariances (PromptSplit paper, Prop. 1,
    written with Gram matrices), as a differentiable scalar: the kernels' joint Gram matrix and distance
    (:func:`~promptprism.kernels.gram.joint_gram`,
    :func:`~promptprism.kernels.gram.covariance_difference_norm`,
    what PromptSplit's exact route computes) on tensors."""
    gram = joint_gram(prompts, outputs, reference_prompts, reference_outputs, kernel=kernel,
                      sigma_prompt=sigma_prompt, sigma_output=sigma_output, precision=_precision(outputs))
    return covariance_difference_norm(gram, outputs.shape[0], eta)


def joint_diversity(
    outputs: torch.Tensor, prompts: torch.Tensor, *, kernel: str = "gaussian",
    sigma_output: float | None = None, sigma_prompt: float | None = None,
) -> torch.Tensor:
    """||C_{X (x) T}||_F^2 = (1/n^2) sum_ij (k_T k_X)_ij^2: large when samples with similar prompts collapse.

    (Section 4 adds rho * grad of this term to the update to promote diversity among samples whose prompts
    are correlated; it equals 1/RKE of the joint distribution.)
    """
    gram = joint_gram(prompts, outputs, kernel=kernel, sigma_prompt=sigma_prompt, sigma_output=sigma_output,
                      precision=_precision(outputs))
    return covariance_difference_norm(gram, outputs.shape[0], 0.0)


def reference_covariance(reference_features: torch.Tensor) -> torch.Tensor:
    """C_ref = Psi_Y^T Psi_Y / m: the reference's r x r joint covariance in random-feature space."""
    return reference_features.T @ reference_features / reference_features.shape[0]


def joint_diversity_rff(features: torch.Tensor) -> torch.Tensor:
    """||Psi_X^T Psi_X / n||_F^2 = ||Psi_X Psi_X^T||_F^2 / n^2: Joint-Diversity in random-feature space."""
    n = features.shape[0]
    return ((features @ features.T) ** 2).sum() / n**2


def promptsplit_distance_rff(features: torch.Tensor, reference_cov: torch.Tensor, *,
                             eta: float = 1.0) -> torch.Tensor:
    """||Psi_X^T Psi_X / n - eta C_ref||_F^2 (PromptSplit paper, Algorithm 2's covariance difference), from
    the test rows' joint features (n, r) and the reference covariance of :func:`reference_covariance`."""
    n = features.shape[0]
    cross = (features @ reference_cov * features).sum()
    return (joint_diversity_rff(features) - 2.0 * eta * cross / n
            + eta**2 * (reference_cov ** 2).sum())
