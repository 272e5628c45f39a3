"""The methods: PromptSplit (and, in later modules, Scendi, regions, CompCon)."""

from .promptsplit import Mode, PromptLoading, PromptSplit, PromptSplitResult, SampleScore

__all__ = ["Mode", "PromptLoading", "PromptSplit", "PromptSplitResult", "SampleScore"]
