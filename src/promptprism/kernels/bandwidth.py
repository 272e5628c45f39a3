"""Bandwidths of the gaussian kernel: one value object, parsed once, resolved once per fit.

A :class:`Bandwidth` holds the rule that sets it (a fixed number, ``"median"``, or PromptSplit's
``"stable"``), its factor (``"0.5*median"``), the number it resolved to and how that was chosen. It is parsed
once, where the value enters (the estimator's constructor, or the command line's bandwidth type), and
resolved once per fit (:meth:`Bandwidth.resolve`).

The default rule is ``"median"``: sigma = the median of the non-zero pairwise Euclidean distances between
(at most ``max_samples``, seeded) embeddings. It makes a typical pair of samples sit at k = exp(-1/2), so the
kernel neither sees every pair as identical (sigma too large: the spectrum collapses onto one mode) nor every
pair as orthogonal (sigma too small: every sample becomes its own mode). Pairs at distance zero (repeated
prompts) are left out, otherwise a prompt bank with few distinct prompts would give sigma = 0.

Why change it: the bandwidth sets the *resolution* of the comparison. A smaller sigma separates finer
clusters (more, smaller modes); a larger one merges them. ``"0.5*median"`` or ``"2*median"`` scale the rule,
and a number fixes sigma outright (needed to compare runs on different data with the same kernel). The
PromptSplit paper tunes sigma until the top eigenvalues stop changing (gap < 0.01, after Ospanov et al.
2024); the ``"stable"`` rule (PromptSplit) does that scan: :func:`stable_bandwidth` picks from the spectra
the method computes at :func:`stable_multiples` of the median.

The regions method writes the same kernel as exp(-gamma |a - b|^2) and its paper's rule sets gamma directly:
``gamma = factor / median`` (:func:`gamma_from_median`; a Bandwidth of ``kind='gamma'``).
"""

from __future__ import annotations

import dataclasses
import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._params import Check
from ..array_ops import canonical_order, edge_digest, sorted_subsample
from ..errors import InputError, OptionError
from .gram import squared_distances

#: the rules every bandwidth may name
BANDWIDTH_RULES = ("median",)
#: rules that need the method's spectrum (resolved by the method: PromptSplit's 'stable' scan)
SPECTRAL_RULES = ("stable",)
_RULE = re.compile(r"^\s*(?:(?P<factor>\d+(?:\.\d*)?|\.\d+)\s*\*\s*)?(?P<rule>[a-z]+)\s*$")
#: the median rule looks at most at this many (seeded) rows
MEDIAN_SAMPLES = 1000
#: the numbers a bandwidth (or a rule's factor) may be: embeddings divided by a sigma below 1e-100 (or
#: distances squared times a gamma above 1e100) overflow float64, and beyond the other end every pair of
#: samples is equally similar
BANDWIDTH_RANGE = (1e-100, 1e100)


def _in_range(value: float) -> bool:
    return BANDWIDTH_RANGE[0] <= value <= BANDWIDTH_RANGE[1]


def _out_of_range(name: str, what: str, spec: Any) -> OptionError:
    low, high = BANDWIDTH_RANGE
    return OptionError(f"{name}: {what} must be between {low:g} and {high:g} (beyond, the kernel under- or "
                       f"overflows float64), got {spec!r}", parameter=name)


