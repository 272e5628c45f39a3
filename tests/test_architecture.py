"""The layer rules of docs/architecture.md, checked on the source: every module of the package belongs to one
layer of the document's table, and imports only what its layer may (module-level and lazy imports alike)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "promptprism"
DOC = ROOT / "docs" / "architecture.md"

#: layer -> the top-level modules and packages of ``promptprism`` it holds (the first column of the
#: document's table; every module of the package must be in exactly one)
LAYERS = {
    # the foundation, as the document lists it, plus its private helpers: LAPACK's two-stage solver
    # (array_ops), files shipped in installed packages (weights), the execution context (scale/ sets it) and
    # the packages that import their names on first use (_lazy)
    "foundation": {"errors", "io", "_validation", "_progress", "_version", "backend", "array_ops",
                   "_two_stage", "_packaged", "_execution", "_lazy", "_params", "_interrupts", "_gc",
                   "_words"},
    "data": {"data"},
    "datasets": {"datasets"},
    "embed": {"embed"},
    "kernels": {"kernels"},
    "stats": {"stats"},
    "scale": {"scale"},
    "llm": {"llm"},
    "methods": {"methods"},
    "guidance": {"guidance"},
    "generate": {"generate"},
    "models": {"models", "generators"},
    "results": {"results", "jsonable", "schema", "provenance", "gate"},
    "report": {"report"},
    "demos": {"demos"},
    "cli": {"cli"},
    # the public API (``import promptprism``), and ``python -m promptprism`` (the command line)
    "package": {"__init__"},
    "main": {"__main__"},
}

#: layer -> what its modules may import besides their own layer: a layer, or a dotted module (and what is
#: below it) such as ``data.tables``; the "may import" column of the document's table
MAY_IMPORT = {
    "foundation": set(),
    "data": {"foundation"},
    "datasets": {"foundation", "data"},
    "embed": {"foundation", "data.tables", "data.imageio"},
    "kernels": {"foundation"},
    "stats": {"foundation"},
    "scale": {"foundation", "data"},
    "llm": {"foundation", "data.imageio"},
    "methods": {"foundation", "data", "kernels", "stats", "scale", "results", "llm"},
    "guidance": {"foundation", "kernels"},
    "generate": {"foundation", "data.tables", "data.imageio", "data.prompts", "scale.threads", "llm",
                 "methods.compcon"},
    "models": {"foundation", "datasets", "kernels", "generate.images", "guidance"},
    "results": {"foundation"},
    "report": {"foundation", "data", "stats", "methods", "results"},
    "demos": set(LAYERS) - {"demos", "cli", "package", "main"},
    "cli": set(LAYERS) - {"cli", "package", "main"},
    "package": set(LAYERS) - {"package", "demos", "cli", "main"},
    "main": {"cli"},
}

#: (module or package prefix, what it may import) allowed only inside a function (lazily), as the document
#: says: data/inputs.py embeds raw generations, CompCon's CLIP encoders, guidance's differentiable encoder
LAZY_ONLY = {
    ("data.inputs", "embed"),
    ("methods.compcon", "embed"),
    ("guidance", "embed"),
}

#: optional heavy libraries: imported inside the function that needs them, never at a module's top
HEAVY = {"torch", "transformers", "sentence_transformers", "diffusers", "open_clip", "dask", "distributed",
         "matplotlib", "PIL", "pyarrow", "scipy", "sklearn", "llama_cpp"}
#: modules allowed a top-level heavy import (to be moved inside functions; each entry says why it stands)
HEAVY_AT_TOP = {
    # the guidance losses are torch functions end to end; the package imports them eagerly (guidance is
    # reached only from the trained models, the demos and the CLI, lazily)
    "guidance.losses": {"torch"},
}


def _module_name(path: Path) -> str:
    """``methods/compcon/parsing.py`` -> ``methods.compcon.parsing``; ``data/__init__.py`` -> ``data``."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _is_module(dotted: str) -> bool:
    base = SRC.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


