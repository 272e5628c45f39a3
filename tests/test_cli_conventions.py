"""Conventions every sub-command shares: --version, python -m, command order, help, flags, --json, output."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from _cli_run import listed, run_cli
from promptprism.cli import cli
from promptprism.cli._errors import option_table, to_flags
from promptprism.cli._options import COMMAND_ORDER, parse_columns, parse_int, unique_names
from promptprism.errors import OptionError
from promptprism.io import staged_outputs, write_outputs


def _npz(path, n=24, d=6, seed=0, prompts=None):
    rng = np.random.default_rng(seed)
    np.savez(
        path,
        prompt_embeddings=rng.standard_normal((n, d)),
        output_embeddings=rng.standard_normal((n, d)),
        prompts=np.array(prompts or [f"prompt {i % 4}" for i in range(n)]),
    )
    return path


def test_version_flag_and_python_m():
    from promptprism import __version__

    code, out, _ = run_cli("--version")
    assert code == 0 and out.strip() == f"promptprism {__version__}"
    done = subprocess.run(
        [sys.executable, "-m", "promptprism", "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and __version__ in done.stdout


#: what no command needs before it runs: each method's estimator, the chat client, the generators, the loaders
_RUN_TIME_ONLY = ("promptprism.methods.promptsplit.estimator", "promptprism.methods.promptsplit.kway",
                  "promptprism.methods.scendi.estimator", "promptprism.methods.regions.estimator",
                  "promptprism.methods.metrics.estimator", "promptprism.methods.compcon.pipeline",
                  "promptprism.methods.compcon.clients", "http.client", "promptprism.generate",
                  "promptprism.data.inputs")


def test_the_cli_imports_what_a_command_runs_when_it_runs():
    """Start-up: ``import promptprism.cli`` registers every command, and ``split --help`` shows its options
    (their choices and defaults included), without importing any method's estimator, the chat client, the
    generators or the loaders; a command imports them when it runs."""
    from promptprism.methods.promptsplit.options import EXACT_MAX_SAMPLES

    code = ("import json, sys\n"
            "from promptprism.cli import main\n"
            f"heavy = {_RUN_TIME_ONLY!r}\n"
            "at_import = [m for m in heavy if m in sys.modules]\n"
            "status = main(['split', '--help'])\n"
            "print(json.dumps([at_import, [m for m in heavy if m in sys.modules], status]))\n")
    env = dict(os.environ, COLUMNS="400")  # (help on one line per option)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    *help_lines, last = done.stdout.strip().splitlines()
    at_import, after_help, status = json.loads(last)
    assert (at_import, after_help, status) == ([], [], 0), done.stderr
    shown = " ".join(" ".join(help_lines).split())
    for option in ("--kernel", "--method", "--aggregate", "--rank-prompts-by", "--precision",
                   "--sigma-prompt", "--permutations", "--out"):
        assert option in shown
    assert f"exact up to {EXACT_MAX_SAMPLES:,} samples" in shown
    assert "contribution" in shown and "mean_score" in shown  # the choices of --rank-prompts-by


def test_commands_listed_in_the_order_of_work():
    names = list(cli().commands)
    expected = [n for n in COMMAND_ORDER if n in names]
    assert names[: len(expected)] == expected
    assert names.index("embed") < names.index("split") < names.index("report") < names.index("version")


@pytest.mark.parametrize("command", [c for c in COMMAND_ORDER if c in cli().commands])
def test_every_help_has_an_example_and_described_typed_options(command):
    cmd = cli().commands[command]
    assert cmd.epilog and cmd.epilog.startswith("Example: promptprism")
    for p in cmd.params:
        if getattr(p, "hidden", False) or p.param_type_name != "option":
            continue
        assert p.help, f"{command} {p.opts} has no description"
        if p.opts[0] in ("--features", "--modes", "--seed", "--top-k", "--chunk-size"):
            assert p.metavar == "<int>" or "int" in str(p.type).lower(), (command, p.opts, p.metavar)
    code, out, _ = run_cli(command, "--help")
    assert code == 0 and "Example: promptprism" in " ".join(out.split())


def test_one_meaning_per_flag_across_commands():
    """--batch-size, --cache and --prompts mean one thing; compcon's old meanings moved to new flags."""
    meanings = {}
    for cmd in cli().commands.values():
        for p in cmd.params:
            if p.param_type_name == "option" and not getattr(p, "hidden", False):
                for opt in p.opts:
                    meanings.setdefault(opt, set()).add(p.name)
    for flag in ("--batch-size", "--cache", "--prompts", "--seed", "--out"):
        assert len(meanings.get(flag, set())) <= 1, (flag, meanings.get(flag))
    chunk_defaults = {p.default for c in cli().commands.values() for p in c.params
                      if "--chunk-size" in p.opts}
    assert len(chunk_defaults) == 1, chunk_defaults
    compcon = {o for p in cli().commands["compcon"].params for o in p.opts}
    assert {"--prompt-bank", "--description-prompts", "--chat-cache"} <= compcon


