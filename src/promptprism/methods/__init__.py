"""The methods: PromptSplit (and, in later modules, Scendi, regions, CompCon)."""

from .promptsplit import Mode, PromptLoading, PromptSplit, PromptSplitResult, SampleScore
from .regions import RegionCMS, RegionsResult

__all__ = ["Mode", "PromptLoading", "PromptSplit", "PromptSplitResult", "RegionCMS", "RegionsResult",
           "SampleScore"]
