"""K-way PromptSplit on real model outputs: three set-ups of SmolLM2-135M-Instruct on the same 100 questions.

Built from the recorded answers in tests/data/smollm2_qa_*.jsonl (live generation runs at ~22 tokens/s here):

* ``faithful``: the reference recording (the plain set-up: one answer per question);
* ``french``: the test recording (an independent draw of the plain set-up, except that the history questions
  were asked with "Always answer in French");
* ``terse``: derived, not generated: the faithful answers with every chemistry answer cut to the last word
  of its first sentence ('The chemical symbol for gold is Au.' -> 'Au.'), the other 80 answers the
  faithful ones unchanged (the same draws). (A first-sentence cut alone barely moves MiniLM's embedding of
  these answers, which already open with the fact: measured, no significant mode.)

Embedded with the bundled MiniLM. K-way PromptSplit must attribute the history prompts to ``french`` and the
chemistry prompts to ``terse``, and no prompt of either topic to ``faithful``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from promptprism.cli import main

pytestmark = pytest.mark.slow  # embeds 300 answers

DATA = Path(__file__).parent / "data"
TERSE_TOPIC = "chemistry"


def terse(answer: str) -> str:
    """The last word of an answer's first sentence (the derived 'terse' set-up): the bare fact."""
    first = re.split(r"(?<=[.!?])\s|\n", answer.strip(), maxsplit=1)[0]
    return first.split()[-1] if first.split() else first


def write_setups(folder: Path) -> dict[str, Path]:
    """The three set-ups as JSONL manifests in ``folder`` (prompt, output, topic)."""
    rows = {s: [json.loads(x) for x in (DATA / f"smollm2_qa_{s}.jsonl").read_text("utf-8").splitlines()]
            for s in ("test", "reference")}
    setups = {"faithful": rows["reference"], "french": rows["test"],
              "terse": [dict(r, output=terse(r["output"])) if r["topic"] == TERSE_TOPIC else r
                        for r in rows["reference"]]}
    paths = {}
    for name, rs in setups.items():
        paths[name] = folder / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps({"prompt": r["prompt"], "output": r["output"],
                                                   "topic": r["topic"]}) + "\n" for r in rs), "utf-8")
    return paths


def test_each_deviation_is_attributed_to_its_setup(tmp_path, capsys):
    paths = write_setups(tmp_path)
    out = tmp_path / "compare"
    assert main(["compare", *(str(p) for p in paths.values()), "--out", str(out), "--cache",
                 str(tmp_path / "cache"), "--device", "cpu", "--permutations", "200"]) == 0
    printed = capsys.readouterr().out
    result = json.loads((out / "result.json").read_text())
    topic = {json.loads(x)["prompt"]: json.loads(x)["topic"]
             for x in paths["faithful"].read_text("utf-8").splitlines()}
    dev = {d["model"]: d for d in result["deviations"]}
    topics = {m: [topic[x["prompt"]] for x in d["attributed_prompts"]] for m, d in dev.items()}
    print(printed)
    print({m: {t: ts.count(t) for t in set(ts)} for m, ts in topics.items()})
    assert dev["french"]["deviates"] and dev["terse"]["deviates"] and not dev["faithful"]["deviates"]
    assert topics["french"][:5] == ["history"] * 5 and topics["french"].count("history") >= 8
    assert topics["terse"][:5] == [TERSE_TOPIC] * 5 and topics["terse"].count(TERSE_TOPIC) >= 8
    assert "history" not in topics["faithful"] and TERSE_TOPIC not in topics["faithful"]
    pairs = {(p["config"]["test"], p["config"]["reference"]): p for p in result["pairs"]}
    assert pairs[("faithful", "terse")]["significance"]["n_significant"] >= 1
    assert pairs[("faithful", "french")]["significance"]["n_significant"] >= 1
