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
2024); scanning a few scaled medians and watching the spectrum does the same by hand.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..errors import OptionError

BANDWIDTH_RULES = ("median",)
_RULE = re.compile(r"^\s*(?:(?P<factor>\d+(?:\.\d*)?|\.\d+)\s*\*\s*)?(?P<rule>[a-z]+)\s*$")


def median_pairwise_distance(x: np.ndarray, *, max_samples: int = 1000, seed: int = 0) -> float:
    """Median of the non-zero pairwise distances |x_i - x_j|, i < j, on a seeded subsample."""
    n = x.shape[0]
    if n > max_samples:
        idx = np.sort(np.random.default_rng(seed).choice(n, size=max_samples, replace=False))
        sub = np.asarray(x[idx], dtype=np.float64)
    else:
        sub = np.asarray(x, dtype=np.float64)
    sq = np.einsum("ij,ij->i", sub, sub)
    iu = np.triu_indices(sub.shape[0], k=1)
    d2 = (sq[:, None] + sq[None, :] - 2.0 * (sub @ sub.T))[iu]
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


def parse_bandwidth(spec: Any, name: str = "sigma") -> tuple[str, float] | float:
    """A positive number, or ``(rule, factor)`` for strings like ``"median"`` or ``"0.5*median"``."""
    if isinstance(spec, str):
        s = spec.strip().lower()
        try:
            spec = float(s)
        except ValueError:
            m = _RULE.match(s)
            if not m or m.group("rule") not in BANDWIDTH_RULES:
                raise OptionError(
                    f"{name} must be a number > 0 or a rule ({', '.join(BANDWIDTH_RULES)}, optionally "
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
    value = median_pairwise_distance(x, max_samples=max_samples, seed=seed)
    if not np.isfinite(value) or value <= 0:
        raise OptionError(f"{name}: the median rule found no two distinct embeddings to measure a distance "
                          "between; pass a number instead")
    return factor * value
