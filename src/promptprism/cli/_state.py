"""The state every sub-command shares: the consoles and the running command's :class:`RunState`.

A module of its own so that the output helpers (:mod:`._output`) and the run wrapper (:mod:`._app`) both read
it without importing each other.
"""

from __future__ import annotations

import contextvars
import dataclasses
from typing import Any

from rich.console import Console

# markup stays on for the tool's own styling; every user-supplied text is escaped (or printed with
# markup=False); emoji codes (':name:') are never replaced
console = Console(emoji=False, highlight=False)
err_console = Console(stderr=True, emoji=False, highlight=False)


@dataclasses.dataclass
class RunState:
    """What the shared options of the running sub-command asked for, and what it wrote."""

    command: str = ""
    json: bool = False
    columns: dict | None = None  #: {None: every input's mapping, resolved path: one input's} (--columns)
    flags: dict[str, str] = dataclasses.field(default_factory=dict)
    summary: dict[str, Any] | None = None

    def columns_for(self, path: Any) -> dict[str, str] | None:
        """The ``--columns`` mapping of the input at ``path`` (its own, else every input's, else None)."""
        if not self.columns:
            return None
        from pathlib import Path

        own = self.columns.get(Path(path).resolve()) if path is not None else None
        return own if own is not None else self.columns.get(None)


_STATE: contextvars.ContextVar[RunState | None] = contextvars.ContextVar("promptprism_cli_run", default=None)


#: the state of the last finished run (read by ``main`` for ``--json``)
LAST_RUN: list[RunState] = []


def run_state() -> RunState:
    """The state of the running sub-command (a fresh one outside any run, e.g. in library tests)."""
    state = _STATE.get()
    return state if state is not None else RunState()
