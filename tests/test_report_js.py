"""The report's JavaScript as code: eslint over src/promptprism/report/assets (tools/js: its pinned
version and configuration) and node's test runner over tests/js (unit tests of the pure functions)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tools" / "js"
NODE = shutil.which("node")


def test_the_pure_functions_pass_their_node_unit_tests():
    if NODE is None:
        pytest.skip("node is not installed (the JS unit tests run with `node --test tests/js/`)")
    run = subprocess.run([NODE, "--test", str(ROOT / "tests" / "js")], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "# fail 0" in run.stdout and "# pass 0" not in run.stdout


def _eslint() -> list[str] | None:
    local = TOOLS / "node_modules" / ".bin" / "eslint"
    if local.exists():
        return [str(local)]
    npx = shutil.which("npx")
    if npx is None:
        return None
    probe = subprocess.run([npx, "--no-install", "eslint", "--version"], capture_output=True, text=True,
                           cwd=TOOLS, timeout=60)
    return [npx, "--no-install", "eslint"] if probe.returncode == 0 else None


@pytest.mark.slow  # eslint's start-up: a few seconds
def test_the_report_scripts_pass_eslint():
    cmd = _eslint()
    if cmd is None:
        pytest.skip("eslint is not installed: `npm ci --prefix tools/js` installs the pinned version")
    run = subprocess.run([*cmd, "-c", str(TOOLS / "eslint.config.js"), "src/promptprism/report/assets",
                          "tests/js"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
