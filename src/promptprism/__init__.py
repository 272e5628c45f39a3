"""promptprism: where and how prompt-guided generative models behave differently.

Estimators over paired (prompt, output) embeddings:

* :class:`PromptSplit` - eigen-modes of the difference of joint prompt (x) output kernel covariances.
"""

from ._version import __version__
from .data import PairedSet, load_paired
from .errors import InputError, OptionError, PromptPrismError
from .methods.promptsplit import PromptSplit, PromptSplitResult
from .results import load_result

__all__ = [
    "InputError",
    "OptionError",
    "PairedSet",
    "PromptPrismError",
    "PromptSplit",
    "PromptSplitResult",
    "__version__",
    "load_paired",
    "load_result",
]
