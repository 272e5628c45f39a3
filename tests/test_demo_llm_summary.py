"""The LLM demo's closing lines, with the model's recorded answers standing in for a live run: when no mode
is significant (a few questions answered once), a line that says why no topic is ranked instead of an empty
list (the ranked topics of a live run: tests/test_real_llm.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _cli_run import run_cli
from promptprism.demos import llm
from promptprism.generate.run import GenerateResult

DATA = Path(__file__).parent / "data"


def _recorded(out, *, prompts, samples, **_):
    """generate_qa from tests/data/smollm2_qa_*.jsonl: the plan's questions, their recorded answers."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    for setup in llm.SETUPS:
        wanted = {r.prompt for r in prompts[setup]}
        rows = [json.loads(x) for x in (DATA / f"smollm2_qa_{setup}.jsonl").read_text().splitlines()]
        kept = [r for r in rows if r["prompt"] in wanted]
        path = out / f"{setup}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in kept))
        results[setup] = GenerateResult(path, len(kept), len(kept), 0, 2.0, stats={"completion_tokens": 100})
    return results


@pytest.mark.slow
def test_with_no_significant_mode_the_demo_says_why_no_topic_is_ranked(tmp_path, monkeypatch):
    """Two questions per topic answered once: no mode is significant, so PromptSplit ranks no prompt; the
    line said "topics by share of the disagreement (PromptSplit): " and nothing more."""
    monkeypatch.setattr(llm, "generate_qa", _recorded)
    code, out, err = run_cli("demo", "--llm", "--questions", "2", "--samples", "1",
                             "--out", str(tmp_path / "demo"), "--no-report")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("topics by share"))
    assert line.endswith("none ranked (none: no mode is significant; with more questions or samples the "
                         "test has more power)"), line
    assert "(200 answer tokens, 50.0 tokens/s)" in out, out
