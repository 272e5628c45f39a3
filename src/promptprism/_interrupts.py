"""Ctrl-C that is not lost between the points where a long command can stop cleanly.

Python's SIGINT handler raises ``KeyboardInterrupt`` wherever the main thread happens to be; inside a
weakref callback or a finalizer (the import system runs one when a module lock is released) the exception
cannot propagate, Python prints it as "Exception ignored in ..." and the command runs on, to exit 0 as if
never interrupted. :func:`noticed_interrupts` counts every SIGINT as it raises, keeps such swallowed ones
off the terminal, and :meth:`Interrupts.check` raises one that was swallowed at the next point the caller
chooses (a section's start)."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

#: SIGTERMs the command line's handler raised as :class:`~promptprism.errors.Terminated` (one may be
#: swallowed where it lands, as a SIGINT may: :meth:`Interrupts.check` raises it again)
_TERMINATIONS = [0]


def note_termination() -> None:
    """Count one SIGTERM (the command line's handler calls it before raising ``Terminated``)."""
    _TERMINATIONS[0] += 1


class Interrupts:
    """SIGINTs (and SIGTERMs) received inside :func:`noticed_interrupts` and not yet raised by
    :meth:`check`."""

    def __init__(self) -> None:
        self.pending = 0
        self.terminations = _TERMINATIONS[0]

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` if a SIGINT came since the last check (``Terminated`` for a SIGTERM):
        its own exception may have been swallowed where it was raised."""
        if _TERMINATIONS[0] > self.terminations:
            from .errors import Terminated

            self.terminations = _TERMINATIONS[0]
            raise Terminated
        if self.pending:
            self.pending = 0
            raise KeyboardInterrupt

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.pending += 1
        raise KeyboardInterrupt


@contextlib.contextmanager
def noticed_interrupts() -> Iterator[Interrupts]:
    """Within the block SIGINT raises ``KeyboardInterrupt`` as usual and is counted for
    :meth:`Interrupts.check`; a ``KeyboardInterrupt`` Python could only print (raised in a callback) is not
    printed. Only in the main thread with Python's own SIGINT handler in place; elsewhere the block runs as
    it is (``check`` then never raises)."""
    seen = Interrupts()
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield seen
        return
    previous_hook = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            previous_hook(unraisable)

    previous = signal.signal(signal.SIGINT, seen._on_signal)
    sys.unraisablehook = hook
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = previous_hook
