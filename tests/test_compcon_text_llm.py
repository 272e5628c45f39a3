"""Text CompCon with a real language model, offline: the packaged SmolLM2-135M-Instruct as discovery model,
describer and judge, on its own recorded answers (tests/data/smollm2_qa_*.jsonl) read as answer tables.

On a same-distribution pair (the plain set-up on both sides: the test set-up's non-history answers and the
reference's are two independent draws of it) whatever the model proposes must not pass the held-out check;
its answers are parsed or recorded as failures, never a crash. What the model manages on the French pair is
measured by benchmarks/compcon_text_llm.py (docs/compcon.md), not asserted here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptprism.errors import PromptPrismError
from promptprism.generate import local_llm_server, server_available

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(server_available() is not None, reason=str(server_available()))]

DATA = Path(__file__).parent / "data"


def _table(tmp_path: Path, name: str, prompts: list[str]) -> Path:
    rows = [json.loads(x) for x in (DATA / f"smollm2_qa_{name}.jsonl").read_text().splitlines()]
    keep = set(prompts)
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"prompt": r["prompt"], "answer": r["output"]}) + "\n"
                            for r in rows if r["prompt"] in keep))
    return path


def test_same_distribution_pair_with_smollm2_verifies_nothing(tmp_path):
    from promptprism.methods.compcon import AnswerTable, ChatClient, CompCon, TextModality
    from promptprism.methods.naming import ChatJudge

    rows = [json.loads(x) for x in (DATA / "smollm2_qa_test.jsonl").read_text().splitlines()]
    prompts = [r["prompt"] for r in rows if r["topic"] != "history"][::8]  # 10 plain-set-up questions
    a = AnswerTable.load(_table(tmp_path, "test", prompts), name="test (plain part)")
    b = AnswerTable.load(_table(tmp_path, "reference", prompts), name="reference")
    with local_llm_server() as server:
        def client(tokens: int) -> ChatClient:
            return ChatClient(server.base_url, server.model, api_key_env=None, timeout=300, retries=1,
                              max_tokens=tokens)

        est = CompCon(llm=client(120), modality=TextModality(judge=ChatJudge(client(4))),
                      n_discovery_prompts=4, iterations=1, reasks=1, seed=0)
        try:
            result = est.fit(a, b, prompts)
        except PromptPrismError as exc:  # no readable attribute at all: one clear error, not a crash
            assert "attribute discovery" in str(exc)
            print("no attribute:", exc)
            return
    for d in result.discovery:  # parsed, or recorded with the model's actual answers
        if d["error"] is not None:
            fail = next(f for f in result.failures if f.get("prompt") == d["prompt"])
            assert fail["answers"] and all(isinstance(x, str) for x in fail["answers"])
    assert all(a["held_out"]["n_prompts"] == len(prompts) - 4 for a in result.attributes)
    assert not any(a["held_out"]["verified"] for a in result.attributes), result.attributes
    print("proposed:", [a["attribute"] for a in result.attributes])