@cache  # parsed once per file for the whole module (callers only read the list)
def _imports(path: Path) -> list[tuple[str, bool]]:
    """The promptprism modules ``path`` imports, dotted below ``promptprism`` (``from .x import y``
    resolves to ``x.y`` when y is a module), each with whether the import is inside a function."""
    rel = path.relative_to(SRC).with_suffix("").parts
    package = list(rel[:-1])  # the package the module sits in (for __init__: the package itself)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lazy_nodes = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        for n in ast.walk(f)
    }
    out: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        lazy = id(node) in lazy_nodes
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else list(package)
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "promptprism":
                target = node.module.split(".")[1:]
            else:
                continue
            for alias in node.names:
                sub = ".".join([*target, alias.name])
                out.append((sub if _is_module(sub) else ".".join(target) or "__init__", lazy))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "promptprism":
                    out.append((".".join(parts[1:]) or "__init__", lazy))
    return out


def _layer_of(dotted: str) -> str | None:
    first = dotted.split(".")[0]
    return next((layer for layer, members in LAYERS.items() if first in members), None)


def _allowed(module: str, target: str, lazy: bool) -> bool:
    layer, other = _layer_of(module), _layer_of(target)
    if other == layer:
        return True
    for rule in MAY_IMPORT[layer]:
        if rule in LAYERS and other == rule:
            return True
        if target == rule or target.startswith(rule + "."):
            return True
    return lazy and any(
        (module == m or module.startswith(m + ".")) and (target == t or target.startswith(t + "."))
        for m, t in LAZY_ONLY
    )


# --------------------------------------------------------------------------------------------- the layers
def test_every_module_belongs_to_one_layer():
    """A new top-level module or package fails here until it is given a layer (here and in the document)."""
    tops = {name.split(".")[0] for name in _modules()}
    unassigned = sorted(t for t in tops if _layer_of(t) is None)
    assert not unassigned, f"modules in no layer of docs/architecture.md: {unassigned}"
    owners = [layer for members in LAYERS.values() for layer in members]
    assert len(owners) == len(set(owners)), "a module is in two layers"
    stale = sorted(m for members in LAYERS.values() for m in members if m not in tops)
    assert not stale, f"layers name modules that do not exist: {stale}"


def _doc_table_names() -> set[str]:
    """The modules and packages named in the first column of the document's layer table."""
    text = DOC.read_text(encoding="utf-8")
    table = text.split("## What each layer may import", 1)[1].split("\n\n", 2)[1]
    names: set[str] = set()
    for line in table.splitlines()[2:]:
        first = line.split("|")[1]
        first = re.sub(r"\([^()]*\)", "", first)  # what is said about a module, in brackets
        for name in re.findall(r"`([^`]+)`", first):
            names.add(name.removesuffix("/").removesuffix(".py"))
    return names


def test_the_document_names_every_layer_and_module_of_the_test():
    named = _doc_table_names()
    members = {m for layer, ms in LAYERS.items() if layer not in ("package", "main") for m in ms}
    assert members - named == set(), f"in the test's layers, not in the document's table: {members - named}"
    assert named - members == set(), f"in the document's table, not in the test's layers: {named - members}"


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layer_imports_follow_the_architecture(layer):
    modules = {m: p for m, p in _modules().items() if _layer_of(m) == layer}
    assert modules, layer
    bad = {
        m: sorted({t + (" (lazily)" if lazy else "") for t, lazy in _imports(p) if not _allowed(m, t, lazy)})
        for m, p in modules.items()
    }
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"{layer} imports what docs/architecture.md does not allow it: {bad}"


@pytest.mark.slow
def test_heavy_libraries_are_imported_inside_functions():
    """Rule 1 of the document: torch, transformers, dask, matplotlib, Pillow, pyarrow, SciPy and the like
    are imported inside the function that needs them (a module's top-level import loads them for every
    user of the module)."""
    bad = {}
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        libs = {a.name.split(".")[0] for n in top if isinstance(n, ast.Import) for a in n.names}
        libs |= {n.module.split(".")[0] for n in top
                 if isinstance(n, ast.ImportFrom) and n.module and not n.level}
        found = (libs & HEAVY) - HEAVY_AT_TOP.get(name, set())
        if found:
            bad[name] = sorted(found)
    assert not bad, f"heavy libraries imported at the top of a module: {bad}"


