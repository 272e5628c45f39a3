"""``promptprism compare``: K sets in, result.json + report.html out; bad input is one line and exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _cli_run import run_cli
from promptprism.results import load_result


def _npz(path, *, seed, n=24, d=4, shift=0.0, prompts=None, dim_out=None):
    rng = np.random.default_rng(seed)
    names = prompts or [f"prompt {i % 4}" for i in range(n)]
    t = np.stack([np.eye(d)[int(p.split()[-1]) % d] for p in names])
    o = t + 0.3 * rng.standard_normal((len(names), d))
    o[:, 0] += shift
    np.savez(path, prompt_embeddings=t, output_embeddings=o[:, : dim_out or d], prompts=np.array(names))
    return path


def test_compare_writes_a_kway_result_and_report(tmp_path):
    files = [_npz(tmp_path / f"m{i}.npz", seed=i, shift=2.0 if i == 1 else 0.0) for i in range(3)]
    out = tmp_path / "out"
    code, stdout, err = run_cli("compare", *files, "--out", out, "--permutations", "39", "--modes", "2",
                                "--json", "-q")
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["kind"] == "promptsplit_kway" and summary["names"] == ["m0", "m1", "m2"]
    result = load_result(out / "result.json")
    assert len(result.pairs) == 3 and len(result.one_vs_rest) == 3
    assert result.config["permutations"] == 39 and result.seed == 0
    page = (out / "report.html").read_text()
    assert "K-way PromptSplit" in page and "Each model against the rest" in page
    code, stdout, _ = run_cli("compare", *files, "--out", tmp_path / "again", "--permutations", "0",
                              "--no-report")
    assert code == 0 and "m1" in stdout and "no significance test" in stdout


@pytest.mark.parametrize("case, message", [
    ("one", "at least 2 sets"),
    ("duplicate", "hold the same pairs"),
    ("dims", "dimensions"),
    ("prompts", "lacks 'prompt 3'"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, case, message):
    a = _npz(tmp_path / "a.npz", seed=0)
    b = _npz(tmp_path / "b.npz", seed=1)
    files = {"one": [a], "duplicate": [a, b, a],
             "dims": [a, _npz(tmp_path / "c.npz", seed=2, dim_out=3)],
             "prompts": [a, b, _npz(tmp_path / "d.npz", seed=3,
                                    prompts=[f"prompt {i % 3}" for i in range(24)])]}
    code, _, err = run_cli("compare", *files[case], "--out", tmp_path / "out", "--permutations", "0")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], err
    assert not (tmp_path / "out" / "result.json").exists()


def test_pair_details_flag_reaches_the_result(tmp_path):
    files = [_npz(tmp_path / f"m{i}.npz", seed=i) for i in range(3)]
    for value, every in (("leading", False), ("all", True)):
        out = tmp_path / value
        code, _, err = run_cli("compare", *files, "--out", out, "--permutations", "0", "--modes", "3",
                               "--pair-details", value, "--no-report", "-q")
        assert code == 0, err
        result = load_result(out / "result.json")
        assert result.config["pair_details"] == value
        listed = [bool(m.top_samples) for c in result.pairs for m in c.modes]
        assert all(listed) is every and any(listed)
    code, _, err = run_cli("compare", *files, "--out", tmp_path / "bad", "--pair-details", "some")
    assert code == 2 and "--pair-details" in err and len(err.strip().splitlines()) == 1, err
