"""Test doubles for CompCon: a local chat server with scripted answers, fake image models and a fake CLIP.

PROTOCOL TESTS ONLY: the server speaks the OpenAI chat-completions protocol on 127.0.0.1 and answers from a
script; nothing here says anything about how a real language or vision-language model behaves.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from PIL import Image

SAD_WORDS = ("sad", "lonely", "melancholy", "gloomy", "grief")


# ---------------------------------------------------------------------------------------- the chat server
def stage_of(body: dict) -> str:
    """Which CompCon step a request belongs to, from the first user message (the paper's prompts)."""
    first = body["messages"][0]["content"]
    text = first if isinstance(first, str) else first[0]["text"]
    last = body["messages"][-1]["content"]
    last_text = last if isinstance(last, str) else last[0]["text"]
    if "Model A are displayed in the top row" in text or "Two language models, A and B" in text:
        return "reask-attributes" if "could not be read" in last_text else "attributes"
    if text.startswith("Statement: "):
        return "yes-no"
    if body["model"] in ("model-a", "model-b"):
        return "answer"
    if "I would like to generate" in last_text:
        return "generate"
    if "could not be read" in last_text:
        return "reask"
    if "Here are the diverging prompts" in text:
        return "describe"
    if "rate on a scale of 1-3" in text:
        return "judge"
    return "other"


class ScriptedServer:
    """``respond(body, stage, n) -> str | (status, text) | (delay_s, text) | {"content", "logprobs"}`` (a
    dict: the choice's ``message.content`` and ``logprobs``); n counts requests per stage."""

    def __init__(self, respond: Callable[[dict, str, int], object]) -> None:
        self.respond = respond
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # silence
                pass

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                stage = stage_of(body)
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    n = server.counts.get(stage, 0)
                    server.counts[stage] = n + 1
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": "not found"})
                    return
                answer = server.respond(body, stage, n)
                status, delay = 200, 0.0
                if isinstance(answer, tuple):
                    first, answer = answer
                    if isinstance(first, float):
                        delay = first
                    else:
                        status = first
                if delay:
                    time.sleep(delay)
                if status != 200:
                    self._send(status, {"error": {"message": str(answer)}})
                    return
                logprobs = None
                if isinstance(answer, dict):
                    answer, logprobs = answer["content"], answer.get("logprobs")
                self._send(
                    200,
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": answer},
                                "finish_reason": "stop",
                                **({"logprobs": logprobs} if logprobs is not None else {}),
                            }
                        ],
                    },
                )

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def stage_requests(self, stage: str) -> list[dict]:
        return [r for r in self.requests if stage_of(r) == stage]


# ------------------------------------------------------------------------------------------ the answers
ATTRIBUTES_ANSWER = """Looking at the grid, here is what I see.

**Model A contains:**

* **Blue rain tint**
* neon lights

Model B contains:

* gray overcast
"""

EMPTY_ATTRIBUTES_ANSWER = "Model A contains:\n\nModel B contains:\n\n* nothing different\n"


def description_answer(tag: str = "sadness") -> str:
    return (
        f"Thought Process: the diverging prompts talk about {tag}.\n\n"
        f"Description: Diverging prompts describe {tag} and solitude.\n\n"
        f'Key Concepts: [{tag}, "loneliness", solitude]'
    )


def prompt_list(n_sad: int, n_total: int = 25, tag: str = "") -> str:
    lines = []
    for i in range(n_total):
        mood = "lonely" if i < n_sad else "bright"
        lines.append(f"{i + 1}. A {mood} lighthouse number {i} {tag}".rstrip())
    return "Here are the prompts:\n" + "\n".join(lines)


# ------------------------------------------------------------------------------------ fake models / CLIP
def _rng_for(*parts) -> np.random.Generator:
    h = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def is_sad(prompt: str) -> bool:
    low = prompt.lower()
    return any(w in low for w in SAD_WORDS)


def make_image(prompt: str, model: str, index: int, blue: bool) -> Image.Image:
    rng = _rng_for(prompt, model, index)
    # gray: 6 shades (3 levels x 2 blue offsets), so the calibrated threshold (a quantile of B's similarities)
    # is the top shade's value and no gray image ever exceeds it: the truth is exact, not up to chance
    g = int(rng.choice([110, 130, 150]))
    color = (20, 30, 220) if blue else (g, g, g - int(rng.choice([0, 5])))
    return Image.new("RGB", (16, 16), color)


def model_a(prompt: str) -> list[Image.Image]:
    """Model A: blue ('rain') images for sad prompts, gray otherwise; 5 images per prompt."""
    return [make_image(prompt, "A", i, is_sad(prompt)) for i in range(5)]


def model_b(prompt: str) -> list[Image.Image]:
    """Model B: always gray."""
    return [make_image(prompt, "B", i, False) for i in range(5)]


TEXT_DIRECTIONS = {"blue rain tint": [0.0, 0.0, 1.0], "neon lights": [1.0, 0.0, 0.0]}


class FakeClip:
    """Images -> mean RGB + 0.05; texts -> a fixed direction (unknown: hashed)."""

    name = "fake-clip"

    def embed_images(self, images):
        out = []
        for im in images:
            v = np.asarray(im, dtype=np.float64).reshape(-1, 3).mean(axis=0) / 255.0
            out.append(v + 0.05)
        return np.array(out).reshape(len(images), 3)

    def embed_texts(self, texts):
        out = []
        for t in texts:
            if t.lower() in TEXT_DIRECTIONS:
                out.append(TEXT_DIRECTIONS[t.lower()])
            else:
                out.append(_rng_for("text", t).normal(size=3))
        return np.array(out, dtype=np.float64).reshape(len(texts), 3)


def write_bank(root, prompts, models=("A", "B"), missing=None):
    """Image folders with manifest.jsonl for each model; ``missing``: {model: [prompts without images]}."""
    from pathlib import Path

    root = Path(root)
    missing = missing or {}
    gens = {"A": model_a, "B": model_b}
    dirs = {}
    for m in models:
        d = root / m
        d.mkdir(parents=True)
        rows = []
        for j, p in enumerate(prompts):
            if p in missing.get(m, []):
                continue
            for i, im in enumerate(gens[m](p)):
                name = f"p{j}_{i}.png"
                im.save(d / name)
                rows.append(json.dumps({"prompt": p, "image": name}))
        (d / "manifest.jsonl").write_text("\n".join(rows) + "\n")
        dirs[m] = d
    bank = root / "prompts.txt"
    bank.write_text("\n".join(prompts) + "\n")
    return dirs, bank


BANK_PROMPTS = [
    "a sad harbour at dusk",
    "a lonely tree on a hill",
    "a melancholy piano room",
    "a gloomy train station",
    "a happy dog in a park",
    "a bright market street",
    "a cheerful kitchen",
    "a sunny beach with kites",
    "a busy office",
    "a colourful parrot",
    "a grief stricken statue",
    "a birthday party",
]
