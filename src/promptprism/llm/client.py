"""An OpenAI-compatible chat client (over httpx, :mod:`.transport`), for the LLM and VLM steps.

``POST {base_url}/chat/completions`` with ``{"model", "messages", ...}``; the answer is
``choices[0].message.content``. Works with any server that speaks that protocol (hosted APIs, vLLM, llama.cpp,
Ollama's OpenAI endpoint...). The API key is read from an environment variable whose *name* is configured
(never stored, never part of the cache key).

* a deadline per request (``timeout`` bounds the whole request, connection, headers and body together: a
  server that trickles its answer byte by byte is cut off at the deadline, not only when it pauses);
  a malformed HTTP answer, one that is not JSON or a non-numeric ``usage`` is one :class:`EndpointError`
  naming the endpoint;
* retries on connection errors, timeouts, bodies cut short, HTTP 408/409/429 and 5xx, with exponential
  backoff ``backoff * 2**attempt`` (capped) plus a jitter drawn from a seeded ``random.Random``;
* an on-disk response cache: ``cache_dir/<sha256 of the canonical request JSON>.json``
  (:func:`~promptprism.io.content_hash`), written atomically, so a re-run with the same requests costs
  nothing and gives the same answers.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import OptionError
from ..io import atomic_write_text, content_hash
from .transport import EndpointError, Transient, post

#: the longest ``timeout`` a request may have, in seconds (one day): a deadline is a timer, and a longer one
#: (``inf``, ``1e308``) cannot be set at all
MAX_TIMEOUT = 86_400.0
#: the most retries of one request (each waits up to ``max_backoff`` seconds first)
MAX_RETRIES = 100
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def request_key(url: str, payload: dict) -> str:
    """sha256 of the canonical JSON of the endpoint URL and the request body (the API key is not in it)."""
    return content_hash({"url": url, "payload": payload})


def check_base_url(url: str, name: str = "base URL") -> str:
    """``url`` when it looks like an endpoint's base URL (``http(s)://host...``); else an
    :class:`OptionError` naming ``name`` (a CLI passes its flag)."""
    try:
        parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
        port_ok = parts is not None and (parts.port is None or parts.port > 0)
    except ValueError:
        parts, port_ok = None, False
    if not parts or parts.scheme.lower() not in ("http", "https") or not parts.hostname or not port_ok:
        raise OptionError(f"{name} must look like http(s)://host[:port]/v1, got {url!r}")
    return url


@dataclass
class ChatClient:
    """OpenAI-compatible ``/chat/completions`` client.

    Parameters
    ----------
    base_url : e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8000/v1``.
    model : the model name sent in each request.
    api_key_env : name of the environment variable holding the key; unset or empty means no
        ``Authorization`` header (local servers).
    timeout : seconds per request. retries : extra attempts after the first on transient failures.
    backoff, max_backoff : delay before retry k is ``min(max_backoff, backoff * 2**k) + U(0, backoff)``.
    seed : seeds the jitter. cache_dir : response cache folder (None: no cache).
    temperature, max_tokens : sent when not None.
    """

    base_url: str
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout: float = 120.0
    retries: int = 3
    backoff: float = 1.0
    max_backoff: float = 30.0
    seed: int = 0
    cache_dir: str | os.PathLike | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    n_requests: int = field(default=0, init=False)  #: HTTP requests actually sent
    n_cache_hits: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        check_base_url(self.base_url)
        if not self.model:
            raise OptionError("a model name is needed for the chat endpoint")
        if not (isinstance(self.timeout, (int, float)) and 0 < self.timeout <= MAX_TIMEOUT):
            raise OptionError(f"timeout must be > 0 and at most {MAX_TIMEOUT:,.0f} seconds (one day), got "
                              f"{self.timeout!r}", parameter="timeout")
        whole = isinstance(self.retries, (int, float)) and math.isfinite(self.retries) and \
            int(self.retries) == self.retries
        if isinstance(self.retries, bool) or not whole or not 0 <= self.retries <= MAX_RETRIES:
            raise OptionError(f"retries must be an integer from 0 to {MAX_RETRIES}, got {self.retries!r}",
                              parameter="retries")
        self.base_url = self.base_url.rstrip("/")
        self._rng = random.Random(self.seed)

    @property
    def url(self) -> str:
        """The endpoint's ``/chat/completions`` URL."""
        return f"{self.base_url}/chat/completions"

    def describe(self) -> dict:
        """What goes into result.json about this client (no key)."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "api_key_env": self.api_key_env,
            "timeout": self.timeout,
            "retries": self.retries,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def payload(self, messages: list[dict], params: dict | None = None) -> dict:
        """The request body: model, messages, the client's sampling options, then ``params`` (e.g. seed)."""
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(params or {})
        return body

    # ------------------------------------------------------------------------------------------ the call
    def chat(self, messages: list[dict]) -> str:
        """Send one chat request (or read it from the cache) and return the assistant's text."""
        return self.complete(messages)[0]

    def complete(self, messages: list[dict], params: dict | None = None) -> tuple[str, dict]:
        """Like :meth:`chat`, with extra request fields (``seed``...); returns (text, the answer's ``usage``,
        empty for a cache hit)."""
        body = self.payload(messages, params)
        key = request_key(self.url, body)
        cached = self._cache_get(key)
        if cached is not None:
            self.n_cache_hits += 1
            return cached, {}
        data = self._post_with_retries(body)
        text = _content(data, self.url)
        self._cache_put(key, body, text)
        usage = data.get("usage") if isinstance(data, dict) else None
        return text, _usage(usage, self.url)

    def complete_logprobs(self, messages: list[dict], *, top_logprobs: int = 20,
                          params: dict | None = None) -> tuple[str, list[dict]]:
        """The answer's text and OpenAI's ``choices[0].logprobs.content`` (per generated token: ``token``,
        ``logprob`` and its ``top_logprobs`` alternatives), both cached; a server that sends no
        log-probabilities is an :class:`EndpointError`."""
        body = self.payload(messages, {"logprobs": True, "top_logprobs": top_logprobs, **(params or {})})
        key = request_key(self.url, body)
        record = self._cache_record(key)
        if record is not None and isinstance(record.get("logprobs"), list):
            self.n_cache_hits += 1
            return record["content"], record["logprobs"]
        data = self._post_with_retries(body)
        text = _content(data, self.url)
        try:
            content = data["choices"][0]["logprobs"]["content"]
            if not isinstance(content, list):
                raise TypeError
        except (KeyError, IndexError, TypeError):
            raise EndpointError(f"chat endpoint {self.url} answered without choices[0].logprobs.content "
                                "(it does not return log-probabilities)") from None
        self._cache_put(key, body, text, logprobs=content)
        return text, content

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if key and not (key.isascii() and key.isprintable()):
            raise OptionError(f"the API key in ${self.api_key_env} holds characters an HTTP header cannot "
                              "carry (non-ASCII or control characters)", parameter="api_key_env")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _post_with_retries(self, body: dict) -> dict:
        raw = json.dumps(body).encode("utf-8")
        headers = self._headers()
        attempts = int(self.retries) + 1
        last = ""
        for attempt in range(attempts):
            if attempt:
                delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1)) + self._rng.uniform(
                    0, self.backoff
                )
                self.sleep(delay)
            self.n_requests += 1
            try:
                status, payload = post(self.url, raw, headers, self.timeout)
            except Transient as exc:
                last = str(exc)
                continue
            if status >= 400:
                detail = _error_detail(payload)
                if status in RETRY_STATUS:
                    last = f"HTTP {status}{detail}"
                    continue
                hint = " (check the key in $" + str(self.api_key_env) + ")" if status in (401, 403) else ""
                raise EndpointError(f"chat endpoint {self.url} answered HTTP {status}{detail}{hint}")
            try:
                return json.loads(payload.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise EndpointError(
                    f"chat endpoint {self.url} did not answer with JSON (first bytes: {payload[:80]!r})"
                ) from None
        state = "unreachable" if last.startswith(("cannot connect", "connection failed")) else "failed"
        raise EndpointError(
            f"chat endpoint {self.url} {state}: {last} "
            f"(after {attempts} attempt{'s' if attempts > 1 else ''})"
        )

    # ----------------------------------------------------------------------------------------- the cache
    def _cache_path(self, key: str) -> Path | None:
        return None if self.cache_dir is None else Path(self.cache_dir) / key[:2] / f"{key}.json"

    def _cache_get(self, key: str) -> str | None:
        record = self._cache_record(key)
        return None if record is None else record["content"]

    def _cache_record(self, key: str) -> dict | None:
        path = self._cache_path(key)
        if path is None or not path.exists():
            return None
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            return record if isinstance(record["content"], str) else None
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a damaged entry is a miss; it is rewritten after the request

    def _cache_put(self, key: str, body: dict, text: str, **extra: Any) -> None:
        path = self._cache_path(key)
        if path is None:
            return
        record = {"model": body["model"], "url": self.url, "content": text, "created": time.time(), **extra}
        atomic_write_text(path, json.dumps(record, ensure_ascii=False))


def _content(data: Any, url: str) -> str:
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise EndpointError(
            f"chat endpoint {url} answered without choices[0].message.content (got {json.dumps(data)[:200]})"
        ) from None
    if isinstance(content, list):  # some servers answer with content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        raise EndpointError(f"chat endpoint {url} answered with non-text content {content!r:.80}")
    return content


def _usage(usage: Any, url: str) -> dict:
    """The answer's ``usage`` with its token counts checked: numbers (or absent), else an error."""
    if not isinstance(usage, dict):
        return {}
    for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = usage.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not 0 <= value < 2**53):
            raise EndpointError(f"chat endpoint {url} answered a usage.{name} that is not a count: "
                                f"{value!r:.40}")
    return usage


def _error_detail(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    return f": {text[:200]}" if text else ""
