"""Exceptions raised by promptprism.

Every error a user can cause derives from :class:`PromptPrismError` (a ``ValueError``), carries a message that
names the file, array, row or option at fault, and makes the CLI exit with status 2.
"""

from __future__ import annotations


class PromptPrismError(ValueError):
    """A problem with the user's input or options; the message says what and where."""


class InputError(PromptPrismError):
    """Bad input data: a missing file or array, wrong shapes, non-finite values, an empty set."""


class OptionError(PromptPrismError):
    """An option value that cannot be used (sigma <= 0, an odd feature count, an unknown rule...)."""
