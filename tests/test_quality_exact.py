"""Exact match against short gold answers (issue 43 item 2, the offline reference-answer column):
``closeness='exact'`` scores an answer 1 when it equals a gold answer of its prompt, case, white space and
surrounding punctuation aside; planted signs on two families."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.data import PairedSet
from promptprism.errors import InputError
from promptprism.methods.metrics import FindingQuality
from promptprism.methods.metrics.findings import exact_scores, normalise_answer

GOLD = {f"family {f} question {q}": f"answer {f}{q}" for f in (1, 2) for q in range(6)}


def answers(name: str, wrong_family: int, seed: int, per_prompt: int = 8) -> PairedSet:
    """Each question answered ``per_prompt`` times: its gold answer, reformatted at random (case, spaces, a
    final full stop), except on ``wrong_family`` where two answers in three are another question's."""
    rng = np.random.default_rng(seed)
    prompts = [p for p in GOLD for _ in range(per_prompt)]
    outputs = []
    for p in prompts:
        text = GOLD[p]
        if p.startswith(f"family {wrong_family} ") and rng.random() < 2 / 3:
            text = "answer 99"
        outputs.append(rng.choice([text, text.upper() + ".", f"  {text} "]))
    n = len(prompts)
    return PairedSet(np.zeros((n, 2)), rng.normal(size=(n, 3)), prompts=prompts, outputs=outputs, name=name)


def test_normalised_exact_match_is_the_definition():
    assert normalise_answer("  The  Answer. ") == "the answer" and normalise_answer('"Au"') == "au"
    got = exact_scores(["AU.", "gold", "x"], ["q1", "q1", "q2"], ["au", "Gold!"], ["q1", "q3"])
    assert got[0] == 1.0 and got[1] == 0.0 and np.isnan(got[2])  # 'gold' is q3's answer; q2 has none


def test_each_model_is_closer_to_the_gold_answers_where_the_other_is_wrong():
    gold = PairedSet(np.zeros((12, 2)), np.zeros((12, 3)), prompts=list(GOLD), outputs=list(GOLD.values()),
                     name="gold answers")
    a, b = answers("A", 1, 0), answers("B", 2, 1)
    findings = [{"id": f"family {f}", "prompts": [p for p in GOLD if p.startswith(f"family {f} ")]}
                for f in (1, 2)]
    record = FindingQuality(closeness="exact", permutations=999, bootstrap=100).fit(
        findings, {"A": a, "B": b}, gold)
    by = {e["id"]: e for e in record["findings"]}
    assert by["family 1"]["closer"] == "B" and by["family 2"]["closer"] == "A"
    assert by["family 1"]["models"]["B"]["mean"] == 1.0 and by["family 1"]["models"]["A"]["mean"] < 0.6
    no_text = PairedSet(a.prompt_embeddings, a.output_embeddings, prompts=a.prompts, name="A")
    with pytest.raises(InputError, match="no output texts"):
        FindingQuality(closeness="exact").fit(findings, {"A": no_text, "B": b}, gold)
