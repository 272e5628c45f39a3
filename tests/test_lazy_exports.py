"""Packages that import their public names on first use (``promptprism._lazy``): every public name is still
there, the same object as in the module that defines it, never a submodule of the same name."""

import importlib
import subprocess
import sys
import types

import pytest

LAZY_PACKAGES = ("promptprism", "promptprism.data", "promptprism.methods", "promptprism.methods.promptsplit",
                 "promptprism.methods.scendi", "promptprism.methods.regions", "promptprism.methods.metrics",
                 "promptprism.methods.compcon")


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_public_name_is_the_defining_modules_object(package):
    module = importlib.import_module(package)
    exported = {name: where for where, names in module._EXPORTS.items() for name in names}
    for name in module.__all__:
        value = getattr(module, name)
        assert not isinstance(value, types.ModuleType), f"{package}.{name} is a module"
        if name in exported:
            assert value is getattr(importlib.import_module(exported[name], package), name), name
    assert set(module.__all__) <= set(dir(module))
    assert set(exported) <= set(module.__all__)  # nothing loaded lazily that the package does not list
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018


def test_names_shared_with_a_submodule_and_submodule_imports():
    """A submodule imported first does not shadow the function of its name; ``from package import
    submodule`` still gives the submodule; a name re-exported from a lower layer is that layer's object."""
    code = ("import promptprism.methods.regions.region_cms, promptprism.methods.metrics.prdc\n"
            "from promptprism.methods.regions import region_cms\n"
            "from promptprism.methods.metrics import prdc\n"
            "from promptprism.methods.promptsplit import select_modes as exported, significance\n"
            "from promptprism.stats.eigen import select_modes\n"
            "print(callable(region_cms) and region_cms.__module__.endswith('comparison'),\n"
            "      callable(prdc) and prdc.__module__.endswith('metrics.prdc'),\n"
            "      significance.__name__.endswith('promptsplit.significance'),\n"
            "      exported is select_modes)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True"] * 4
