"""The methods: PromptSplit (and, in later modules, Scendi, regions, CompCon)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

#: module -> the public names it defines, imported on first use (see :mod:`promptprism._lazy`)
_EXPORTS = {
    ".promptsplit": ("Mode", "PromptLoading", "PromptSplit", "PromptSplitResult", "SampleScore"),
    ".regions": ("RegionCMS", "RegionsResult"),
    ".scendi": ("PromptNullifier", "Scendi", "ScendiComparison", "ScendiResult"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .promptsplit import Mode, PromptLoading, PromptSplit, PromptSplitResult, SampleScore
    from .regions import RegionCMS, RegionsResult
    from .scendi import PromptNullifier, Scendi, ScendiComparison, ScendiResult

__all__ = ["Mode", "PromptLoading", "PromptNullifier", "PromptSplit", "PromptSplitResult", "RegionCMS",
           "RegionsResult", "SampleScore", "Scendi", "ScendiComparison", "ScendiResult"]
