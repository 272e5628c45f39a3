"""The CompCon loop: attribute discovery (VLM), CLIP verification, description discovery (LLM) refined over
iterations with the sampling of appendix C.2 and the early stopping of C.3.

1. Sample ``n_discovery_prompts`` prompts; for each, a grid of A's images (top row) over B's (bottom row)
   goes to the VLM with the C.1 attribute-discovery prompt; the attributes under "Model A contains" are kept.
2. CLIP verification over every bank prompt with images from both models (:mod:`.verify`): thresholds
   calibrated once, per attribute; a prompt diverges when A shows the attribute and B does not; attributes
   ranked by the number of diverging prompts.
3. For each of the top ``n_attributes`` attributes: sample B diverging and B non-diverging prompts, ask the
   LLM for a description and key concepts (C.1), then, in the same conversation, for ``n_generated`` new
   prompts; render them with both models, verify with the same thresholds, score = fraction diverging.
   Iteration i + 1 samples first from the prompts generated at iteration i (diverging / non-diverging), then
   fills up to B at random from the bank (C.2). Stop after ``iterations``, or early when the best score is
   still <= ``early_stop_score`` after ``early_stop_iterations`` iterations (C.3: 0.1 within 5).

Seeded mode (``seed_prompts``, e.g. the prompts of a PromptSplit mode): discovery samples from those prompts,
attributes are ranked on them, and they are the diverging set the descriptions start from.

Every random draw comes from one ``numpy.random.Generator(seed)`` in a fixed order and what it drew is
written into the result.

This module holds the estimator and steps 1-2; the description step (3) is :mod:`.describe`, the result and
its records :mod:`.result`, the PromptSplit seeding :mod:`.seeding` (all re-exported here).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._progress import progress_enabled, track
from ..._validation import check_choice, check_interval, check_positive_number, check_seed
from ...errors import InputError, PromptPrismError
from . import verify
from .clients import ChatModel, MalformedAnswerError, ask, user_message
from .describe import describe_attribute, description_round, sample_prompts
from .embedding import ClipEmbedder
from .generators import ImageSource, image_grid, load_image, missing_images
from .parsing import parse_attributes
from .result import CompConResult, calibration_record, models_record
from .seeding import split_mode_prompts
from .templates import load_templates, render

__all__ = [
    "EMBED_CHUNK",
    "NULL_SETS",
    "CompCon",
    "CompConResult",
    "EmptyAttributesError",
    "calibration_record",
    "describe_attribute",
    "description_round",
    "models_record",
    "sample_prompts",
    "split_mode_prompts",
]

NULL_SETS = ("reference", "pooled")
EMBED_CHUNK = 64  #: images loaded and embedded at a time
#: the integer options counted from 1, in the order ``result.json`` records them (checked, then recorded)
_COUNT_OPTIONS = (
    "n_discovery_prompts",
    "images_per_prompt",
    "n_attributes",
    "batch_size",
    "n_generated",
    "iterations",
    "early_stop_iterations",
)


class EmptyAttributesError(PromptPrismError):
    """The VLM proposed no attribute at all."""


@dataclass
class CompCon:
    """CompCon: configure here, then ``fit(model_a, model_b, prompts)`` -> :class:`CompConResult`.

    llm / vlm : chat models (:class:`~.clients.ChatClient` or anything with ``chat(messages) -> str``);
        vlm defaults to llm. embedder : CLIP (``embed_images``, ``embed_texts``).
    """

    llm: ChatModel
    embedder: ClipEmbedder
    vlm: ChatModel | None = None
    n_discovery_prompts: int = 10
    images_per_prompt: int = 4  #: images per model in each discovery grid
    n_attributes: int = 1  #: top attributes to describe
    batch_size: int = 10  #: B: diverging and non-diverging prompts shown per description request (C.2)
    n_generated: int = 25  #: prompts generated per iteration
    iterations: int = 10
    early_stop_iterations: int = 5
    early_stop_score: float = 0.1
    quantile: float = verify.DEFAULT_QUANTILE
    null: str = "reference"
    min_fraction: float = verify.DEFAULT_MIN_FRACTION
    reasks: int = 2  #: re-asks after a malformed answer
    seed: int = 0
    template_dir: str | None = None
    grid_cell: int = 256
    progress: bool | None = False

    def __post_init__(self) -> None:
        for name in (*_COUNT_OPTIONS, "grid_cell"):
            check_positive_number(getattr(self, name), name, integer=True)
        check_positive_number(self.reasks, "reasks", integer=True, allow_zero=True)
        check_seed(self.seed)
        check_interval(self.early_stop_score, 0.0, 1.0, parameter="early_stop_score", closed="left")
        check_interval(self.quantile, 0.0, 1.0, parameter="quantile")
        check_interval(self.min_fraction, 0.0, 1.0, parameter="min_fraction", closed="right")
        check_choice(self.null, NULL_SETS, parameter="null")
        self.templates = load_templates(self.template_dir)

    def config(self) -> dict:
        """Every option of the run, as recorded in ``result.json``."""
        keys = (
            *_COUNT_OPTIONS,
            "early_stop_score",
            "quantile",
            "null",
            "min_fraction",
            "reasks",
            "seed",
            "template_dir",
            "grid_cell",
        )
        return {k: getattr(self, k) for k in keys}

    # ----------------------------------------------------------------------------------------------- fit
    def fit(
        self,
        model_a: ImageSource,
        model_b: ImageSource,
        prompts: Sequence[str],
        *,
        seed_prompts: Sequence[str] | None = None,
        skip_missing: bool = False,
        seeded_from: dict | None = None,
    ) -> CompConResult:
        """Find the attributes model A shows and model B doesn't, and describe the prompts that trigger them.

        Runs the CompCon loop of paper section 3 (supplement C): (1) attribute discovery, the VLM shown a grid
        of A's over B's images for each of ``n_discovery_prompts`` sampled prompts (C.1); (2) CLIP
        verification with a per-attribute threshold calibrated on the null set, attributes ranked by their
        number of diverging prompts (:mod:`.verify`); (3) for the top ``n_attributes``, descriptions by the
        LLM iterated with the sampling of C.2 and the early stopping of C.3, scored on newly generated
        prompts when both sources can render them (:mod:`.describe`).

        ``model_a`` / ``model_b``: image sources (an :class:`ImageBank` or a :class:`CallableGenerator`);
        ``prompts``: the prompt bank; ``seed_prompts``: prompts to start from instead of sampling (a
        PromptSplit mode's prompts, see :func:`split_mode_prompts`); ``skip_missing``: leave out prompts
        without images for a model (else an :class:`InputError` lists them); ``seeded_from``: recorded in the
        result.

        Returns a :class:`CompConResult`: the ranked attributes, the descriptions with every iteration, the
        discovery answers, the calibration, the models, the config, the seed, failures and timings. Raises
        :class:`EmptyAttributesError` when the VLM proposes no attribute, :class:`MalformedAnswerError` when
        every discovery answer was malformed.
        """
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        show = progress_enabled(self.progress)
        vlm = self.vlm if self.vlm is not None else self.llm
        rng = np.random.default_rng(self.seed)
        prompts = list(dict.fromkeys(p for p in prompts if p and p.strip()))
        if not prompts:
            raise InputError("the prompt bank is empty")
        name_a, name_b = getattr(model_a, "name", "A"), getattr(model_b, "name", "B")

        # -- prompts without images
        missing = {name_a: missing_images(model_a, prompts), name_b: missing_images(model_b, prompts)}
        missing = {k: v for k, v in missing.items() if v}
        if missing and not skip_missing:
            raise InputError(_missing_message(missing, len(prompts)), parameter="skip_missing")
        skipped = set().union(*missing.values()) if missing else set()
        bank = [p for p in prompts if p not in skipped]
        if not bank:
            raise InputError("no prompt of the bank has images from both models")
        seeds = None
        if seed_prompts is not None:
            seeds = [p for p in dict.fromkeys(seed_prompts) if p in set(bank)]
            if not seeds:
                raise InputError(
                    "none of the seed prompts (from the PromptSplit mode) is in the prompt bank "
                    "with images from both models"
                )

        # -- images and their CLIP embeddings, per prompt
        t = time.perf_counter()
        images_a, images_b = {}, {}
        for p in track(bank, total=len(bank), description="images", enabled=show):
            images_a[p], images_b[p] = _image_items(model_a, p), _image_items(model_b, p)
        empty = {name_a: [p for p in bank if not images_a[p]], name_b: [p for p in bank if not images_b[p]]}
        empty = {k: v for k, v in empty.items() if v}
        if empty:
            if not skip_missing:
                raise InputError(_missing_message(empty, len(prompts)), parameter="skip_missing")
            for k, v in empty.items():
                missing.setdefault(k, []).extend(v)
            bad = set().union(*empty.values())
            bank = [p for p in bank if p not in bad]
            if seeds is not None:
                seeds = [p for p in seeds if p not in bad]
            if not bank or (seeds is not None and not seeds):
                raise InputError("no prompt left with images from both models")
        timings["images"] = time.perf_counter() - t

        # -- 1. attribute discovery
        t = time.perf_counter()
        pool = seeds if seeds is not None else bank
        n_disc = min(self.n_discovery_prompts, len(pool))
        disc_prompts = [pool[i] for i in sorted(rng.choice(len(pool), size=n_disc, replace=False))]
        discovery, failures = [], []
        proposed: dict[str, list[str]] = {}
        canonical: dict[str, str] = {}
        for p in track(disc_prompts, total=n_disc, description="attribute discovery (VLM)", enabled=show):
            k = self.images_per_prompt
            grid = image_grid(images_a[p][:k], images_b[p][:k], cell=self.grid_cell)
            msg = user_message(render(self.templates["attribute_discovery"], prompt=p), [grid])
            try:
                attrs, _, answers = ask(
                    vlm, [msg], parse_attributes, what=f"attribute discovery for {p!r}", reasks=self.reasks
                )
            except MalformedAnswerError as exc:
                discovery.append({"prompt": p, "attributes": [], "error": str(exc)})
                failures.append(
                    {"stage": "attribute discovery", "prompt": p, "error": str(exc), "answers": exc.answers}
                )
                continue
            discovery.append({"prompt": p, "attributes": attrs, "error": None, "n_answers": len(answers)})
            for a in attrs:
                key = canonical.setdefault(a.lower(), a)
                proposed.setdefault(key, []).append(p)
        timings["discovery"] = time.perf_counter() - t
        if not proposed:
            if failures and len(failures) == n_disc:
                raise MalformedAnswerError(
                    f"attribute discovery: every answer of {getattr(vlm, 'model', 'the VLM')} for the "
                    f"{n_disc} "
                    f"sampled prompt(s) was malformed (no 'Model A contains:' list); first problem: "
                    f"{failures[0]['error']}"
                )
            raise EmptyAttributesError(
                f"attribute discovery: {getattr(vlm, 'model', 'the VLM')} proposed no attribute under "
                f"'Model A contains:' for any of the {n_disc} sampled prompt(s)"
                + (f" ({len(failures)} malformed)" if failures else "")
                + "; nothing to verify. Try more n_discovery_prompts or another VLM."
            )

        # -- 2. CLIP verification
        t = time.perf_counter()
        names = list(proposed)
        text_emb = np.asarray(self.embedder.embed_texts(names), dtype=np.float64)
        emb_a, groups_a = self._embed_groups([images_a[p] for p in bank])
        emb_b, groups_b = self._embed_groups([images_b[p] for p in bank])
        sim_a = verify.similarity_matrix(emb_a, text_emb)
        sim_b = verify.similarity_matrix(emb_b, text_emb)
        null = sim_b if self.null == "reference" else np.vstack([sim_a, sim_b])
        thresholds = verify.calibrate_thresholds(null, self.quantile)
        frac_a = verify.prompt_fractions(verify.has_attribute(sim_a, thresholds), groups_a, len(bank))
        frac_b = verify.prompt_fractions(verify.has_attribute(sim_b, thresholds), groups_b, len(bank))
        div = verify.diverging_matrix(frac_a, frac_b, self.min_fraction)
        rows = np.arange(len(bank)) if seeds is None else np.array([bank.index(p) for p in seeds])
        order = verify.rank_attributes(div[rows], names, frac_a[rows], frac_b[rows])
        scores = verify.attribute_scores(div[rows])
        attributes = []
        for rank, k in enumerate(order, 1):
            attributes.append(
                {
                    "attribute": names[k],
                    "rank": rank,
                    "score": float(scores[k]),
                    "n_diverging": int(div[rows, k].sum()),
                    "n_prompts": len(rows),
                    "diverging_prompts": [bank[i] for i in rows if div[i, k]],
                    "threshold": float(thresholds[k]),
                    "mean_fraction_a": float(np.nanmean(frac_a[rows, k])),
                    "mean_fraction_b": float(np.nanmean(frac_b[rows, k])),
                    "n_diverging_bank": int(div[:, k].sum()),
                    "proposed_for": proposed[names[k]],
                }
            )
        timings["verification"] = time.perf_counter() - t

        # -- 3. descriptions
        t = time.perf_counter()
        descriptions = []
        scored = bool(getattr(model_a, "can_generate", False) and getattr(model_b, "can_generate", False))
        for k in order[: self.n_attributes]:
            attr = names[k]
            if seeds is not None:
                d_set = list(seeds)
            else:
                d_set = [bank[i] for i in range(len(bank)) if div[i, k]]
            n_set = [p for p in bank if p not in set(d_set)]
            entry = describe_attribute(
                self,
                attr,
                d_set=d_set,
                n_set=n_set,
                text_vec=text_emb[k],
                tau=thresholds[k],
                model_a=model_a,
                model_b=model_b,
                rng=rng,
                scored=scored,
                failures=failures,
                show=show,
            )
            descriptions.append(entry)
        timings["descriptions"] = time.perf_counter() - t
        timings["total"] = time.perf_counter() - t0

        return CompConResult(
            attributes=attributes,
            descriptions=descriptions,
            discovery=discovery,
            calibration=calibration_record(
                quantile=self.quantile, null=self.null, min_fraction=self.min_fraction
            ),
            models=models_record(
                model_a=model_a, model_b=model_b, llm=self.llm, vlm=vlm, embedder=self.embedder
            ),
            n_prompts=len(bank),
            seed=self.seed,
            config=self.config(),
            skipped_prompts=missing if skip_missing else {},
            failures=failures,
            seeded_from=seeded_from,
            timings={k: round(v, 4) for k, v in timings.items()},
        )

    # ------------------------------------------------------------------------------------------- helpers
    def _embed_groups(self, image_lists: list[list[Any]]) -> tuple[np.ndarray, np.ndarray]:
        """Embed images (PIL images or paths, loaded ``EMBED_CHUNK`` at a time) with their prompt labels."""
        flat = [im for imgs in image_lists for im in imgs]
        groups = np.repeat(np.arange(len(image_lists)), [len(x) for x in image_lists])
        chunks = [
            np.asarray(self.embedder.embed_images([load_image(x) for x in flat[i : i + EMBED_CHUNK]]))
            for i in range(0, len(flat), EMBED_CHUNK)
        ]
        emb = np.concatenate(chunks).astype(np.float64) if chunks else np.zeros((0, 1))
        if emb.shape[0] != len(flat):
            raise InputError(
                f"the CLIP embedder returned {emb.shape[0]} image embeddings for {len(flat)} images"
            )
        return emb, groups


def _image_items(source: Any, prompt: str) -> list[Any]:
    """A bank's image paths (loaded when needed, so a large bank is never held in memory at once), or a
    generator's images."""
    if hasattr(source, "image_paths") and not getattr(source, "can_generate", False):
        return source.image_paths(prompt)
    return source.images(prompt)


def _missing_message(missing: dict[str, list[str]], n: int) -> str:
    parts = []
    for model, ps in missing.items():
        shown = "; ".join(repr(p) for p in ps[:5])
        more = f" and {len(ps) - 5} more" if len(ps) > 5 else ""
        parts.append(f"model {model} has no images for {len(ps)} of the {n} prompts: {shown}{more}")
    return "; ".join(parts) + " (add the images, or set skip_missing to leave those prompts out)"
