"""Progress bars on long work: rich bars on a terminal, silent otherwise or when asked to be quiet."""

from __future__ import annotations

import contextlib
import sys
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
