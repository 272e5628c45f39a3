"""Estimator parameters declared once, with their constraints, and checked in one place.

In the manner of scikit-learn's ``BaseEstimator`` and ``_parameter_constraints`` / ``validate_params``: an
estimator is a dataclass whose class attribute ``_parameter_constraints`` maps each parameter to the list of
constraints one of which its value must meet (:class:`Interval`, :class:`Options`, :class:`Rule`, a type,
``None``, ``"boolean"``, ``"seed"``, ``callable``). :class:`Estimator` checks them when the estimator is made
(one message style: ``"<parameter> must be <what>, got <value>"``, the parameter carried as
``OptionError.parameter`` so that the CLI writes its flag), then its own ``_check_together`` for the rules
that tie parameters to each other. Unlike scikit-learn, parameters are never changed after construction:
:meth:`Estimator.set_params` and :meth:`Estimator.clone` return a new, checked estimator.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any, ClassVar

from ._validation import check_choice, check_interval, check_positive_number, check_precision
from .errors import OptionError

#: the ends of an interval that are included: 'neither', 'left', 'right', 'both'
_CLOSED = {"neither": (False, False), "left": (True, False), "right": (False, True), "both": (True, True)}


@dataclasses.dataclass(frozen=True)
class Interval:
    """A real (``kind=numbers.Real``) or integer (``numbers.Integral``) value between ``low`` and ``high``
    (None: unbounded), ``closed`` saying which ends are included. NaN, infinities (unless an unbounded end
    allows them: never) and booleans are refused; ``even`` asks for an even integer."""

    kind: type
    low: float | None
    high: float | None
    closed: str = "both"
    even: bool = False

    def __post_init__(self) -> None:
        if self.closed not in _CLOSED:
            raise ValueError(f"closed must be one of {', '.join(_CLOSED)}, got {self.closed!r}")

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, self.kind):
            return False
        x = float(value)
        if not math.isfinite(x):
            return False
        with_low, with_high = _CLOSED[self.closed]
        if self.low is not None and not (x >= self.low if with_low else x > self.low):
            return False
        if self.high is not None and not (x <= self.high if with_high else x < self.high):
            return False
        return not (self.even and int(value) % 2)

    def __str__(self) -> str:
        what = "an integer" if self.kind is numbers.Integral else "a number"
        if self.even:
            what = "an even integer"
        with_low, with_high = _CLOSED[self.closed]
        if self.low is not None and self.high is not None:
            return (f"{what} in {'[' if with_low else '('}{self.low:g}, {self.high:g}"
                    f"{']' if with_high else ')'}")
        if self.low is not None:
            return f"{what} {'>=' if with_low else '>'} {self.low:g}"
        if self.high is not None:
            return f"{what} {'<=' if with_high else '<'} {self.high:g}"
        return f"a finite {what[2:] if what.startswith('a ') else what[3:]}"


@dataclasses.dataclass(frozen=True)
class Options:
    """One of a fixed set of values (strings compared exactly)."""

    values: tuple

    def __init__(self, values: Collection[Any]) -> None:
        object.__setattr__(self, "values", tuple(values))

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool) and not any(isinstance(v, bool) for v in self.values):
            return False
        return any(value is v or (type(value) is type(v) and value == v) for v in self.values)

    def __str__(self) -> str:
        words = [repr(v) if isinstance(v, str) else str(v) for v in self.values]
        return words[0] if len(words) == 1 else "one of " + ", ".join(words)


@dataclasses.dataclass(frozen=True)
class Rule:
    """A string matching ``pattern`` (a regular expression matched whole), described as ``what``."""

    pattern: str
    what: str

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and re.fullmatch(self.pattern, value) is not None

    def __str__(self) -> str:
        return self.what


@dataclasses.dataclass(frozen=True)
class Check:
    """A value that ``check(value, name)`` accepts, described as ``what``; ``check`` raises an
    :class:`OptionError` in its own words otherwise, and that error is the one raised (for a parameter whose
    message users, scripts and tests already know, or one read by a parser: a bandwidth rule, a device)."""

    check: Callable[[Any, str], Any]
    what: str

    def accepts(self, value: Any) -> bool:
        try:
            self.check(value, "value")
        except OptionError:
            return False
        return True

    def refuse(self, value: Any, name: str) -> None:
        """Raise ``check``'s error for ``value`` (it carries ``parameter=name``)."""
        try:
            self.check(value, name)
        except OptionError as exc:
            exc.parameter = name
            raise

    def __str__(self) -> str:
        return self.what