def test_deprecated_spelling_still_works_with_a_note(tmp_path):
    bank = tmp_path / "bank.txt"
    bank.write_text("a cat\n")
    code, _, err = run_cli(
        "compcon",
        tmp_path / "missingA",
        tmp_path / "missingB",
        "--prompts",
        bank,
        "--out",
        tmp_path / "o",
        "--batch-size",
        "3",
        "--cache",
        tmp_path / "c",
    )
    assert code == 2
    lines = err.strip().splitlines()
    assert "note: --prompts (compcon's prompt bank) is deprecated; use --prompt-bank" in lines
    assert any("--description-prompts" in x for x in lines) and any("--chat-cache" in x for x in lines)
    assert sum(x.startswith("error:") for x in lines) == 1


def test_library_parameter_names_become_flags():
    table = option_table(
        "split",
        {"sigma_prompt": "--sigma-prompt", "features": "--features", "seed": "--seed", "out": "--out"},
    )
    assert to_flags("sigma_prompt must be > 0, got -1", table) == "--sigma-prompt must be > 0, got -1"
    assert to_flags("n_features must be even", table) == "--features must be even"
    assert to_flags("seed must be a non-negative integer", table) == "--seed must be a non-negative integer"
    assert to_flags("the seed is recorded", table) == "the seed is recorded"  # plain words only as subject
    assert to_flags("a.npz: prompt_embeddings row 3", table) == "a.npz: prompt_embeddings row 3"


def test_parse_helpers():
    assert parse_int("12", "seed") == 12 and parse_int("auto", "regions", allow=("auto",)) == "auto"
    assert parse_int("none", "block_size", allow=("none",)) is None
    with pytest.raises(OptionError, match="seed must be an integer, got 'x'"):
        parse_int("x", "seed")
    with pytest.raises(OptionError, match="regions must be an integer or one of auto"):
        parse_int("x", "regions", allow=("auto",))
    # same stems are told apart by their folders, never x_2 (issue 40)
    assert unique_names(["a/x.npz", "b/x.npz", "c/x.npz"]) == ["a/x", "b/x", "c/x"]
    want = {None: {"prompt": "question", "output": "answer"}}
    assert parse_columns("prompt=question, output=answer") == want
    for bad in ("prompt", "prompt=", "prompt=a,prompt=b", ["prompt=a", "output=b"], "nofile.jsonl:prompt=q"):
        with pytest.raises(OptionError):
            parse_columns(bad)


def test_columns_map_each_input_by_its_file(tmp_path, monkeypatch):
    """--columns FILE:role=column maps that input only; a file's own mapping replaces the common one."""
    from promptprism.cli._state import RunState

    monkeypatch.chdir(tmp_path)
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        (tmp_path / name).write_text("")
    state = RunState(columns=parse_columns(["a.jsonl:prompt=question", "prompt=q,output=o",
                                            f"{tmp_path / 'b.jsonl'}:output=answer"]))
    assert state.columns_for("a.jsonl") == {"prompt": "question"}
    assert state.columns_for(tmp_path / "a.jsonl") == {"prompt": "question"}
    assert state.columns_for("b.jsonl") == {"output": "answer"}
    assert state.columns_for("c.jsonl") == {"prompt": "q", "output": "o"}
    assert RunState().columns_for("a.jsonl") is None
    with pytest.raises(OptionError, match="given twice for 'a.jsonl'"):
        parse_columns(["a.jsonl:prompt=x", "a.jsonl:output=y"])


