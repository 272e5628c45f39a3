"""Kernels shared by every method, each concept once: squared distances and Gram matrices (:mod:`.gram`),
the bandwidth value object and its rules (:mod:`.bandwidth`), finite feature maps (:mod:`.features`).

All kernels are normalised, k(a, a) = 1:

* cosine:   k(a, b) = <a, b> / (|a| |b|),           exact feature map a / |a|
* gaussian: k(a, b) = exp(-|a - b|^2 / (2 sigma^2)), random Fourier feature map; the regions method writes
  it as exp(-gamma |a - b|^2), gamma = 1 / (2 sigma^2) (:mod:`.rbf`)
"""

from .bandwidth import (
    BANDWIDTH_RULES,
    Bandwidth,
    gamma_from_median,
    median_pairwise_distance,
    resolve_bandwidth,
)
from .features import (
    JointFeatureMap,
    ProductRandomFourierFeatures,
    ProductRandomProjection,
    RandomFourierFeatures,
    cosine_features,
)
from .gram import (
    KERNELS,
    cosine_gram,
    covariance_difference_norm,
    feature_gram,
    gaussian_gram,
    joint_gram,
    kernel_gram,
    polynomial_gram,
    squared_distances,
)
from .rbf import gamma_from_sigma, rbf_kernel, sigma_from_gamma
from .scendi_features import ScendiFeatureMaps

__all__ = [
    "BANDWIDTH_RULES",
    "Bandwidth",
    "KERNELS",
    "JointFeatureMap",
    "ProductRandomFourierFeatures",
    "ProductRandomProjection",
    "RandomFourierFeatures",
    "ScendiFeatureMaps",
    "cosine_features",
    "cosine_gram",
    "covariance_difference_norm",
    "feature_gram",
    "gamma_from_median",
    "gamma_from_sigma",
    "gaussian_gram",
    "joint_gram",
    "kernel_gram",
    "median_pairwise_distance",
    "polynomial_gram",
    "rbf_kernel",
    "resolve_bandwidth",
    "sigma_from_gamma",
    "squared_distances",
]
