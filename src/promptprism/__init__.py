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

from ._version import __version__
from .data import PairedSet, load_paired
from .data.images import ImageRows, load_images
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
from .report import summary as _summary  # noqa: F401  (results' repr and notebook tables)
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
