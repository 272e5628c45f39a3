"""Options and conventions shared by every sub-command, defined once.

* :func:`parse_int` (the one integer parser), :func:`unique_names` (the one name de-duplicator),
  :func:`parse_columns` (``--columns prompt=question,output=answer``);
* the shared options added to every command that has use for them (``--json``, ``--columns``), the typed
  metavars (``<int>``, ``<float|rule>``) of options read as text, and the example shown in every ``--help``;
* the order in which ``promptprism --help`` lists the commands: the order of a user's work.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from ..errors import OptionError

#: commands in the order of a user's work (others, e.g. added later, follow in registration order)
COMMAND_ORDER = ("generate", "embed", "split", "compare", "diversity", "metrics", "regions", "describe",
                 "compcon", "compcon-eval", "report", "demo", "demo-llm", "version")

#: commands whose ``--out`` is a results folder (guarded, replaced as one transaction) or an .npz file
OUT_KIND = {"embed": "npz", "split": "dir", "compare": "dir", "diversity": "dir", "regions": "dir",
            "compcon": "dir", "compcon-eval": "dir", "demo": "dir", "describe": "dir", "metrics": "dir"}

#: commands that read manifests through ``load_cli_input`` (they get ``--columns``)
MANIFEST_COMMANDS = ("embed", "split", "compare", "diversity", "regions", "metrics")

#: commands that print a summary (they get ``--json``)
JSON_COMMANDS = ("embed", "split", "compare", "diversity", "regions", "compcon", "compcon-eval", "demo",
                 "report", "describe", "metrics")

#: options read as text (so that 'auto', 'none' or a rule are accepted) shown with their real type
METAVARS = {
    "--features": "<int>", "--modes": "<int>", "--seed": "<int>", "--top-k": "<int>", "--chunk-size": "<int>",
    "--partition-rows": "<int>", "--clusters": "<int>", "--cka-images": "<int>", "--max-regions": "<int>",
    "--sigma-prompt": "<float|rule>", "--sigma-output": "<float|rule>", "--gamma": "<float|rule>",
    "--regions": "<int|auto>", "--block-size": "<int|none>", "--cka-block-size": "<int|auto|none>",
    "--min-region-size": "<int|auto>", "--permutations": "<int>", "--bootstrap": "<int>",
    "--null-samples": "<int>", "--max-tokens": "<int>", "--retries": "<int>", "--steps": "<int>",
    "--samples": "<int>", "--concurrency": "<int>", "--folds": "<int>", "--confidence": "<float>",
    "--alpha": "<float>", "--ridge": "<float|cv>", "--questions": "<int>",
    "--nearest-k": "<int>", "--subsets": "<int>", "--subset-size": "<int>", "--mmd-sigma": "<float|rule>",
    "--min-group-size": "<int>",
}

#: one example per command, shown at the end of its ``--help``
EXAMPLES = {
    "generate": "promptprism generate questions.txt --endpoint http://127.0.0.1:8080/v1 --model smollm2 "
                "--samples 4 --out answers.jsonl",
    "embed": "promptprism embed answers.csv --out answers.npz --columns prompt=question,output=answer",
    "split": "promptprism split model_a.csv model_b.csv --out results/split --kernel cosine",
    "compare": "promptprism compare model_a.npz model_b.npz model_c.npz --out results/compare",
    "diversity": "promptprism diversity model_a.npz model_b.npz --out results/diversity",
    "metrics": "promptprism metrics model_a.npz model_b.npz --reference real.npz --out results/metrics",
    "regions": "promptprism regions --real real/ --generated epoch10/ epoch20/ --out results/regions",
    "compcon": "promptprism compcon images_a/ images_b/ --prompt-bank bank.txt --out results/compcon "
               "--base-url http://localhost:8000/v1 --model my-llm",
    "compcon-eval": "promptprism compcon-eval predictions.json --out results/eval --model my-judge",
    "describe": "promptprism describe results/split --base-url http://127.0.0.1:8080/v1 --model smollm2",
    "report": "promptprism report results/split",
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


def unique_names(paths: Sequence[str | os.PathLike]) -> list[str]:
    """Display names of inputs: the file stem (a folder's name), made unique with ``_2``, ``_3``..."""
    names: list[str] = []
    for p in paths:
        p = Path(p)
        base = p.stem if p.suffix and not p.is_dir() else (p.name or str(p))
        name, k = base, 2
        while name in names:
            name, k = f"{base}_{k}", k + 1
        names.append(name)
    return names


def parse_columns(value: str | None) -> dict[str, str] | None:
    """``'prompt=question,output=answer'`` -> ``{'prompt': 'question', 'output': 'answer'}``."""
    if value is None or not str(value).strip():
        return None
    mapping: dict[str, str] = {}
    for part in str(value).split(","):
        role, sep, column = part.partition("=")
        role, column = role.strip(), column.strip()
        if not sep or not role or not column:
            raise OptionError(f"columns must be ROLE=COLUMN pairs separated by commas (e.g. "
                              f"prompt=question,output=answer), got {value!r}")
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
        columns: str = typer.Option(None, "--columns", metavar="<role=column,...>",
                                    help="Manifest columns to read for each role, e.g. "
                                         "prompt=question,output=answer (roles: id, prompt, prompt_image, "
                                         "output, image)."),
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
                if opts[0] in METAVARS and not getattr(p, "is_flag", False):
                    p.metavar = METAVARS[opts[0]]
        if name in EXAMPLES and not cmd.epilog:
            cmd.epilog = f"Example: {EXAMPLES[name]}"
        if cmd.callback is not None:
            cmd.callback = command_runner(name, cmd.callback, flags=flags, out_kind=OUT_KIND.get(name))
    return group
