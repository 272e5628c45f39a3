"""The colour demo (``promptprism demo``): PromptSplit on real bundled images with a known answer.

20 prompts ("a colored/grayscale handwritten digit d") over scikit-learn's bundled digits
(:func:`promptprism.datasets.colored_digits`); the test model draws grayscale digits for the colored prompts
5-9, the reference draws colored digits for the grayscale prompts 0-4. PromptSplit should put exactly those
10 prompts at the top. :func:`run_digits_demo` builds the data, fits, writes the result, its report and the
inputs (``data/test.npz``, ``data/reference.npz``) and returns a :class:`DigitsDemo`; it prints nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_memory, check_positive_number, check_seed
from ..io import atomic_save_npz
from ._save import Saver, default_saver

#: memory one demo image and its embeddings take while the data set is built (a generous bound)
DEMO_BYTES_PER_IMAGE = 16 * 1024


@dataclass(frozen=True)
class DigitsDemo:
    """What the demo did: the PromptSplit ``result``, the files ``written`` ({name: path}), the folder of the
    inputs, the number of prompts, and the altered prompts (``expected``) against those ranked in the top."""

    result: Any = field(repr=False)
    written: dict[str, Path]
    inputs: Path
    n_prompts: int
    per_prompt: int
    expected: frozenset[str]
    found: frozenset[str]

    @property
    def recovered(self) -> int:
        """How many of the altered prompts are in the top ``len(expected)`` of the ranking."""
        return len(self.found & self.expected)


def run_digits_demo(out: str | Path, *, per_prompt: int = 40, seed: int = 0, progress: bool | None = None,
                    report: bool = True, save: Saver | None = None) -> DigitsDemo:
    """Build the data set (``per_prompt`` images per prompt and model), run PromptSplit (``seed``), write the
    result, its report (``report``; with the sample map computed once and kept in result.json) and the
    inputs into ``out`` through ``save`` (default :func:`promptprism.report.save_result`)."""
    from ..datasets import colored_digits
    from ..methods.promptsplit import PromptSplit

    out = Path(out)
    check_positive_number(per_prompt, "per_prompt", integer=True)
    check_seed(seed)
    check_memory(per_prompt * 40 * DEMO_BYTES_PER_IMAGE, what=f"per_prompt {per_prompt} (40 sets of images)")
    data = colored_digits(per_prompt=per_prompt, seed=seed)
    sets = {"test": data.test, "reference": data.reference}
    images = {"test": data.test_images, "reference": data.reference_images}
    result = PromptSplit(seed=seed, progress=progress).fit(data.test, data.reference)
    if report:  # the report's map, computed once and kept in result.json
        from ..methods.promptsplit.layout import with_layout

        result = with_layout(result, sets)

    def write_inputs(folder: Path) -> None:
        for name, s in sets.items():
            atomic_save_npz(folder / "data" / f"{name}.npz", prompt_embeddings=s.prompt_embeddings,
                            output_embeddings=s.output_embeddings, prompts=np.array(s.prompts),
                            outputs=np.array(s.outputs), images=images[name])

    save = save or default_saver()
    sources = {"test": Path("data/test.npz"), "reference": Path("data/reference.npz")}
    written = save(result, out, report=report, quiet=progress is False, images=images, extra=write_inputs,
                   inputs=sets, sources=sources)
    expected = set(data.altered_test) | set(data.altered_reference)
    found = {row["prompt"] for row in result.prompt_ranking[: len(expected)]}
    return DigitsDemo(result=result, written=dict(written), inputs=out / "data",
                      n_prompts=len(data.prompt_names), per_prompt=per_prompt, expected=frozenset(expected),
                      found=frozenset(found))
