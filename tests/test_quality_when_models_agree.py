"""`quality` on a result whose models agree (no significant finding) is a result, not bad input: exit 0
with a note, as `split` and `describe` do; on a compare result the models are still ranked over every
prompt they share with the real data (the ranking docs/quality.md says is always given)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _cli_run import run_cli


def _write(path, seed, prompts=10, per_prompt=8):
    """A set drawn around fixed per-prompt centres (every set of this helper: one distribution)."""
    rng = np.random.default_rng(seed)
    prompt_centres = np.random.default_rng(123).normal(size=(prompts, 3)) * 3
    output_centres = np.random.default_rng(456).normal(size=(prompts, 4)) * 3
    rows = np.repeat(np.arange(prompts), per_prompt)
    outputs = output_centres[rows] + rng.normal(size=(rows.size, 4)) * 0.5
    np.savez(path, prompt_embeddings=prompt_centres[rows].astype(np.float32),
             output_embeddings=outputs.astype(np.float32),
             prompts=np.array([f"prompt {p}" for p in rows]))
    return str(path)


@pytest.mark.slow
def test_no_significant_finding_exits_0_and_a_compare_result_is_still_ranked(tmp_path):
    a, b, c, real = (_write(tmp_path / f"{n}.npz", s) for n, s in (("A", 5), ("B", 2), ("C", 3), ("R", 4)))
    code, _, err = run_cli("split", a, b, "--out", str(tmp_path / "ab"), "-q", "--no-report")
    assert code == 0, err
    code, out, err = run_cli("quality", str(tmp_path / "ab"), "--real", real, "--no-report")
    assert code == 0 and "no significant finding" in err and "no verdict per finding" in err, err
    record = json.loads((tmp_path / "ab" / "result.json").read_text())["quality"]
    assert record["findings"] == []

    code, _, err = run_cli("compare", a, b, c, "--out", str(tmp_path / "abc"), "-q", "--no-report")
    assert code == 0, err
    code, out, err = run_cli("quality", str(tmp_path / "abc"), "--real", real, "--no-report")
    assert code == 0 and "still ranked" in err, err
    overall = json.loads((tmp_path / "abc" / "result.json").read_text())["quality"]["overall"]
    assert overall["prompts"] == 10 and overall["verdict"] in out
