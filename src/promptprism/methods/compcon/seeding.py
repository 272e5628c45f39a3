"""Seeding CompCon from a PromptSplit mode: the prompts that load on the mode, in its direction."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InputError, OptionError


def split_mode_prompts(result: Any, mode: int) -> tuple[list[str], bool, dict]:
    """The prompts of a PromptSplit mode, to be described by CompCon.

    ``mode`` K > 0 is the K-th positive mode (what the test model, taken as A, does more); K < 0 the |K|-th
    negative mode (what the reference does more: A and B swap, ``swapped`` is True). Prompts are the mode's
    ``top_prompts`` that load on it in its direction (contribution of the mode's sign), strongest first.
    Returns (prompts, swapped, provenance for result.json).
    """
    if getattr(result, "kind", None) != "promptsplit":  # read by its kind: CompCon imports no other method
        raise InputError(
            f"seeding from a mode needs a PromptSplit result (kind 'promptsplit'), got kind "
            f"{getattr(result, 'kind', type(result).__name__)!r}"
        )
    if isinstance(mode, bool) or not isinstance(mode, (int, np.integer)) or mode == 0:
        raise OptionError(
            f"mode must be a non-zero integer (K > 0: K-th positive mode, K < 0: negative), got {mode!r}"
        )
    side = "test" if mode > 0 else "reference"
    modes = result.positive_modes if mode > 0 else result.negative_modes
    rank = abs(int(mode))
    chosen = next((m for m in modes if m.rank == rank), None)
    if chosen is None:
        avail = ", ".join(f"{'+' if m.side == 'test' else '-'}{m.rank}" for m in result.modes) or "none"
        raise OptionError(
            f"the PromptSplit result has no {'positive' if mode > 0 else 'negative'} mode {rank}; "
            f"modes available: {avail}"
        )
    sign = 1.0 if side == "test" else -1.0
    prompts = [p.prompt for p in chosen.top_prompts if sign * p.contribution > 0]
    if not prompts:
        raise InputError(f"PromptSplit mode {mode:+d} lists no prompt that loads on it")
    info = {
        "mode": int(mode),
        "side": side,
        "eigenvalue": chosen.eigenvalue,
        "prompts": prompts,
        "swapped": side == "reference",
    }
    return prompts, side == "reference", info
