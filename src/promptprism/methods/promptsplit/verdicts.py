"""The permutation test's plain-language verdict and the record of a test with nothing to test."""

from __future__ import annotations

CORRECTION = "max-statistic step-down (FWER)"


def verdict(*, identical: bool, p_values: list[tuple[str, float, float]], alpha: float, permutations: int
            ) -> str:
    """One plain sentence: identical sets, no significant mode (with the largest eigenvalue's p), or which.

    ``p_values``: (side, eigenvalue, p) per tested mode.
    """
    if identical:
        return "test and reference hold the same pairs: there is no difference to find"
    if not p_values:
        return "no difference between test and reference: Lambda is zero to round-off"
    largest = max(p_values, key=lambda x: abs(x[1]))
    sig = [x for x in p_values if x[2] <= alpha]
    if not sig:
        return (f"no significant difference between test and reference at alpha = {alpha:g}; "
                f"largest eigenvalue p = {largest[2]:.2g}")
    n_t = sum(1 for x in sig if x[0] == "test")
    n_r = len(sig) - n_t
    return (f"{len(sig)} of {len(p_values)} modes differ significantly at alpha = {alpha:g} (family-wise, "
            f"{permutations} permutations): {n_t} that the test set produces more, {n_r} that the reference "
            f"produces more; largest eigenvalue p = {largest[2]:.2g}")


def empty_record(*, permutations: int, alpha: float, seed: int, identical: bool) -> dict:
    """The significance record when there is nothing to test (identical sets, or Lambda zero to round-off)."""
    return {"test": "permutation", "scheme": None, "permutations": permutations, "alpha": alpha, "seed": seed,
            "correction": CORRECTION, "null_top": {"test": [], "reference": []}, "threshold": {},
            "null_rank_quantiles": {"test": [], "reference": []}, "p_largest": None, "n_significant": 0,
            "approximation": None,
            "verdict": verdict(identical=identical, p_values=[], alpha=alpha, permutations=permutations)}
