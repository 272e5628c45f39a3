"""How a demo writes a method's result: a :class:`Saver`, by default the results API's own
(:func:`promptprism.report.save_result`); the command line passes its ``save_outputs`` instead (the same
files, plus the folder's record of which command wrote it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol


class Saver(Protocol):
    """``save(result, folder, report=, quiet=, images=, inputs=, sources=, extra=) -> {file name: path}``:
    write ``result`` (and, with ``report``, its page) into ``folder`` as one transaction."""

    def __call__(self, result: Any, out: Path, *, report: bool = True, quiet: bool = True,
                 images: Mapping[str, Any] | None = None, inputs: Mapping[str, Any] | None = None,
                 sources: Mapping[str, str | Path] | None = None,
                 extra: Callable[[Path], None] | None = None) -> Mapping[str, Path]: ...


def default_saver() -> Saver:
    """:func:`promptprism.report.save_result`, quiet unless asked (``quiet=False`` shows the report's
    slow steps on a terminal)."""
    from ..report.saving import save_result

    def save(result: Any, out: Path, *, quiet: bool = True, **kwargs: Any) -> Mapping[str, Path]:
        return save_result(result, out, progress=False if quiet else None, **kwargs)

    return save