# ------------------------------------------------------------------------------------ the checker itself
def test_the_checker_sees_relative_and_lazy_imports():
    found = dict(_imports(SRC / "methods" / "compcon" / "image_sources.py"))
    assert "errors" in found and "data.tables" in found  # from ...errors, from ...data.tables
    lazy = dict(_imports(SRC / "data" / "inputs.py"))
    assert lazy["embed.pipeline"] is True  # inside embed_manifest
    assert _imports(SRC / "__main__.py") == [("cli", False)]


def test_the_checker_refuses_what_climbs():
    """Each rule can fail: a climbing import, a lazy-only one at the top, a module the layer may not read."""
    assert not _allowed("kernels.gram", "methods.promptsplit", lazy=True)
    assert not _allowed("_validation", "data.npy", lazy=True)
    assert not _allowed("embed.pipeline", "scale.runner", lazy=True)
    assert not _allowed("embed.base", "data.inputs", lazy=False)  # only data.tables and data.imageio
    assert _allowed("embed.base", "data.imageio", lazy=True)
    assert not _allowed("data.inputs", "embed.pipeline", lazy=False)  # lazily only
    assert _allowed("data.inputs", "embed.pipeline", lazy=True)
    assert not _allowed("data.loaders", "embed.pipeline", lazy=True)  # only data/inputs.py
    assert _allowed("cli.split", "methods.promptsplit", lazy=False)
    assert not _allowed("__init__", "cli", lazy=False)


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
    """The core never imports a model: the trained generators are reached from the demos and the CLI only."""
    users = {m for m, p in _modules().items()
             if _layer_of(m) not in ("models", "demos", "cli") and any(_layer_of(t) == "models"
                                                                      for t, _ in _imports(p))}
    assert not users, f"the core imports the trained generators: {sorted(users)}"


def test_only_the_cli_imports_the_demos():
    """The demos sit at the edge, above the methods and the models: only the command line imports them."""
    users = {m for m, p in _modules().items()
             if _layer_of(m) not in ("demos", "cli") and any(_layer_of(t) == "demos" for t, _ in _imports(p))}
    assert not users, f"imports of the demos from below the command line: {sorted(users)}"
    assert not any(t.split(".")[0] == "cli" for m, p in _modules().items() if _layer_of(m) == "demos"
                   for t, _ in _imports(p)), "the demos import the command line"


# ------------------------------------------------------------------------------------------- import circles
def _import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports, anywhere in its body (top level, inside functions, under
    ``if TYPE_CHECKING``): a circle closed by a function-local import is still a circle."""
    mods = _modules()
    return {m: {t for t, _ in _imports(p) if t in mods and t != m} for m, p in mods.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles():
    """No two modules import each other, directly or around a longer loop, lazily or not."""
    circles = _circles(_import_graph())
    assert not circles, f"import circles (each a set of modules that import each other): {circles}"


def test_the_circle_finder_finds_circles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": set()}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


#: method -> other methods it imports: none (shared code lives below the methods: stats/, llm/); the test
#: fails when such an import appears
METHOD_TO_METHOD: set[tuple[str, str]] = set()


def test_methods_do_not_import_each_other():
    """A method's package imports the shared layers, never another method's package."""
    seen = set()
    for module, targets in _import_graph().items():
        parts = module.split(".")
        if parts[0] != "methods" or len(parts) < 3:
            continue
        for target in targets:
            other = target.split(".")
            if other[0] == "methods" and len(other) > 1 and other[1] != parts[1] and other[1] != "rankings":
                seen.add((parts[1], other[1]))
    assert not METHOD_TO_METHOD, "no method -> method import is allowed"
    assert seen == METHOD_TO_METHOD, (
        f"new method -> method imports: {sorted(seen - METHOD_TO_METHOD)}; "
        f"gone (remove from METHOD_TO_METHOD): {sorted(METHOD_TO_METHOD - seen)}")
