"""The command line's bandwidth options: ``--sigma-prompt``, ``--sigma-output``, ``--mmd-sigma``, ``--gamma``.

The option's text is parsed once, here, into the library's value object
(:class:`promptprism.kernels.bandwidth.Bandwidth`, shown as ``<float|rule>`` in ``--help``) that the
estimator keeps and resolves in ``fit``; a bad value is refused while the command line is read, in one line
that names the flag (exit status 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import typer
from typer._click.exceptions import UsageError

from ..errors import OptionError
from ..kernels.bandwidth import BANDWIDTH_RULES, SPECTRAL_RULES, Bandwidth

#: PromptSplit's rules: the median rule and the 'stable' scan of its spectrum
SIGMA_OR_STABLE = BANDWIDTH_RULES + SPECTRAL_RULES


def bandwidth_parser(flag: str, rules: Sequence[str] = BANDWIDTH_RULES, kind: str = "sigma") -> Any:
    """The parser of option ``flag``: its text -> a :class:`Bandwidth`; a bad value -> a usage error
    naming ``flag`` (raised as one, so the option parser reports it as it is)."""

    def parse(text: Any) -> Bandwidth:
        try:
            return Bandwidth.parse(text, flag, rules=rules, kind=kind)
        except OptionError as exc:
            raise UsageError(str(exc)) from None

    return parse


def bandwidth_option(flag: str, help: str, *, rules: Sequence[str] = BANDWIDTH_RULES,
                     kind: str = "sigma") -> Any:
    """A ``typer.Option`` (default 'median') whose value is a :class:`Bandwidth` (``rules``: the rule names
    the command resolves; ``kind='gamma'`` for the regions' gamma)."""
    return typer.Option("median", flag, parser=bandwidth_parser(flag, rules, kind), metavar="<float|rule>",
                        help=help)