def _accepts(constraint: Any, value: Any) -> bool:
    if constraint is None:
        return value is None
    if constraint == "boolean":
        return isinstance(value, (bool,)) or type(value).__name__ == "bool_"
    if constraint == "seed":
        return isinstance(value, numbers.Integral) and not isinstance(value, bool) and 0 <= value < 2**63
    if constraint is callable:
        return callable(value)
    if isinstance(constraint, type):
        return isinstance(value, constraint) and not (constraint is not bool and isinstance(value, bool)
                                                      and constraint in (int, float, numbers.Real))
    return constraint.accepts(value)


def _describe(constraint: Any) -> str:
    if constraint is None:
        return "None"
    if constraint == "boolean":
        return "True or False"
    if constraint == "seed":
        return "a non-negative integer (a seed)"
    if constraint is callable:
        return "a callable"
    if isinstance(constraint, type):
        return f"a {constraint.__name__}"
    return str(constraint)


def describe_constraints(constraints: list) -> str:
    """The values a parameter accepts, in words: ``"an integer >= 1 or None"``."""
    words = [_describe(c) for c in constraints]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def validate_params(constraints: Mapping[str, list], params: Mapping[str, Any]) -> None:
    """Check each of ``params`` against its list of constraints (it must meet one); the first failure is an
    :class:`OptionError` ``"<name> must be <what>, got <value>"`` carrying ``parameter=<name>`` (a
    :class:`Check` among the constraints raises its own words). Parameters without constraints are not
    checked here."""
    for name, value in params.items():
        allowed = constraints.get(name)
        if allowed is None or any(_accepts(c, value) for c in allowed):
            continue
        for c in allowed:
            if isinstance(c, Check):
                c.refuse(value, name)
        raise OptionError(f"{name} must be {describe_constraints(allowed)}, got {value!r}", parameter=name)


class Estimator:
    """The one estimator shape: a dataclass of parameters with ``_parameter_constraints``, checked when it is
    made; ``get_params``, ``set_params`` and ``clone`` (new estimators: parameters are never mutated);
    ``fit(...) -> Result`` defined by each estimator."""

    _parameter_constraints: ClassVar[dict[str, list]] = {}

    def __post_init__(self) -> None:
        validate_params(self._parameter_constraints, self.get_params())
        self._check_together()

    def _check_together(self) -> None:
        """Rules that tie parameters to each other (one value valid only with another); none by default."""

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters by name, as the estimator was made (``deep``: scikit-learn's signature; no parameter
        is itself an estimator, so it changes nothing)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}  # type: ignore

    def set_params(self, **params: Any) -> Estimator:
        """A new estimator with ``params`` changed (checked like any new one); this one is unchanged (unlike
        scikit-learn's in-place ``set_params``: write ``est = est.set_params(...)``)."""
        known = self.get_params()
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise OptionError(f"{type(self).__name__} has no parameter {unknown[0]!r}; its parameters are "
                              f"{', '.join(known)}", parameter=unknown[0])
        return dataclasses.replace(self, **params)  # type: ignore[type-var]

    def clone(self) -> Estimator:
        """A new estimator with the same parameters (``sklearn.base.clone`` calls it)."""
        return dataclasses.replace(self)  # type: ignore[type-var]

    def __sklearn_clone__(self) -> Estimator:
        """What ``sklearn.base.clone`` returns: :meth:`clone`."""
        return self.clone()


def constraints_of(estimator: type | Any) -> dict[str, list]:
    """The declared constraints of an estimator class or instance (for documentation and the CLI)."""
    return dict(getattr(estimator, "_parameter_constraints", {}))


