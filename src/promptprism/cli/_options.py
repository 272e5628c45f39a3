"""Options and conventions shared by every sub-command, defined once.

* the option types (:class:`Integer`, :class:`Number`, :class:`Choice`, used through :func:`typed`): each
  parses its text once, shows its real type in ``--help`` (``<int>``, ``<int|auto>``, ``<cosine|gaussian>``)
  and refuses a bad value with one line that names the flag (``--seed must be an integer, got 'x'``);
* :func:`parse_int` (the one integer parser), :func:`resolve_sets` / :func:`unique_names` (the sets'
  names: ``--names``, ``NAME=PATH`` or the file names, collisions told apart by their folders),
  :func:`parse_columns` (``--columns prompt=question,output=answer``);
* the shared options added to every command that has use for them (``--json``, ``--columns``) and the
  example shown in every ``--help``;
* the order in which ``promptprism --help`` lists the commands: the order of a user's work.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer
from typer._click.exceptions import BadParameter

from .._validation import PRECISIONS
from ..errors import OptionError

#: commands in the order of a user's work (others, e.g. added later, follow in registration order)
COMMAND_ORDER = ("generate", "embed", "split", "compare", "diversity", "metrics", "regions", "describe",
                 "quality", "compcon", "compcon-eval", "report", "check", "demo", "demo-llm", "version")

#: commands whose ``--out`` is a results folder (guarded, replaced as one transaction) or an .npz file
OUT_KIND = {"quality": "dir", "embed": "npz", "split": "dir", "compare": "dir", "diversity": "dir",
            "regions": "dir",
            "compcon": "dir", "compcon-eval": "dir", "demo": "dir", "describe": "dir", "metrics": "dir"}

#: commands that read manifests through ``load_cli_input`` (they get ``--columns``)
MANIFEST_COMMANDS = ("embed", "split", "compare", "diversity", "regions", "metrics", "describe")

#: commands that print a summary (they get ``--json``)
JSON_COMMANDS = ("embed", "split", "compare", "diversity", "regions", "compcon", "compcon-eval", "demo",
                 "report", "describe", "metrics", "check", "generate", "quality")


#: one example per command, shown at the end of its ``--help``
EXAMPLES = {
    "generate": "promptprism generate questions.txt --base-url http://127.0.0.1:8080/v1 --model smollm2 "
                "--samples 4 --out answers.jsonl",
    "embed": "promptprism embed answers.csv --out answers.npz --columns prompt=question,output=answer",
    "split": "promptprism split model_a.csv model_b.csv --out results/split --kernel cosine",
    "compare": "promptprism compare model_a.npz model_b.npz model_c.npz --out results/compare",
    "diversity": "promptprism diversity model_a.npz model_b.npz --out results/diversity",
    "metrics": "promptprism metrics model_a.npz model_b.npz --reference real.npz --out results/metrics",
    "regions": "promptprism regions --real real/ --generated epoch10/ epoch20/ --out results/regions",
    "compcon": "promptprism compcon images_a/ images_b/ --prompt-bank bank.txt --out results/compcon "
               "--base-url http://localhost:8000/v1 --model my-llm",
    "compcon-eval": "promptprism compcon-eval predictions.json --out results/eval --judge-model my-judge",
    "describe": "promptprism describe results/split --base-url http://127.0.0.1:8080/v1 --model smollm2",
    "report": "promptprism report results/split",
    "quality": "promptprism quality results/split --real real_test.npz",
    "check": "promptprism check results/split --fail-on significant --fail-on 'distance>0.05'",
    "demo": "promptprism demo --out results/demo --per-prompt 40",
    "version": "promptprism version",
}


def parse_int(value: Any, name: str, *, allow: Sequence[str] = ()) -> Any:
    """An integer given as text (``'2000'``), or one of the words in ``allow`` (``'auto'`` -> ``'auto'``,
    ``'none'`` -> ``None``); anything else is an :class:`OptionError` naming ``name``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    if text.lower() in allow:
        return None if text.lower() == "none" else text.lower()
    try:
        return int(text)
    except ValueError:
        expected = "an integer" + (f" or one of {', '.join(allow)}" if allow else "")
        raise OptionError(f"{name} must be {expected}, got {value!r}") from None


class FlagValueError(BadParameter):
    """A value an option type refused; the CLI prints ``<flag> <message>`` (``--seed must be an integer``)."""


class OptionType:
    """A typer ``parser`` that knows the type it shows in ``--help`` (``metavar``)."""

    metavar = "<str>"

    def __call__(self, value: Any) -> Any:  # pragma: no cover - every type defines it
        raise NotImplementedError


