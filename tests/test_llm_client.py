"""The chat client layer (``promptprism.llm``) over httpx: the cache key is the old one byte for byte, each
transport fault is classified as before (retried or not, the same words), the whole-request deadline cuts a
trickled answer, compressed answers are read, and bad base URLs and API keys are refused where they enter."""

from __future__ import annotations

import copy
import gzip
import hashlib
import http.server
import json
import pickle
import threading
import time

import pytest

from _fault_server import ANSWER, FaultServer
from promptprism.errors import OptionError
from promptprism.llm import ChatClient, EndpointError, check_base_url, request_key

MSGS = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def server():
    with FaultServer() as srv:
        yield srv


def _client(url: str, **kw) -> ChatClient:
    return ChatClient(base_url=url, model="m", api_key_env=None, sleep=lambda s: None, **kw)


# ---------------------------------------------------------------------------------------------- the cache key
def test_request_key_is_the_canonical_json_sha256_of_before():
    """Existing caches stay valid: the key is sha256 of the sorted, compact, non-ASCII-kept JSON."""
    url = "http://127.0.0.1:8000/v1/chat/completions"
    payload = {"model": "m", "messages": [{"role": "user", "content": "Grüße, 世界 \"q\"\n"}],
               "temperature": 0.7, "seed": 3}
    canon = json.dumps({"url": url, "payload": payload}, sort_keys=True, separators=(",", ":"),
                       ensure_ascii=False)
    assert request_key(url, payload) == hashlib.sha256(canon.encode("utf-8")).hexdigest()
    # the value the urllib client computed for this request (a change of either side fails here)
    assert request_key(url, payload) == "4e439be704fb0a59aba7cb6e357a3d769469c3f10d98354400f7b7ff40dcef80"
    reordered = dict(reversed(list(payload.items())))
    assert request_key(url, reordered) == request_key(url, payload)
    assert request_key(url, dict(payload, seed=4)) != request_key(url, payload)


def test_the_old_import_path_is_the_same_client():
    from promptprism import ChatClient as top
    from promptprism.methods.compcon import ChatClient as compcon
    from promptprism.methods.compcon.clients import ChatClient as old

    assert old is compcon is top is ChatClient


# ------------------------------------------------------------------------------------------- the transport
def test_a_good_answer_and_its_usage(server):
    client = _client(server.url("ok"))
    assert client.complete(MSGS) == ("an answer", ANSWER["usage"])


@pytest.mark.parametrize("fault, words", [("truncated", "answer cut short (20 bytes read)"),
                                          ("http-500", "HTTP 500: {\"error\": \"overloaded\"}"),
                                          ("hang-up", "unreachable: connection failed")])
def test_transient_faults_are_retried_then_named(server, fault, words):
    before = server.hits.get(fault, 0)
    client = _client(server.url(fault), retries=2)
    with pytest.raises(EndpointError) as err:
        client.chat(MSGS)
    message = str(err.value)
    assert words in message and server.url(fault) + "/chat/completions" in message
    assert "(after 3 attempts)" in message
    assert client.n_requests == 3 and server.hits[fault] - before == 3


@pytest.mark.parametrize("fault, words", [("bad-status", "malformed HTTP response"),
                                          ("garbage", "malformed HTTP response"),
                                          ("not-json", "did not answer with JSON"),
                                          ("http-401", "answered HTTP 401: {\"error\": \"no key\"}")])
def test_permanent_faults_are_not_retried(server, fault, words):
    before = server.hits.get(fault, 0)
    client = _client(server.url(fault), retries=3)
    with pytest.raises(EndpointError) as err:
        client.chat(MSGS)
    assert words in str(err.value) and server.url(fault) in str(err.value)
    assert client.n_requests == 1 and server.hits[fault] - before == 1


def test_a_trickled_answer_is_cut_at_the_whole_request_deadline(server):
    """The server sends a byte every 0.05 s for ever: no read ever times out, the deadline must cut it."""
    client = _client(server.url("trickle"), timeout=0.5, retries=0)
    outcome = []

    def call():
        try:
            client.chat(MSGS)
        except EndpointError as exc:
            outcome.append(str(exc))

    start = time.monotonic()
    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    caller.join(10)  # (a missing deadline fails here instead of hanging the test)
    assert not caller.is_alive() and time.monotonic() - start < 2.0
    assert outcome and "failed: no complete answer within 0.5 s (timeout)" in outcome[0]


def test_a_compressed_answer_is_read():
    """httpx asks for compressed answers and decodes them (urllib did neither)."""
    seen = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen["accept-encoding"] = self.headers.get("Accept-Encoding", "")
            data = gzip.compress(json.dumps(ANSWER).encode())
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        client = _client(f"http://127.0.0.1:{httpd.server_address[1]}/v1")
        assert client.chat(MSGS) == "an answer"
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert "gzip" in seen["accept-encoding"]


def test_a_used_client_pickles_and_copies(server):
    client = ChatClient(base_url=server.url("ok"), model="m", api_key_env=None)
    assert client.chat(MSGS) == "an answer"
    for twin in (pickle.loads(pickle.dumps(client)), copy.deepcopy(client)):
        assert twin.chat(MSGS) == "an answer" and twin.n_requests == 2


# ------------------------------------------------------------------------------------ refused where it enters
@pytest.mark.parametrize("url", ["ftp://host/v1", "http://", "http:///v1", "http://host:0/v1",
                                 "http://host:port/v1", "http://[::1/v1", "not a url", "", "file:///tmp/x"])
def test_base_urls_that_are_not_http_endpoints_are_refused(url):
    with pytest.raises(OptionError, match="must look like http"):
        check_base_url(url)
    with pytest.raises(OptionError):
        ChatClient(base_url=url, model="m")


@pytest.mark.parametrize("url", ["https://api.openai.com/v1", "http://127.0.0.1:8000/v1", "HTTP://[::1]:80/v1/",
                                 "http://localhost/"])
def test_endpoint_base_urls_pass(url):
    assert check_base_url(url) == url


def test_an_api_key_a_header_cannot_carry_is_refused_without_showing_it(server, monkeypatch):
    monkeypatch.setenv("PP_BAD_KEY", "sek\nrit")
    client = ChatClient(base_url=server.url("ok"), model="m", api_key_env="PP_BAD_KEY")
    with pytest.raises(OptionError, match=r"\$PP_BAD_KEY") as err:
        client.chat(MSGS)
    assert "sek" not in str(err.value) and client.n_requests == 0
