"""One flag, one meaning: a flag that several sub-commands take has the same type, default and help text in
each of them (unless :data:`EXCEPTIONS` says why not), a short flag stands for the same long flag
everywhere, and every hidden flag is a deprecated spelling (:data:`DEPRECATED`) that still parses."""

from __future__ import annotations

import collections

import pytest

from _cli_run import option_parser, run_cli
from promptprism.cli import cli

#: (flag, command) -> why that command's flag differs from the other commands' (it is left out of the
#: comparison); command "*": the flag's help text (only) says what it does in each command
EXCEPTIONS: dict[tuple[str, str], str] = {
    # each command writes something else there (a folder, an .npz file, a manifest) and says what
    ("--out", "*"): "the help says what the command writes there",
    ("--out", "demo"): "the demos write to results/demo unless told otherwise",
    ("--quiet", "*"): "the help says what the command leaves out of its own output",
    # the same word for each method's own procedure, with the default its cost allows
    ("--bootstrap", "diversity"): "Scendi's replicates: auto (on when cheap)",
    ("--bootstrap", "metrics"): "metrics' replicates over prompts: 200",
    ("--bootstrap", "regions"): "CMS intervals are off unless asked for (0)",
    ("--bootstrap", "quality"): "the findings' verdicts: 500 replicates, at least 50",
    ("--permutations", "quality"): "quality's within-prompt test (>= 99), not split's label permutations",
    ("--aggregate", "compare"): "the K-way test over a kernel family costs one test per kernel: off by "
                                "default (the help says so, and that split's default is auto)",
    ("--modes", "compare"): "compare reports modes per sign and per comparison",
    ("--null-samples", "compare"): "compare's cap counts the samples over all its sets",
    ("--features", "diversity"): "diversity maps each modality with its own r (FEATURES' help says so)",
    ("--kernel", "diversity"): "Scendi: cosine (exact) by default, gaussian through random features",
    ("--sigma-prompt", "diversity"): "Scendi's gaussian bandwidth takes no 'stable' rule",
    ("--sigma-output", "diversity"): "Scendi's output bandwidth is also the shared one",
    ("--top-k", "diversity"): "samples listed per cluster (diversity has no modes)",
    ("--precision", "diversity"): "Scendi's matrices: float64 or float32, no auto",
    ("--precision", "regions"): "the pixel CKA product: float64 or float32, no auto",
    ("--partition-rows", "regions"): "regions partitions images (512 per task), not embedding rows",
    ("--clip-model", "compcon"): "CompCon always verifies with CLIP (a default checkpoint; module:factory)",
    ("--judge", "compcon"): "compcon --text verifies attributes with chat or embedding judges only",
    ("--steps", "demo"): "the trained generator's DDIM steps (default by --full), not a diffusers pipeline's",
    ("--samples", "demo"): "demo --llm: answers per question and set-up (2)",
    # generation sends every prompt to the model: nothing is sent to a default endpoint or model
    ("--base-url", "generate"): "generate has no default endpoint: text generation needs --base-url",
    ("--model", "generate"): "generate has no default model: text generation needs --model",
    # quality's judge is off unless --judge-base-url is given (no default endpoint it would be sent to)
    ("--judge-base-url", "quality"): "giving it turns quality's judge on",
    # the real data each command compares against, in each command's own role (the help says which set)
    ("--reference", "diversity"): "optional: adds the reference-set metrics beside Scendi",
    ("--reference", "regions"): "held-out real images for the CMS (default: --real)",
    ("--real", "regions"): "the real training images the regions are found from",
}

#: hidden flags: (command, deprecated flag) -> the flag to use, and a value it parses
DEPRECATED: dict[tuple[str, str], tuple[str, str]] = {
    ("compcon", "--prompts"): ("--prompt-bank", "bank.txt"),
    ("compcon", "--batch-size"): ("--description-prompts", "4"),
    ("compcon", "--cache"): ("--chat-cache", "cache"),
    ("compcon", "--generated"): ("--generated-prompts", "5"),
    ("compcon", "--endpoint"): ("--models-base-url", "http://127.0.0.1:9/v1"),
    ("compcon-eval", "--cache"): ("--chat-cache", "cache"),
    ("compcon-eval", "--model"): ("--judge-model", "judge"),
    ("compcon-eval", "--base-url"): ("--judge-base-url", "http://127.0.0.1:9/v1"),
    ("generate", "--endpoint"): ("--base-url", "http://127.0.0.1:9/v1"),
    ("demo", "--generator"): ("--trained-generator", ""),
}

#: the arguments each command needs before an option parses
_REQUIRED = {"compcon": ["A", "B", "--out", "o"], "compcon-eval": ["p.json", "--out", "o"],
             "generate": ["p.txt", "--out", "o.jsonl"], "demo": []}


def _options():
    """{command: [click option]} of every sub-command."""
    group = cli(["--help"])
    return {name: [p for p in cmd.params if getattr(p, "param_type_name", "") == "option"]
            for name, cmd in group.commands.items()}


def _type(param) -> str:
    """The option's type as a user sees it: its parser's class and metavar, else click's type name."""
    parser = option_parser(param)
    kind = type(parser).__name__ if parser is not None and hasattr(parser, "metavar") else param.type.name
    return f"{kind} {getattr(param, 'metavar', None) or ''}{' flag' if param.is_flag else ''}"