class Integer(OptionType):
    """An integer, or one of ``words`` (``'auto'``; ``'none'`` -> None), at least ``minimum``."""

    def __init__(self, *, words: Sequence[str] = (), minimum: int | None = None, why: str = "") -> None:
        self.words, self.minimum, self.why = tuple(words), minimum, why
        self.metavar = "<" + "|".join(("int", *self.words)) + ">"

    def __call__(self, value: Any) -> Any:
        try:
            number = parse_int(value, "", allow=self.words)
        except OptionError as exc:
            raise FlagValueError(str(exc).lstrip()) from None
        if isinstance(number, int) and self.minimum is not None and number < self.minimum:
            raise FlagValueError(f"must be >= {self.minimum}{self.why}, got {number}")
        return number


class Number(OptionType):
    """A finite number (or one of ``words``), at least ``minimum``."""

    def __init__(self, *, words: Sequence[str] = (), minimum: float | None = None) -> None:
        self.words, self.minimum = tuple(words), minimum
        self.metavar = "<" + "|".join(("float", *self.words)) + ">"

    def __call__(self, value: Any) -> Any:
        text = str(value).strip().lower()
        if text in self.words:
            return text
        try:
            number = float(value)
        except (TypeError, ValueError):
            expected = "a number" + (f" or one of {', '.join(self.words)}" if self.words else "")
            raise FlagValueError(f"must be {expected}, got {value!r}") from None
        if self.minimum is not None and not (math.isfinite(number) and number >= self.minimum):
            raise FlagValueError(f"must be a finite number >= {self.minimum:g}, got {value!r}")
        return number


class Choice(OptionType):
    """One of ``choices`` (the library's own tuple, so that the two never disagree); ``noun`` names what a
    refused value is in the library's words (``got unknown kernel 'laplace'``)."""

    def __init__(self, choices: Sequence[str], *, noun: str = "") -> None:
        self.choices, self.noun = tuple(choices), noun
        self.metavar = "<" + "|".join(self.choices) + ">"

    def __call__(self, value: Any) -> Any:
        if value in self.choices:
            return value
        got = f"unknown {self.noun} {value!r}" if self.noun else repr(value)
        raise FlagValueError(f"must be one of {', '.join(self.choices)}, got {got}")


def typed(default: Any, kind: OptionType, *names: str, **options: Any) -> Any:
    """A typer option parsed by ``kind`` and shown with its type: ``typed(10, Integer(), help=...)``."""
    return typer.Option(default, *names, parser=kind, metavar=kind.metavar, **options)


#: the array precisions of the methods that take no 'auto'
PRECISION_CHOICE = Choice(tuple(sorted(PRECISIONS, reverse=True)))

#: the options several commands share, defined once (one flag, one meaning)
SEED = typed(0, Integer(), "--seed", help="Seed of every random draw (recorded in result.json; generate: in "
                                          "each manifest row).")
CHUNK_SIZE = typed(8192, Integer(), "--chunk-size", help="Rows per streaming step.")
FEATURES = typed(2000, Integer(), "--features",
                 help="Random features r of the joint (prompt, output) map, for rff/sketch (even for rff; "
                      "`diversity` maps each modality with its own r).")
TOP_K = typed(10, Integer(), "--top-k", help="Samples listed per mode and set.")
PARTITION_ROWS = typed(262144, Integer(), "--partition-rows",
                       help="Rows per cluster task (rounded up to whole chunks).")
ALPHA = typed(0.05, Number(), "--alpha",
              help="Family-wise significance level (0 < alpha < 1) of the command's tests: split's and "
                   "compare's permutation test, describe's names of a mode, quality's findings, compcon's "
                   "held-out check of the attributes (Holm over several).")
CONFIDENCE = typed(0.95, Number(), "--confidence", help="Level of the bootstrap intervals.")
NEAREST_K = typed(5, Integer(), "--nearest-k",
                  help="k of the k-NN balls around the real samples (precision; metrics: recall, density "
                       "and coverage too).")
SAMPLES = typed(1, Integer(minimum=1), "--samples",
                help="Outputs generated per prompt (text: answers of a chat model).")
TEMPERATURE = typed(0.7, Number(), "--temperature", help="Text: sampling temperature of the answers.")
MAX_TOKENS = typed(128, Integer(), "--max-tokens", help="Text: most tokens per answer.")

#: the chat-model options (one definition, one meaning): ``--base-url`` and ``--model`` name the model the
#: command asks, ``--judge-base-url`` and ``--judge-model`` its judge (by default the same endpoint and model)
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_CHAT_MODEL = "gpt-4o"
BASE_URL = typer.Option(DEFAULT_BASE_URL, "--base-url", help="OpenAI-compatible endpoint of --model.")
MODEL = typer.Option(DEFAULT_CHAT_MODEL, "--model",
                     help="Chat model at --base-url (describe: the namer; compcon: the LLM that describes "
                          "and writes new prompts).")
