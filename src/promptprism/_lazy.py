"""Packages that import their public names on first use (PEP 562).

Importing one module of a package (the command line's lists of option values, say) then loads that module
alone, not everything the package re-exports; ``from package import name`` and ``package.name`` work as
before, importing the module that defines ``name`` the first time it is looked up.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, Sequence[str]]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``exports`` maps a module (relative to the
    package, as in ``from .core import ...``) to the public names it defines; a name is imported when first
    looked up and then kept in the package's namespace (later lookups do not come here).

    A name that is also a submodule's name must be imported eagerly instead (importing the submodule
    binds the module to that name)."""
    where = {name: module for module, names in exports.items() for name in names}
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__
