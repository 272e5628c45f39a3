"""The one ``promptprism`` command, a sub-command per method.

Errors a user can cause (:class:`~promptprism.errors.PromptPrismError`, bad options) print one line that
says what is wrong and where, and exit with status 2; nothing half-written is left behind.
"""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from ..errors import PromptPrismError

# sub-commands register themselves on ``app`` when imported
from . import compcon as _compcon  # noqa: E402,F401
from . import demo as _demo  # noqa: E402,F401
from . import diversity as _diversity  # noqa: E402,F401
from . import embed as _embed  # noqa: E402,F401
from . import generate as _generate  # noqa: E402,F401
from . import regions as _regions  # noqa: E402,F401
from . import report as _report  # noqa: E402,F401
from . import split as _split  # noqa: E402,F401
from ._app import app, err_console


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit status (0 ok, 2 bad input or usage, 1 interrupted)."""
    try:
        app(args=argv, prog_name="promptprism")
    except SystemExit as exc:  # typer's standalone mode exits: usage errors with status 2
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except PromptPrismError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 1
    return 0


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


__all__ = ["app", "main", "run", "typer"]
