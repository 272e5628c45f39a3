"""The typer application and the consoles every sub-command shares."""

from __future__ import annotations

import typer
from rich.console import Console

app = typer.Typer(
    name="promptprism",
    help="Where and how prompt-guided generative models behave differently.\n\n"
         "Each sub-command reads paired (prompt, output) sets and writes a results folder with result.json.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)
console = Console()
err_console = Console(stderr=True)


@app.callback()
def _root() -> None:
    """promptprism: where and how prompt-guided generative models behave differently."""


@app.command("version")
def version() -> None:
    """Print the promptprism version."""
    from .._version import __version__

    console.print(__version__)
