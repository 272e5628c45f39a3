"""Two runs on one place, as real processes: the second is refused in one line, the first is untouched.

No test relies on timing: the first process holds its lock until the test releases it (a file it waits
for), and the test waits for the first process to say it holds the lock (a file it writes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow
WAIT = 120  # seconds a process may take to reach its gate (a safety net, never reached when things work)

GATE = '''
import os, time
from pathlib import Path

def gen(prompt, seed=0):
    import numpy as np
    here = Path(os.environ["GATE_DIR"])
    with open(here / "calls.log", "a") as fh:
        fh.write(prompt + "\\n")
    (here / "started").touch()
    for _ in range(2400):
        if (here / "release").exists():
            break
        time.sleep(0.05)
    return np.full((4, 4, 3), len(prompt), dtype=np.uint8)
'''

HOLDER = '''
import sys, time
from pathlib import Path
from promptprism.io import exclusive_lock
out, gate = Path(sys.argv[1]), Path(sys.argv[2])
with exclusive_lock(out):
    out.mkdir(exist_ok=True)
    (out / ".promptprism-staging-running").mkdir()
    (gate / "started").touch()
    while not (gate / "release").exists():
        time.sleep(0.05)
'''


def _env(gate: Path) -> dict:
    src = str(Path(__file__).resolve().parents[1] / "src")
    return dict(os.environ, GATE_DIR=str(gate), PYTHONPATH=os.pathsep.join([str(gate), src]))


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    end = time.monotonic() + WAIT
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.05)


def _cli(*argv, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "promptprism", *map(str, argv)], capture_output=True,
                          text=True, timeout=WAIT, env=env)


def test_two_generate_runs_on_one_manifest(tmp_path):
    (tmp_path / "gate_gen.py").write_text(GATE)
    prompts = tmp_path / "p.txt"
    prompts.write_text("one\ntwo\nthree\n")
    out = tmp_path / "m.jsonl"
    argv = ["generate", prompts, "--out", out, "--generator", "gate_gen:gen", "-q"]
    env = _env(tmp_path)
    first = subprocess.Popen([sys.executable, "-m", "promptprism", *map(str, argv)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(tmp_path / "started", first)
        second = _cli(*argv, env=env)
        assert second.returncode == 2, second.stderr
        assert f"another promptprism run (pid {first.pid}) is writing it now" in second.stderr
        assert len(second.stderr.strip().splitlines()) == 1
    finally:
        (tmp_path / "release").touch()
        _, err = first.communicate(timeout=WAIT)
    assert first.returncode == 0, err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["prompt"] for r in rows] == ["one", "two", "three"]
    assert sorted((tmp_path / "calls.log").read_text().split()) == ["one", "three", "two"]  # each once


def _npz(path: Path) -> Path:
    rng = np.random.default_rng(0)
    np.savez(path, prompt_embeddings=rng.standard_normal((24, 4)),
             output_embeddings=rng.standard_normal((24, 4)),
             prompts=np.array([f"p{i % 4}" for i in range(24)]))
    return path


def test_a_second_run_on_a_busy_out_folder_is_refused_and_leaves_the_first_alone(tmp_path):
    data, out = _npz(tmp_path / "a.npz"), tmp_path / "out"
    env = _env(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out), str(tmp_path)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(tmp_path / "started", holder)
        second = _cli("split", data, data, "--out", out, "-q", "--no-report", env=env)
        assert second.returncode == 2, second.stderr
        assert f"another promptprism run (pid {holder.pid}) is writing it now" in second.stderr
        assert (out / ".promptprism-staging-running").is_dir()  # the first run's staging folder survives
        assert not (out / "result.json").exists()
    finally:
        (tmp_path / "release").touch()
        holder.communicate(timeout=WAIT)
    assert holder.returncode == 0
    again = _cli("split", data, data, "--out", out, "-q", "--no-report", env=env)
    assert again.returncode == 0, again.stderr
    assert (out / "result.json").is_file() and not (out / ".promptprism-staging-running").exists()


def test_a_killed_run_leaves_no_lock(tmp_path):
    data, out = _npz(tmp_path / "a.npz"), tmp_path / "out"
    env = _env(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out), str(tmp_path)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "started", holder)
    os.kill(holder.pid, signal.SIGKILL)
    holder.communicate(timeout=WAIT)
    done = _cli("split", data, data, "--out", out, "-q", "--no-report", env=env)
    assert done.returncode == 0, done.stderr
    assert (out / "result.json").is_file() and not (out / ".promptprism-staging-running").exists()
