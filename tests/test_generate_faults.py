"""A chat endpoint that misbehaves (loopback only) and dask addresses that are not schedulers: one line each.

Every fault of tests/_fault_server.py through ``generate``: exit 2, one error line naming the endpoint and
the row, nothing written. A body trickled for ever is cut at the whole-request deadline (run in a subprocess
with a far larger limit, so a missing deadline fails the test instead of hanging it).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from _fault_server import FAULTS, FaultServer
from promptprism.cli import main

BROKEN = [f for f in FAULTS if f != "ok"]


@pytest.fixture(scope="module")
def server():
    with FaultServer() as srv:
        yield srv


def _prompts(tmp_path: Path) -> Path:
    p = tmp_path / "p.txt"
    p.write_text("hello\nworld\n", encoding="utf-8")
    return p


def _generate(prompts, out, url, *extra):
    return ["generate", str(prompts), "--out", str(out), "--base-url", url, "--model", "m", "--retries", "0",
            "--timeout", "2", "-q", *extra]


@pytest.mark.parametrize("fault", BROKEN)
def test_every_endpoint_fault_is_one_line_naming_endpoint_and_row(server, tmp_path, capsys, fault):
    out = tmp_path / "m.jsonl"
    code = main(_generate(_prompts(tmp_path), out, server.url(fault)))
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert server.url(fault) in lines[0] and "prompt id 1" in lines[0]
    assert not out.exists()


def test_a_good_endpoint_still_works(server, tmp_path, capsys):
    out = tmp_path / "m.jsonl"
    assert main(_generate(_prompts(tmp_path), out, server.url("ok"))) == 0
    assert len(out.read_text().splitlines()) == 2


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["trickle", "silent"])
def test_a_trickled_or_silent_answer_is_cut_at_the_deadline(server, tmp_path, fault):
    done = subprocess.run([sys.executable, "-m", "promptprism",
                           *_generate(_prompts(tmp_path), tmp_path / "m.jsonl", server.url(fault))],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert done.returncode == 2, done.stderr
    assert "no complete answer within 2 s (timeout)" in done.stderr and server.url(fault) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------- --scheduler
@pytest.fixture(scope="module")
def npz(tmp_path_factory):
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("sched") / "a.npz"
    np.savez(path, prompt_embeddings=rng.standard_normal((20, 4)),
             output_embeddings=rng.standard_normal((20, 4)),
             prompts=np.array([f"p{i % 4}" for i in range(20)]))
    return path


def _listener(answer: bytes | None):
    """A TCP port that says ``answer`` on connect (None: says nothing; b"": hangs up at once), as a program
    other than a dask scheduler would."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    held = []

    def serve():
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            held.append(conn)
            if answer is not None:
                conn.sendall(answer)
                if not answer:
                    conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return sock


@pytest.mark.parametrize("address, message", [
    ("bogus", "no host and port"),
    ("[::1", "not an address"),
    ("tls://", "no host and port"),
    ("inproc://", "inproc:// address exists only inside one process"),
    ("ftp://127.0.0.1:21", "the protocol 'ftp' is not one of"),
    ("tcp://127.0.0.1:notaport", "not an address"),
])
def test_scheduler_addresses_that_are_not_addresses(npz, tmp_path, capsys, address, message):
    code = main(["split", str(npz), str(npz), "-q", "--no-report", "--out", str(tmp_path / "o"),
                 "--scheduler", address])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.startswith("error: --scheduler")
    assert len(err.splitlines()) == 1


@pytest.mark.slow  # (about a second or more: out of the quick loop)
@pytest.mark.parametrize("answer, message", [(None, "nothing answered on port"),
                                             (b"SSH-2.0-OpenSSH_9.6\r\n", "not with a dask handshake"),
                                             (b"", "closed the connection without a dask handshake")])
def test_a_port_that_is_not_a_dask_scheduler(npz, tmp_path, capsys, monkeypatch, answer, message):
    from promptprism.scale import runner

    monkeypatch.setattr(runner, "CONNECT_SECONDS", 1.0)
    sock = _listener(answer)
    try:
        code = main(["split", str(npz), str(npz), "-q", "--no-report", "--out", str(tmp_path / "o"),
                     "--scheduler", f"tcp://127.0.0.1:{sock.getsockname()[1]}"])
    finally:
        sock.close()
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.splitlines()) == 1, err
