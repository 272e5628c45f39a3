"""The old import path of :mod:`promptprism.models` (the models trained here), kept for one release.

``promptprism.generators.fashion``, ``.fashion_train``, ``.fashion_guidance`` and ``.quality`` are the
modules of :mod:`promptprism.models` under their old names (the same module objects, so a
``--generator promptprism.generators.fashion:generate`` or ``python -m promptprism.generators.fashion_train``
still runs); importing this package warns (DeprecationWarning). Removed in the release after next.
"""

from __future__ import annotations

import warnings

warnings.warn("promptprism.generators is now promptprism.models (the old path goes in the next release)",
              DeprecationWarning, stacklevel=2)
