"""promptprism: where and how prompt-guided generative models behave differently.

Estimators over paired (prompt, output) embeddings:

* :class:`PromptSplit` - eigen-modes of the difference of joint prompt (x) output kernel covariances;
  :class:`KWaySplit` - the same over K models at once (every pair, each model against the rest).
* :class:`CompCon` - a visual attribute one text-to-image model shows and another doesn't, and a description
  of the prompts that trigger it (VLM + CLIP + LLM through an OpenAI-compatible chat endpoint).
* :class:`RegionCMS` - disentangled mean embeddings: cosine mean similarity (CMS) of generated to real
  images, per pixel region (regions from the pixel-by-pixel CKA matrix); also the two-sample estimators
  :func:`cms`, :func:`mmd2`, :func:`hsic`, :func:`cka` and their block versions.
* :class:`Scendi` - prompt-aware diversity: the Schur complement of the joint (output, prompt) covariance
  splits output diversity into a model-driven and a prompt-driven part; :class:`PromptNullifier` removes
  what a prompt predicts from an output's features.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._lazy import lazy_exports
from ._version import __version__
from .errors import InputError, OptionError, PromptPrismError

#: module -> the public names it defines, imported on first use (PEP 562, :mod:`._lazy`): ``import
#: promptprism`` (and every command of the CLI, which imports the package first) loads only what it touches
_EXPORTS = {
    ".data": ("PairedSet", "load_paired"),
    ".data.images": ("ImageRows", "load_images"),
    ".llm": ("ChatClient", "EndpointError", "MalformedAnswerError"),
    ".methods.compcon": ("CallableGenerator", "CompCon", "CompConResult", "ImageBank", "TransformersClip"),
    ".methods.promptsplit": ("PromptSplit", "PromptSplitResult"),
    ".methods.promptsplit.kway": ("KWayResult", "KWaySplit"),
    ".methods.regions": ("RegionCMS", "RegionsResult", "block_cka", "block_cms", "block_hsic", "block_mmd2",
                         "cka", "cms", "cross_region_cka", "discover_regions", "hsic", "mmd2",
                         "pixel_cka_matrix", "rbf_kernel", "region_cms", "suggest_n_regions"),
    ".methods.scendi": ("PromptNullifier", "PromptRankWarning", "Scendi", "ScendiComparison", "ScendiResult",
                        "rke_score", "scendi_score", "vendi_score", "vendi_score_from_gram"),
    ".results": ("load_result",),
    ".scale": ("execution",),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


def _load_summaries() -> None:
    """Results show themselves through the report's summaries (``promptprism.report.summary`` registers
    them when imported); the package imports it the first time a result is shown, not at start-up."""
    importlib.import_module(".report.summary", __name__)


#: the modules that define the result kinds :func:`load_result` reads
_RESULT_MODULES = (".methods.promptsplit.result", ".methods.promptsplit.kway_result",
                   ".methods.scendi.result", ".methods.regions.result", ".methods.metrics.result",
                   ".methods.compcon.result", ".methods.compcon.evaluation")


def _load_kinds() -> None:
    for module in _RESULT_MODULES:
        importlib.import_module(module, __name__)


from . import results as _results  # noqa: E402

_results.LOAD_KINDS, _results.LOAD_SUMMARIES = _load_kinds, _load_summaries

if TYPE_CHECKING:  # (what the names are, for type checkers and editors)
    from .data import PairedSet, load_paired
    from .data.images import ImageRows, load_images
    from .llm import ChatClient, EndpointError, MalformedAnswerError
    from .methods.compcon import CallableGenerator, CompCon, CompConResult, ImageBank, TransformersClip
    from .methods.promptsplit import PromptSplit, PromptSplitResult
    from .methods.promptsplit.kway import KWayResult, KWaySplit
    from .methods.regions import (
        RegionCMS,
        RegionsResult,
        block_cka,
        block_cms,
        block_hsic,
        block_mmd2,
        cka,
        cms,
        cross_region_cka,
        discover_regions,
        hsic,
        mmd2,
        pixel_cka_matrix,
        rbf_kernel,
        region_cms,
        suggest_n_regions,
    )
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
    from .scale import execution

__all__ = [
    "execution",
    "CallableGenerator",
    "ChatClient",
    "CompCon",
    "CompConResult",
    "EndpointError",
    "ImageBank",
    "MalformedAnswerError",
    "TransformersClip",
    "ImageRows",
    "InputError",
    "KWayResult",
    "KWaySplit",
    "OptionError",
    "PairedSet",
    "PromptNullifier",
    "PromptPrismError",
    "PromptRankWarning",
    "PromptSplit",
    "PromptSplitResult",
    "RegionCMS",
    "RegionsResult",
    "Scendi",
    "ScendiComparison",
    "ScendiResult",
    "__version__",
    "block_cka",
    "block_cms",
    "block_hsic",
    "block_mmd2",
    "cka",
    "cms",
    "cross_region_cka",
    "discover_regions",
    "hsic",
    "load_images",
    "load_paired",
    "load_result",
    "mmd2",
    "pixel_cka_matrix",
    "rbf_kernel",
    "region_cms",
    "suggest_n_regions",
    "rke_score",
    "scendi_score",
    "vendi_score",
    "vendi_score_from_gram",
]
