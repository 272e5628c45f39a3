"""Who may write a results folder again: a command may replace its own earlier output (describe --out X
twice was refused as "holds the result of split"); ``report --out`` may not replace another result's page
nor write among files promptprism did not write, but may replace a page it wrote there."""

from __future__ import annotations

import numpy as np
import pytest

from _cli_run import run_cli


@pytest.fixture(scope="module")
def split_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("owners")
    rng = np.random.default_rng(0)
    prompts = np.array([f"p{i % 6}" for i in range(120)])
    t = np.repeat(rng.normal(size=(6, 8)), 20, axis=0)
    for name, shift in (("a", 2.0), ("b", 0.0)):
        z = rng.normal(size=(120, 8))
        z[:20] += shift
        np.savez(root / f"{name}.npz", prompt_embeddings=t, output_embeddings=z, prompts=prompts)
    code, _, err = run_cli("split", root / "a.npz", root / "b.npz", "--out", root / "r", "-q", "--no-report",
                           "--permutations", "19")
    assert code == 0, err
    return root


@pytest.mark.slow  # (two describe runs, ~2 s)
def test_describe_may_write_its_own_out_folder_again(split_run):
    out = split_run / "named"
    for _ in range(2):
        code, _, err = run_cli("describe", split_run / "r", "--namer", "words", "--judge", "embedding",
                               "--out", out, "-q", "--no-report")
        assert code == 0, err
    code, _, err = run_cli("split", split_run / "a.npz", split_run / "b.npz", "--out", out, "-q")
    assert code == 2 and "holds the result of `promptprism describe`" in err


def test_report_out_refuses_another_result_and_foreign_files_but_replaces_its_own_page(split_run):
    import shutil

    shutil.copytree(split_run / "r", split_run / "other")
    code, _, err = run_cli("report", split_run / "r", "--out", split_run / "other")
    assert code == 2 and "holds a result (result.json)" in err and len(err.strip().splitlines()) == 1
    assert not (split_run / "other" / "report.html").exists()
    (split_run / "data").mkdir()
    np.save(split_run / "data" / "prompt_embeddings.npy", np.zeros((2, 2)))
    code, _, err = run_cli("report", split_run / "r", "--out", split_run / "data")
    assert code == 2 and "holds files promptprism did not write ('prompt_embeddings.npy')" in err
    for _ in range(2):
        code, _, err = run_cli("report", split_run / "r", "--out", split_run / "pages")
        assert code == 0, err


@pytest.mark.slow  # (describe runs, ~2 s)
def test_describe_records_the_inputs_it_was_given_not_the_first_recorded_ones(split_run):
    """Inputs given to describe are recorded as read: the first recorded file moved away, the written
    result used to point at it, so report and describe on the new folder lost the set."""
    import json
    import shutil

    work = split_run / "moving"
    work.mkdir()
    for name in ("a", "b"):
        shutil.copy(split_run / f"{name}.npz", work / f"{name}.npz")
    code, _, err = run_cli("split", work / "a.npz", work / "b.npz", "--out", work / "r", "-q", "--no-report",
                           "--permutations", "19")
    assert code == 0, err
    shutil.move(work / "a.npz", work / "a_copy.npz")
    code, _, err = run_cli("describe", work / "r", work / "a_copy.npz", work / "b.npz", "--namer", "words",
                           "--judge", "embedding", "--out", work / "named", "-q", "--no-report")
    assert code == 0, err
    inputs = json.loads((work / "named" / "result.json").read_text())["inputs"]
    assert inputs["test"]["path"] == "../a_copy.npz" and inputs["reference"]["path"] == "../b.npz"
    code, _, err = run_cli("describe", work / "named", "--namer", "words", "--judge", "embedding", "-q",
                           "--no-report")
    assert code == 0, err


def test_a_demo_that_claimed_its_folder_may_run_again_on_it(tmp_path):
    """demo --trained-generator and demo --llm write sub-folders, data and summaries but no top-level
    result: a second run on the folder (after Ctrl-C it samples only what is missing) was refused as a
    folder of foreign files. They claim the folder first; another command still may not write there."""
    from promptprism.cli._output import check_out_contents, claim_whole_folder
    from promptprism.errors import OptionError

    out = tmp_path / "gen"
    out.mkdir()
    claim_whole_folder(out, "demo")
    (out / "split").mkdir()
    (out / "split" / "result.json").write_text("{}")
    (out / "summary.json").write_text("{}")
    check_out_contents(out, "demo")  # (no error)
    with pytest.raises(OptionError, match="holds the result of `promptprism demo`"):
        check_out_contents(out, "split")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "summary.json").write_text("{}")
    with pytest.raises(OptionError, match="holds files promptprism did not write"):
        check_out_contents(tmp_path / "plain", "demo")


def test_split_prints_how_many_permutations_a_stopped_test_drew(tmp_path):
    """The table's footer said '200 permutations' beside a verdict that said the test stopped after 128."""
    rng = np.random.default_rng(5)
    prompts = np.array([f"p{i // 10}" for i in range(100)])
    t = np.repeat(rng.normal(size=(10, 4)), 10, axis=0)
    for name in ("a", "b"):
        np.savez(tmp_path / f"{name}.npz", prompt_embeddings=t, output_embeddings=rng.normal(size=(100, 3)),
                 prompts=prompts)
    code, out, err = run_cli("split", tmp_path / "a.npz", tmp_path / "b.npz", "--out", tmp_path / "r",
                             "--no-report", "--aggregate", "none")
    assert code == 0, err
    import json

    drawn = json.loads((tmp_path / "r" / "result.json").read_text())["significance"]["permutations_drawn"]
    assert drawn < 200 and f"{drawn} of 200 permutations drawn (the test stopped early)" in out


def test_split_cuts_a_long_output_in_its_table(tmp_path):
    """Without a terminal the table is not wrapped: one long answer made it about 700 characters wide."""
    import json

    rng = np.random.default_rng(6)
    prompts = [f"p{i // 10}" for i in range(60)]
    t = np.repeat(rng.normal(size=(6, 4)), 10, axis=0)
    for name, shift in (("a", 2.0), ("b", 0.0)):
        z = rng.normal(size=(60, 3))
        z[:10] += shift
        np.savez(tmp_path / f"{name}.npz", prompt_embeddings=t, output_embeddings=z,
                 prompts=np.array(prompts), outputs=np.array(["word " * 150 + str(i) for i in range(60)]))
    code, out, err = run_cli("split", tmp_path / "a.npz", tmp_path / "b.npz", "--out", tmp_path / "r",
                             "--no-report", "--permutations", "19")
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) < 400 and "…" in out
    assert json.loads((tmp_path / "r" / "result.json").read_text())["modes"][0]["top_samples"][0][
        "output"].startswith("word word")
