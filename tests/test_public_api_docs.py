"""Every public definition has a docstring: a walk over the public API of every public module.

Public: modules and names without a leading underscore; for a module, the functions and classes it defines
(not those it imports); for a class, the methods and properties it defines itself (dunder methods other
than ``__init__`` / ``__call__`` excepted; a dataclass's generated methods excepted). A definition
without a docstring fails.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import promptprism

#: modules whose import needs an optional dependency that may be absent
OPTIONAL = {"promptprism.guidance": "torch"}


def _modules():
    for info in pkgutil.walk_packages(promptprism.__path__, "promptprism."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        needs = OPTIONAL.get(info.name)
        if needs is not None:
            try:
                importlib.import_module(needs)
            except ImportError:
                continue
        yield importlib.import_module(info.name)


def _own(member, owner) -> bool:
    return inspect.getmodule(member) is owner


def public_definitions() -> dict[str, object]:
    """``{qualified name: object}`` for every public function, class, method and property."""
    out: dict[str, object] = {"promptprism": promptprism}
    for mod in _modules():
        out[mod.__name__] = mod
        for name, obj in vars(mod).items():
            if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if not _own(obj, mod):
                continue
            out[f"{mod.__name__}.{name}"] = obj
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and attr not in ("__init__", "__call__"):
                        continue
                    func = member.fget if isinstance(member, property) else member
                    func = getattr(func, "__func__", func)  # classmethod / staticmethod
                    if not inspect.isfunction(func) or inspect.getmodule(func) is not mod:
                        continue
                    if attr == "__init__" and (obj.__doc__ or "").strip():
                        continue  # documented on the class
                    out[f"{mod.__name__}.{name}.{attr}"] = func
    return out


def _documented(obj) -> bool:
    return bool((inspect.getdoc(obj) if not inspect.isclass(obj) else obj.__dict__.get("__doc__")) or "")


def missing_docstrings() -> list[str]:
    """The public definitions without a docstring."""
    return sorted(name for name, obj in public_definitions().items() if not _documented(obj))


def test_the_walk_sees_the_public_api():
    names = public_definitions()
    assert any(n.startswith("promptprism.methods.promptsplit") and n.endswith(".PromptSplit") for n in names)
    assert "promptprism.data.paired.PairedSet.dim_prompt" in names  # a property
    assert "promptprism.data.loaders.load_paired" in names
    assert "promptprism.data.paired.np" not in names  # imported, not defined there
    assert not any(n.split(".")[-1].startswith("_") and not n.endswith(("__init__", "__call__"))
                   for n in names)


def test_every_public_definition_has_a_docstring():
    missing = missing_docstrings()
    assert not missing, f"{len(missing)} public definitions without a docstring:\n" + "\n".join(missing)
