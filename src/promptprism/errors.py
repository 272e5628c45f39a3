"""Exceptions raised by promptprism.

Every error a user can cause derives from :class:`PromptPrismError` (a ``ValueError``), carries a message that
names the file, array, row or option at fault, and makes the CLI exit with status 2.

An error about one parameter carries its name as data, ``exc.parameter`` (``"n_features"``), set where the
bad value enters (the checks of :mod:`promptprism._validation` set it); the CLI maps it to its flag.
A message that begins with a parameter name (``"seed must be ..."``) carries that name without saying so.
"""

from __future__ import annotations

#: words that follow a parameter's name at the start of a message about it (``"top_k must be > 0"``)
_SUBJECT_VERBS = frozenset({"must", "is", "needs", "should", "cannot", "="})


def leading_parameter(message: str) -> str | None:
    """The name a message begins with, as its subject: ``"top_k must be > 0"``, ``"columns: ..."``,
    ``"out 'x': exists ..."`` or ``"gamma_estimator='cross-fit' needs ..."``."""
    word, _, rest = message.partition(" ")
    if "=" in word:  # gamma_estimator='cross-fit' needs ...
        word = word.partition("=")[0]
    elif word.endswith(":"):
        word = word[:-1]
    elif not (rest.partition(" ")[0] in _SUBJECT_VERBS or rest.startswith("'")):  # or: name 'value' ...
        return None
    return word if word.isidentifier() and word.islower() else None


class PromptPrismError(ValueError):
    """A problem with the user's input or options; the message says what and where.

    ``parameter``: the library parameter the error is about (None when it is about a file or an array).
    """

    def __init__(self, message: str = "", *args: object, parameter: str | None = None) -> None:
        super().__init__(message, *args)
        self.parameter = parameter


class InputError(PromptPrismError):
    """Bad input data: a missing file or array, wrong shapes, non-finite values, an empty set."""


class OptionError(PromptPrismError):
    """An option value that cannot be used (sigma <= 0, an odd feature count, an unknown rule...)."""

    def __init__(self, message: str = "", *args: object, parameter: str | None = None) -> None:
        super().__init__(message, *args, parameter=parameter or leading_parameter(str(message)))


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C that stopped a run, with what the run kept (e.g. "7 of 20 rows kept in m.jsonl.partial; run
    the same command again to continue"): a ``KeyboardInterrupt``, so callers stop as they would."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a scheduler's time limit) raised as a Ctrl-C is, so that the run stops the same
    way: locks released, staged files removed, nothing half-written; the command line then exits 143."""
