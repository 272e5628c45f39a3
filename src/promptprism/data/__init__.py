"""Paired sets (prompt, output) and the loaders that build them."""

from .loaders import load_paired
from .paired import PairedSet, prompt_groups

__all__ = ["PairedSet", "load_paired", "prompt_groups"]
