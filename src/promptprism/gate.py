"""Conditions a result must not meet, for CI: ``promptprism check RESULT --fail-on 'fd>5'``.

A condition is ``significant`` (the result found a significant difference: a PromptSplit mode, a K-way
pair, a Scendi difference beyond its intervals) or ``METRIC OP NUMBER`` with OP one of ``< <= > >= ==``,
where METRIC is a headline number of the result (``distance``, ``fd``, ``precision``, ``scendi``,
``model_share``, ``cms``, ...), checked on every model (row) that has it; against a baseline result,
``change(METRIC)`` (result - baseline) and ``ratio(METRIC)`` (result / baseline) compare each row with the
baseline's row of the same name. :func:`evaluate` returns one :class:`Check` per condition and row; a
condition the result cannot answer (no test, no intervals, a value that is not a number) is refused with an
:class:`OptionError`, never passed.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import operator
import re
from collections.abc import Sequence
from typing import Any

from .errors import OptionError

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq}
_CONDITION = re.compile(r"^\s*(?:(change|ratio)\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)|([A-Za-z_][A-Za-z0-9_]*))"
                        r"\s*(<=|>=|==|<|>)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf)\s*$")


@dataclasses.dataclass(frozen=True)
class Check:
    """One condition on one row: whether it failed (the condition holds), and the line that says so."""

    condition: str
    row: str
    value: float | None
    failed: bool
    message: str


def rows(result: Any) -> dict[str, dict[str, float]]:
    """The result's headline numbers by row (a model, a pair, or '' for a two-set result); a result with two
    rows of one name (written before names were made distinct) is refused: its rows cannot be told apart."""
    named = [(name, _numbers(values)) for name, values in _named_rows(result)]
    names = [name for name, _ in named]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise OptionError(f"fail_on: the {result.kind} result has {names.count(twice)} rows named "
                          f"{twice!r}, so its rows cannot be told apart (or matched with a baseline's); "
                          "rerun it with distinct names (--names, or NAME=PATH)")
    return dict(named)


def _named_rows(result: Any) -> list[tuple[str, dict[str, float]]]:
    """(row name, headline numbers) of each row, in the result's order."""
    kind = getattr(result, "kind", "")
    if kind == "promptsplit":
        ps = [m.p_value for m in result.modes if m.p_value is not None]
        tested = bool(result.significance) and _unreachable(result) is None  # (else not a number: refused)
        return [("", {"distance": result.distance,
                      "significant_modes": float(sum(bool(m.significant) for m in result.modes))
                      if tested else math.nan,
                      "min_p_value": min(ps) if ps and tested else math.nan})]
    if kind == "promptsplit_kway":
        k = len(result.names)
        tested = _unreachable(result) is None
        return [(f"{result.names[a]} vs {result.names[b]}", {
            "distance": result.distances[a][b],
            "p_value": math.nan if result.pair_p_values[a][b] is None or not tested
            else result.pair_p_values[a][b]})
            for a in range(k) for b in range(a + 1, k)]
    if kind == "scendi":
        return [(result.name, _scendi_row(result))]
    if kind == "scendi_comparison":
        return [(m.name, _scendi_row(m)) for m in result.models]
    if kind in ("metrics", "regions"):
        key = "name" if kind == "metrics" else "set"
        return [(str(r[key]), {k: v for k, v in r.items() if isinstance(v, (int, float)) and k != "n"})
                for r in result.table()]
    raise OptionError(f"fail_on: a {kind} result has no numbers to check; check split, compare, diversity, "
                      "metrics or regions results")


def _numbers(values: dict) -> dict[str, float]:
    """The entries of a row that are numbers (a name, a flag or a list is not a metric to check)."""
    return {k: (math.nan if v is None else float(v)) for k, v in values.items()
            if v is None or (isinstance(v, numbers.Real) and not isinstance(v, bool))}


def _scendi_row(model: Any) -> dict:
    """One model's Scendi numbers and, with ``diversity --reference``, its reference metrics (fd,
    precision, ...: the numbers its table prints beside them)."""
    extra = getattr(model, "reference_metrics", None) or {}
    extra = {k: v for k, v in extra.items() if k not in ("n", "name")}
    return {**extra, **model.summary(), "prompt_share": model.prompt_share}


def _unreachable(result: Any) -> str | None:
    """Why the result's permutation test could never reject at its alpha (too few permutations), or None."""
    record = result.significance or {}
    k, alpha = record.get("permutations"), record.get("alpha")
    numbers = isinstance(k, (int, float)) and isinstance(alpha, (int, float))
    # (stats.permutation.can_reject's rule, restated: this layer imports nothing but the foundation)
    if not numbers or not k or 1 / (k + 1) <= alpha:
        return None
    return (f"its test drew {int(k)} permutations, whose smallest p-value 1/{int(k) + 1} = {1 / (k + 1):.3g} "
            f"is above alpha = {alpha:g}: it could not find anything significant (rerun with "
            f"--permutations >= {math.ceil(1 / alpha - 1 - 1e-9)})")


