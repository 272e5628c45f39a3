"""Deprecated: :mod:`promptprism.demos.guidance` under its old name (the same module object; the flag parser
``sweep_options`` is :func:`promptprism.cli.demo.sweep_options`). Removed in the release after next."""

from __future__ import annotations

import importlib
import sys
import warnings

warnings.warn("promptprism.cli.demo_guidance is now promptprism.demos.guidance (the old path goes in the "
              "next release)", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("promptprism.demos.guidance")