@dataclass(frozen=True)
class Bandwidth:
    """A gaussian kernel's bandwidth: its rule, parsed once, and the number it resolved to.

    ``rule``: 'fixed' (a number was given), 'median' or 'stable'; ``factor``: the rule's multiplier
    ('0.5*median': 0.5; 'fixed': the number); ``value``: the resolved number (None until resolved);
    ``how``: how it was chosen; ``given``: the option as given (recorded in results; ``str()`` is its
    text); ``kind``: 'sigma' (a width: the median rule gives factor x median) or 'gamma'
    (exp(-gamma d^2): the median rule gives factor / median, :func:`gamma_from_median`).
    """

    rule: str
    factor: float = 1.0
    value: float | None = None
    how: str = ""
    given: Any = None
    kind: str = "sigma"

    @classmethod
    def parse(cls, spec: Any, name: str = "sigma", *, rules: Sequence[str] = BANDWIDTH_RULES,
              kind: str = "sigma") -> Bandwidth:
        """A positive number, or a rule like ``"median"`` or ``"0.5*median"`` (``rules``: the rule names
        allowed); a Bandwidth is returned as it is (after checking its rule). OptionError naming ``name``."""
        if isinstance(spec, Bandwidth):
            if spec.rule != "fixed" and spec.rule not in rules:
                raise OptionError(f"{name}: the {spec.rule!r} rule is not available here; use a number or "
                                  f"{', '.join(rules)}")
            return spec
        given = spec
        if isinstance(spec, str):
            s = spec.strip().lower()
            try:
                spec = float(s)
            except ValueError:
                m = _RULE.match(s)
                if not m or m.group("rule") not in rules:
                    raise OptionError(
                        f"{name} must be a number > 0 or a rule ({', '.join(rules)}, optionally "
                        f"scaled as '0.5*median'), got {spec!r}") from None
                factor = float(m.group("factor") or 1.0)
                if m.group("rule") in SPECTRAL_RULES and m.group("factor"):  # ('stable' takes no factor)
                    raise OptionError(f"{name} must be a number > 0 or a rule, got {spec!r}") from None
                if factor <= 0:
                    raise OptionError(f"{name}: the factor in {spec!r} must be > 0") from None
                if not _in_range(factor):
                    raise _out_of_range(name, "the factor", given) from None
                return cls(m.group("rule"), factor, given=given, kind=kind)
        if isinstance(spec, bool) or not isinstance(spec, (int, float, np.integer, np.floating)):
            raise OptionError(f"{name} must be a number > 0 or a rule name, got {spec!r}")
        value = float(spec)
        if not np.isfinite(value) or value <= 0:
            raise OptionError(f"{name} must be > 0, got {spec!r}")
        if not _in_range(value):
            raise _out_of_range(name, "a bandwidth", given)
        return cls("fixed", value, value, "given", given, kind)

    @property
    def fixed(self) -> bool:
        """Whether a number was given (nothing to resolve)."""
        return self.rule == "fixed"

    def chosen(self, value: float, how: str) -> Bandwidth:
        """This bandwidth resolved to ``value``, chosen as ``how`` says."""
        return dataclasses.replace(self, value=float(value), how=how)

    def resolve(self, x: Any, *, name: str = "sigma", seed: int = 0,
                max_samples: int = MEDIAN_SAMPLES, one_point_ok: bool = False) -> Bandwidth:
        """The number, from the rows ``x`` when a median rule sets it ('stable': the median it starts
        from; the method's scan then picks, :meth:`chosen`). A fixed bandwidth is returned as it is.
        ``one_point_ok``: rows that are all one embedding (one prompt shared by every row) take 1, a gaussian
        being 1 between equal rows whatever its bandwidth; else they are refused."""
        if self.fixed:
            return self
        rows = min(len(x), max_samples)
        if self.kind == "gamma":
            return self.chosen(gamma_from_median(x, self.factor, seed=seed, max_samples=max_samples),
                               f"{self.factor:g} / the median distance of {rows} rows (seed {seed})")
        median, big = scaled_median_distance(x, max_samples=max_samples, seed=seed)
        if one_point_ok and (math.isnan(median) or median <= 0) and _one_row_repeated(x[:max_samples]):
            return self.chosen(1.0, f"1: every one of the {rows} rows is the same embedding (one prompt), so "
                                    "the gaussian kernel is 1 whatever the bandwidth")
        if math.isnan(median) or median <= 0:
            raise OptionError(f"{name}: the median rule found no two distinct embeddings among {rows} rows "
                              "to measure a distance between; pass a number instead")
        if not math.isfinite(self.factor * median):
            raise InputError(f"{name}: embedding values up to {big:.3g} put the median distance beyond "
                             "floating point; rescale the embeddings (e.g. L2-normalise them)")
        return self.chosen(self.factor * median,
                           f"{self.factor:g} x the median distance of {rows} rows (seed {seed})")

    def resolve_pooled(self, arrays: Sequence[Any], *, name: str = "sigma", seed: int = 0,
                       one_point_ok: bool = False) -> Bandwidth:
        """:meth:`resolve` on the seeded pool of at most :data:`MEDIAN_SAMPLES` rows of several sets
        (:func:`pooled_rows`; the pool is drawn only when a rule needs it)."""
        if self.fixed:
            return self
        return self.resolve(pooled_rows(arrays, MEDIAN_SAMPLES, seed), name=name, seed=seed,
                            one_point_ok=one_point_ok)

    def __str__(self) -> str:
        return str(self.given)