def _aggregated_rejection(result: Any) -> str | None:
    """What the test aggregated over a kernel family found where it rejects at alpha (a difference only
    another kernel of the family carries: no mode of the fitted kernel is significant), or None."""
    agg = result.significance.get("aggregation") or {}
    alpha = result.significance.get("alpha")
    if agg.get("p") is None or alpha is None or agg["p"] > alpha:
        return None
    found = [k["name"] for k in agg.get("kernels", []) if k.get("n_significant")]
    return (f"the test aggregated over {len(agg.get('kernels', []))} kernels rejects (p = {agg['p']:.3g} <= "
            f"alpha = {alpha:g})" + (f", modes found by {', '.join(found)}" if found else ""))


def significant(result: Any) -> tuple[bool, str]:
    """(whether the result found a significant difference, what it found)."""
    kind = getattr(result, "kind", "")
    if kind in ("promptsplit", "promptsplit_kway") and (why := _unreachable(result)) is not None:
        raise OptionError(f"fail_on: significant cannot be answered: {why}")
    if kind == "promptsplit":
        if not result.significance:
            raise OptionError("fail_on: significant needs a result with its test (run split with "
                              "--permutations > 0)")
        sig = [m for m in result.modes if m.significant]
        p = min((m.p_value for m in sig), default=None)
        if not sig and (said := _aggregated_rejection(result)) is not None:
            return True, said
        return bool(sig), f"{len(sig)} significant mode(s)" + (f", smallest p = {p:.3g}" if sig else "")
    if kind == "promptsplit_kway":
        if not result.significance:
            raise OptionError("fail_on: significant needs a result with its test (run compare with "
                              "--permutations > 0)")
        pairs = result.significant_pairs
        if not pairs and (said := _aggregated_rejection(result)) is not None:
            return True, said
        return bool(pairs), (f"{len(pairs)} significant pair(s): " +
                             ", ".join(f"{a} vs {b}" for a, b in pairs) if pairs else "no significant pair")
    if kind == "scendi_comparison":
        if not all(m.intervals for m in result.models):
            raise OptionError("fail_on: significant needs the models' intervals (run diversity with "
                              "--bootstrap > 0)")
        seps = [d for d in result.differences if d.get("separated")]
        return bool(seps), (f"{len(seps)} difference(s) beyond their intervals: " +
                            ", ".join(f"{d['metric']} {d['a']} vs {d['b']}" for d in seps[:5])
                            if seps else "no difference beyond the intervals")
    raise OptionError(f"fail_on: 'significant' is not defined for a {kind} result (split, compare and "
                      "diversity of several models have a test); use a METRIC>X condition")


def parse(condition: str) -> tuple[str | None, str, str, float]:
    """(change | ratio | None, metric, operator, threshold) of ``METRIC OP X`` or ``change(METRIC) OP X``."""
    m = _CONDITION.match(condition)
    if m is None:
        raise OptionError(f"fail_on: {condition!r} is not a condition; write significant, METRIC>X (e.g. "
                          "fd>5, precision<0.8), or with --baseline change(METRIC)>X / ratio(METRIC)>X")
    return m.group(1), m.group(2) or m.group(3), m.group(4), float(m.group(5))


def evaluate(result: Any, conditions: Sequence[str], baseline: Any = None) -> list[Check]:
    """Each condition on each row of ``result`` (against ``baseline``'s rows for change/ratio)."""
    if not conditions:
        raise OptionError("fail_on: no condition given; pass --fail-on significant or METRIC>X")
    checks: list[Check] = []
    for cond in conditions:
        if cond.strip() == "significant":
            hit, what = significant(result)
            checks.append(Check(cond, "", None, hit, what))
            continue
        how, metric, op, x = parse(cond)
        checks += _metric_checks(result, baseline, cond, how, metric, op, x)
    return checks


