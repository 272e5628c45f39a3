"""Text CompCon: the attribute loop over language-model answers, through the same pipeline as images.

A scripted local endpoint plays two language models (A answers history prompts in French), the namer and the
judge (:mod:`compcon_text_fakes`; a PROTOCOL test: scripted answers). The held-out check's statistics are
tested on the pure function: false-acceptance rate under the null over many simulated runs (calibration) and
power on a planted attribute.
"""

from __future__ import annotations

import json
import math
import types

import numpy as np
import pytest

from compcon_fakes import ScriptedServer
from compcon_text_fakes import BANK, HISTORY_PROMPTS, is_history, script
from promptprism import load_result
from promptprism.cli import main
from promptprism.errors import InputError, OptionError
from promptprism.methods.compcon import ChatClient, CompCon
from promptprism.methods.compcon.modality import TextModality
from promptprism.methods.compcon.pipeline import held_out_check
from promptprism.methods.compcon.text_sources import AnswerTable, ChatAnswers
from promptprism.methods.compcon.verify import sign_test
from promptprism.methods.naming import ChatJudge


def _client(server, model, cache=None, **kw):
    return ChatClient(server.base_url, model, api_key_env=None, timeout=5, retries=0, cache_dir=cache, **kw)


def _fit(server, seed=0, cache=None, iterations=2, bank=BANK):
    est = CompCon(llm=_client(server, "llm", cache), modality=TextModality(
        judge=ChatJudge(_client(server, "judge", cache))), n_discovery_prompts=10, iterations=iterations,
                  n_generated=10, seed=seed)
    a = ChatAnswers(_client(server, "model-a", cache, temperature=0.7), seed=seed)
    b = ChatAnswers(_client(server, "model-b", cache, temperature=0.7), seed=seed)
    return est.fit(a, b, bank)


def _by_name(result):
    return {a["attribute"]: a for a in result.attributes}


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_french_answers_found_verified_and_described():
    with ScriptedServer(script(french=True)) as server:
        result = _fit(server)
    attrs = _by_name(result)
    french = attrs["answers in French"]
    assert result.modality == "text" and result.config["modality"] == "text"
    assert french["rank"] == 1
    assert set(french["diverging_prompts"]) == set(HISTORY_PROMPTS)
    held = french["held_out"]
    assert held["verified"] and held["b_only"] == 0 and held["a_only"] >= 5 and held["p_adjusted"] < 0.05
    # the held-out prompts are those discovery never saw
    seen = {d["prompt"] for d in result.discovery}
    assert held["n_prompts"] == len(BANK) - len(seen)
    assert not attrs["mentions a number"]["held_out"]["verified"]
    # described and scored on new prompts answered by both models: the history half diverges
    best = result.descriptions[0]["best"]
    assert result.descriptions[0]["attribute"] == "answers in French" and best["score"] == pytest.approx(0.5)
    it = result.descriptions[0]["iterations"][0]
    assert it["diverging"] == [is_history(p) for p in it["generated_prompts"]]
    assert result.models["verifier"]["judge"] == "chat" and result.calibration["null"] == "answers of model B"


@pytest.mark.slow  # (about a second or more: out of the quick loop)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_distribution_pair_verifies_nothing(seed):
    """A namer that proposes attributes anyway ("answers in French", "mentions a number"): neither holds on
    held-out prompts when A and B answer alike."""
    with ScriptedServer(script(french=False)) as server:
        result = _fit(server, seed=seed, iterations=1)
    assert {a["attribute"] for a in result.attributes} == {"answers in French", "mentions a number"}
    assert not any(a["held_out"]["verified"] for a in result.attributes)
    assert _by_name(result)["answers in French"]["held_out"]["a_only"] == 0


@pytest.mark.slow  # two whole CompCon fits (~1.5 s quiet); the cache alone: test_compcon_protocol
def test_second_run_makes_no_calls(tmp_path):
    with ScriptedServer(script()) as server:
        first = _fit(server, cache=tmp_path / "cache")
        n = len(server.requests)
        again = _fit(server, cache=tmp_path / "cache")
        assert len(server.requests) == n and n > 0
    assert again.attributes == first.attributes and again.descriptions == first.descriptions


