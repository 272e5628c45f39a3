"""A Ctrl-C that lands where Python cannot raise it (a weakref callback: the import system runs one as a
module lock is released) is swallowed and printed, and the command ran on to exit 0 (the generator demo's
interrupt test saw this). Inside ``noticed_interrupts`` it is counted, not printed, and ``check`` raises
it at the next point the caller chooses."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import weakref

import pytest

from promptprism._interrupts import noticed_interrupts


class _Thing:
    pass


def _sigint_inside_a_callback() -> None:
    """SIGINT to this process from inside a weakref callback, with bytecodes after it there, so Python's
    handler runs (and raises) inside the callback."""
    def callback(_ref) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            pass

    thing = _Thing()
    ref = weakref.ref(thing, callback)
    del thing
    gc.collect()
    assert ref() is None


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler for the test (another test or library may have left its own in place),
    restored after; the test runs in the main thread, where signals land."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("needs the main thread, where signals land")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


needs_main = pytest.mark.usefixtures("python_sigint")


def _recorded(monkeypatch) -> list:
    """What reaches sys.unraisablehook (Python prints it there: "Exception ignored in ...")."""
    seen: list = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(type(u.exc_value)))
    return seen


@needs_main
def test_swallowed_interrupt_is_raised_at_the_next_check_and_not_printed(monkeypatch):
    printed = _recorded(monkeypatch)
    with noticed_interrupts() as interrupts:
        _sigint_inside_a_callback()  # (Python swallows the KeyboardInterrupt raised in the callback)
        with pytest.raises(KeyboardInterrupt):
            interrupts.check()
        interrupts.check()  # (raised once)
    assert printed == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@needs_main
def test_without_the_context_the_interrupt_is_lost(monkeypatch):
    printed = _recorded(monkeypatch)
    _sigint_inside_a_callback()  # no exception here: what the demo saw
    assert printed == [KeyboardInterrupt]


@needs_main
def test_an_ordinary_interrupt_still_raises_where_it_lands():
    with noticed_interrupts(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10**6):
            pass


def test_off_the_main_thread_nothing_changes():
    before, seen = signal.getsignal(signal.SIGINT), []

    def run() -> None:
        with noticed_interrupts() as interrupts:
            interrupts.check()
            seen.append(signal.getsignal(signal.SIGINT))

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    assert seen == [before]


def test_a_swallowed_sigterm_is_raised_at_the_next_check_as_terminated():
    """The command line's SIGTERM handler counts each one (note_termination) before raising Terminated; one
    swallowed where it landed (a finalizer) is raised again by the next section check."""
    from promptprism._interrupts import Interrupts, note_termination
    from promptprism.errors import Terminated

    seen = Interrupts()
    seen.check()  # nothing yet
    note_termination()  # (its Terminated lost where it was raised)
    with pytest.raises(Terminated):
        seen.check()
    seen.check()  # raised once
