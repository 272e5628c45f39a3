"""CompCon's steps before and after discovery, as records: the prompt bank with each prompt's samples
(:func:`prepare_bank`, checked before any request) and the verification's outcome (:class:`Verification`:
the ranked attribute records and what each description starts from)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._progress import track
from ...errors import InputError
from .describe import DescriptionTarget
from .image_sources import ImageSource, missing_images


@dataclass(frozen=True)
class PromptBank:
    """The bank prompts with samples (images, or answers for text) from both models, the seed prompts among
    them (None: unseeded), each prompt's samples per model and the prompts without samples (model ->
    prompts)."""

    prompts: list[str]
    seeds: list[str] | None
    samples_a: dict[str, list[Any]]
    samples_b: dict[str, list[Any]]
    missing: dict[str, list[str]]


@dataclass(frozen=True)
class Verification:
    """Step 2's outcome: the proposed attributes (``names``) and their thresholds, the diverging matrix
    (bank prompts x attributes), the rows ranked on (the seeds, or every prompt), the ranking, per-prompt
    fractions and the held-out check of each attribute."""

    bank: PromptBank
    names: list[str]
    proposed: dict[str, list[str]]
    thresholds: np.ndarray
    diverging: np.ndarray
    rows: np.ndarray
    order: list[int]
    scores: np.ndarray
    fraction_a: np.ndarray
    fraction_b: np.ndarray
    held_out: list[dict]

    @property
    def attributes(self) -> list[dict]:
        """The ranked attribute records of ``CompConResult.attributes``."""
        bank, div, rows = self.bank.prompts, self.diverging, self.rows
        return [
            {
                "attribute": self.names[k],
                "rank": rank,
                "score": float(self.scores[k]),
                "n_diverging": int(div[rows, k].sum()),
                "n_prompts": len(rows),
                "diverging_prompts": [bank[i] for i in rows if div[i, k]],
                "threshold": float(self.thresholds[k]),
                "mean_fraction_a": float(np.nanmean(self.fraction_a[rows, k])),
                "mean_fraction_b": float(np.nanmean(self.fraction_b[rows, k])),
                "n_diverging_bank": int(div[:, k].sum()),
                "proposed_for": self.proposed[self.names[k]],
                "held_out": self.held_out[k],
            }
            for rank, k in enumerate(self.order, 1)
        ]

    def diverging_set(self, k: int) -> list[str]:
        """The prompts the description of attribute ``k`` starts from: the seeds, or its diverging prompts."""
        if self.bank.seeds is not None:
            return list(self.bank.seeds)
        return [p for i, p in enumerate(self.bank.prompts) if self.diverging[i, k]]

    def non_diverging_set(self, k: int) -> list[str]:
        """The other bank prompts."""
        d_set = set(self.diverging_set(k))
        return [p for p in self.bank.prompts if p not in d_set]

    def target(self, k: int, model_a: ImageSource, model_b: ImageSource, scored: bool) -> DescriptionTarget:
        """What the description step needs of attribute ``k``: its name and threshold."""
        return DescriptionTarget(attribute=self.names[k], tau=self.thresholds[k], model_a=model_a,
                                 model_b=model_b, scored=scored)


def prepare_bank(model_a: ImageSource, model_b: ImageSource, prompts: Sequence[str], *,
                 seed_prompts: Sequence[str] | None, skip_missing: bool, show: bool,
                 samples: Callable[[Any, str], list[Any]], noun: str = "images") -> PromptBank:
    """The bank prompts with samples from both models (checked, or skipped with ``skip_missing``), the
    seed prompts among them, and each prompt's samples (``samples(source, prompt)``); ``noun`` names them in
    errors ("images", "answers")."""
    prompts = list(dict.fromkeys(p for p in prompts if p and p.strip()))
    if not prompts:
        raise InputError("the prompt bank is empty")
    name_a, name_b = getattr(model_a, "name", "A"), getattr(model_b, "name", "B")
    missing = {name_a: missing_images(model_a, prompts), name_b: missing_images(model_b, prompts)}
    missing = {k: v for k, v in missing.items() if v}
    if missing and not skip_missing:
        raise InputError(_missing_message(missing, len(prompts), noun), parameter="skip_missing")
    skipped = set().union(*missing.values()) if missing else set()
    bank = [p for p in prompts if p not in skipped]
    if not bank:
        raise InputError(f"no prompt of the bank has {noun} from both models")
    seeds = None
    if seed_prompts is not None:
        seeds = [p for p in dict.fromkeys(seed_prompts) if p in set(bank)]
        if not seeds:
            raise InputError(
                "none of the seed prompts (from the PromptSplit mode) is in the prompt bank "
                f"with {noun} from both models"
            )
    samples_a, samples_b = {}, {}
    for p in track(bank, total=len(bank), description="samples", enabled=show):
        samples_a[p], samples_b[p] = samples(model_a, p), samples(model_b, p)
    empty = {name_a: [p for p in bank if not samples_a[p]], name_b: [p for p in bank if not samples_b[p]]}
    empty = {k: v for k, v in empty.items() if v}
    if empty:
        if not skip_missing:
            raise InputError(_missing_message(empty, len(prompts), noun), parameter="skip_missing")
        for k, v in empty.items():
            missing.setdefault(k, []).extend(v)
        bad = set().union(*empty.values())
        bank = [p for p in bank if p not in bad]
        if seeds is not None:
            seeds = [p for p in seeds if p not in bad]
        if not bank or (seeds is not None and not seeds):
            raise InputError(f"no prompt left with {noun} from both models")
    return PromptBank(prompts=bank, seeds=seeds, samples_a=samples_a, samples_b=samples_b, missing=missing)


def _missing_message(missing: dict[str, list[str]], n: int, noun: str) -> str:
    parts = []
    for model, ps in missing.items():
        shown = "; ".join(repr(p) for p in ps[:5])
        more = f" and {len(ps) - 5} more" if len(ps) > 5 else ""
        parts.append(f"model {model} has no {noun} for {len(ps)} of the {n} prompts: {shown}{more}")
    return "; ".join(parts) + f" (add the {noun}, or set skip_missing to leave those prompts out)"
