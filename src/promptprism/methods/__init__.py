"""The methods: PromptSplit (and, in later modules, Scendi, regions, CompCon)."""

from .promptsplit import Mode, PromptLoading, PromptSplit, PromptSplitResult, SampleScore
from .scendi import PromptNullifier, Scendi, ScendiComparison, ScendiResult

__all__ = ["Mode", "PromptLoading", "PromptNullifier", "PromptSplit", "PromptSplitResult", "SampleScore",
           "Scendi", "ScendiComparison", "ScendiResult"]
