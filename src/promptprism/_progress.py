"""Progress on long work, the one place that draws it: rich bars on a terminal, silent otherwise or when
asked to be quiet (:func:`progress_bar`, :func:`track`, :func:`status`, :func:`steps`); the seconds per
step of a run (:class:`Stopwatch`, result.json ``timings``)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


def progress_enabled(requested: bool | None) -> bool:
    """``None`` means: show bars only when stderr is a terminal."""
    if requested is None:
        return sys.stderr.isatty()
    return bool(requested)


class _Disabled:
    """What :func:`progress_bar` yields when it is off: ``advance`` does nothing."""

    def advance(self, n: int = 1) -> None:
        """(nothing to draw)"""


class _Advance:
    def __init__(self, bar: Any, task: Any) -> None:
        self.bar, self.task = bar, task

    def advance(self, n: int = 1) -> None:
        """``n`` more items done."""
        self.bar.advance(self.task, n)


@contextlib.contextmanager
def progress_bar(total: int | None, description: str, *, enabled: bool, completed: int = 0,
                 rate: str | None = None) -> Iterator[Any]:
    """A bar on stderr over ``total`` items (``completed`` already done) while the block runs; yields an
    object whose ``advance(n=1)`` moves it. ``rate``: show the speed in these units (``'items'``)."""
    if not enabled:
        yield _Disabled()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            return Text(f"{speed:,.1f} {rate}/s" if speed else f"- {rate}/s")

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    columns += [RateColumn(), TimeElapsedColumn()] if rate else []
    with Progress(*columns, TimeRemainingColumn(), console=Console(stderr=True), transient=True) as bar:
        yield _Advance(bar, bar.add_task(description, total=total, completed=completed))


def track(items: Iterable[T], *, total: int | None, description: str, enabled: bool) -> Iterator[T]:
    """``items``, one bar step each."""
    with progress_bar(total, description, enabled=enabled) as bar:
        for item in items:
            yield item
            bar.advance()


@contextlib.contextmanager
def steps(enabled: bool | None, first: str = "working") -> Iterator[Any]:
    """``step(description)`` for a run of slow steps: a spinner with the step's name and the elapsed time on
    stderr when ``enabled`` (None: only on a terminal), a no-op otherwise."""
    if not progress_enabled(enabled):
        yield lambda _: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(first, total=None)
        yield lambda description: bar.update(task, description=description)


@contextlib.contextmanager
def status(description: str, *, enabled: bool) -> Iterator[None]:
    """A spinner with the elapsed time on stderr while one long step runs (an eigen-solve, a null)."""
    if not enabled:
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        bar.add_task(description, total=None)
        yield


class Stopwatch:
    """Seconds per step of a fit (``lap(name)``: the time since the previous lap) and ``total_s``."""

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        """Record the seconds since the previous lap as ``name``."""
        now = time.perf_counter()
        self.laps[name], self.last = now - self.last, now

    def total(self, name: str = "total_s") -> dict[str, float]:
        """The laps and the total as ``name``, rounded to 0.1 ms (as written to result.json)."""
        return {k: round(v, 4) for k, v in {**self.laps, name: time.perf_counter() - self.start}.items()}