def _one_row_repeated(x: Any) -> bool:
    """Whether every row of ``x`` (at least one) equals the first."""
    a = np.asarray(x)
    return a.ndim == 2 and a.shape[0] > 0 and bool(np.all(a == a[:1]))


def _parses(spec: Any, name: str) -> None:
    Bandwidth.parse(spec, name)


#: a gaussian bandwidth parameter: a number > 0 or a rule ('median', '0.5*median'), read by Bandwidth.parse
BANDWIDTH = Check(_parses, "a number > 0 or a bandwidth rule ('median', '0.5*median')")


def resolve_bandwidth(spec: Any, x: np.ndarray, *, name: str = "sigma", seed: int = 0,
                      max_samples: int = MEDIAN_SAMPLES) -> float:
    """The number a bandwidth option (number or rule) gives on the rows ``x``: :meth:`Bandwidth.resolve`."""
    return Bandwidth.parse(spec, name).resolve(x, name=name, seed=seed, max_samples=max_samples).value


def pooled_rows(arrays: Sequence[Any], max_rows: int, seed: int) -> np.ndarray:
    """At most ``max_rows`` seeded rows of K arrays pooled (max_rows // K from each, the rest from the last),
    without reading the other rows: the sample a median rule is computed on for several sets. The arrays are
    drawn from in their canonical order (:func:`~promptprism.array_ops.canonical_order`), so the pool, and
    the bandwidth a rule finds on it, do not depend on the order the sets were given in."""
    rng = np.random.default_rng(seed)
    k = len(arrays)
    sizes = [max_rows // k] * (k - 1) + [max_rows - (k - 1) * (max_rows // k)]
    parts = []
    for i, size in zip(canonical_order([edge_digest(a) for a in arrays]), sizes, strict=True):
        idx = sorted_subsample(arrays[i].shape[0], min(size, arrays[i].shape[0]), rng)
        parts.append(np.asarray(arrays[i][idx], dtype=np.float64))
    return np.concatenate(parts)


def subsample_rows(x: Any, max_samples: int, seed: int) -> np.ndarray:
    """At most ``max_samples`` rows of ``x`` (seeded, in order; the others are not read), as float64 rows
    (flattened): the sample a median rule is computed on."""
    n = x.shape[0]
    if n > max_samples:
        idx = sorted_subsample(n, max_samples, np.random.default_rng(seed))
        x = x[idx]
    x = np.asarray(x, dtype=np.float64)
    return x.reshape(x.shape[0], -1)


def median_pairwise_distance(x: np.ndarray, *, max_samples: int = MEDIAN_SAMPLES, seed: int = 0) -> float:
    """Median of the non-zero pairwise distances |x_i - x_j|, i < j, on a seeded subsample (rows flattened);
    distances from :func:`~promptprism.kernels.distances.squared_distances` (a pair beyond float64 counts as
    the farthest). NaN when every row is the same."""
    sub = subsample_rows(x, max_samples, seed)
    d = np.sqrt(squared_distances(sub)[np.triu_indices(sub.shape[0], k=1)])
    d = d[d > 0.0]
    return float(np.median(d)) if d.size else float("nan")


def scaled_median_distance(x: Any, *, max_samples: int = MEDIAN_SAMPLES, seed: int = 0
                           ) -> tuple[float, float]:
    """(:func:`median_pairwise_distance` of the rows, the largest magnitude among the rows it reads: the
    seeded subsample of at most ``max_samples``, the others not read). Rows whose magnitudes would overflow
    or underflow the squared distances (beyond 1e100 or below 1e-100) are first scaled by a power of two
    (exact; the median is scale-equivariant) and the median scaled back, so values of any magnitude give
    their own median (inf only when the median itself is beyond float64)."""
    sub = subsample_rows(x, max_samples, seed)
    big = float(np.abs(sub).max()) if sub.size else 0.0
    if big > _HUGE or 0.0 < big < 1.0 / _HUGE:
        scale = math.ldexp(1.0, -math.frexp(big)[1])  # 2^-e with big = m 2^e, 0.5 <= m < 1
        return median_pairwise_distance(sub * scale, max_samples=max_samples, seed=seed) / scale, big
    return median_pairwise_distance(sub, max_samples=max_samples, seed=seed), big


#: :func:`gamma_from_median` warns when a typical pair's kernel value exp(-gamma |x - x'|^2) is below
#: exp(-this)
DEGENERATE_EXPONENT = 50.0
#: rows above this magnitude are scaled before their distances are taken (the median is scale-equivariant)
_HUGE = 1e100


class DegenerateKernelWarning(UserWarning):
    """The kernel is ~0 between distinct images: the CMS of every set would read near 0."""


def gamma_from_median(x: Any, factor: float = 1.0, *, seed: int = 0, max_samples: int = MEDIAN_SAMPLES
                      ) -> float:
    """gamma = factor / median |x - x'|_2 over whole flattened rows (images): the regions paper's rule
    (section 4) for the kernel exp(-gamma |a - b|^2). Note the unit: gamma is set from a distance, not a
    squared one, so it is not the sigma rule's 1 / (2 median^2).

    Very large values are scaled before the distances are taken; a median that overflows float64, or a
    gamma that underflows to 0, is refused with a reason; a gamma that makes a typical pair's kernel ~0
    warns (:class:`DegenerateKernelWarning`).
    """
    med, big = scaled_median_distance(x, max_samples=max_samples, seed=seed)
    if math.isnan(med) or med <= 0:
        raise InputError("gamma: the median rule found no two distinct real images; every real image is "
                         "the same (pass a number for gamma, or more varied images)")
    gamma = factor / med
    if not math.isfinite(med) or not gamma > 0:
        raise InputError(f"real images: pixel values up to {big:.3g} put the median distance between images "
                         "beyond floating point (gamma would be 0); rescale the images (e.g. to [0, 1])")
    if gamma * med * med > DEGENERATE_EXPONENT:
        warnings.warn(
            f"gamma: the median distance between real images is {med:.3g} (pixel values up to {big:.3g}), "
            f"so the median rule's gamma = {factor:g} / median gives a typical kernel value "
            f"exp(-{gamma * med * med:.3g}) ~ 0 between distinct images and every CMS reads near 0; scale "
            "the images to [0, 1] (uint8: divide by 255) or pass gamma as a number",
            DegenerateKernelWarning, stacklevel=3)
    return gamma


#: multiples of the median scanned by the 'stable' rule (sqrt(2) steps)
STABLE_MULTIPLIERS = (0.5, 0.71, 1.0, 1.41, 2.0, 2.83, 4.0)
#: the 'stable' rule compares each scanned bandwidth with the one this many times larger
STABLE_RATIO = 2 ** 0.5
#: the 'stable' rule's tolerance: the largest change of the top eigenvalues between two consecutive scanned
#: bandwidths (absolute, on normalised kernels; the PromptSplit paper's gap of 0.01)
STABLE_TOLERANCE = 0.01


def stable_multiples(median: float, multipliers: Sequence[float] = STABLE_MULTIPLIERS) -> list[float]:
    """The bandwidths the 'stable' rule scans: multiplier x median."""
    return [float(f * median) for f in multipliers]


def stable_bandwidth(top_eigenvalues: Sequence[Any], median: float, *,
                     multipliers: Sequence[float] = STABLE_MULTIPLIERS, tolerance: float | None = None,
                     ratio: float = STABLE_RATIO) -> dict:
    """Pick the smallest scanned sigma whose top eigenvalues are stable.

    ``top_eigenvalues``: the quantity to stabilise at each of :func:`stable_multiples` (``multipliers``) of
    ``median``, in that order (for PromptSplit: the top |eigenvalues| of each sign,
    :func:`promptprism.methods.promptsplit.core.stable_scan`). The chosen sigma is the smallest scanned one
    whose top eigenvalues change by less than ``tolerance`` (largest absolute change) to the scanned sigma
    ``ratio`` times larger (the scanned one nearest to it in log scale, within 5 %; on the default grid: the
    next one). Comparing across a fixed ratio, not across neighbouring grid points, keeps the choice from
    depending on the grid: compared with its neighbour on a grid of 2^(1/4) steps, the text set-up of
    ``benchmarks/text_hedges.py`` picked 0.5 x median where the sqrt(2) grid picked 0.71 x. Without such a
    plateau the median is kept and ``plateau`` is False (with a note saying so). Returns the scan as
    recorded in result.json: ``{"multipliers", "sigmas", "top_eigenvalues", "chosen", "plateau",
    "tolerance", "ratio", "note"}``. ``tolerance`` defaults to :data:`STABLE_TOLERANCE`.
    """
    tolerance = STABLE_TOLERANCE if tolerance is None else float(tolerance)
    sigmas = stable_multiples(median, multipliers)
    tops = [np.asarray(t, dtype=np.float64) for t in top_eigenvalues]
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