def check_declared(estimator_type: type, *, exempt: Collection[str] = ()) -> list[str]:
    """The parameters of ``estimator_type`` (a dataclass) that declare no constraint, ``exempt`` aside: a
    test asserts the list is empty so that every new parameter is declared with its constraints."""
    fields = [f.name for f in dataclasses.fields(estimator_type) if f.init]
    return [n for n in fields if n not in constraints_of(estimator_type) and n not in exempt]


#: constraints used by several estimators
POSITIVE_INT = Interval(numbers.Integral, 1, None)
NON_NEGATIVE_INT = Interval(numbers.Integral, 0, None)
POSITIVE_REAL = Interval(numbers.Real, 0, None, closed="neither")
PROBABILITY = Interval(numbers.Real, 0, 1, closed="neither")
SEED = "seed"
BOOLEAN = "boolean"


def _positive(value: Any, name: str, *, integer: bool, even: bool, allow_zero: bool) -> None:
    check_positive_number(value, name, integer=integer, even=even, allow_zero=allow_zero)


def positive(*, integer: bool = True, even: bool = False, allow_zero: bool = False) -> Check:
    """A positive (``allow_zero``: non-negative) integer or number in the words of the first releases:
    ``"<name> must be > 0, got 0"`` (``even``: cos and sin features come in pairs)."""
    kind = "an even integer" if even else "an integer" if integer else "a number"
    what = f"{kind} {'>= 0' if allow_zero else '> 0'}"
    return Check(functools.partial(_positive, integer=integer, even=even, allow_zero=allow_zero), what)


def _at_least(value: Any, name: str, *, minimum: int) -> None:
    check_positive_number(value, name, integer=True)
    if value < minimum:
        raise OptionError(f"{name} must be >= {minimum}, got {value!r}", parameter=name)


def at_least(minimum: int) -> Check:
    """An integer >= ``minimum`` (> 1), in the words of the first releases: ``"<name> must be >= 2, got
    1"``."""
    return Check(functools.partial(_at_least, minimum=minimum), f"an integer >= {minimum}")


def _between(value: Any, name: str, *, low: float, high: float, closed: str) -> None:
    check_interval(value, low, high, parameter=name, closed=closed)


def between(low: float, high: float, closed: str = "neither") -> Check:
    """A number from ``low`` to ``high`` in the words of the first releases: ``"<name> must lie strictly
    between 0 and 1, got 1.5"`` (``closed`` as for :class:`Interval`)."""
    return Check(functools.partial(_between, low=low, high=high, closed=closed),
                 str(Interval(numbers.Real, low, high, closed)))


def _one_of(choices: tuple, value: Any, name: str) -> None:
    check_choice(value, choices, parameter=name)


def one_of(choices: Collection[Any]) -> Check:
    """One of ``choices``, in the words of the first releases: ``"<name> must be one of a, b, got 'x'"``."""
    return Check(functools.partial(_one_of, tuple(choices)), "one of " + ", ".join(map(str, choices)))


def _bootstrap(value: Any, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise OptionError(f"{name} must be an integer >= 0 (0 turns it off), got {value!r}", parameter=name)
    if 0 < value < 20:
        raise OptionError(f"{name} must be 0 (off) or at least 20 replicates for a 95% interval to mean "
                          f"anything, got {value}", parameter=name)


#: bootstrap replicates: 0 (off) or at least 20
BOOTSTRAP = Check(_bootstrap, "0 (off) or an integer >= 20")
#: the floating-point precision of an array core
PRECISION = Check(check_precision, "'float32' or 'float64'")

__all__ = ["BOOLEAN", "BOOTSTRAP", "Check", "Estimator", "Interval", "NON_NEGATIVE_INT", "Options",
           "POSITIVE_INT", "POSITIVE_REAL", "PRECISION", "PROBABILITY", "Rule", "SEED", "at_least", "between",
           "check_declared", "constraints_of", "describe_constraints", "one_of", "positive",
           "validate_params"]
