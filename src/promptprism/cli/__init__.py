"""The one ``promptprism`` command, a sub-command per method.

Every run ends in one of two ways: success (exit 0), or one line on stderr that says what is wrong, where,
and what was expected (exit 2), with any earlier result left intact. Usage mistakes are reported the same
way (no usage box); exceptions a user's input or machine can cause (bad data, a full or read-only disk,
too little memory, an image bomb, undecodable text) are mapped to one line in :mod:`._errors`. Only a bug
ends differently: one line that says so, exit 3 (``PROMPTPRISM_TRACEBACK=1`` shows the traceback), a status of
its own, so that a gate (``check``, exit 1 when a condition holds) never reads a bug as a failed condition.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import signal
import sys
import warnings

#: OpenBLAS's idle threads spin for 2^28 cycles (~0.1 s) after each call before they sleep; a command
#: alternates its BLAS calls with Python work and threads of its own, which the spinning threads slow down
#: (measured, default rff command at n = m = 30,000 on 2 cores: scoring 0.14 s -> 0.09 s, the eigen-solve
#: 0.07-0.13 s -> 0.045 s). Set before the BLAS loads (a user's own setting is kept); docs/scaling.md
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from ..scale.threads import choose_threads, cpu_sample, thread_budget  # noqa: E402

try:  # (the thread budget's busy-CPU window: the imports below, instead of a sleep)
    _STARTED: list = [cpu_sample()]
except (OSError, ValueError, IndexError, KeyError):
    _STARTED = []

import typer  # noqa: E402

from .._interrupts import note_termination  # noqa: E402
from ..errors import Terminated  # noqa: E402
from ._app import (  # noqa: E402
    LAST_RUN,
    app,
    command_runner,
    console,
    err_console,
    interrupted_status,
    register_main,
    say_interrupted,
)
from ._errors import error_line
from ._options import FlagValueError, build_cli

#: the exit status of a bug (an exception no input explains): not 1, which ``check`` gives a condition that
#: holds
INTERNAL_ERROR = 3

#: the module that registers each sub-command on ``app`` when imported (in the order of a user's work);
#: a run imports only its own command's module (``promptprism split`` never loads the regions or metrics
#: code), help and unknown words import them all
COMMAND_MODULES = {"generate": "generate", "embed": "embed", "split": "split", "compare": "compare",
                   "diversity": "diversity", "metrics": "metrics", "regions": "regions",
                   "describe": "describe", "quality": "quality", "compcon": "compcon",
                   "compcon-eval": "compcon", "report": "report", "check": "check", "demo": "demo"}

_CLI: list = []


def load_commands(args: list[str] | None = None) -> None:
    """Register the sub-commands ``args`` needs: its command word's module, or every module (no args,
    help, an unknown or mistyped word: the usage error lists them all)."""
    word = next((a for a in args if not a.startswith("-")), None) if args else None
    names = [COMMAND_MODULES[word]] if word in COMMAND_MODULES else sorted(set(COMMAND_MODULES.values()))
    for name in names:
        importlib.import_module(f"{__name__}.{name}")


def cli(args: list[str] | None = None):
    """The click group with the shared conventions applied, holding the sub-commands ``args`` needs (all of
    them without ``args``; rebuilt when more have registered since)."""
    load_commands(args)
    registered = len(app.registered_commands)
    if not _CLI or _CLI[0] != registered:
        _CLI[:] = [registered, build_cli(app, command_runner)]
    return _CLI[1]


_LAST_ERROR: list[str] = []


def _error(message: str) -> None:
    line = " ".join(message.split())
    _LAST_ERROR[:] = [line]
    err_console.print(f"error: {line}", markup=False, highlight=False, soft_wrap=True)


def _json_error(args: list[str], code: int) -> None:
    """With ``--json``, a failed run prints ``{"error": ..., "exit_status": N}`` on stdout (and the usual
    line on stderr), so a script always gets JSON."""
    asked = LAST_RUN[0].json if LAST_RUN else "--json" in args[: args.index("--")] if "--" in args else \
        "--json" in args
    if code != 0 and asked:
        message = _LAST_ERROR[0] if _LAST_ERROR else "interrupted"
        sys.stdout.write(json.dumps({"error": message, "exit_status": code}, ensure_ascii=False) + "\n")


def _configure_consoles() -> None:
    """No hard wrapping when stdout is not a terminal: paths and names stay whole, tables uncut."""
    for c in (console, err_console):
        c._width = None  # re-detect (tests swap sys.stdout)
        c.soft_wrap = False
        if not c.is_terminal:
            c.width = 10_000
            c.soft_wrap = True


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit status (0 ok, 1 a check's condition held, 2 bad input,
    options or usage, 3 a bug, 130 Ctrl-C)."""
    args = list(sys.argv[1:] if argv is None else argv)
    _LAST_ERROR.clear()
    code = _main(args)
    if not _gate_failed(code):
        _json_error(args, code)
    return code


