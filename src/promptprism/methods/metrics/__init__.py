"""Reference-set metrics on embeddings: Fréchet distance, KID, precision, recall, density, coverage."""

from .frechet import feature_moments, frechet_distance, frechet_distance_from_moments, trace_sqrt_product

__all__ = ["feature_moments", "frechet_distance", "frechet_distance_from_moments", "trace_sqrt_product"]