def _uses() -> dict[str, dict[str, object]]:
    """{flag: {command: option}} of every visible flag, long and short."""
    uses: dict[str, dict[str, object]] = collections.defaultdict(dict)
    for command, params in _options().items():
        for p in params:
            if not p.hidden:
                for flag in [*p.opts, *p.secondary_opts]:
                    uses[flag][command] = p
    return uses


def test_a_flag_means_the_same_in_every_command():
    """Same name: same type, default and help text, in every command that takes it (or an exception)."""
    differ = []
    for flag, by_command in sorted(_uses().items()):
        if not flag.startswith("--") or len(by_command) < 2:
            continue
        compared = {c: p for c, p in by_command.items() if (flag, c) not in EXCEPTIONS}
        aspects = {"type": _type, "default": lambda p: repr(p.default)}
        if (flag, "*") not in EXCEPTIONS:
            aspects["help"] = lambda p: p.help
        for aspect, of in aspects.items():
            seen = collections.defaultdict(list)
            for command, p in compared.items():
                seen[of(p)].append(command)
            if len(seen) > 1:
                differ.append(f"{flag} {aspect}: " + "; ".join(f"{cs}: {v!r}" for v, cs in seen.items()))
    assert not differ, "flags that differ between commands:\n" + "\n".join(differ)


def test_a_short_flag_stands_for_one_long_flag():
    longs = collections.defaultdict(set)
    for flag, by_command in _uses().items():
        if not flag.startswith("--"):
            for p in by_command.values():
                longs[flag].add(next(o for o in p.opts if o.startswith("--")))
    assert {s: ls for s, ls in longs.items() if len(ls) > 1} == {}


def test_the_exceptions_are_current():
    """Each exception names a flag its command takes, shared with another command (none left stale)."""
    uses = _uses()
    for flag, command in EXCEPTIONS:
        assert len(uses.get(flag, {})) > 1, flag
        assert command == "*" or command in uses[flag], (flag, command)


def test_every_hidden_flag_is_a_listed_deprecated_spelling():
    hidden = {(c, o) for c, params in _options().items() for p in params if p.hidden
              for o in p.opts if o.startswith("--")}
    assert hidden == set(DEPRECATED)


@pytest.mark.parametrize(("command", "old"), sorted(DEPRECATED))
def test_a_deprecated_spelling_still_parses(command, old):
    """The hidden flag parses to a value (not an error), and its help names the flag to use."""
    new, value = DEPRECATED[(command, old)]
    cmd = cli([command]).commands[command]
    param = next(p for p in cmd.params if old in getattr(p, "opts", ()))
    assert f"Deprecated spelling of {new}" in param.help
    assert any(new in getattr(p, "opts", ()) for p in cmd.params), new
    ctx = cmd.make_context(command, [*_REQUIRED[command], old, *([value] if value else [])],
                           resilient_parsing=True)
    assert ctx.params[param.name] not in (None, False), ctx.params


def test_help_shows_the_new_flags(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # (no flag cut short in the options table)
    for command, flags in {"compcon": ("--generated-prompts", "--models-base-url"),
                           "compcon-eval": ("--judge-model", "--judge-base-url"),
                           "generate": ("--base-url",), "demo": ("--trained-generator",)}.items():
        code, out, _ = run_cli(command, "--help")
        assert code == 0
        text = " ".join(out.split())
        for flag in flags:
            assert flag in text, (command, flag)


def test_a_deprecated_spelling_sets_the_current_option():
    """The old flag's value is the current option's, unless the current flag is given too."""
    from promptprism.cli._app import new_spellings
    from promptprism.cli.compcon import OLD_SPELLINGS

    cmd = cli(["compcon"]).commands["compcon"]
    spelling = {"generated_deprecated": OLD_SPELLINGS["generated_deprecated"]}
    for argv, expected in ((["--generated", "5"], 5), (["--generated", "5", "--generated-prompts", "7"], 7),
                           ([], 25)):
        ctx = cmd.make_context("compcon", [*_REQUIRED["compcon"], *argv])
        values = {k: ctx.params[k] for k in ("generated_prompts", "generated_deprecated")}
        assert new_spellings(ctx, values, spelling) == {"generated_prompts": expected}


def test_deprecated_spellings_run_with_a_note(tmp_path):
    bank = tmp_path / "bank.txt"
    bank.write_text("a cat\n")
    code, _, err = run_cli("compcon", tmp_path / "missingA", tmp_path / "missingB", "--prompt-bank", bank,
                           "--out", tmp_path / "o", "--generated", "5", "--endpoint", "http://127.0.0.1:9/v1")
    lines = err.strip().splitlines()
    assert code == 2 and sum(x.startswith("error:") for x in lines) == 1
    assert "note: --generated (compcon's prompts generated per iteration) is deprecated; use " \
           "--generated-prompts" in lines
    assert any(x.startswith("note: --endpoint") and x.endswith("use --models-base-url") for x in lines)
    code, _, err = run_cli("compcon-eval", tmp_path / "missing.json", "--out", tmp_path / "e", "--model", "j",
                           "--base-url", "http://127.0.0.1:9/v1")
    lines = err.strip().splitlines()
    assert code == 2 and any(x.endswith("use --judge-model") for x in lines)
    assert any(x.endswith("use --judge-base-url") for x in lines)
    code, _, err = run_cli("compcon-eval", tmp_path / "missing.json", "--out", tmp_path / "e", "--base-url",
                           "localhost:8080")
    assert code == 2 and "--base-url must look like http(s)://" in err  # (the flag typed, not the new one)