JUDGE_BASE_URL = typer.Option("", "--judge-base-url",
                              help=f"OpenAI-compatible endpoint of the judge (default: --base-url, or "
                                   f"{DEFAULT_BASE_URL} in a command without --base-url).")
JUDGE_MODEL = typer.Option("", "--judge-model",
                           help=f"Model of the chat judge (default: --model, or {DEFAULT_CHAT_MODEL} in a "
                                "command without --model).")
API_KEY_ENV = typer.Option("OPENAI_API_KEY", "--api-key-env",
                           help="Name of the environment variable holding the key ('' for none).")
TIMEOUT = typed(120.0, Number(), "--timeout", help="Seconds per chat request.")
RETRIES = typed(3, Integer(), "--retries",
                help="Retries per request on connection errors, timeouts, 429/5xx.")
CHAT_CACHE = typer.Option(None, "--chat-cache", help="Folder for the on-disk chat response cache.")


def check_urls(**urls: str) -> None:
    """Each endpoint option given (``base_url=...``) looks like a URL; the one line names its flag."""
    from ..llm.client import check_base_url

    for name, url in urls.items():
        if url:
            check_base_url(url, "--" + name.replace("_", "-"))


def _label(path: Path, level: int) -> str:
    """A display name of ``path`` at a level of detail: 0 the stem, 1 the file name, then the stem and the
    name under one more parent folder per two levels (``runs/a``, ``runs/a.npz``, ``x/runs/a``, ...)."""
    stem = path.stem if path.suffix and not path.is_dir() else (path.name or str(path))
    if level == 0:
        return stem
    if level == 1:
        return path.name or str(path)
    parents = path.resolve().parent.parts[-(level // 2):]
    return "/".join([*parents, stem if level % 2 == 0 else path.name])


def unique_names(paths: Sequence[str | os.PathLike], taken: Sequence[str] = ()) -> list[str]:
    """Display names of inputs: the file stem (a folder's name); where stems collide, the file name, then
    the parent folders that tell them apart (``a/x`` and ``b/x``, never ``x_2``). The same file given
    more than once is numbered (``x#1``, ``x#2``). ``taken``: names already used (e.g. by ``--names``) that
    these must differ from."""
    paths = [Path(p) for p in paths]
    levels = [0] * len(paths)
    while True:
        names = [_label(p, k) for p, k in zip(paths, levels, strict=True)]
        seen = list(taken) + names
        clash = [i for i, n in enumerate(names) if seen.count(n) > 1]
        if not clash:
            return names
        stuck = [i for i in clash if levels[i] > 2 * len(paths[i].resolve().parts)]
        if stuck:  # the same file given more than once: numbered in order, visibly (the method decides)
            count: dict[str, int] = {}
            for i in stuck:
                stem = _label(paths[i], 0)
                count[stem] = count.get(stem, 0) + 1
                names[i] = f"{stem}#{count[stem]}"
            return names
        for i in clash:
            levels[i] += 1


def set_names(paths: Sequence[str | os.PathLike], names: str | None, *, what: str = "inputs") -> list[str]:
    """The sets' names: ``--names a,b,c`` (one per input, unique) when given, else :func:`unique_names`."""
    if names is None or not str(names).strip():
        return unique_names(paths)
    given = [n.strip() for n in str(names).split(",")]
    if len(given) != len(paths):
        raise OptionError(f"names: {len(given)} names for {len(paths)} {what}; pass one name per set, "
                          "separated by commas")
    for n in given:
        if not n:
            raise OptionError("names: an empty name; pass one non-empty name per set, separated by commas")
        if given.count(n) > 1:
            raise OptionError(f"names: {n!r} is given twice; each set needs its own name")
    return given


def split_named(args: Sequence[str | os.PathLike]) -> tuple[list[Path], list[str] | None]:
    """``NAME=PATH`` arguments: (the paths, the names) when every argument has that form (and no argument
    is itself an existing path holding '='); (the paths, None) when none has it; mixing both is refused."""
    paths, names = [], []
    for a in args:
        text = str(a)
        name, sep, rest = text.partition("=")
        if sep and name and rest and not Path(text).exists():
            names.append(name.strip())
            paths.append(Path(rest))
        else:
            paths.append(Path(text))
    if names and len(names) != len(paths):
        raise OptionError("inputs: name every set (NAME=PATH) or none of them")
    return paths, (names or None)


def resolve_sets(args: Sequence[str | os.PathLike], names: str | None) -> tuple[list[Path], list[str]]:
    """(paths, names) of a command's input sets: ``NAME=PATH`` arguments or ``--names`` (not both), else
    names from the paths (:func:`unique_names`)."""
    paths, named = split_named(args)
    if named is not None and names:
        raise OptionError("names: the inputs are already named (NAME=PATH); drop --names or the NAME= parts")
    return paths, set_names(paths, ",".join(named) if named else names)


#: ``--names``: one name per input set, in order
NAMES = typer.Option(None, "--names", help="Names of the input sets, one per set in order, separated by "
                                           "commas (default: the file names; NAME=PATH arguments also name "
                                           "a set).")


def parse_columns(value: str | Sequence[str] | None) -> dict[Path | None, dict[str, str]] | None:
    """``--columns`` (given once or more) -> {None: the mapping for every input, path: one input's}:
    ``'prompt=question,output=answer'`` maps every input, ``'FILE:prompt=question'`` the input FILE only
    (an existing file or folder, matched by its resolved path); a file's own mapping replaces the common one.
    """
    values = [value] if isinstance(value, str) else list(value or ())
    out: dict[Path | None, dict[str, str]] = {}
    for text in (v for v in values if str(v).strip()):
        head, colon, rest = str(text).partition(":")
        key, body = (None, text) if not colon or "=" in head else (Path(head.strip()), rest)
        if key is not None and not key.exists():
            raise OptionError(f"columns: {str(key)!r} names no file or folder (FILE:role=column,... maps "
                              "that input only; FILE as given on the command line)")
        where = None if key is None else key.resolve()
        if where in out:
            raise OptionError("columns: " + ("given twice for every input" if where is None else
                                             f"given twice for {str(key)!r}") + "; pass one mapping each")
        out[where] = _column_pairs(body, text)
    return out or None


def _column_pairs(body: str, text: str) -> dict[str, str]:
    """``'prompt=question,output=answer'`` -> ``{'prompt': 'question', 'output': 'answer'}``."""
    mapping: dict[str, str] = {}
    for part in str(body).split(","):
        role, sep, column = part.partition("=")
        role, column = role.strip(), column.strip()
        if not sep or not role or not column:
            raise OptionError(f"columns must be ROLE=COLUMN pairs separated by commas (e.g. "
                              f"prompt=question,output=answer, or FILE:prompt=question for one input), "
                              f"got {text!r}")
        if role in mapping:
            raise OptionError(f"columns names the role {role!r} twice")
        mapping[role] = column
    return mapping


def _shared_params() -> dict[str, Any]:
    """The click parameters of the shared options, built by typer once from a template command."""
    template = typer.Typer()

    @template.command()
    def _shared(
        json_output: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout (for "
                                                               "scripts); tables and notes go nowhere."),
        columns: list[str] = typer.Option(None, "--columns", metavar="<[FILE:]role=column,...>",
                                          help="Manifest columns to read for each role, e.g. "
                                               "prompt=question,output=answer (roles: id, prompt, "
                                               "prompt_image, output, image); FILE:prompt=q maps that input "
                                               "only (repeat the flag, one per input)."),
    ) -> None:
        """Template of the shared options."""

    return {p.name: p for p in typer.main.get_command(template).params}


def build_cli(app: typer.Typer, command_runner: Any) -> Any:
    """The click group of typer ``app`` with every convention above applied, each command's callback
    wrapped by ``command_runner(name, callback, flags=..., out_kind=...)`` (``_app.command_runner``)."""
    group = typer.main.get_command(app)
    shared = _shared_params()
    commands = dict(group.commands)
    ordered = [n for n in COMMAND_ORDER if n in commands] + [n for n in commands if n not in COMMAND_ORDER]
    group.commands.clear()
    for name in ordered:
        cmd = commands[name]
        group.commands[name] = cmd
        names = {p.name for p in cmd.params}
        if name in JSON_COMMANDS and "json_output" not in names:
            cmd.params.append(shared["json_output"])
        if name in MANIFEST_COMMANDS and "columns" not in names:
            cmd.params.append(shared["columns"])
        flags = {}
        for p in cmd.params:
            opts = [o for o in getattr(p, "opts", []) if o.startswith("--")]
            if opts and p.name:
                flags[p.name] = opts[0]
        if name in EXAMPLES and not cmd.epilog:
            cmd.epilog = f"Example: {EXAMPLES[name]}"
        if cmd.callback is not None:
            cmd.callback = command_runner(name, cmd.callback, flags=flags, out_kind=OUT_KIND.get(name))
    return group
