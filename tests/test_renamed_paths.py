"""The old import paths kept for one release (CHANGELOG): ``promptprism.generators`` (now
``promptprism.models``) and ``promptprism.cli.demo_guidance`` (now ``promptprism.demos.guidance``) are the
same module objects under their old names, and importing them warns."""

from __future__ import annotations

import subprocess
import sys

import pytest

OLD_NEW = [("promptprism.generators.fashion", "promptprism.models.fashion"),
           ("promptprism.generators.fashion_train", "promptprism.models.fashion_train"),
           ("promptprism.generators.fashion_guidance", "promptprism.models.fashion_guidance"),
           ("promptprism.generators.quality", "promptprism.models.quality"),
           ("promptprism.cli.demo_guidance", "promptprism.demos.guidance")]


@pytest.mark.parametrize(("old", "new"), OLD_NEW)
def test_the_old_path_is_the_new_module_and_warns(old, new):
    code = ("import importlib, warnings\n"
            "with warnings.catch_warnings(record=True) as seen:\n"
            "    warnings.simplefilter('always')\n"
            f"    old = importlib.import_module({old!r})\n"
            f"assert old is importlib.import_module({new!r}), old\n"
            "assert any(issubclass(w.category, DeprecationWarning) for w in seen), seen\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow  # imports diffusers (~3.5 s a test process): the slow tier
def test_the_documented_generator_callable_resolves_under_the_old_name():
    """``--generator promptprism.generators.fashion:generate`` (README) still names the same function."""
    pytest.importorskip("diffusers")
    code = ("from promptprism.methods.compcon.image_sources import import_object\n"
            "from promptprism.models.fashion import generate\n"
            "assert import_object('promptprism.generators.fashion:generate', what='generator') is generate\n")
    done = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", code],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow  # a fresh interpreter importing torch (~1.3 s)
def test_the_training_recipe_runs_under_the_old_name():
    done = subprocess.run([sys.executable, "-m", "promptprism.generators.fashion_train", "--help"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "--epochs" in done.stdout, done.stderr
