"""PromptSplit: where two prompt-guided models disagree, as eigen-modes of a joint covariance difference.

With psi(t, z) = phi_T(t) (x) phi_Z(z) (tensor product of prompt and output feature maps),

    Lambda = (1/n) sum_i psi(t_i, x_i) psi(t_i, x_i)^T - (eta/m) sum_j psi(t'_j, y_j) psi(t'_j, y_j)^T

over the test set X and the reference set Y. Positive eigenvalues are (prompt, output) modes the test model
produces more than the reference; negative ones, modes the reference produces more.

Layout: :mod:`.core` (pure functions: spectrum, scores, prompt contributions), :mod:`.significance`
(permutation test), :mod:`.summary` (modes and prompt ranking), :mod:`.result` (result dataclasses),
:mod:`.options` (the options PromptSplit and K-way share, checked once), :mod:`.routes` (the routes as
objects: exact, rff, sketch), :mod:`.estimator` (the :class:`PromptSplit` estimator); K sets at once:
:mod:`.kway_core`, :mod:`.kway_routes`, :mod:`.kway_testing`, :mod:`.kway_result`, :mod:`.kway` (the
:class:`~.kway.KWaySplit` estimator).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._lazy import lazy_exports

#: module -> the public names it defines, imported on first use (see :mod:`promptprism._lazy`)
_EXPORTS = {
    "...stats.eigen": ("select_modes",),
    "...stats.modes": ("ModeStats",),
    ".core": (
        "Spectrum", "covariance_partition", "difference_partition", "exact_spectrum", "feature_spectrum",
        "joint_gram", "mode_stats_partition", "prompt_contributions", "prompt_disagreement",
        "promptsplit_distance_from_gram", "same_pairs", "signed_weights", "top_eigenvalues",
    ),
    ".estimator": ("EXACT_MAX_SAMPLES", "METHODS", "RANKINGS", "PromptSplit", "replace_config"),
    ".result": ("Mode", "PromptLoading", "PromptSplitResult", "SampleScore"),
    ".significance": (
        "choose_scheme", "permutation_test", "permuted_labels", "permuted_spectra", "step_down_pvalues",
    ),
    ".summary": ("SIDES", "prompt_ranking", "summarise"),
}
_lookup, __dir__ = lazy_exports(__name__, _EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "_select_modes":  # backwards-compatible alias (the report imported the private name)
        return _lookup("select_modes")
    return _lookup(name)


if TYPE_CHECKING:
    from ...stats.eigen import select_modes
    from ...stats.modes import ModeStats
    from .core import (
        Spectrum,
        covariance_partition,
        difference_partition,
        exact_spectrum,
        feature_spectrum,
        joint_gram,
        mode_stats_partition,
        prompt_contributions,
        prompt_disagreement,
        promptsplit_distance_from_gram,
        same_pairs,
        signed_weights,
        top_eigenvalues,
    )
    from .estimator import EXACT_MAX_SAMPLES, METHODS, RANKINGS, PromptSplit, replace_config
    from .result import Mode, PromptLoading, PromptSplitResult, SampleScore
    from .significance import (
        choose_scheme,
        permutation_test,
        permuted_labels,
        permuted_spectra,
        step_down_pvalues,
    )
    from .summary import SIDES, prompt_ranking, summarise

__all__ = [
    "EXACT_MAX_SAMPLES",
    "METHODS",
    "RANKINGS",
    "SIDES",
    "Mode",
    "ModeStats",
    "PromptLoading",
    "PromptSplit",
    "PromptSplitResult",
    "SampleScore",
    "Spectrum",
    "choose_scheme",
    "covariance_partition",
    "difference_partition",
    "exact_spectrum",
    "feature_spectrum",
    "joint_gram",
    "mode_stats_partition",
    "permutation_test",
    "permuted_labels",
    "permuted_spectra",
    "prompt_contributions",
    "prompt_disagreement",
    "prompt_ranking",
    "promptsplit_distance_from_gram",
    "replace_config",
    "same_pairs",
    "select_modes",
    "signed_weights",
    "step_down_pvalues",
    "summarise",
    "top_eigenvalues",
]
