"""Pairwise preferences: the Wilson interval of a win rate and the exact sign test (two-sided or one-sided).

Pure functions on counts, no data: a judge's verdicts are counted elsewhere (wins of one side, losses, ties).

* :func:`wilson_interval`: for x successes in n trials at level 1 - a, with z = Phi^-1(1 - a/2) and
  p = x / n, the interval (Wilson 1927)

      ( p + z^2 / 2n  -+  z sqrt( p (1 - p) / n + z^2 / 4n^2 ) ) / (1 + z^2 / n).

  ``x`` may be fractional (ties counted as half a win): for a score s in [0, 1] with mean m,
  Var(s) = E[s^2] - m^2 <= E[s] - m^2 = m (1 - m), so the binomial variance the interval assumes bounds the
  true one and the interval is conservative with ties.
* :func:`sign_test`: the exact two-sided sign test of "wins and losses equally likely", ties dropped:
  with d = wins + losses and k = min(wins, losses), p = min(1, 2 P(Bin(d, 1/2) <= k))
  = min(1, 2 sum_{i <= k} C(d, i) / 2^d) (the binomial distribution with p = 1/2 is symmetric, so doubling
  the smaller tail is the exact two-sided test); p = 1 when d = 0.
"""

from __future__ import annotations

import math
from statistics import NormalDist


def wilson_interval(successes: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval (module docstring) of the proportion ``successes / n``; (0, 1) when n = 0."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes!r} of {n!r}")
    if n == 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def sign_test(wins: int, losses: int, alternative: str = "two-sided") -> float:
    """Exact sign test p-value of ``wins`` against ``losses`` (ties dropped before the call): two-sided
    (module docstring), or ``alternative="greater"``, P(Bin(d, 1/2) >= wins), for "wins more likely" (as
    McNemar's exact test of discordant pairs); 1 when d = 0."""
    if wins < 0 or losses < 0:
        raise ValueError(f"counts must be >= 0, got {wins!r} and {losses!r}")
    if alternative not in ("two-sided", "greater"):
        raise ValueError(f"alternative must be 'two-sided' or 'greater', got {alternative!r}")
    d = int(wins) + int(losses)
    if d == 0:
        return 1.0
    if alternative == "greater":
        return min(1.0, sum(math.comb(d, i) for i in range(int(wins), d + 1)) / 2**d)
    k = min(int(wins), int(losses))
    tail = sum(math.comb(d, i) for i in range(k + 1))
    return min(1.0, 2 * tail / 2**d)  # exact integer arithmetic, one rounding at the division


__all__ = ["sign_test", "wilson_interval"]
