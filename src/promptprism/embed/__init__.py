"""Encoders (texts/images -> float32 embeddings), their registry and the on-disk embedding cache.

Nothing here imports torch, transformers or sentence-transformers until a model is actually needed.
"""

from .base import Encoder, resolve_device
from .cache import EmbeddingCache, default_cache_dir
from .pipeline import EmbedStats, embed_items
from .registry import DEFAULT_IMAGE_MODEL, DEFAULT_TEXT_MODEL, clear_encoders, get_encoder, register_encoder

__all__ = [
    "DEFAULT_IMAGE_MODEL",
    "DEFAULT_TEXT_MODEL",
    "EmbedStats",
    "EmbeddingCache",
    "Encoder",
    "clear_encoders",
    "default_cache_dir",
    "embed_items",
    "get_encoder",
    "register_encoder",
    "resolve_device",
]
