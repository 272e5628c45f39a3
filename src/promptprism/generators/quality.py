"""Deprecated: :mod:`promptprism.models.quality` under its old name (the same module object)."""

from __future__ import annotations

import importlib
import sys

sys.modules[__name__] = importlib.import_module("promptprism.models.quality")
