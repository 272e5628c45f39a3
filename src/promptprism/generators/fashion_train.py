"""Deprecated: :mod:`promptprism.models.fashion_train` under its old name (``python -m`` still trains)."""

from __future__ import annotations

import importlib
import sys

if __name__ == "__main__":
    raise SystemExit(importlib.import_module("promptprism.models.fashion_train").main())
sys.modules[__name__] = importlib.import_module("promptprism.models.fashion_train")
