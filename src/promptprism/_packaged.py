"""Files shipped inside installed packages (model weights), located without importing the package."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .errors import OptionError


def packaged_file(module: str, relative: str, *, missing: str, absent: str) -> Path:
    """The file ``relative`` inside the installed package ``module``, found without importing it.

    Raises an OptionError with the message ``missing`` when the package is not installed, and with ``absent``
    when it is but holds no such file.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise OptionError(missing)
    for folder in spec.submodule_search_locations:
        path = Path(folder) / relative
        if path.is_file():
            return path
    raise OptionError(absent)
