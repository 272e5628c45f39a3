"""The methods: PromptSplit (and, in later modules, Scendi, regions, CompCon)."""

from .promptsplit import Mode, PromptLoading, PromptSplit, PromptSplitResult, SampleScore
from .regions import RegionCMS, RegionsResult
from .scendi import PromptNullifier, Scendi, ScendiComparison, ScendiResult

__all__ = ["Mode", "PromptLoading", "PromptNullifier", "PromptSplit", "PromptSplitResult", "RegionCMS",
           "RegionsResult", "SampleScore", "Scendi", "ScendiComparison", "ScendiResult"]
