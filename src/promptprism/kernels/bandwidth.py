"""Bandwidth rules for the gaussian kernel.

The default rule is ``"median"``: sigma = the median of the non-zero pairwise Euclidean distances between
(at most ``max_samples``, seeded) embeddings. It makes a typical pair of samples sit at k = exp(-1/2), so the
kernel neither sees every pair as identical (sigma too large: the spectrum collapses onto one mode) nor every
pair as orthogonal (sigma too small: every sample becomes its own mode). Pairs at distance zero (repeated
prompts) are left out, otherwise a prompt bank with few distinct prompts would give sigma = 0.

Why change it: the bandwidth sets the *resolution* of the comparison. A smaller sigma separates finer
clusters (more, smaller modes); a larger one merges them. ``"0.5*median"`` or ``"2*median"`` scale the rule,
and a number fixes sigma outright (needed to compare runs on different data with the same kernel). The
PromptSplit paper tunes sigma until the top eigenvalues stop changing (gap < 0.01, after Ospanov et al.
2024); the ``"stable"`` rule (PromptSplit) does that scan: :func:`stable_bandwidth`.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..errors import OptionError

BANDWIDTH_RULES = ("median",)
#: rules that need the method's spectrum (resolved by the method, not by :func:`resolve_bandwidth`)
SPECTRAL_RULES = ("stable",)
_RULE = re.compile(r"^\s*(?:(?P<factor>\d+(?:\.\d*)?|\.\d+)\s*\*\s*)?(?P<rule>[a-z]+)\s*$")


def median_pairwise_distance(x: np.ndarray, *, max_samples: int = 1000, seed: int = 0) -> float:
    """Median of the non-zero pairwise distances |x_i - x_j|, i < j, on a seeded subsample."""
    n = x.shape[0]
    if n > max_samples:
        idx = np.sort(np.random.default_rng(seed).choice(n, size=max_samples, replace=False))
        sub = np.asarray(x[idx], dtype=np.float64)
    else:
        sub = np.asarray(x, dtype=np.float64)
    iu = np.triu_indices(sub.shape[0], k=1)
    with np.errstate(over="ignore", invalid="ignore"):  # rows near float64's limit: their pairs count as inf
        sq = np.einsum("ij,ij->i", sub, sub)
        d2 = (sq[:, None] + sq[None, :] - 2.0 * (sub @ sub.T))[iu]
        d2[np.isnan(d2)] = np.inf  # inf - inf: a squared distance beyond float64 is farther than any other
        # |a|^2 + |b|^2 - 2<a, b> cancels catastrophically for close pairs: a repeated row comes out at
        # ~sqrt(eps) |a| instead of 0 and would be counted as a distance. Recompute those pairs exactly.
        close = np.flatnonzero(d2 <= 1e-6 * (sq[iu[0]] + sq[iu[1]]))
        step = max(1, 2**22 // max(sub.shape[1], 1))  # pairs per block: bounded memory
        for start in range(0, close.size, step):
            idx = close[start : start + step]
            diff = sub[iu[0][idx]] - sub[iu[1][idx]]
            d2[idx] = np.einsum("ij,ij->i", diff, diff)
    d = np.sqrt(np.maximum(d2, 0.0))
    d = d[d > 0.0]
    if d.size == 0:
        return float("nan")
    return float(np.median(d))


def parse_bandwidth(spec: Any, name: str = "sigma", *, allow_stable: bool = False
                    ) -> tuple[str, float] | float:
    """A positive number, or ``(rule, factor)`` for strings like ``"median"`` or ``"0.5*median"``.

    ``allow_stable``: also accept ``"stable"`` (returned as ``("stable", 1.0)``), for methods that resolve
    it with :func:`stable_bandwidth`.
    """
    if isinstance(spec, str):
        s = spec.strip().lower()
        try:
            spec = float(s)
        except ValueError:
            if allow_stable and s in SPECTRAL_RULES:
                return (s, 1.0)
            m = _RULE.match(s)
            if not m or m.group("rule") not in BANDWIDTH_RULES:
                rules = BANDWIDTH_RULES + (SPECTRAL_RULES if allow_stable else ())
                raise OptionError(
                    f"{name} must be a number > 0 or a rule ({', '.join(rules)}, optionally "
                    f"scaled as '0.5*median'), got {spec!r}") from None
            factor = float(m.group("factor") or 1.0)
            if factor <= 0:
                raise OptionError(f"{name}: the factor in {spec!r} must be > 0") from None
            return (m.group("rule"), factor)
    if isinstance(spec, bool) or not isinstance(spec, (int, float, np.integer, np.floating)):
        raise OptionError(f"{name} must be a number > 0 or a rule name, got {spec!r}")
    value = float(spec)
    if not np.isfinite(value) or value <= 0:
        raise OptionError(f"{name} must be > 0, got {spec!r}")
    return value


def resolve_bandwidth(spec: Any, x: np.ndarray, *, name: str = "sigma", seed: int = 0,
                      max_samples: int = 1000) -> float:
    """Turn a bandwidth spec (number or rule) into a number, computing the rule on ``x``."""
    parsed = parse_bandwidth(spec, name)
    if isinstance(parsed, float):
        return parsed
    rule, factor = parsed
    if rule in SPECTRAL_RULES:
        raise OptionError(f"{name}: the {rule!r} rule is resolved by the method (it needs its spectrum)")
    value = median_pairwise_distance(x, max_samples=max_samples, seed=seed)
    if not np.isfinite(value) or value <= 0:
        raise OptionError(f"{name}: the median rule found no two distinct embeddings to measure a distance "
                          "between; pass a number instead")
    return factor * value


#: multiples of the median scanned by the 'stable' rule (sqrt(2) steps)
STABLE_MULTIPLIERS = (0.5, 0.71, 1.0, 1.41, 2.0, 2.83, 4.0)
#: the 'stable' rule compares each scanned bandwidth with the one this many times larger
STABLE_RATIO = 2 ** 0.5
#: the 'stable' rule's tolerance: the largest change of the top eigenvalues between two consecutive scanned
#: bandwidths (absolute, on normalised kernels; the PromptSplit paper's gap of 0.01)
STABLE_TOLERANCE = 0.01


def stable_bandwidth(top_eigenvalues: Any, median: float, *,
                     multipliers: tuple[float, ...] = STABLE_MULTIPLIERS,
                     tolerance: float | None = None, ratio: float = STABLE_RATIO) -> dict:
    """Scan sigma = multiplier x median and pick the smallest whose top eigenvalues are stable.

    ``top_eigenvalues(sigma)`` returns the quantity to stabilise (for PromptSplit: the top |eigenvalues| of
    each sign). The chosen sigma is the smallest scanned one whose top eigenvalues change by less than
    ``tolerance`` (largest absolute change) to the scanned sigma ``ratio`` times larger (the scanned one
    nearest to it in log scale, within 5 %; on the default grid: the next one). Comparing across a fixed
    ratio, not across neighbouring grid points, keeps the choice from depending on the grid: compared with
    its neighbour on a grid of 2^(1/4) steps, the text set-up of ``benchmarks/text_hedges.py`` picked
    0.5 x median where the sqrt(2) grid picked 0.71 x. Without such a plateau the median is kept and
    ``plateau`` is False (with a note saying so). Returns the scan as recorded in result.json:
    ``{"multipliers", "sigmas", "top_eigenvalues", "chosen", "plateau", "tolerance", "ratio", "note"}``.
    ``tolerance`` defaults to :data:`STABLE_TOLERANCE`.
    """
    tolerance = STABLE_TOLERANCE if tolerance is None else float(tolerance)
    sigmas = [float(f * median) for f in multipliers]
    tops = [np.asarray(top_eigenvalues(s), dtype=np.float64) for s in sigmas]
    logs = np.log(np.asarray(multipliers, dtype=np.float64))
    chosen, plateau = float(median), False
    for i in range(len(sigmas)):
        gap = np.abs(logs - logs[i] - np.log(ratio))
        j = int(np.argmin(gap))
        if gap[j] > np.log(1.05) or j == i:
            continue
        if float(np.max(np.abs(tops[j] - tops[i]), initial=0.0)) < tolerance:
            chosen, plateau = sigmas[i], True
            break
    note = (f"the top eigenvalues change by less than {tolerance:g} from {chosen:.4g} "
            f"({multipliers[sigmas.index(chosen)]:g} x median) to {ratio:.3g} times that bandwidth"
            if plateau else
            f"no plateau: the top eigenvalues change by {tolerance:g} or more across every scanned "
            f"factor of {ratio:.3g} in bandwidth, so the median is kept")
    return {"multipliers": list(multipliers), "sigmas": sigmas, "top_eigenvalues": [t.tolist() for t in tops],
            "chosen": chosen, "plateau": plateau, "tolerance": tolerance, "ratio": float(ratio), "note": note}
