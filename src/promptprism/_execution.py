"""Where the current work runs, readable from every layer: the runner chosen by the innermost
:func:`promptprism.scale.execution` block (``scale/`` sets it; ``embed/`` asks for the dask client here,
without importing ``scale/``)."""

from __future__ import annotations

import contextvars
from typing import Any

#: the runner of the innermost ``execution`` block (None outside any: local)
RUNNER: contextvars.ContextVar[Any] = contextvars.ContextVar("promptprism_runner", default=None)


def current_client() -> Any:
    """The dask ``Client`` of the current ``execution`` block, or ``None`` when running locally."""
    return getattr(RUNNER.get(), "client", None)
