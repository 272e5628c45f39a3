"""The demos: the methods end to end on data with a known answer, as library functions.

* :mod:`~promptprism.demos.digits` (``promptprism demo``): PromptSplit on scikit-learn's digits, coloured
  here, where the altered prompts are known;
* :mod:`~promptprism.demos.llm` (``demo --llm``): a real local language model answering five topics of
  questions in two set-ups;
* :mod:`~promptprism.demos.fashion` and :mod:`~promptprism.demos.guidance` (``demo --trained-generator``): the
  diffusion model trained here (:mod:`promptprism.models`) through quality, regions, diversity, split
  and PromptSplit guidance.

Each demo returns what it found (a record or a summary dict) and writes its results through a ``save``
callable (default: :func:`promptprism.report.save_result`); none prints. The command line
(``cli/demo.py``) parses the flags, calls these functions and prints what they return. A demo sits at the
edge, above the methods and the models: nothing but the command line imports this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

#: module -> the public names it defines, imported on first use (see :mod:`promptprism._lazy`)
_EXPORTS = {
    ".digits": ("DigitsDemo", "run_digits_demo"),
    ".fashion": ("DemoContext", "DemoSection"),
    ".fashion_run": ("DemoSizes", "DemoStopped", "run_fashion_demo"),
    ".guidance": ("SweepOptions", "guidance_section"),
    "._save": ("Saver",),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = ["DemoContext", "DemoSection", "DemoSizes", "DemoStopped", "DigitsDemo", "Saver", "SweepOptions",
           "guidance_section", "run_digits_demo", "run_fashion_demo"]

if TYPE_CHECKING:
    from ._save import Saver
    from .digits import DigitsDemo, run_digits_demo
    from .fashion import DemoContext, DemoSection
    from .fashion_run import DemoSizes, DemoStopped, run_fashion_demo
    from .guidance import SweepOptions, guidance_section