def test_json_summary_on_stdout_and_no_wrapping_when_piped(tmp_path):
    long = "a prompt " + "with many words " * 12 + "[/] :smile: end"
    a = _npz(tmp_path / "a.npz", prompts=[long if i % 4 == 0 else f"p{i % 4}" for i in range(24)])
    b = _npz(tmp_path / "b.npz", seed=1, prompts=[long if i % 4 == 0 else f"p{i % 4}" for i in range(24)])
    out = tmp_path / ("results-" + "x" * 90)
    code, stdout, err = run_cli("split", a, b, "--out", out, "--no-report", "-q", "--json")
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["kind"] == "promptsplit" and summary["files"]["result.json"] == str(out / "result.json")
    assert summary["distance"] == pytest.approx(json.loads((out / "result.json").read_text())["distance"])
    code, stdout, err = run_cli("split", a, b, "--out", out, "--no-report")
    assert code == 0, err
    assert f"results: {out / 'result.json'}" in stdout.splitlines()  # the long path on one line
    assert long in stdout  # the prompt whole, literally ([/] and :smile: as typed), not cut
    code, stdout, _ = run_cli("diversity", a, b, "--out", tmp_path / "d", "--no-report", "--json")
    assert code == 0 and json.loads(stdout)["kind"] == "scendi_comparison"


def test_transaction_keeps_the_earlier_result_when_anything_fails(tmp_path):
    out = tmp_path / "res"
    write_outputs(out, {"result.json": "old", "report.html": "old page"})
    with pytest.raises(RuntimeError), staged_outputs(out) as stage:
        (stage / "result.json").write_text("new")
        raise RuntimeError("the report failed")
    assert (out / "result.json").read_text() == "old" and (out / "report.html").read_text() == "old page"
    assert listed(out) == ["report.html", "result.json"]
    (out / ".result.json.abc123.tmp").write_text("left by a killed run")
    write_outputs(out, {"result.json": "new", "report.html": "new page"})
    assert listed(out) == ["report.html", "result.json"]
    assert (out / "result.json").read_text() == "new"


@pytest.mark.parametrize("command", ["split", "diversity", "embed", "demo", "compcon-eval", "regions"])
@pytest.mark.parametrize("where", ["file", "under-file", "result-folder"])
def test_out_guard_before_any_work(tmp_path, command, where):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    out = {"file": blocker, "under-file": blocker / "sub", "result-folder": tmp_path / "res"}[where]
    if where == "result-folder":
        (out / "result.json").mkdir(parents=True)
    a = _npz(tmp_path / "a.npz")
    argv = {
        "split": ["split", a, a],
        "diversity": ["diversity", a],
        "embed": ["embed", a],
        "demo": ["demo", "--per-prompt", "2"],
        "compcon-eval": ["compcon-eval", tmp_path / "p.json"],
        "regions": ["regions", "--real", tmp_path / "r.npy", "--generated", tmp_path / "g.npy"],
    }[command]
    if command == "embed":
        out = out if where != "result-folder" else tmp_path / "res"
        out = out.with_suffix(".npz") if where == "under-file" else out
    code, _, err = run_cli(*argv, "--out", out, "-q")
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and re.match(r"error: --out ", lines[0]), err
    assert blocker.read_text() == "x"


def test_result_save_refuses_a_json_path_and_a_file_in_the_way(tmp_path):
    """``result.save("x/result.json")`` made a folder named result.json, and saving over a file raised a raw
    FileExistsError: both are one OptionError naming out_dir, with nothing written."""
    import pytest

    from promptprism import PromptSplit
    from promptprism.errors import OptionError

    rng = np.random.default_rng(0)
    result = PromptSplit(permutations=0).fit((rng.normal(size=(12, 2)), rng.normal(size=(12, 3))),
                                             (rng.normal(size=(10, 2)), rng.normal(size=(10, 3))))
    with pytest.raises(OptionError, match="names a .json file") as info:
        result.save(tmp_path / "x" / "result.json")
    assert info.value.parameter == "out_dir" and not (tmp_path / "x").exists()
    (tmp_path / "afile").write_text("mine")
    with pytest.raises(OptionError, match="exists and is not a folder"):
        result.save(tmp_path / "afile")
    assert (tmp_path / "afile").read_text() == "mine"
    path = result.save(tmp_path / "run")
    assert path == tmp_path / "run" / "result.json" and sorted(p.name for p in (tmp_path / "run").iterdir()) \
        == ["result.json"]
