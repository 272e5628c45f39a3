"""One interval value and one way to print an estimate with it, for the CLI, the report and result.json.

An :class:`Interval` is read from any of the shapes the methods store (``{'low', 'high', ...}`` dicts,
``(low, high)`` pairs); :func:`format_estimate` prints ``value [low, high]`` and never an interval that says
nothing or contradicts its estimate: a degenerate one (not finite, or high <= low while the estimate is not
that point) is left out with a word, and one that excludes its estimate is left out with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: relative slack when asking whether an interval holds its estimate (rounding of stored numbers)
SLACK = 1e-9


@dataclass(frozen=True)
class Interval:
    """A confidence interval: ``low``, ``high``, and where known its ``level``, ``method`` and ``validity``
    (whether the method is calibrated in the regime it was used in, in words)."""

    low: float
    high: float
    level: float | None = None
    method: str | None = None
    validity: str | None = None

    @classmethod
    def of(cls, value: Any) -> Interval | None:
        """The interval in ``value`` (an Interval, a dict with 'low'/'high', a pair), or None."""
        if value is None or isinstance(value, Interval):
            return value
        try:
            if isinstance(value, Mapping):
                return cls(float(value["low"]), float(value["high"]), value.get("level"), value.get("method"),
                           value.get("validity"))
            low, high = value
            return cls(float(low), float(high))
        except (KeyError, TypeError, ValueError):
            return None

    def degenerate(self, estimate: float | None = None) -> bool:
        """Not finite, reversed, or a single point other than the estimate."""
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.high < self.low:
            return True
        return self.high == self.low and (estimate is None or estimate != self.low)

    def contains(self, estimate: float) -> bool:
        """``low <= estimate <= high``, up to :data:`SLACK` of the interval's scale."""
        tol = SLACK * max(abs(self.low), abs(self.high), 1e-300)
        return self.low - tol <= estimate <= self.high + tol

    def to_dict(self) -> dict[str, Any]:
        """{'low', 'high'} and whichever of level, method and validity are known."""
        out = {"low": self.low, "high": self.high}
        out.update({k: v for k, v in (("level", self.level), ("method", self.method),
                                       ("validity", self.validity)) if v is not None})
        return out


def format_p(p: float, alpha: float | None = None, digits: int = 2) -> str:
    """A p-value in ``digits`` significant digits, or as many more as keep the printed value on the side of
    ``alpha`` the p-value is on (0.049975 at alpha = 0.05 prints 0.04998, not 0.05; 0.0501 prints 0.0501)."""
    text = f"{p:.{digits}g}"
    if alpha is None:
        return text
    for more in range(digits, 17):
        text = f"{p:.{more}g}"
        shown = float(text)
        if shown == p or (shown != alpha and (shown <= alpha) == (p <= alpha)):
            return text
    return text


def format_estimate(value: float | None, interval: Any = None, spec: str | Callable[[float], str] = ".3g",
                    *, missing: str = "–", sep: str = " ", calibrated: bool = True) -> str:
    """``value [low, high]`` with ``spec`` (a format spec or a function), ``missing`` for no value, ``sep``
    between the value and what follows it; a degenerate interval or one that excludes the estimate is not
    printed as one, and the text says so; nor is one whose method did not reach its nominal coverage where
    it was used (``calibrated`` False): ``value (range [low, high], not a calibrated interval)``."""
    show = spec if callable(spec) else (lambda v: format(v, spec))
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return missing
    if not math.isfinite(number):
        return missing
    text = show(number)
    iv = Interval.of(interval)
    if iv is None:
        return text
    if iv.degenerate(number):
        return f"{text}{sep}(no interval: degenerate)"
    if not iv.contains(number):
        return (f"{text}{sep}(its interval [{show(iv.low)}, {show(iv.high)}] excludes it: not a confidence "
                "interval)")
    if not calibrated:
        return f"{text}{sep}(range [{show(iv.low)}, {show(iv.high)}], not a calibrated interval)"
    return f"{text}{sep}[{show(iv.low)}, {show(iv.high)}]"


def hold_estimate(interval: Mapping[str, Any], estimate: float) -> dict[str, Any]:
    """The interval widened to hold its estimate: [min(low, e), max(high, e)], with ``widened_from`` the
    interval before (when it excluded e) and ``contains_estimate`` True.

    Basic and jackknife intervals are built around a bias-corrected centre; where that correction is larger
    than the half-width they exclude the (biased) estimate. The hull keeps the corrected side and adds the
    estimate's: it covers whenever the interval did (coverage can only rise) and never contradicts the
    printed number."""
    e = float(estimate)
    out = dict(interval)
    if not out["low"] <= e <= out["high"]:
        out["widened_from"] = [float(out["low"]), float(out["high"])]
        out["low"], out["high"] = float(min(out["low"], e)), float(max(out["high"], e))
    out["contains_estimate"] = True
    return out

