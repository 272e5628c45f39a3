"""The layer rules of docs/architecture.md, checked on the source: which package may import which."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "promptprism"

#: layer -> promptprism packages it must not import (at module level or inside a function)
FORBIDDEN = {
    "kernels": {"data", "embed", "methods", "report", "cli", "scale", "results"},
    "stats": {"data", "embed", "methods", "report", "cli", "scale", "kernels", "results"},
    "data": {"kernels", "stats", "methods", "report", "cli"},
    "embed": {"methods", "report", "cli", "kernels", "stats"},
    "scale": {"methods", "report", "cli"},
    "methods": {"report", "cli"},
    "report": {"cli"},
    # sampler-side guidance: torch at the edge of the core; it reads kernels and (lazily) embed's encoders
    "guidance": {"data", "methods", "report", "cli", "scale", "stats", "results"},
    # results.py renders its notebook summary with report.summary, imported inside _repr_html_
    "results": {"data", "embed", "methods", "cli", "kernels", "stats", "scale"},
    # the array backend (numpy / torch) and its few backend-specific operations: foundation
    "backend": {"data", "embed", "methods", "report", "cli", "kernels", "stats", "scale", "results",
                "array_ops"},
    "array_ops": {"data", "embed", "methods", "report", "cli", "kernels", "stats", "scale", "results"},
    # the trained generators (models) are an edge: data sets, the generate path and the guidance sampler
    "generators": {"methods", "report", "cli", "stats", "scale", "results", "embed"},
}


def _imported_packages(path: Path) -> set[str]:
    """The promptprism top-level packages a module imports (relative or absolute imports)."""
    rel = path.relative_to(SRC).with_suffix("").parts  # e.g. ("methods", "compcon", "parsing")
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(rel[:-1])[: len(rel) - node.level]
                target = base + (node.module.split(".") if node.module else [])
                if not target and node.module is None:
                    target = [a.name for a in node.names]
            elif node.module and node.module.split(".")[0] == "promptprism":
                target = node.module.split(".")[1:]
            else:
                continue
            if target:
                out.add(target[0])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "promptprism" and len(parts) > 1:
                    out.add(parts[1])
    return out


def _layer(path: Path) -> str:
    first = path.relative_to(SRC).parts[0]
    return first[:-3] if first.endswith(".py") else first


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_follow_the_architecture(layer):
    files = [p for p in SRC.rglob("*.py") if _layer(p) == layer]
    assert files, layer
    bad = {str(p.relative_to(SRC)): sorted(_imported_packages(p) & FORBIDDEN[layer]) for p in files}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"{layer}/ imports what docs/architecture.md forbids: {bad}"


def test_the_checker_sees_relative_imports():
    found = _imported_packages(SRC / "methods" / "compcon" / "generators.py")
    assert "errors" in found and "data" in found  # from ...errors, from ...data.tables


def test_the_cli_starts_without_the_heavy_libraries():
    """``promptprism --help`` and the start of every command import no SciPy, torch, scikit-learn or
    matplotlib (SciPy alone took ~0.25 s of each run's start): the functions that need them import them."""
    import subprocess
    import sys

    heavy = ("scipy", "torch", "sklearn", "matplotlib", "transformers", "dask")
    code = ("import sys, promptprism, promptprism.cli\n"
            f"print(' '.join(m for m in {heavy!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == ""


def test_only_the_cli_imports_the_generators():
    """The core never imports a model: the trained generators are reached from the CLI only."""
    users = {str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
             if _layer(p) not in ("generators", "cli") and "generators" in _imported_packages(p)}
    assert not users, f"the core imports the trained generators: {sorted(users)}"
