"""The typer application, the consoles every sub-command shares, and the one run wrapper.

Every sub-command goes through :func:`command_runner`: it resolves the shared options (``--json``,
``--columns``), guards ``--out`` before any work, writes the parameter an error is about as the
command's flag, and keeps the run's state (:class:`RunState`) where :mod:`._output` finds it.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import typer

from ..errors import Terminated
from ._options import parse_columns
from ._state import _STATE, LAST_RUN, RunState, console, err_console, run_state  # noqa: F401 (shared)

app = typer.Typer(
    name="promptprism",
    help="Where and how prompt-guided generative models behave differently.\n\n"
         "Each sub-command reads paired (prompt, output) sets and writes a results folder with result.json "
         "and report.html.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)


def _print_version(value: bool) -> None:
    if value:
        from .._version import __version__

        console.print(f"promptprism {__version__}", markup=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print the promptprism version and exit."),
) -> None:
    """promptprism: where and how prompt-guided generative models behave differently."""


#: the command line run in-process (``promptprism.cli.main``), registered by the package when it loads: the
#: demos run sub-commands through :func:`run_command` (and this module does not import the package)
_MAIN: list[Any] = []


def register_main(main: Any) -> None:
    """Record ``main(argv) -> exit status`` as the in-process command line."""
    _MAIN[:] = [main]


def run_command(argv: list[str]) -> int:
    """Run ``promptprism ARGV`` in this process; its exit status (0 ok, 1 a check's condition held, 2 bad
    input, 3 a bug, 130 Ctrl-C)."""
    return _MAIN[0](argv)


def command_runner(name: str, callback: Any, *, flags: dict[str, str], out_kind: str | None) -> Any:
    """Wrap a sub-command's callback: shared options, the ``--out`` guard, parameter names -> flags."""
    from ..errors import PromptPrismError
    from ..io import check_out_dir, check_out_file, exclusive_lock, remove_stale_temporaries
    from ._errors import flag_message, option_table

    table = option_table(name, flags)

    @functools.wraps(callback)
    def run(**kwargs: Any) -> Any:
        state = RunState(command=name, json=bool(kwargs.pop("json_output", False)), flags=table)
        token = _STATE.set(state)
        quiet_before = console.quiet
        console.quiet = console.quiet or state.json  # --json: stdout holds the JSON summary only
        try:
            if "columns" in kwargs:
                state.columns = parse_columns(kwargs.pop("columns"))
            out = kwargs.get("out")
            with contextlib.ExitStack() as held:
                if out is not None and out_kind == "dir":
                    from ._output import check_out_contents

                    check_out_dir(out, clean=False)
                    held.enter_context(exclusive_lock(out))  # one run per folder, from here to the end
                    remove_stale_temporaries(out)
                    check_out_contents(out, name)
                elif out is not None and out_kind == "npz":
                    check_out_file(out, suffix=".npz")
                    held.enter_context(exclusive_lock(out))
                return callback(**kwargs)
        except PromptPrismError as exc:
            exc.args = (flag_message(exc, table), *exc.args[1:])
            raise
        except KeyboardInterrupt as exc:  # (typer would turn it into a silent exit 130)
            say_interrupted(exc)
            raise typer.Exit(interrupted_status(exc)) from None
        finally:
            console.quiet = quiet_before
            _STATE.reset(token)
            LAST_RUN[:] = [state]  # main() prints its summary with --json


    return run


def say_interrupted(exc: KeyboardInterrupt) -> None:
    """One line for a Ctrl-C (or SIGTERM: :class:`~promptprism.errors.Terminated`): what the run kept
    (:class:`~promptprism.errors.Interrupted`), or that a result the command writes is written whole or not
    at all."""
    said, word = str(exc).strip(), "terminated" if isinstance(exc, Terminated) else "interrupted"
    err_console.print(f"{word}: {said}" if said else f"{word}: whatever was written is whole "
                      "(results are written whole or not at all)", markup=False, soft_wrap=True)


def interrupted_status(exc: KeyboardInterrupt) -> int:
    """The exit status of a stopped run: 143 for SIGTERM (128 + 15), 130 for Ctrl-C (128 + 2)."""
    return 143 if isinstance(exc, Terminated) else 130


def deprecated(old: str, new: str) -> None:
    """One line on stderr: ``old`` still works, ``new`` is the spelling to use."""
    err_console.print(f"note: {old} is deprecated; use {new}", markup=False, soft_wrap=True)


def new_spellings(ctx: typer.Context, values: dict[str, Any], spellings: dict[str, tuple[str, str, str]]
                  ) -> dict[str, Any]:
    """``values`` (a command's arguments by python name, e.g. its ``locals()``) with each deprecated
    spelling given taken in (with a note):
    ``spellings`` maps an old option's python name to (its flag, the current flag, what it sets). The old
    value is used unless the current flag was given on the command line too."""
    from typer._click.core import ParameterSource

    values = dict(values)
    for old_name, (old, new, what) in spellings.items():
        old_value = values.pop(old_name, None)
        if old_value is None or old_value is False:
            continue
        deprecated(f"{old} ({ctx.info_name}'s {what})", new)
        name = new.lstrip("-").replace("-", "_")
        if ctx.get_parameter_source(name) in (None, ParameterSource.DEFAULT):
            values[name] = old_value
    return values


@app.command("version")
def version() -> None:
    """Print the promptprism version.

    Example: promptprism version
    """
    from .._version import __version__

    console.print(__version__, markup=False)
