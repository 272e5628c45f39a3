"""Scendi: prompt-aware diversity, from the Schur complement of the joint (output, prompt) covariance.

With feature maps phi_I (outputs) and phi_T (prompts) and the paired set {(t_i, x_i)}_{i=1..n},

    C = (1/n) sum_i [phi_I(x_i); phi_T(t_i)] [phi_I(x_i); phi_T(t_i)]^T = [[C_II, C_IT], [C_TI, C_TT]]
    Gamma* = C_IT C_TT^+            (text-to-output conversion, Proposition 1; ^+ = pseudo-inverse)
    Lambda_T = C_IT C_TT^+ C_TI      (prompt-driven part of C_II)
    Lambda_I = C_II - Lambda_T       (Schur complement: the model-driven part)

Tr(C_II) = 1 (normalised kernels), so Tr(Lambda_I) + Tr(Lambda_T) = 1. Lambda_I is the (uncentred) covariance
of the prompt-nullified features phi_I(x) - Gamma* phi_T(t) (eq. 7).

Scores (all reported as exponentials of entropies in nats, "effective numbers of modes"):

* ``scendi``       exp(Scendi_I), Scendi_I = sum_j l_j log(Tr(Lambda_I) / l_j), l_j = eigenvalues of Lambda_I
                   (appendix eq. 9); the weights are the un-normalised eigenvalues, so exp(Scendi_I) =
                   exp(-sum_j l_j log(l_j / sum_k l_k)), the reference implementation's formula. Eigenvalues
                   are clamped at 1e-10 as there.
* ``scendi_prompt`` exp(Scendi_T), the same with Lambda_T.
* ``scendi_order2`` / ``scendi_prompt_order2``: the order-2 (RKE-style) variant. Order 1 is Tr(L) times the
  Shannon entropy of the normalised spectrum p = l / Tr(L); order 2 replaces it by Tr(L) times the order-2
  Renyi entropy, -log sum_j p_j^2. So exp(Scendi^(2)) = (1 / sum_j p_j^2)^Tr(L) = RKE(L / Tr L)^Tr(L),
  exactly as exp(Scendi) = Vendi(L / Tr L)^Tr(L).
* ``vendi`` = exp(-sum p log p), ``rke`` = 1 / sum p^2, with p the eigenvalues of C_II (trace 1): the
  prompt-unaware baselines of the same outputs.

Kernels: ``cosine`` (exact feature map a / |a|, any two embedding spaces) and ``gaussian`` (random Fourier
features). For the gaussian kernel, prompts and outputs get *separate* RFF maps by default (each with its
own bandwidth and frequencies: they may live in different spaces, and even CLIP's text and image embeddings
sit at different scales). ``shared_frequencies=True`` draws one set of frequencies and one bandwidth for
both, as the reference implementation does with CLIP (sigma 3.5 on raw ViT-B/32 features, 2 x 2500
features); it needs prompts and outputs in one space.

The joint covariance is a sum of outer products, accumulated chunk by chunk in a
:class:`~promptprism.stats.CovarianceAccumulator` (memory O((d_I + d_T)^2), independent of n).
Model-driven clusters are the top eigenvectors of Lambda_I (kernel PCA of the nullified features), each with
the samples that score highest on it; the same for C_II shows what conditioning on the prompt remov

Layout of this package (one concept per module): :mod:`.core` (feature-space quantities and scores),
:mod:`.dual` (the same in sample space, and the cross-fitted Gamma*), :mod:`.bootstrap` (intervals and
differences), :mod:`.replicates` (in-memory features and replicate engines), :mod:`.nullifier`
(:class:`PromptNullifier`, the input check and feature maps), :mod:`.streaming` (the streaming passes),
:mod:`.routes` (the routes: streamed, grouped, sample space), :mod:`.clusters`, :mod:`.result`,
:mod:`.estimator` (:class:`Scendi`), :mod:`.comparison` (:func:`compare`).
The feature maps live in :mod:`promptprism.kernels.scendi_features`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

#: module -> the public names it defines, imported on first use (see :mod:`promptprism._lazy`); the rest
#: of the package is importable from its modules and is not part of the public API
_EXPORTS = {
    "...kernels.scendi_features": ("ScendiFeatureMaps",),
    ".comparison": ("compare",),
    ".core": (
        "PromptRankWarning",
        "SchurSplit",
        "joint_covariance",
        "normalised_spectrum",
        "nullify",
        "rke_score",
        "scendi_entropy",
        "scendi_score",
        "schur_split",
        "vendi_score",
        "vendi_score_from_gram",
    ),
    ".crossfit": (
        "CrossFit",
        "cross_fit",
    ),
    ".estimator": ("Scendi",),
    ".nullifier": ("FittedNullifier", "PromptNullifier"),
    ".result": (
        "Cluster",
        "ClusterSample",
        "ScendiComparison",
        "ScendiResult",
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from ...kernels.scendi_features import ScendiFeatureMaps
    from .comparison import compare
    from .core import (
        PromptRankWarning,
        SchurSplit,
        joint_covariance,
        normalised_spectrum,
        nullify,
        rke_score,
        scendi_entropy,
        scendi_score,
        schur_split,
        vendi_score,
        vendi_score_from_gram,
    )
    from .crossfit import CrossFit, cross_fit
    from .estimator import Scendi
    from .nullifier import FittedNullifier, PromptNullifier
    from .result import Cluster, ClusterSample, ScendiComparison, ScendiResult

__all__ = [
    "Cluster",
    "ClusterSample",
    "CrossFit",
    "FittedNullifier",
    "PromptNullifier",
    "PromptRankWarning",
    "Scendi",
    "ScendiComparison",
    "ScendiFeatureMaps",
    "ScendiResult",
    "SchurSplit",
    "compare",
    "cross_fit",
    "joint_covariance",
    "normalised_spectrum",
    "nullify",
    "rke_score",
    "scendi_entropy",
    "scendi_score",
    "schur_split",
    "vendi_score",
    "vendi_score_from_gram",
]
