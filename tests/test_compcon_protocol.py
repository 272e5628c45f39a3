"""CompCon PROTOCOL tests: the whole loop against a local HTTP server (127.0.0.1, started here) that speaks
the
OpenAI chat-completions protocol and returns SCRIPTED answers. They test the client (requests, data URLs,
retries, timeouts, cache), the parsing of the paper's answer formats, re-asks on malformed answers, the
C.2 sampling and C.3 early stopping. They are not model tests: no real language model is involved.
"""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
from PIL import Image

from compcon_fakes import (
    ATTRIBUTES_ANSWER,
    BANK_PROMPTS,
    EMPTY_ATTRIBUTES_ANSWER,
    FakeClip,
    ScriptedServer,
    description_answer,
    is_sad,
    model_a,
    model_b,
    prompt_list,
)
from promptprism import CallableGenerator, ChatClient, CompCon, CompConResult, EndpointError, load_result
from promptprism.methods.compcon import EmptyAttributesError, MalformedAnswerError
from promptprism.methods.compcon.clients import request_key


def _client(server, **kw):
    kw.setdefault("timeout", 5.0)
    kw.setdefault("retries", 2)
    kw.setdefault("sleep", lambda s: None)
    return ChatClient(base_url=server.base_url, model=kw.pop("model", "scripted"), api_key_env=None, **kw)


def _estimator(server, **kw):
    cfg = dict(n_discovery_prompts=4, batch_size=3, n_generated=25, iterations=3, seed=7)
    cfg.update(kw)
    return CompCon(llm=_client(server), embedder=FakeClip(), **cfg)


def _models():
    return CallableGenerator(model_a, name="A"), CallableGenerator(model_b, name="B")


def good_script(sad_per_iteration=(5, 15, 10)):
    def respond(body, stage, n):
        if stage == "attributes":
            return ATTRIBUTES_ANSWER
        if stage == "describe":
            return description_answer(f"tag{n}")
        if stage == "generate":
            k = sad_per_iteration[min(n, len(sad_per_iteration) - 1)]
            return prompt_list(k, tag=f"it{n}")
        return "?"

    return respond