def test_answers_per_prompt_differ_by_seed_and_are_stable():
    with ScriptedServer(script()) as server:
        src = ChatAnswers(_client(server, "model-a"), answers_per_prompt=3, seed=4,
                          system_prompt="Answer briefly.")
        got = src.samples("How do I bake bread?")
        seeds = [r["seed"] for r in server.requests]
        assert len(got) == 3 and len(set(seeds)) == 3
        assert server.requests[0]["messages"][0] == {"role": "system", "content": "Answer briefly."}
        assert src.samples("How do I bake bread?") == got and len(server.requests) == 3


# ------------------------------------------------------------------------------- the held-out statistics
def _held_out(sim_a, sim_b, per_prompt, test_rows, n, judge_like=True, alpha=0.05):
    groups = np.repeat(np.arange(n), per_prompt)
    modality = types.SimpleNamespace(thresholds=(
        (lambda null, q: np.full(null.shape[1], 0.5)) if judge_like
        else (lambda null, q: np.quantile(null, q, axis=0))))
    est = types.SimpleNamespace(null="reference", quantile=0.95, min_fraction=0.5, alpha=alpha,
                                modality=modality)
    return held_out_check(est, (sim_a, groups), (sim_b, groups), test_rows, n)


def test_sign_test_matches_the_binomial_tail():
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 0) == pytest.approx(0.5 ** 5)
    assert sign_test(7, 3) == pytest.approx(sum(math.comb(10, k) for k in range(7, 11)) / 2 ** 10)
    with pytest.raises(InputError):
        sign_test(-1, 2)


@pytest.mark.parametrize("judge_like", [True, False])
def test_held_out_check_calibration_under_the_null(judge_like):
    """A and B exchangeable on every prompt (a judge's coin flips, or continuous scores with the quantile
    threshold calibrated on the other prompts): verified in at most about alpha of 400 simulated runs."""
    rng = np.random.default_rng(7)
    runs, n, k, per = 400, 40, 3, 2
    false = 0
    for _ in range(runs):
        if judge_like:
            sim_a = (rng.random((n * per, k)) < 0.3).astype(float)
            sim_b = (rng.random((n * per, k)) < 0.3).astype(float)
        else:
            sim_a, sim_b = rng.normal(size=(n * per, k)), rng.normal(size=(n * per, k))
        rows = _held_out(sim_a, sim_b, per, np.arange(10, n), n, judge_like)
        false += any(r["verified"] for r in rows)
    rate = false / runs
    assert rate <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs), rate


def test_held_out_check_power_on_a_planted_attribute():
    """A shows attribute 0 on a quarter of the prompts (B never): verified in nearly every run; attribute 1
    (no difference) rarely."""
    rng = np.random.default_rng(3)
    n, per, hits, other = 60, 1, 0, 0
    for _ in range(100):
        planted = rng.random(n) < 0.25
        sim_a = np.column_stack([planted.astype(float), rng.random(n) < 0.3]).astype(float)
        sim_b = np.column_stack([np.zeros(n), rng.random(n) < 0.3]).astype(float)
        rows = _held_out(sim_a, sim_b, per, np.arange(15, n), n)
        hits += rows[0]["verified"]
        other += rows[1]["verified"]
    assert hits >= 95 and other <= 10


# --------------------------------------------------------------------------------------- the command line
def _table(path, prompts, answer):
    path.write_text("".join(json.dumps({"prompt": p, "answer": answer(p)}) + "\n" for p in prompts))
    return path


def _cli(tmp_path, server_url, *extra, a="chat:model-a", b="chat:model-b"):
    bank = tmp_path / "bank.txt"
    bank.write_text("\n".join(BANK) + "\n")
    return ["compcon", a, b, "--text", "--prompt-bank", str(bank), "--out", str(tmp_path / "out"),
            "--base-url", server_url, "--model", "llm", "--judge-model", "judge", "--api-key-env", "",
            "--timeout", "2", "--retries", "0", "--iterations", "1", "--generated-prompts", "6", "-q", *extra]


