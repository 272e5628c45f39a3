"""Collecting the suite imports no package that only some tests need and that costs every test process
time (diffusers ~1.3 s, transformers ~0.4 s): test modules look such packages up (``find_spec``) at module
level and import them inside the tests or fixtures that use them."""

from __future__ import annotations

import ast
from pathlib import Path

#: imported only where used: each would be paid by every test process at collection
DEFERRED = ("diffusers", "transformers")


def module_level_imports(tree: ast.Module) -> set[str]:
    """Top package names a module imports while it is being imported: its module-level ``import`` /
    ``from`` statements (also under ``if`` / ``try``) and ``pytest.importorskip("name")`` calls outside any
    function or class."""
    found: set[str] = set()
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "importorskip" and node.args and isinstance(node.args[0], ast.Constant)):
            found.add(str(node.args[0].value).split(".")[0])
        todo.extend(ast.iter_child_nodes(node))
    return found


def test_the_checker_sees_module_level_imports_and_skips_function_bodies():
    tree = ast.parse("import a.b\nfrom c import d\nif x:\n    e = pytest.importorskip('f.g')\n"
                     "def t():\n    import h\nclass K:\n    import i\n")
    assert module_level_imports(tree) == {"a", "c", "f"}


def test_no_test_module_imports_a_deferred_package_at_collection():
    tests = Path(__file__).parent
    offenders = {path.name: sorted(module_level_imports(ast.parse(path.read_text(encoding="utf-8")))
                                   & set(DEFERRED))
                 for path in sorted(tests.glob("*.py"))}
    assert {name: found for name, found in offenders.items() if found} == {}
