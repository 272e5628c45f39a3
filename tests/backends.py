"""The array backends every brute-force test of the array core runs on (see promptprism.backend).

'cpu' is numpy, the reference; 'torch' is torch on the CPU, the accelerator's code path (skipped only where
torch is not installed). Both compute in float64 unless a test asks for float32, so the brute-force
tolerances are the same on both: float64 round-off differs between LAPACK and torch's kernels at ~1e-15
relative, far inside the 1e-9 the tests ask; float32 tests keep their documented 1e-3 / 1e-4.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None

#: the torch device the backend tests compare with numpy: 'torch' (torch on the CPU, the default), or
#: an accelerator ('cuda') on a machine that has one: PROMPTPRISM_TEST_TORCH_DEVICE=cuda pytest ...
TORCH_DEVICE = os.environ.get("PROMPTPRISM_TEST_TORCH_DEVICE", "torch")

#: pytest parameters: the numpy reference and torch (on the CPU unless TORCH_DEVICE says otherwise)
DEVICES = ["cpu", pytest.param(TORCH_DEVICE, marks=pytest.mark.skipif(not HAS_TORCH,
                                                                      reason="torch is not installed"))]
