"""Paired sets (prompt, output) and the loaders that build them."""

from .inputs import InputNote, LoadedInput, load_input, read_input
from .loaders import load_paired
from .manifest import Manifest, read_image_folder, read_manifest
from .paired import PairedSet, prompt_groups

__all__ = ["InputNote", "LoadedInput", "Manifest", "PairedSet", "load_input", "load_paired", "prompt_groups",
           "read_image_folder", "read_input", "read_manifest"]
