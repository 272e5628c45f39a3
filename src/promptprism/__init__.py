"""promptprism: where and how prompt-guided generative models behave differently.

Estimators over paired (prompt, output) embeddings:

* :class:`PromptSplit` - eigen-modes of the difference of joint prompt (x) output kernel covariances.
* :class:`Scendi` - prompt-aware diversity: the Schur complement of the joint (output, prompt) covariance
  splits output diversity into a model-driven and a prompt-driven part; :class:`PromptNullifier` removes
  what a prompt predicts from an output's features.
"""

from ._version import __version__
from .data import PairedSet, load_paired
from .errors import InputError, OptionError, PromptPrismError
from .methods.promptsplit import PromptSplit, PromptSplitResult
from .methods.scendi import (
    PromptNullifier,
    PromptRankWarning,
    Scendi,
    ScendiComparison,
    ScendiResult,
    rke_score,
    scendi_score,
    vendi_score,
    vendi_score_from_gram,
)
from .results import load_result

__all__ = [
    "InputError",
    "OptionError",
    "PairedSet",
    "PromptNullifier",
    "PromptPrismError",
    "PromptRankWarning",
    "PromptSplit",
    "PromptSplitResult",
    "Scendi",
    "ScendiComparison",
    "ScendiResult",
    "__version__",
    "load_paired",
    "load_result",
    "rke_score",
    "scendi_score",
    "vendi_score",
    "vendi_score_from_gram",
]