@pytest.mark.slow
def test_cli_text_mode_writes_result_and_report(tmp_path, capsys):
    with ScriptedServer(script()) as server:
        assert main(_cli(tmp_path, server.base_url, "--chat-cache", str(tmp_path / "c"))) == 0
        n = len(server.requests)
        assert main(_cli(tmp_path, server.base_url, "--chat-cache", str(tmp_path / "c"))) == 0
        assert len(server.requests) == n  # everything cached: the re-run asks nothing
    result = load_result(tmp_path / "out")
    assert result.modality == "text" and result.attributes[0]["attribute"] == "answers in French"
    assert result.attributes[0]["held_out"]["verified"]
    assert result.models["A"]["type"] == "chat" and result.models["A"]["client"]["model"] == "model-a"
    page = (tmp_path / "out" / "report.html").read_text()
    assert "answers in French" in page and "Voici la réponse" in page


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_cli_answer_tables(tmp_path):
    a = _table(tmp_path / "a.jsonl", BANK, lambda p: "Voici la réponse en français." if is_history(p)
               else f"Here is how: {p}")
    b = _table(tmp_path / "b.jsonl", BANK, lambda p: f"Here is how: {p}")
    with ScriptedServer(script()) as server:
        assert main(_cli(tmp_path, server.base_url, a=str(a), b=str(b))) == 0
        assert not server.stage_requests("answer")  # the tables answer; no model is asked to
    result = load_result(tmp_path / "out")
    top = result.attributes[0]
    assert top["attribute"] == "answers in French" and top["held_out"]["verified"]
    assert result.descriptions[0]["scored"] is False  # tables cannot answer new prompts


@pytest.mark.parametrize("answer", ["", "Model B contains:\n* nothing",
                                    "I " + "really " * 20 + "cannot tell."])
def test_cli_malformed_namer_exit_2(tmp_path, capsys, answer):
    """Empty, no "Model A contains:" list and no short sentence either: re-asked, then one line, exit 2."""
    with ScriptedServer(script(namer=lambda text: answer)) as server:
        assert main(_cli(tmp_path, server.base_url, "--discovery-prompts", "2")) == 2
    err = capsys.readouterr().err
    assert "malformed" in err and len(err.strip().splitlines()) == 1
    assert len(server.stage_requests("reask-attributes")) == 2 * 2  # 2 prompts, 2 re-asks each
    assert not (tmp_path / "out" / "result.json").exists()


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_short_sentence_from_a_small_namer_is_a_candidate_and_is_checked():
    """A namer that cannot keep the list format but answers one short sentence: that sentence is the
    candidate (as in the naming module), and the held-out check decides (the judge says no: not kept)."""
    with ScriptedServer(script(namer=lambda text: "The answers are longer. Also more.")) as server:
        result = _fit(server, iterations=1)
    assert [a["attribute"] for a in result.attributes] == ["The answers are longer"]
    assert not result.attributes[0]["held_out"]["verified"]


def test_cli_unreachable_endpoint_exit_2(tmp_path, capsys):
    from test_cli_compcon import closed_port

    url = f"http://127.0.0.1:{closed_port()}/v1"
    assert main(_cli(tmp_path, url)) == 2
    err = capsys.readouterr().err
    assert "unreachable" in err and url in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("rows, expected", [
    ('{"prompt": "q", "answer": ""}\n', "empty or missing 'answer'"),
    ('{"prompt": "q"}\n', "needs a 'prompt' column"),
    ('{"question": "q", "answer": "a"}\n', "needs a 'prompt' column"),
])
def test_bad_answer_tables(tmp_path, rows, expected):
    path = tmp_path / "a.jsonl"
    path.write_text(rows)
    with pytest.raises(InputError, match=expected):
        AnswerTable.load(path)


