"""The permutation test's plain-language verdict, the record of a test with nothing to test, and the
warnings of a test that cannot answer (too few permutations) or a spectrum that cannot be right."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

from ...data.paired import strings_disagree
from ...stats.intervals import format_p
from ...stats.permutation import can_reject

CORRECTION = "max-statistic step-down (FWER)"


def _words(names: tuple[str, str] | None = None) -> dict[str, str]:
    """How the verdict calls the two sets: by their sides, or (``names``: test, reference) by their names."""
    if names is None:
        return {"pair": "test and reference", "test": "the test set", "reference": "the reference"}
    return {"pair": f"{names[0]} and {names[1]}", "test": f"{names[0]} (test)",
            "reference": f"{names[1]} (reference)"}


def side_label(side: str, names: tuple[str, str] | None) -> str:
    """A side as the tables and ``describe`` show it: ``test``, or with names (test, reference)
    ``base (test)``."""
    return side if names is None else f"{names[0 if side == 'test' else 1]} ({side})"


def verdict(*, identical: bool, p_values: list[tuple[str, float, float]], alpha: float, permutations: int
            ) -> str:
    """One plain sentence: identical sets, no significant mode (with the largest eigenvalue's p), or which;
    the sets called by their sides (:func:`named_verdict` calls them by their names).

    ``p_values``: (side, eigenvalue, p) per tested mode.
    """
    w = _words()
    if identical:
        return f"{w['pair']} hold the same pairs: there is no difference to find"
    if not p_values:
        return f"no difference between {w['pair']}: Lambda is zero to round-off"
    largest = max(p_values, key=lambda x: abs(x[1]))
    sig = [x for x in p_values if x[2] <= alpha]
    if not sig:
        return (f"no significant difference between {w['pair']} at alpha = {alpha:g}; "
                f"largest eigenvalue p = {format_p(largest[2], alpha)}")
    n_t = sum(1 for x in sig if x[0] == "test")
    n_r = len(sig) - n_t
    return (f"{len(sig)} of {len(p_values)} modes differ significantly at alpha = {alpha:g} (family-wise, "
            f"{permutations} permutations): {n_t} that {w['test']} produces more, {n_r} that "
            f"{w['reference']} produces more; largest eigenvalue p = {format_p(largest[2], alpha)}")


def named_verdict(text: str, names: tuple[str, str] | None) -> str:
    """A verdict :func:`verdict` wrote with the sides' words, the sets called by ``names`` (test, reference)
    instead; what was added after it (the kernel aggregation, an early stop) is kept. No names: ``text``."""
    if names is None:
        return text
    plain, named = _words(), _words(names)
    phrases = ("{pair} hold the same", "between {pair}", "that {test} produces", "that {reference} produces")
    for phrase in phrases:
        text = text.replace(phrase.format(**plain), phrase.format(**named), 1)
    return text


def empty_record(*, permutations: int, alpha: float, seed: int, identical: bool) -> dict:
    """The significance record when there is nothing to test (identical sets, or Lambda zero to round-off)."""
    return {"test": "permutation", "scheme": None, "permutations": permutations, "alpha": alpha, "seed": seed,
            "correction": CORRECTION, "null_top": {"test": [], "reference": []}, "threshold": {},
            "null_rank_quantiles": {"test": [], "reference": []}, "p_largest": None, "n_significant": 0,
            "approximation": None,
            "verdict": verdict(identical=identical, p_values=[], alpha=alpha, permutations=permutations)}


def out_of_range_note(eigenvalues: Sequence[float], route: str, features: int | None, eta: float = 1.0
                      ) -> str | None:
    """The warning for an estimated spectrum outside [-eta, 1], where every eigenvalue of Lambda = C_test -
    eta C_ref lies (both kernels have k(s, s) = 1: each covariance is PSD with trace 1), on a random-feature
    route: too few features for the estimate (the tensor sketch's are unbiased, not bounded); None when it
    is inside, or on the exact route (its spectrum is the kernel matrices' own)."""
    if route == "exact":
        return None
    low, high = -float(eta), 1.0
    values = [float(v) for v in eigenvalues]
    worst = max(values, key=lambda v: max(v - high, low - v), default=0.0)
    if low - 1e-6 <= worst <= high + 1e-6:
        return None
    return (f"an eigenvalue of Lambda is {worst:.3g}, outside [{low:g}, {high:g}] where they all lie: the "
            f"{route} estimate from {features} random features is mostly noise; use more features (the "
            "default is 2000)")


def unreachable_alpha_note(permutations: int, alpha: float) -> str | None:
    """The warning for a permutation test that can never reject at ``alpha``: with K permutations the
    smallest p-value is 1 / (K + 1) (the observed labelling counts as one of the K + 1); None when it can
    (or when there is no test: K = 0)."""
    if can_reject(permutations, alpha):
        return None
    least = math.ceil(1.0 / alpha - 1.0 - 1e-9)
    return (f"permutations={permutations} can never reject at alpha = {alpha:g}: the smallest p-value of "
            f"{permutations} permutations is 1/{permutations + 1} = {1.0 / (permutations + 1):.3g}, so no "
            f"difference, however large, is found significant; use at least {least} (0 turns the test off)")


def caveat(notes: list[str], note: str | None) -> None:
    """A fit's caveat: said now as a warning, and kept for the result's ``notes`` (None: nothing)."""
    if note is not None:
        warnings.warn(note, UserWarning, stacklevel=3)
        notes.append(note)


def strings_note(*sets) -> str | None:
    """Where, within a set, one prompt string labels rows of different prompt embeddings
    (:func:`~promptprism.data.paired.strings_disagree`), what that does to a PromptSplit fit; else None."""
    why = next((w for s in sets if (w := strings_disagree(s)) is not None), None)
    if why is None:
        return None
    return (f"prompt strings group rows of different prompt embeddings ({why}): the prompt ranking and the "
            "test's within-prompt groups follow the strings (as categories), the kernel the embeddings; if "
            "each string should name one prompt, check that the strings and the embeddings are aligned")
