"""The real text case of issue 43 item 5: the LLM demo's recorded answers (tests/data/smollm2_qa_*.jsonl; the
test set-up answered the history questions in French) against English gold answers
(tests/data/qa_gold_answers.jsonl), gold closeness with the bundled MiniLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptprism.cli import main

pytestmark = pytest.mark.slow  # embeds 300 answers

DATA = Path(__file__).parent / "data"
TOPIC = {r["prompt"]: r["topic"] for r in map(json.loads, (DATA / "qa_gold_answers.jsonl").read_text(
    "utf-8").splitlines())}


def test_the_english_answers_are_closer_to_the_gold_answers_on_the_french_modes(tmp_path, capsys):
    out = tmp_path / "s"
    common = ["--device", "cpu", "-q", "--no-report"]
    assert main(["split", str(DATA / "smollm2_qa_test.jsonl"), str(DATA / "smollm2_qa_reference.jsonl"),
                 "--out", str(out), "--cache", str(tmp_path / "c"), *common]) == 0
    assert main(["quality", str(out), "--real", str(DATA / "qa_gold_answers.jsonl"), "--closeness", "gold",
                 "--no-report"]) == 0
    record = json.loads((out / "result.json").read_text())["quality"]
    print([(e["id"], {n: round(m["mean"], 3) for n, m in e["models"].items()}, e["p_adjusted"])
           for e in record["findings"]])
    assert record["findings"]
    for entry in record["findings"]:
        assert entry["closer"] == "reference" and entry["p_adjusted"] <= 0.01
        assert entry["models"]["reference"]["mean"] > entry["models"]["test"]["mean"] + 0.3
        assert all(TOPIC[p] == "history" for p in entry["example_prompts"])
    assert "reference is closer to real data" in capsys.readouterr().out
