"""PromptSplit: where two prompt-guided models disagree, as eigen-modes of a joint covariance difference.

With psi(t, z) = phi_T(t) (x) phi_Z(z) (tensor product of prompt and output feature maps),

    Lambda = (1/n) sum_i psi(t_i, x_i) psi(t_i, x_i)^T - (eta/m) sum_j psi(t'_j, y_j) psi(t'_j, y_j)^T

over the test set X and the reference set Y. Positive eigenvalues are (prompt, output) modes the test model
produces more than the reference; negative ones, modes the reference produces more.

Layout: :mod:`.core` (pure functions: spectrum, scores, prompt contributions), :mod:`.significance`
(permutation test statistics), :mod:`.summary` (modes and prompt ranking), :mod:`.result` (result
dataclasses), :mod:`.options` (the options PromptSplit and K-way share, checked once). One comparison engine
serves both estimators: :mod:`.comparisons` (K sets, a list of comparisons, each a signed weighting of the
sets), :mod:`.route_base` and :mod:`.routes` (the route interface and the routes as objects: exact, rff,
sketch), :mod:`.testing` (the permutation test of every comparison, with :mod:`.family` / :mod:`.aggregate`
for a kernel family); :mod:`.estimator` (the :class:`PromptSplit` estimator: K = 2, test vs reference) and
:mod:`.kway` (the :class:`~.kway.KWaySplit` estimator: every pair and each set against the rest, results
in :mod:`.kway_result`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

#: module -> the public names it defines, imported on first use (see :mod:`promptprism._lazy`); the rest
#: of the package is importable from its modules and is not part of the public API
_EXPORTS = {
    "...stats.eigen": ("select_modes",),
    "...stats.modes": ("ModeStats",),
    ".core": (
        "exact_spectrum",
        "feature_spectrum",
        "joint_gram",
        "prompt_contributions",
        "prompt_disagreement",
        "promptsplit_distance_from_gram",
    ),
    ".estimator": ("PromptSplit",),
    ".result": (
        "Mode",
        "PromptLoading",
        "PromptSplitResult",
        "SampleScore",
    ),
    ".summary": (
        "prompt_ranking",
        "summarise",
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from ...stats.eigen import select_modes
    from ...stats.modes import ModeStats
    from .core import (
        exact_spectrum,
        feature_spectrum,
        joint_gram,
        prompt_contributions,
        prompt_disagreement,
        promptsplit_distance_from_gram,
    )
    from .estimator import PromptSplit
    from .result import Mode, PromptLoading, PromptSplitResult, SampleScore
    from .summary import prompt_ranking, summarise

__all__ = [
    "Mode",
    "ModeStats",
    "PromptLoading",
    "PromptSplit",
    "PromptSplitResult",
    "SampleScore",
    "exact_spectrum",
    "feature_spectrum",
    "joint_gram",
    "prompt_contributions",
    "prompt_disagreement",
    "prompt_ranking",
    "promptsplit_distance_from_gram",
    "select_modes",
    "summarise",
]