def _gate_failed(code: int) -> bool:
    """``check`` ended with exit 1 because a condition held (not a bug): its summary was printed."""
    return code == 1 and bool(LAST_RUN) and LAST_RUN[0].command == "check" and LAST_RUN[0].summary is not None


register_main(main)


def _main(args: list[str]) -> int:
    from typer import exceptions as typer_exc
    from typer._click import exceptions as click_exc

    _configure_consoles()
    LAST_RUN.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            group = cli(args)  # (its imports are the thread budget's busy-CPU window)
            with thread_budget(choose_threads(since=_STARTED.pop() if _STARTED else None)):
                code = group.main(args=args, prog_name="promptprism", standalone_mode=False)
            code = code if isinstance(code, int) else 0
        except click_exc.NoArgsIsHelpError as exc:
            console.print(exc.ctx.get_help() if exc.ctx else "", markup=False)
            return 0
        except FlagValueError as exc:  # an option type refused its value: the flag and why, one line
            flags = [o for o in getattr(exc.param, "opts", ()) if o.startswith("--")] or ["option"]
            _error(f"{flags[0]} {exc.message}")
            return 2
        except click_exc.UsageError as exc:
            where = f" (see {exc.ctx.command_path} --help)" if exc.ctx is not None else ""
            _error(f"{exc.format_message()}{where}")
            return 2
        except typer_exc.Abort:  # (click's Ctrl-C at a prompt: the interrupted status, never the gate's 1)
            err_console.print("interrupted", markup=False)
            return 130
        except (click_exc.ClickException, typer_exc.TyperException) as exc:
            _error(exc.format_message())
            return 2
        except typer_exc.Exit as exc:
            if isinstance(exc.__cause__, KeyboardInterrupt):  # (typer's: Ctrl-C -> exit 130)
                say_interrupted(exc.__cause__)
            return exc.exit_code
        except KeyboardInterrupt as exc:
            say_interrupted(exc)
            return interrupted_status(exc)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception as exc:  # one line, never a traceback
            line = error_line(exc)
            if os.environ.get("PROMPTPRISM_TRACEBACK"):
                raise
            if line is None:
                _error(f"internal error ({type(exc).__name__}: {exc}); please report it "
                       "(PROMPTPRISM_TRACEBACK=1 shows where)")
                return INTERNAL_ERROR
            _error(line)
            return 2
    _replay(caught)
    last = LAST_RUN[0] if LAST_RUN else None
    if (code == 0 or _gate_failed(code)) and last is not None and last.json and last.summary is not None:
        sys.stdout.write(json.dumps(LAST_RUN[0].summary, indent=1, ensure_ascii=False, allow_nan=False,
                                    default=str) + "\n")
    return code


def _replay(caught: list[warnings.WarningMessage]) -> None:
    """Warnings of a successful run, issued again now that the run is over (library deprecations stay
    silent; duplicates once). The console entry point shows each as one ``warning:`` line."""
    seen = set()
    for w in caught:
        if issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                                   ResourceWarning)):
            continue
        key = (w.category, " ".join(str(w.message).split()))
        if key in seen:
            continue
        seen.add(key)
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, registry={})


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    err_console.print(f"warning: {' '.join(str(message).split())}", markup=False, highlight=False,
                      soft_wrap=True)


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM: stop the command as Ctrl-C does (its clean-up runs); counted, so that one swallowed where it
    landed is raised again at the long runs' next section check (:mod:`promptprism._interrupts`)."""
    note_termination()
    raise Terminated


def run() -> None:
    """Console-script entry point (warnings print as one ``warning:`` line each); it ends the process, so a
    program that runs a command inside itself calls :func:`main` instead."""
    warnings.showwarning = _one_line_warning
    signal.signal(signal.SIGTERM, _terminate)
    code = main()
    # everything is written and closed: leave without the interpreter's last garbage collection over every
    # object the command's modules made (~40 ms of a 5 s command); atexit handlers and finalizers still run
    gc.freeze()
    # CPython records "a KeyboardInterrupt went unhandled" whenever one escapes code run by exec()/eval() of a
    # string (a dataclass's or namedtuple's generated methods, for one), even where the command then handled
    # it; under ``python -m`` the interpreter, after exiting with the command's status, checks that record
    # and kills itself by SIGINT instead (the parent saw -2, not 130: Ctrl-C during a lazy import). A string
    # exec that completes clears the record.
    exec("None")  # noqa: S102
    sys.exit(code)


__all__ = ["app", "cli", "main", "run", "typer"]