def _metric_checks(result: Any, baseline: Any, cond: str, how: str | None, metric: str, op: str,
                   x: float) -> list[Check]:
    table = rows(result)
    known = sorted({k for r in table.values() for k in r})
    if metric not in known:
        raise OptionError(f"fail_on: {metric!r} is not a number of this {result.kind} result; known: "
                          f"{', '.join(known)}")
    if how is not None and baseline is None:
        raise OptionError(f"fail_on: {cond!r} compares with a baseline; pass --baseline RESULT")
    base = rows(baseline) if how is not None else {}
    if how is not None:
        _same_regions(result, baseline, metric)
    swapped = _swapped_pairs(baseline) if how is not None else {}
    out = []
    for name, values in table.items():
        if metric not in values:
            continue
        value = float(values[metric])
        where = f"{name}: " if name else ""
        if how is not None:
            if name not in base and swapped.get(name) in base:  # the same pair, its sets listed in turn
                base = {**base, name: base[swapped[name]]}
            if name in base and metric not in base[name]:
                raise OptionError(f"baseline: its row {name!r} has no {metric} to compare with (it has "
                                  f"{', '.join(sorted(base[name])) or 'no numbers'})")
            if name not in base:
                ordered = _swapped_pairs(baseline, symmetric_only=False).get(name)
                why = (f" ({ordered!r} is that pair in the other order, and its numbers depend on the "
                       "order: eta != 1)" if ordered in base else "")
                raise OptionError(f"baseline: has no row {name!r} with {metric} to compare with; its rows: "
                                  f"{', '.join(map(repr, base)) or 'none'}{why}")
            before = float(base[name][metric])
            _checkable(cond, name, metric, before, "the baseline's ")
            _checkable(cond, name, metric, value)
            if how == "ratio" and before < 0:
                row = f" on {name}" if name else ""
                raise OptionError(f"fail_on: {cond!r} cannot be checked{row}: the baseline's {metric} is "
                                  f"{before:.6g}, below 0 (KID and MMD^2 are unbiased: they can be), "
                                  f"where a ratio reads a rise as a fall; use change({metric}) instead")
            value = value - before if how == "change" else ratio(value, before)
            where += f"{how} of {metric} {value:.6g} ({before:.6g} -> {float(values[metric]):.6g})"
        else:
            _checkable(cond, name, metric, value)
            where += f"{metric} = {value:.6g}"
        out.append(Check(cond, name, value, _OPS[op](value, x), where))
    return out


def _same_regions(result: Any, baseline: Any, metric: str) -> None:
    """Refuse comparing a number of the regions (region_K, product_cms) with a baseline whose regions are
    other pixels (its region map differs: another --regions, another real set, other images)."""
    if getattr(result, "kind", "") != "regions" or not metric.startswith(("region_", "product_cms")):
        return
    maps = [list(getattr(r, "regions", [])) + list(getattr(r, "image_shape", [])) for r in (result, baseline)]
    if maps[0] == maps[1]:
        return
    raise OptionError(f"baseline: its regions are other pixels than this result's ({baseline.n_regions} "
                      f"regions against {result.n_regions}, or as many drawn elsewhere), so {metric} names "
                      "another part of the image there; compare the whole image's cms, or rerun both with "
                      "the same real images and --regions")


def _swapped_pairs(result: Any, *, symmetric_only: bool = True) -> dict[str, str]:
    """{'B vs A': 'A vs B'} for the pairs of a K-way result whose numbers do not depend on the order of
    the pair (distance and p-value the same both ways, to 1e-9, as with eta = 1): a run that listed its
    inputs in another order is the same comparison."""
    if getattr(result, "kind", "") != "promptsplit_kway":
        return {}
    names, d, p = result.names, result.distances, result.pair_p_values
    return {f"{names[b]} vs {names[a]}": f"{names[a]} vs {names[b]}"
            for a in range(len(names)) for b in range(a + 1, len(names))
            if not symmetric_only or (_same(d[a][b], d[b][a]) and _same(p[a][b], p[b][a]))}


def _same(x: float | None, y: float | None) -> bool:
    """Equal up to the rounding of one float64 sum taken in another order (or both missing)."""
    if x is None or y is None:
        return x is None and y is None
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-15)


def ratio(value: float, before: float) -> float:
    """``value / before``; from a baseline of 0: 1 when the value is 0 too (no change), else +-inf (any
    change from nothing is beyond every finite ratio)."""
    if before:
        return value / before
    return 1.0 if value == 0 else math.copysign(math.inf, value)


def _checkable(cond: str, name: str, metric: str, value: float, whose: str = "") -> None:
    """A condition on a value that is not a number cannot be checked: refused, never passed."""
    if math.isnan(value):
        row = f" on {name}" if name else ""
        tested = "p_value" in metric or metric == "significant_modes"
        why = (" (no significance test ran, or one with too few permutations to reject: rerun with "
               "--permutations >= 1/alpha - 1)" if tested else "")
        raise OptionError(f"fail_on: {cond!r} cannot be checked{row}: {whose}{metric} is not a number in "
                          f"this result{why}")