# ------------------------------------------------------------------------------------------ whole loop
def test_whole_loop_with_good_answers(tmp_path):
    with ScriptedServer(good_script()) as server:
        result = _estimator(server).fit(*_models(), BANK_PROMPTS)
    # attribute discovery: one grid request per sampled prompt, each with a PNG data URL (A row over B row)
    disc = server.stage_requests("attributes")
    assert len(disc) == 4
    parts = disc[0]["messages"][0]["content"]
    assert parts[0]["type"] == "text" and "Model a contains:" in parts[0]["text"]
    url = parts[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    grid = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert grid.format == "PNG" and grid.height > grid.width / 5  # two rows of five tiles
    # verification: the attribute A's sad-prompt images have, and only those prompts diverge
    top = result.attributes[0]
    assert top["attribute"] == "Blue rain tint"
    assert set(top["diverging_prompts"]) == {p for p in BANK_PROMPTS if is_sad(p)}
    assert top["n_prompts"] == len(BANK_PROMPTS)
    assert result.attributes[1]["attribute"] == "neon lights" and result.attributes[1]["n_diverging"] == 0
    # descriptions: the paper's answer formats parsed, scores = fraction of generated prompts that diverge
    d = result.descriptions[0]
    assert [it["score"] for it in d["iterations"]] == [0.2, 0.6, 0.4]
    assert d["iterations"][1]["key_concepts"] == ["tag1", "loneliness", "solitude"]
    assert d["best"]["iteration"] == 1 and d["best"]["score"] == 0.6
    assert d["n_iterations"] == 3 and not d["stopped_early"]
    # the generation request continues the description conversation (same chat session, C.1)
    gen = server.stage_requests("generate")[0]["messages"]
    assert [m["role"] for m in gen] == ["user", "assistant", "user"]
    assert "25 text-2-image prompts" in gen[2]["content"] and '"Blue rain tint"' in gen[2]["content"]
    # round trip through result.json
    result.save(tmp_path)
    again = load_result(tmp_path)
    assert isinstance(again, CompConResult) and again == result
    assert json.loads((tmp_path / "result.json").read_text())["seed"] == 7


def test_sampling_prefers_previous_iteration_then_fills_from_bank():
    with ScriptedServer(good_script((5, 15, 10))) as server:
        result = _estimator(server, batch_size=3).fit(*_models(), BANK_PROMPTS)
    its = result.descriptions[0]["iterations"]
    diverging_bank = set(result.attributes[0]["diverging_prompts"])
    # iteration 0: random bank prompts only, B per side
    assert set(its[0]["sampled_diverging"]) <= diverging_bank and len(its[0]["sampled_diverging"]) == 3
    assert not set(its[0]["sampled_non_diverging"]) & diverging_bank
    # iteration 1: generated diverging prompts of iteration 0 (5 > B: 3 of them), none from the bank
    prev_div = [p for p, f in zip(its[0]["generated_prompts"], its[0]["diverging"], strict=True) if f]
    assert len(prev_div) == 5 and set(its[1]["sampled_diverging"]) <= set(prev_div)
    assert len(its[1]["sampled_diverging"]) == 3
    # the described prompts are in the request the LLM saw
    text = server.stage_requests("describe")[1]["messages"][0]["content"]
    assert all(p in text for p in its[1]["sampled_diverging"] + its[1]["sampled_non_diverging"])


def test_sampling_fills_up_with_bank_prompts_when_previous_iteration_has_few():
    with ScriptedServer(good_script((1, 1, 1))) as server:
        result = _estimator(server, batch_size=3, iterations=2, early_stop_iterations=5).fit(
            *_models(), BANK_PROMPTS
        )
    its = result.descriptions[0]["iterations"]
    prev = [p for p, f in zip(its[0]["generated_prompts"], its[0]["diverging"], strict=True) if f]
    assert len(prev) == 1
    s = its[1]["sampled_diverging"]
    assert s[0] == prev[0] and len(s) == 3 and set(s[1:]) <= set(result.attributes[0]["diverging_prompts"])


def test_same_seed_same_draws_other_seed_other_draws():
    runs = []
    for seed in (7, 7, 8):
        with ScriptedServer(good_script()) as server:
            r = _estimator(server, seed=seed).fit(*_models(), BANK_PROMPTS)
        runs.append(
            ([d["prompt"] for d in r.discovery], r.descriptions[0]["iterations"][0]["sampled_diverging"])
        )
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


# -------------------------------------------------------------------------------------- early stopping
def test_early_stopping_after_five_iterations_without_progress():
    with ScriptedServer(good_script((0,))) as server:  # no generated prompt ever diverges
        result = _estimator(server, iterations=10).fit(*_models(), BANK_PROMPTS)
    d = result.descriptions[0]
    assert d["n_iterations"] == 5 and d["stopped_early"]
    assert "early stop" in d["stop_reason"]
    assert len(server.stage_requests("describe")) == 5


def test_no_early_stop_once_a_score_passes_the_bar():
    # 3 of 25 = 0.12 > 0.1 at iteration 0, then nothing: the job keeps running to the end
    with ScriptedServer(good_script((3, 0))) as server:
        result = _estimator(server, iterations=7).fit(*_models(), BANK_PROMPTS)
    d = result.descriptions[0]
    assert d["n_iterations"] == 7 and not d["stopped_early"]
    assert d["best"]["iteration"] == 0 and d["best"]["score"] == pytest.approx(0.12)


# -------------------------------------------------------------------------------------- malformed answers
def test_malformed_description_is_reasked_then_parsed():
    def respond(body, stage, n):
        if stage == "attributes":
            return ATTRIBUTES_ANSWER
        if stage == "describe":
            return "I think the prompts are sad."  # no Description:/Key Concepts:
        if stage == "reask":
            return description_answer("grief")
        if stage == "generate":
            return prompt_list(10)
        return "?"

    with ScriptedServer(respond) as server:
        result = _estimator(server, iterations=1).fit(*_models(), BANK_PROMPTS)
    it = result.descriptions[0]["iterations"][0]
    assert it["error"] is None and it["key_concepts"][0] == "grief" and it["score"] == 0.4
    reask = server.stage_requests("reask")[0]["messages"]
    assert reask[1] == {"role": "assistant", "content": "I think the prompts are sad."}
    assert "Description:" in reask[2]["content"] or "could not be read" in reask[2]["content"]
    assert result.failures == []


def test_malformed_attribute_answer_is_reasked():
    def respond(body, stage, n):
        if stage == "attributes":
            return "Model A has more blue."  # no "Model A contains:" list
        if stage == "reask-attributes":
            return ATTRIBUTES_ANSWER
        if stage == "describe":
            return description_answer()
        return prompt_list(5)

    with ScriptedServer(respond) as server:
        result = _estimator(server, iterations=1).fit(*_models(), BANK_PROMPTS)
    assert all(d["attributes"] == ["Blue rain tint", "neon lights"] for d in result.discovery)
    assert all(d["n_answers"] == 2 for d in result.discovery)


def test_always_malformed_description_is_reported_not_crashed():
    def respond(body, stage, n):
        return ATTRIBUTES_ANSWER if stage == "attributes" else "no idea"

    with ScriptedServer(respond) as server:
        result = _estimator(server, iterations=2, reasks=1).fit(*_models(), BANK_PROMPTS)
    d = result.descriptions[0]
    assert d["best"] is None and d["n_iterations"] == 2
    assert all("unreadable format" in it["error"] for it in d["iterations"])
    assert len(result.failures) == 2 and result.failures[0]["answers"] == ["no idea", "no idea"]
    assert len(server.stage_requests("describe")) == 2 and len(server.stage_requests("reask")) == 2


def test_always_malformed_attributes_raise_a_clear_error():
    with ScriptedServer(lambda body, stage, n: "Sorry, I cannot see images.") as server:
        with pytest.raises(MalformedAnswerError, match="Model A contains"):
            _estimator(server, reasks=1).fit(*_models(), BANK_PROMPTS)


def test_empty_attribute_list_raises():
    with ScriptedServer(lambda body, stage, n: EMPTY_ATTRIBUTES_ANSWER) as server:
        with pytest.raises(EmptyAttributesError, match="no attribute"):
            _estimator(server).fit(*_models(), BANK_PROMPTS)


# ------------------------------------------------------------------------------- transport: the client
@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_timeout_then_retry_succeeds():
    def respond(body, stage, n):
        return (1.5, "late") if n == 0 else "on time"

    delays = []
    with ScriptedServer(respond) as server:
        client = _client(server, timeout=0.5, retries=2, sleep=delays.append)
        assert client.chat([{"role": "user", "content": "hi"}]) == "on time"
    assert client.n_requests == 2 and len(delays) == 1


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_slow_answer_beyond_timeout_gives_endpoint_error_naming_url():
    with ScriptedServer(lambda body, stage, n: (1.5, "late")) as server:
        client = _client(server, timeout=0.3, retries=1)
        with pytest.raises(EndpointError) as err:
            client.chat([{"role": "user", "content": "hi"}])
    assert server.base_url + "/chat/completions" in str(err.value) and "timeout" in str(err.value)
    assert client.n_requests == 2


def test_server_errors_are_retried_with_seeded_exponential_backoff():
    def respond(body, stage, n):
        return (503, "busy") if n < 3 else "ok"

    def run(seed):
        delays = []
        with ScriptedServer(respond) as server:
            client = _client(server, retries=3, backoff=0.5, seed=seed, sleep=delays.append)
            assert client.chat([{"role": "user", "content": "x"}]) == "ok"
        return delays

    d1, d2 = run(1), run(1)
    assert d1 == d2 and len(d1) == 3
    for k, d in enumerate(d1):  # base 0.5 * 2^k plus jitter in [0, 0.5)
        assert 0.5 * 2**k <= d < 0.5 * 2**k + 0.5
    assert run(2) != d1


def test_client_errors_are_not_retried():
    with ScriptedServer(lambda body, stage, n: (401, "bad key")) as server:
        client = _client(server, retries=3)
        with pytest.raises(EndpointError, match="HTTP 401"):
            client.chat([{"role": "user", "content": "x"}])
    assert client.n_requests == 1


def test_response_cache_and_api_key(tmp_path, monkeypatch):
    monkeypatch.setenv("PP_TEST_KEY", "sekrit")
    with ScriptedServer(lambda body, stage, n: f"answer {n}") as server:
        client = ChatClient(
            base_url=server.base_url,
            model="m",
            api_key_env="PP_TEST_KEY",
            cache_dir=tmp_path,
            sleep=lambda s: None,
        )
        msgs = [{"role": "user", "content": "same question"}]
        assert client.chat(msgs) == "answer 0"
        assert client.chat(msgs) == "answer 0"  # from the cache
        assert client.chat([{"role": "user", "content": "other"}]) == "answer 1"
        assert server.headers[0]["Authorization"] == "Bearer sekrit"
    assert client.n_requests == 2 and client.n_cache_hits == 1
    key = request_key(client.url, client.payload(msgs))
    entry = tmp_path / key[:2] / f"{key}.json"
    assert entry.exists() and "sekrit" not in entry.read_text()
    assert not list(tmp_path.rglob("*.tmp"))
    assert len(key) == 64 and int(key, 16) >= 0


def test_unreachable_endpoint_names_url():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    client = ChatClient(
        base_url=f"http://127.0.0.1:{port}/v1",
        model="m",
        api_key_env=None,
        retries=1,
        timeout=0.5,
        sleep=lambda s: None,
    )
    with pytest.raises(EndpointError, match=f"http://127.0.0.1:{port}/v1/chat/completions unreachable"):
        client.chat([{"role": "user", "content": "x"}])


# ----------------------------------------------------------------------------------------- seeded mode
def test_seed_prompts_are_the_diverging_set():
    seeds = ["a sad harbour at dusk", "a lonely tree on a hill", "a busy office"]
    with ScriptedServer(good_script()) as server:
        result = _estimator(server, n_discovery_prompts=10, iterations=1).fit(
            *_models(), BANK_PROMPTS, seed_prompts=seeds, seeded_from={"mode": 1}
        )
    assert {d["prompt"] for d in result.discovery} == set(seeds)  # discovery only looks at the seeds
    assert result.descriptions[0]["diverging_set"] == seeds
    assert result.attributes[0]["n_prompts"] == 3 and result.attributes[0]["n_diverging"] == 2
    assert result.seeded_from == {"mode": 1}
    text = server.stage_requests("describe")[0]["messages"][0]["content"]
    assert "a busy office" in text.split("non-diverging prompts")[0]


def test_fixed_banks_give_one_unscored_description(tmp_path):
    from compcon_fakes import write_bank
    from promptprism import ImageBank

    dirs, _ = write_bank(tmp_path, BANK_PROMPTS)
    a, b = ImageBank.load(dirs["A"], "A"), ImageBank.load(dirs["B"], "B")
    with ScriptedServer(good_script()) as server:
        result = _estimator(server).fit(a, b, BANK_PROMPTS)
    d = result.descriptions[0]
    assert d["n_iterations"] == 1 and not d["scored"] and d["best"]["score"] is None
    assert d["best"]["description"].startswith("Diverging prompts describe")
    assert "cannot be answered" in d["stop_reason"]
    assert np.isclose(result.attributes[0]["score"], 5 / 12)


def test_non_json_and_missing_content_are_endpoint_errors():
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            data = b"<html>proxy error</html>" if self.path.startswith("/html") else b'{"choices": []}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        port = httpd.server_address[1]
        for path, match in (("/html/v1", "did not answer with JSON"), ("/v1", "without choices")):
            client = ChatClient(base_url=f"http://127.0.0.1:{port}{path}", model="m", api_key_env=None)
            with pytest.raises(EndpointError, match=match):
                client.chat([{"role": "user", "content": "x"}])
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_embedding_in_chunks_changes_nothing(monkeypatch):
    from promptprism.methods.compcon import pipeline

    results = []
    for chunk in (64, 7):
        monkeypatch.setattr(pipeline, "EMBED_CHUNK", chunk)
        with ScriptedServer(good_script()) as server:
            results.append(_estimator(server, iterations=1).fit(*_models(), BANK_PROMPTS))
    assert results[0].attributes == results[1].attributes
    assert results[0].descriptions == results[1].descriptions
