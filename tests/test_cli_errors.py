"""Bad options in the CLI: typed options refuse a bad value in one line naming the flag, and a library error
is written with the flag of the parameter it carries (``OptionError.parameter``), through one table."""

import numpy as np
import pytest

from _cli_run import option_parser, run_cli
from promptprism.cli import cli
from promptprism.cli._errors import flag_message, option_table
from promptprism.cli._options import OptionType
from promptprism.errors import InputError, OptionError


def _typed_options():
    for name, cmd in cli().commands.items():
        for p in cmd.params:
            parser = option_parser(p)
            if isinstance(parser, OptionType) and not getattr(p, "hidden", False):
                yield name, p, parser


TYPED = [(name, p.opts[0], parser) for name, p, parser in _typed_options()]


def test_typed_options_show_their_type_and_are_many():
    assert len(TYPED) >= 60
    for command, flag, parser in TYPED:
        param = next(p for p in cli().commands[command].params if flag in p.opts)
        assert param.metavar == parser.metavar and param.metavar != "<str>", (command, flag)
        assert parser.metavar.startswith(("<int", "<float")) or "|" in parser.metavar


@pytest.mark.parametrize("command, flag", [(c, f) for c, f, _ in TYPED])
def test_a_bad_value_is_one_line_naming_the_flag_exit_2(tmp_path, command, flag):
    has_out = any("--out" in p.opts for p in cli().commands[command].params)
    code, out, err = run_cli(command, flag, "not-a-value!", *(["--out", tmp_path / "o"] if has_out else []))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"error: {flag} must be "), err
    assert "not-a-value!" in lines[0] and not (tmp_path / "o").exists()


def test_one_flag_one_type_across_commands():
    types = {}
    for _, flag, parser in TYPED:
        types.setdefault(flag, set()).add(type(parser).__name__)
    assert all(len(t) == 1 for t in types.values()), types


def test_parameter_is_mapped_by_the_table_not_guessed_from_the_message():
    table = option_table("metrics", {"nearest_k": "--nearest-k", "cache": "--cache", "no_cache": "--no-cache",
                                     "seed": "--seed"})
    err = InputError("the reference set has 60 samples; nearest_k=70 needs at least 71",
                     parameter="nearest_k")
    assert flag_message(err, table) == "the reference set has 60 samples; --nearest-k 70 needs at least 71"
    err = OptionError("cache folder /x: cannot be used; pass cache=DIR or cache=None", parameter="cache")
    assert flag_message(err, table).endswith("pass --cache DIR or --no-cache")
    table["gamma_estimator"] = "--gamma-estimator"
    assert flag_message(OptionError("gamma_estimator='cross-fit' needs at least 2 prompts"), table) == \
        "--gamma-estimator 'cross-fit' needs at least 2 prompts"
    # a name that is not the error's parameter stays as it is
    assert flag_message(OptionError("top_k must be > 0; seed_x is unrelated"), table) == \
        "top_k must be > 0; seed_x is unrelated"
    assert flag_message(InputError("a.npz: seed must be ..."), table) == "a.npz: seed must be ..."


def test_shared_frequencies_bandwidth_error_names_sigma_output(tmp_path):
    """The shared-frequency route resolves the one bandwidth from --sigma-output: its error says so (it was
    reported as 'sigma' and mapped to --sigma-prompt)."""
    x = np.ones((30, 6))  # every prompt and output the same point: the median rule finds no distance
    np.savez(tmp_path / "same.npz", prompt_embeddings=x, output_embeddings=x.copy(),
             prompts=np.array([f"p{i % 5}" for i in range(30)]))
    code, _, err = run_cli("diversity", tmp_path / "same.npz", "--out", tmp_path / "o", "--kernel",
                           "gaussian", "--shared-frequencies", "-q", "--no-report")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("error: --sigma-output: the median rule") and "--sigma-prompt" not in err
