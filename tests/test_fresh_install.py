"""A newcomer's first commands, for real: a clean clone, a fresh virtual environment made by the README's
first command (``make demo``), then a README manifest example run with the console script it installed.

It installs from the package index pip is configured with (torch pinned to its CPU build), so it needs no
more network than ``make demo`` itself. Slow (a few minutes: torch is large), so marked ``slow``.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _base_python() -> str:
    """The interpreter that made the running one's virtual environment (or the running one)."""
    for name in (f"python{sys.version_info.major}.{sys.version_info.minor}", "python3"):
        candidate = Path(sys.base_prefix) / "bin" / name
        if candidate.exists():
            return str(candidate)
    return sys.executable


def _write_answers(path: Path, refuse: bool) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["prompt", "output"])
        for i in range(6):
            w.writerow([f"What is {i} plus {i + 1}?", f"It is {2 * i + 1}."])
            w.writerow([f"Name a city in country number {i}.", "I cannot say." if refuse else f"City {i}."])


@pytest.mark.slow
def test_fresh_clone_make_demo_then_a_manifest_example(tmp_path):
    if not (ROOT / ".git").exists() or shutil.which("git") is None or shutil.which("make") is None:
        pytest.skip("needs a git checkout, git and make")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(PROMPTPRISM_CACHE=str(tmp_path / "cache"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(sys.prefix))
    t0 = time.perf_counter()
    demo = subprocess.run(["make", "demo", f"PYTHON={_base_python()}"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=1500)
    t_demo = time.perf_counter() - t0
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-4000:]
    assert "10/10" in demo.stdout and (clone / "results" / "demo" / "report.html").is_file()
    # the README's manifest example, with the console script make demo installed
    _write_answers(clone / "answers_a.csv", refuse=False)
    _write_answers(clone / "answers_b.csv", refuse=True)
    t1 = time.perf_counter()
    split = subprocess.run([str(clone / ".venv" / "bin" / "promptprism"), "split", "answers_a.csv",
                            "answers_b.csv", "--out", "results/llm", "--no-report"],
                           cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    t_split = time.perf_counter() - t1
    assert split.returncode == 0, split.stdout[-2000:] + split.stderr[-3000:]
    assert (clone / "results" / "llm" / "result.json").is_file()
    torch_build = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c",
                                  "import torch; print(torch.__version__, torch.version.cuda)"],
                                 capture_output=True, text=True, env=env, check=True).stdout.split()
    assert torch_build[1] == "None", torch_build  # the CPU build, not a CUDA one
    print(f"make demo (fresh venv): {t_demo:.0f} s; split on two manifests: {t_split:.0f} s")
