"""Results folders written from another one (``describe --out``) keep finding their inputs when the project
moves; a split's set names reach its table, its verdict and ``describe``, and naming the sets both ways at
once is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from _cli_run import run_cli
from promptprism.datasets import colored_digits
from promptprism.io import atomic_save_npz
from promptprism.provenance import rebase_inputs

NAMING = ("--namer", "words", "--judge", "lexical", "--no-report")
QUICK = ("--permutations", "50", "--no-report")


def _save(path, s):
    atomic_save_npz(path, prompt_embeddings=s.prompt_embeddings, output_embeddings=s.output_embeddings,
                    prompts=np.array(s.prompts), outputs=np.array(s.outputs))
    return path


@pytest.fixture(scope="module")
def digits():
    return colored_digits(per_prompt=8, seed=0)


def _mode_heads(out: str) -> list[str]:
    """What ``describe`` prints before the colon of each mode's line (``base (test) mode 1``)."""
    return [line.split(":")[0] for line in out.splitlines() if " mode " in line]


def _one_line_exit_2(code, err):
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def _inputs(folder):
    return json.loads((Path(folder) / "result.json").read_text())["inputs"]


# ------------------------------------------------------------------------------------- describe --out
@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_describe_out_rebases_the_inputs_and_both_folders_work_after_the_project_moves(tmp_path, digits,
                                                                                       monkeypatch):
    proj = tmp_path / "proj"
    (proj / "data").mkdir(parents=True)
    _save(proj / "data" / "a.npz", digits.test), _save(proj / "data" / "b.npz", digits.reference)
    monkeypatch.chdir(proj)
    code, _, err = run_cli("split", "data/a.npz", "data/b.npz", "--out", "runs/split", "-q", *QUICK)
    assert code == 0, err
    code, _, err = run_cli("describe", "runs/split", "--out", "runs/named/v1", "-q", *NAMING)
    assert code == 0, err
    record = _inputs(proj / "runs" / "named" / "v1")["test"]
    assert record["path"] == "../../../data/a.npz"  # relative to the folder written, one level deeper
    assert record["absolute"] == str((proj / "data" / "a.npz").resolve())
    assert record["sha256"] == _inputs(proj / "runs" / "split")["test"]["sha256"]

    moved = tmp_path / "proj2"
    shutil.move(str(proj), str(moved))
    monkeypatch.chdir(tmp_path)
    for folder, out in (("proj2/runs/split", "r/z1"), ("proj2/runs/named/v1", "r/z2")):
        code, _, err = run_cli("describe", folder, "--out", out, "-q", *NAMING)
        assert code == 0, f"{folder}: {err}"
        for side, name in (("test", "a.npz"), ("reference", "b.npz")):
            record = _inputs(tmp_path / out)[side]
            assert (tmp_path / out / record["path"]).resolve() == (moved / "data" / name).resolve()
            assert record["absolute"] == str((moved / "data" / name).resolve())  # no longer the old place
    code, _, err = run_cli("describe", "proj2/runs/named/v1", "-q", *NAMING)  # in place: absolute refreshed
    assert code == 0, err
    record = _inputs(moved / "runs" / "named" / "v1")["test"]
    assert record["path"] == "../../../data/a.npz"
    assert record["absolute"] == str((moved / "data" / "a.npz").resolve())


def test_rebase_keeps_an_input_found_nowhere_pointing_where_it_pointed(tmp_path):
    origin, out = tmp_path / "runs" / "split", tmp_path / "runs" / "named" / "v1"
    origin.mkdir(parents=True)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "here.npz").write_bytes(b"x")
    records = {"gone": {"path": "../../data/gone.npz", "absolute": "/nowhere/gone.npz", "sha256": "0"},
               "here": {"path": "../../data/here.npz", "absolute": "/nowhere/here.npz", "sha256": "1"}}
    rebased = rebase_inputs(records, out, origin=origin)
    assert rebased["gone"] == {"path": "../../../data/gone.npz", "absolute": "/nowhere/gone.npz",
                               "sha256": "0"}
    assert rebased["here"]["path"] == "../../../data/here.npz"
    assert rebased["here"]["absolute"] == str((tmp_path / "data" / "here.npz").resolve())
    assert records["here"]["absolute"] == "/nowhere/here.npz"  # the records given are left as they were


# ------------------------------------------------------------------------------------- named sets
def _describe_heads_start_with(folder, prefixes: tuple[str, ...]) -> None:
    """``describe`` of a split result runs, and each of its mode lines starts with one of ``prefixes``."""
    code, out, err = run_cli("describe", folder, *NAMING)
    assert code == 0, err
    heads = _mode_heads(out)
    assert heads and all(h.startswith(prefixes) for h in heads), out


def test_split_names_reach_the_table_the_verdict_result_json_and_describe(tmp_path, digits):
    t, r = _save(tmp_path / "t.npz", digits.test), _save(tmp_path / "r.npz", digits.reference)
    code, out, err = run_cli("split", t, r, "--names", "base,tuned", "--out", tmp_path / "n", *QUICK)
    assert code == 0, err
    assert "+1 base (test)" in out and "-1 tuned (reference)" in out
    assert "+1 test " not in out and "-1 reference " not in out
    assert "that base (test) produces more" in out and "the test set" not in out, out
    assert "that tuned (reference) produces more" in out
    stored = json.loads((tmp_path / "n" / "result.json").read_text())["significance"]["verdict"]
    assert "that base (test) produces more" in stored  # the report and --json show the same sentence
    _describe_heads_start_with(tmp_path / "n", ("base (test) mode", "tuned (reference) mode"))


def test_without_names_the_sides_are_shown_by_their_words(tmp_path, digits):
    t, r = _save(tmp_path / "t.npz", digits.test), _save(tmp_path / "r.npz", digits.reference)
    code, out, err = run_cli("split", t, r, "--out", tmp_path / "u", *QUICK)
    assert code == 0, err
    assert "+1 test " in out and "that the test set produces more" in out and "(test)" not in out
    _describe_heads_start_with(tmp_path / "u", ("test mode", "reference mode"))


def test_naming_the_sets_both_ways_is_refused(tmp_path, digits):
    t, r = _save(tmp_path / "t.npz", digits.test), _save(tmp_path / "r.npz", digits.reference)
    code, _, err = run_cli("split", f"x={t}", f"y={r}", "--names", "p,q", "--out", tmp_path / "bad", *QUICK)
    _one_line_exit_2(code, err)
    assert "--names" in err and "NAME=PATH" in err
    assert not (tmp_path / "bad").exists()


def test_names_that_look_like_paths_are_recorded_and_kept(tmp_path, digits):
    """A name such as 'llama-3.1' (a suffix, as a file name has) was taken for a path by the inference of
    older results; the names are now recorded (config['names']) where they enter."""
    t, r = _save(tmp_path / "t.npz", digits.test), _save(tmp_path / "r.npz", digits.reference)
    code, _, err = run_cli("split", t, r, "--names", "llama-3.1,llama-3.2", "--out", tmp_path / "v", *QUICK)
    assert code == 0, err
    assert json.loads((tmp_path / "v" / "result.json").read_text())["config"]["names"] == ["llama-3.1",
                                                                                          "llama-3.2"]
    code, out, err = run_cli("describe", tmp_path / "v", *NAMING)
    assert code == 0, err
    heads = _mode_heads(out)
    assert heads and all(h.startswith(("llama-3.1 (test) mode", "llama-3.2 (reference) mode")) for h in heads)