def test_cli_bad_text_options_exit_2(tmp_path, capsys):
    bank = tmp_path / "bank.txt"
    bank.write_text("q\n")
    common = ["--prompt-bank", str(bank), "--out", str(tmp_path / "o"), "-q"]
    assert main(["compcon", "a/", "b/", "--system-a", "be French", *common]) == 2
    assert "--system-a applies to text models: add --text" in capsys.readouterr().err
    for given in (["--judge", "embedding"], ["--samples", "3"], ["--max-tokens", "64"]):  # ignored on images
        assert main(["compcon", "a/", "b/", *given, *common]) == 2
        assert f"{given[0]} applies to text models: add --text" in capsys.readouterr().err
    table = _table(tmp_path / "t.jsonl", ["q"], lambda p: "x")
    assert main(["compcon", str(table), "chat:", "--text", *common]) == 2
    assert "names no model" in capsys.readouterr().err
    assert main(["compcon", str(table), str(table), "--text", "--system-a", "x", *common]) == 2
    assert "--system-a applies to a chat model" in capsys.readouterr().err
    assert main(["compcon", str(table), str(table), "--text", "--samples", "0", *common]) == 2
    assert "--samples" in capsys.readouterr().err
    for flag in ("--models-base-url", "--judge-base-url", "--base-url"):  # the bad URL's own flag
        assert main(["compcon", "chat:m", str(table), "--text", flag, "localhost:8080", *common]) == 2
        err = capsys.readouterr().err
        assert f"{flag} must look like http(s)://" in err and len(err.strip().splitlines()) == 1


def test_modality_needs_one_verifier():
    with pytest.raises(OptionError, match="exactly one"):
        TextModality()
    with pytest.raises(OptionError, match="CLIP embedder"):
        CompCon(llm=None)


def _french_encoder(texts):
    """A stand-in text encoder: one axis for French (or the word French), one shared axis."""
    return np.array([[1.0 if ("français" in t or "French" in t) else 0.0, 1.0] for t in texts])


def test_text_encoder_route_uses_the_quantile_rule():
    """--judge embedding: cos(answer, attribute) against the quantile of B's, as CLIP for images."""
    with ScriptedServer(script(french=True)) as server:
        est = CompCon(llm=_client(server, "llm"), modality=TextModality(encode=_french_encoder, name="fake"),
                      n_discovery_prompts=10, iterations=1, n_generated=10, seed=0)
        result = est.fit(ChatAnswers(_client(server, "model-a")), ChatAnswers(_client(server, "model-b")),
                         BANK)
        assert not server.stage_requests("yes-no")  # no judge calls
    french = _by_name(result)["answers in French"]
    assert french["threshold"] == pytest.approx(np.sqrt(0.5)) and french["held_out"]["verified"]
    assert set(french["diverging_prompts"]) == set(HISTORY_PROMPTS)
    assert result.models["verifier"] == {"text_encoder": "fake"}
    assert result.calibration["has_attribute"] == "cos(answer, attribute) > threshold"


def test_no_held_out_prompts_no_verified_attribute():
    """A bank no larger than the discovery sample leaves nothing to check on: said, nothing verified."""
    with ScriptedServer(script(french=True)) as server:
        result = _fit(server, iterations=1, bank=HISTORY_PROMPTS[:4] + BANK[-4:])
    for a in result.attributes:
        assert a["held_out"]["n_prompts"] == 0 and not a["held_out"]["verified"]
        assert a["held_out"]["note"] == "no held-out prompts"


def test_cli_answer_table_missing_prompts_named(tmp_path, capsys):
    """Prompts of the bank a table has no answer for: named before any request, exit 2 (or skipped)."""
    from test_cli_compcon import closed_port

    a = _table(tmp_path / "a.jsonl", BANK, lambda p: "x")
    b = _table(tmp_path / "b.jsonl", BANK[:-2], lambda p: "y")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    assert main(_cli(tmp_path, url, a=str(a), b=str(b))) == 2
    err = capsys.readouterr().err
    assert f"model B has no answers for 2 of the {len(BANK)} prompts" in err and "--skip-missing" in err


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_cli_text_from_split_checks_on_the_mode_prompts_discovery_did_not_see(tmp_path):
    """--from-split with --text: discovery samples the mode's prompts; the held-out check runs on the rest of
    them."""
    from test_cli_compcon import _split_result

    seeds = HISTORY_PROMPTS[:12]
    _split_result(tmp_path / "split", seeds)
    with ScriptedServer(script()) as server:
        assert main(_cli(tmp_path, server.base_url, "--from-split", str(tmp_path / "split"),
                         "--discovery-prompts", "3")) == 0
    r = load_result(tmp_path / "out")
    assert r.seeded_from["prompts"] == seeds and {d["prompt"] for d in r.discovery} <= set(seeds)
    held = _by_name(r)["answers in French"]["held_out"]
    assert held["n_prompts"] == 9 and held["a_only"] == 9 and held["verified"]
