"""promptprism: where and how prompt-guided generative models behave differently.

Estimators over paired (prompt, output) embeddings:

* :class:`PromptSplit` - eigen-modes of the difference of joint prompt (x) output kernel covariances.
* :class:`CompCon` - a visual attribute one text-to-image model shows and another doesn't, and a description
  of the prompts that trigger it (VLM + CLIP + LLM through an OpenAI-compatible chat endpoint).
"""

from ._version import __version__
from .data import PairedSet, load_paired
from .errors import InputError, OptionError, PromptPrismError
from .methods.compcon import (
    CallableGenerator,
    ChatClient,
    CompCon,
    CompConResult,
    EndpointError,
    ImageBank,
    MalformedAnswerError,
    TransformersClip,
)
from .methods.promptsplit import PromptSplit, PromptSplitResult
from .results import load_result

__all__ = [
    "CallableGenerator",
    "ChatClient",
    "CompCon",
    "CompConResult",
    "EndpointError",
    "ImageBank",
    "MalformedAnswerError",
    "TransformersClip",
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
