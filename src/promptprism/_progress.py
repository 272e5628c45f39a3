"""Progress bars on long work: rich bars on a terminal, silent otherwise or when asked to be quiet; the
seconds per step of a run (:class:`Stopwatch`, result.json ``timings``)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def progress_enabled(requested: bool | None) -> bool:
    """``None`` means: show bars only when stderr is a terminal."""
    if requested is None:
        return sys.stderr.isatty()
    return bool(requested)


def track(items: Iterable[T], *, total: int | None, description: str, enabled: bool) -> Iterator[T]:
    if not enabled:
        yield from items
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)


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
