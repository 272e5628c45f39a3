"""The real text case of issue 43 item 5: the LLM demo's recorded answers (tests/data/smollm2_qa_*.jsonl; the
test set-up answered the history questions in French) against English gold answers
(tests/data/qa_gold_answers.jsonl), gold closeness with the bundled MiniLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptprism.cli import main

pytestmark = [pytest.mark.slow]  # embeds 300 answers

DATA = Path(__file__).parent / "data"
TOPIC = {r["prompt"]: r["topic"] for r in map(json.loads, (DATA / "qa_gold_answers.jsonl").read_text(
    "utf-8").splitlines())}


@pytest.fixture(scope="module")
def split_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("qa")
    out = tmp / "s"
    common = ["--device", "cpu", "-q", "--no-report"]
    assert main(["split", str(DATA / "smollm2_qa_test.jsonl"), str(DATA / "smollm2_qa_reference.jsonl"),
                 "--out", str(out), "--cache", str(tmp / "c"), *common]) == 0
    return out


def test_the_english_answers_are_closer_to_the_gold_answers_on_the_french_modes(split_dir, capsys):
    out = split_dir
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


def test_per_topic_verdicts_restrict_each_mode_to_its_topics(split_dir, tmp_path, capsys):
    """``--facet topic``: the modes sit on history questions, so each gets one topic value, history, where
    the English answers are closer too (Holm over the modes and their topic values); an unknown column is
    one line and exit 2."""
    out = tmp_path / "f"
    assert main(["quality", str(split_dir), "--real", str(DATA / "qa_gold_answers.jsonl"), "--closeness",
                 "gold", "--facet", "topic", "--no-report", "--out", str(out)]) == 0
    record = json.loads((out / "result.json").read_text())["quality"]
    assert record["findings"] and record["tests"] == 2 * len(record["findings"])
    for entry in record["findings"]:
        assert [(f["facet"], f["value"], f["closer"]) for f in entry["facets"]] == [
            ("topic", "history", "reference")]
    assert "topic = history" in capsys.readouterr().out
    assert main(["quality", str(split_dir), "--real", str(DATA / "qa_gold_answers.jsonl"), "--closeness",
                 "gold", "--facet", "nope", "--no-report", "--out", str(tmp_path / "g")]) == 2
    assert "--facet nope" in capsys.readouterr().err


def test_per_topic_rankings_of_three_setups_put_each_deviating_setup_last_on_its_topic(tmp_path, capsys):
    """``quality --facet topic`` on a compare of the three set-ups of test_real_llm_kway.py (faithful,
    french on history, terse on chemistry): on each deviating set-up's finding, its own topic's value ranks
    it last against the gold answers (FacetRanking; Holm over every pair test of the findings, all prompts
    and the topic values)."""
    from test_real_llm_kway import TERSE_TOPIC, write_setups

    paths = write_setups(tmp_path)
    out = tmp_path / "compare"
    assert main(["compare", *(str(p) for p in paths.values()), "--out", str(out), "--cache",
                 str(tmp_path / "cache"), "--device", "cpu", "--permutations", "200", "-q",
                 "--no-report"]) == 0
    assert main(["quality", str(out), "--real", str(DATA / "qa_gold_answers.jsonl"), "--closeness", "gold",
                 "--facet", "topic"]) == 0
    record = json.loads((out / "result.json").read_text())["quality"]
    cells = {(e["id"], f["value"]): {r["name"]: r["rank"] for r in f["ranking"]["rows"]}
             for e in record["findings"] for f in e["facets"]}
    print({k: v for k, v in cells.items()})
    assert cells[("french vs rest", "history")]["french"] == 3
    assert cells[("terse vs rest", TERSE_TOPIC)]["terse"] == 3
    assert record["tests"] == 3 * (len(record["findings"]) + 1 + len(cells))
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "french vs rest: closer" in html  # the facet panel's verdict column
    assert "topic = history" in capsys.readouterr().out
