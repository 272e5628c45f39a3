"""What ``promptprism split`` imports: its start-up loads only its own command's code, and neither the fit
nor the page loads the heavy packages it does not use (a test of imports, not of time: docs/performance.md
has the start-up measured).

Each check runs in a fresh interpreter (this process has long imported everything)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
#: never needed by the exact route's fit, its test or its page
HEAVY = ("sklearn.decomposition", "sklearn.manifold", "scipy.stats", "pandas", "torch", "transformers",
         "matplotlib")


def loaded_after(code: str, tmp_path: Path) -> list[str]:
    """The HEAVY modules in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = textwrap.dedent(code) + f"\nimport sys\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path,
                         check=True, timeout=300)
    return eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 (our own probe's list of names)


def write_pair(folder: Path, n: int = 60) -> list[str]:
    """Two small embedding sets (.npz) with shared prompts."""
    rng = np.random.default_rng(0)
    paths = []
    for name, shift in (("test", 0.0), ("ref", 0.8)):
        topic = rng.integers(0, 4, n)
        t = rng.standard_normal((4, 8))[topic] + 0.1 * rng.standard_normal((n, 8))
        z = rng.standard_normal((n, 6)) + shift * (topic == 0)[:, None]
        path = folder / f"{name}.npz"
        np.savez(path, prompt_embeddings=t, output_embeddings=z, prompts=np.array([f"p{k}" for k in topic]))
        paths.append(str(path))
    return paths


def test_split_start_up_imports_only_its_own_command(tmp_path):
    loaded = loaded_after("""
        import sys
        import promptprism.cli as cli
        cli.load_commands(["split"])
        import promptprism.methods.promptsplit
        others = [m for m in ("metrics", "regions", "compcon", "diversity", "generate")
                  if f"promptprism.cli.{m}" in sys.modules]
        assert not others, others
    """, tmp_path)
    assert loaded == []


def test_split_without_report_imports_no_heavy_package(tmp_path):
    test, ref = write_pair(tmp_path)
    loaded = loaded_after(f"""
        from promptprism.cli import main
        assert main(["split", {test!r}, {ref!r}, "--method", "exact", "--out", "out", "--quiet",
                     "--no-report", "--permutations", "20"]) == 0
    """, tmp_path)
    assert loaded == []


@pytest.mark.slow  # ~3 s
def test_split_with_its_report_never_imports_matplotlib(tmp_path):
    test, ref = write_pair(tmp_path)
    loaded = loaded_after(f"""
        from pathlib import Path
        from promptprism.cli import main
        assert main(["split", {test!r}, {ref!r}, "--method", "exact", "--out", "out", "--quiet",
                     "--permutations", "20", "--sigma-prompt", "stable"]) == 0
        page = Path("out/report.html").read_text()
        assert 'aria-label="top positive and negative eigenvalues"' in page
        assert 'aria-label="kernel PCA map of the samples coloured by mode"' in page
        assert 'aria-label="bandwidth scan: top eigenvalues against the bandwidth"' in page
    """, tmp_path)
    # the default map is kernel PCA (no scikit-learn, which would bring scipy.stats and pandas); nothing
    # draws with matplotlib, and nothing loads torch
    assert not {"matplotlib", "torch", "transformers", "sklearn.manifold", "pandas"} & set(loaded)
