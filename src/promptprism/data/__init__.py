"""Paired sets (prompt, output) and the loaders that build them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

#: module -> the public names it defines, imported on first use (see :mod:`promptprism._lazy`)
_EXPORTS = {
    ".inputs": ("InputNote", "LoadedInput", "load_input", "read_input"),
    ".loaders": ("load_paired",),
    ".manifest": ("Manifest", "read_image_folder", "read_manifest"),
    ".paired": ("PairedSet", "prompt_groups"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .inputs import InputNote, LoadedInput, load_input, read_input
    from .loaders import load_paired
    from .manifest import Manifest, read_image_folder, read_manifest
    from .paired import PairedSet, prompt_groups

__all__ = ["InputNote", "LoadedInput", "Manifest", "PairedSet", "load_input", "load_paired", "prompt_groups",
           "read_image_folder", "read_input", "read_manifest"]
