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

This module holds the estimator and steps 1-2 (the bank preparation and the verification record are
:mod:`.steps`); the description step (3) is :mod:`.describe`, the result and
its records :mod:`.result`, the PromptSplit seeding :mod:`.seeding` (all re-exported here).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..._params import BOOLEAN, SEED, Check, Estimator, between, one_of, positive
from ..._progress import Stopwatch, progress_enabled, track
from ...errors import OptionError, PromptPrismError
from ...llm.conversation import ChatModel, MalformedAnswerError, ask
from . import verify
from .describe import describe_attribute, description_round, sample_prompts
from .embedding import ClipEmbedder
from .image_sources import ImageSource
from .modality import EMBED_CHUNK, ImageModality, Modality
from .options import NULL_SETS
from .result import CompConResult, calibration_record, models_record
from .seeding import split_mode_prompts
from .steps import PromptBank, Verification, prepare_bank
from .templates import load_templates

__all__ = [
    "EMBED_CHUNK",
    "PromptBank",
    "Verification",
    "NULL_SETS",
    "CompCon",
    "CompConResult",
    "EmptyAttributesError",
    "held_out_check",
    "calibration_record",
    "describe_attribute",
    "description_round",
    "models_record",
    "sample_prompts",
    "split_mode_prompts",
]

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


def _having(methods: tuple[str, ...], what: str) -> Check:
    """An object with the ``methods`` (a protocol checked by its methods), described as ``what``."""

    def check(value: Any, name: str) -> None:
        if not all(callable(getattr(value, m, None)) for m in methods):
            raise OptionError(f"{name} must be {what}, got {value!r}", parameter=name)

    return Check(check, what)


CHAT_MODEL = _having(("chat",), "a chat model (chat(messages) -> str)")
CLIP_EMBEDDER = _having(("embed_images", "embed_texts"), "a CLIP embedder (embed_images, embed_texts)")
MODALITY = _having(("samples", "scores", "thresholds"), "a modality (ImageModality, TextModality)")


@dataclass(frozen=True)
class CompCon(Estimator):
    """CompCon: configure here, then ``fit(model_a, model_b, prompts)`` -> :class:`CompConResult`.

    llm / vlm : chat models (:class:`~promptprism.llm.ChatClient` or anything with ``chat(messages) -> str``);
        vlm (the discovery model) defaults to llm. embedder : CLIP (``embed_images``, ``embed_texts``), for
        images. modality : what the samples are and how they are verified (:mod:`.modality`); default
        :class:`~.modality.ImageModality` over ``embedder``; :class:`~.modality.TextModality` for LLM answers.
    alpha : level of the held-out check (Holm over the attributes).

    Parameters are checked when it is made (``_parameter_constraints``) and never changed; the default
    modality is resolved by :meth:`resolved` into the estimator that runs.
    """

    llm: ChatModel
    embedder: ClipEmbedder | None = None
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
    alpha: float = 0.05
    modality: Modality | None = None

    _parameter_constraints: ClassVar[dict[str, list]] = {
        # (llm=None is refused by _check_together, after the rule about the embedder)
        "llm": [CHAT_MODEL, None], "embedder": [CLIP_EMBEDDER, None], "vlm": [CHAT_MODEL, None],
        **{name: [positive()] for name in (*_COUNT_OPTIONS, "grid_cell")},
        "early_stop_score": [between(0.0, 1.0, closed="left")], "quantile": [between(0.0, 1.0)],
        "null": [one_of(NULL_SETS)], "min_fraction": [between(0.0, 1.0, closed="right")],
        "reasks": [positive(allow_zero=True)], "seed": [SEED], "template_dir": [str, os.PathLike, None],
        "progress": [BOOLEAN, None], "alpha": [between(0.0, 1.0)], "modality": [MODALITY, None]}

    def _check_together(self) -> None:
        if self.modality is None and self.embedder is None:
            raise OptionError("image CompCon needs a CLIP embedder (embedder=), or pass modality=",
                              parameter="embedder")
        if self.llm is None:
            raise OptionError("llm must be a chat model (chat(messages) -> str), got None", parameter="llm")
        load_templates(self.template_dir)  # (a missing template folder is refused now, not in fit)

    @functools.cached_property
    def templates(self) -> dict[str, str]:
        """The prompt templates (the paper's, or the edited copies in ``template_dir``), read once."""
        return load_templates(self.template_dir)

    def resolved(self) -> CompCon:
        """This estimator with its modality given: the default, images verified by CLIP (``embedder``)."""
        if self.modality is not None:
            return self
        return dataclasses.replace(self, modality=ImageModality(
            self.embedder, images_per_prompt=self.images_per_prompt, grid_cell=self.grid_cell))

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
            "alpha",
        )
        return {k: getattr(self, k) for k in keys} | {"modality": self.resolved().modality.kind}

    # ----------------------------------------------------------------------------------------------- fit
    def fit(self, model_a: ImageSource, model_b: ImageSource, prompts: Sequence[str], *,
            seed_prompts: Sequence[str] | None = None, skip_missing: bool = False,
            seeded_from: dict | None = None) -> CompConResult:
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
        if self.modality is None:  # (the default modality, resolved into the estimator that runs)
            return self.resolved().fit(model_a, model_b, prompts, seed_prompts=seed_prompts,
                                       skip_missing=skip_missing, seeded_from=seeded_from)
        clock, show = Stopwatch(), progress_enabled(self.progress)
        vlm = self.vlm if self.vlm is not None else self.llm
        rng = np.random.default_rng(self.seed)
        bank = prepare_bank(model_a, model_b, prompts, seed_prompts=seed_prompts, skip_missing=skip_missing,
                            show=show, samples=self.modality.samples,
                            noun="images" if self.modality.kind == "image" else "answers")
        clock.lap("images" if self.modality.kind == "image" else "samples")
        discovery, failures, proposed = self._discover(vlm, bank, rng, show)
        clock.lap("discovery")
        verified = self._verify(bank, proposed, [d["prompt"] for d in discovery])
        clock.lap("verification")
        scored = bool(getattr(model_a, "can_generate", False) and getattr(model_b, "can_generate", False))
        descriptions = [
            describe_attribute(self, verified.target(k, model_a, model_b, scored),
                               d_set=verified.diverging_set(k), n_set=verified.non_diverging_set(k), rng=rng,
                               failures=failures, show=show)
            for k in verified.order[: self.n_attributes]
        ]
        clock.lap("descriptions")
        return CompConResult(
            attributes=verified.attributes, descriptions=descriptions, discovery=discovery,
            calibration=calibration_record(quantile=self.quantile, null=self.null,
                                           min_fraction=self.min_fraction, modality=self.modality,
                                           alpha=self.alpha),
            models=models_record(model_a=model_a, model_b=model_b, llm=self.llm, vlm=vlm,
                                 verifier=self.modality.record()),
            n_prompts=len(bank.prompts), seed=self.seed, config=self.config(),
            skipped_prompts=bank.missing if skip_missing else {}, failures=failures, seeded_from=seeded_from,
            timings=clock.total("total"), modality=self.modality.kind)

    # --------------------------------------------------------------------------------------------- steps
    def _discover(self, vlm: ChatModel, bank: PromptBank, rng: np.random.Generator, show: bool
                  ) -> tuple[list[dict], list[dict], dict[str, list[str]]]:
        """Step 1 (C.1): the VLM shown A's images over B's for sampled prompts; (the discovery records, the
        failures, each proposed attribute with the prompts it was proposed for)."""
        pool = bank.seeds if bank.seeds is not None else bank.prompts
        n_disc = min(self.n_discovery_prompts, len(pool))
        disc_prompts = [pool[i] for i in sorted(rng.choice(len(pool), size=n_disc, replace=False))]
        discovery, failures = [], []
        proposed: dict[str, list[str]] = {}
        canonical: dict[str, str] = {}
        template = self.templates[self.modality.template_names["attribute_discovery"]]
        for p in track(disc_prompts, total=n_disc, description="attribute discovery", enabled=show):
            msg = self.modality.discovery_message(template, p, bank.samples_a[p], bank.samples_b[p])
            try:
                attrs, _, answers = ask(
                    vlm, [msg], self.modality.parse_discovery, what=f"attribute discovery for {p!r}",
                    reasks=self.reasks
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
        if not proposed:
            raise _no_attribute_error(getattr(vlm, "model", "the VLM"), n_disc, failures)
        return discovery, failures, proposed

    def _verify(self, bank: PromptBank, proposed: dict[str, list[str]], discovered: list[str]
                ) -> Verification:
        """Step 2: verification over every bank prompt (the modality's scores), thresholds calibrated on the
        null set, the attributes ranked by their diverging prompts (:mod:`.verify`); then the held-out check
        on the ranked prompts discovery never saw (:func:`held_out_check`)."""
        names = list(proposed)
        sim_a, groups_a = self.modality.scores([bank.samples_a[p] for p in bank.prompts], names)
        sim_b, groups_b = self.modality.scores([bank.samples_b[p] for p in bank.prompts], names)
        null = sim_b if self.null == "reference" else np.vstack([sim_a, sim_b])
        thresholds = self.modality.thresholds(null, self.quantile)
        n = len(bank.prompts)
        frac_a = verify.prompt_fractions(verify.has_attribute(sim_a, thresholds), groups_a, n)
        frac_b = verify.prompt_fractions(verify.has_attribute(sim_b, thresholds), groups_b, n)
        div = verify.diverging_matrix(frac_a, frac_b, self.min_fraction)
        rows = np.arange(n) if bank.seeds is None else np.array([bank.prompts.index(p) for p in bank.seeds])
        order = verify.rank_attributes(div[rows], names, frac_a[rows], frac_b[rows])
        seen = {bank.prompts.index(p) for p in discovered}
        test_rows = np.array([i for i in rows if i not in seen], dtype=np.int64)
        held_out = held_out_check(self, (sim_a, groups_a), (sim_b, groups_b), test_rows, n)
        return Verification(bank=bank, names=names, proposed=proposed, thresholds=thresholds, diverging=div,
                            rows=rows, order=list(order), scores=verify.attribute_scores(div[rows]),
                            fraction_a=frac_a, fraction_b=frac_b, held_out=held_out)


def held_out_check(est: CompCon, scored_a: tuple[np.ndarray, np.ndarray],
                   scored_b: tuple[np.ndarray, np.ndarray],
                   test_rows: np.ndarray, n: int) -> list[dict]:
    """Per attribute, the sign test of :func:`.verify.sign_test` on the held-out prompts ``test_rows``.

    The thresholds are calibrated again, as in step 2 but on the samples of the other bank prompts only
    (those discovery saw, and the unranked ones), so nothing about the held-out prompts chose the attribute
    or its threshold; then A-only and B-only prompts are counted there. p-values are Holm-adjusted over
    the attributes; ``verified`` when the adjusted p-value is <= ``est.alpha``.
    """
    from ...stats.two_sample import holm

    (sim_a, groups_a), (sim_b, groups_b) = scored_a, scored_b
    calib = ~np.isin(np.arange(n), test_rows)
    null_b = sim_b[calib[groups_b]]
    null = null_b if est.null == "reference" else np.vstack([sim_a[calib[groups_a]], null_b])
    k = sim_a.shape[1]
    if len(test_rows) == 0 or null.shape[0] == 0:
        return [{"n_prompts": int(len(test_rows)), "a_only": 0, "b_only": 0, "p_value": 1.0,
                 "p_adjusted": 1.0, "verified": False, "note": "no held-out prompts"} for _ in range(k)]
    tau = est.modality.thresholds(null, est.quantile)
    frac_a = verify.prompt_fractions(verify.has_attribute(sim_a, tau), groups_a, n)[test_rows]
    frac_b = verify.prompt_fractions(verify.has_attribute(sim_b, tau), groups_b, n)[test_rows]
    a_only = verify.diverging_matrix(frac_a, frac_b, est.min_fraction).sum(axis=0)
    b_only = verify.diverging_matrix(frac_b, frac_a, est.min_fraction).sum(axis=0)
    p = [verify.sign_test(a_only[j], b_only[j]) for j in range(k)]
    adjusted = holm(p)
    return [{"n_prompts": int(len(test_rows)), "a_only": int(a_only[j]), "b_only": int(b_only[j]),
             "threshold": float(tau[j]), "p_value": p[j], "p_adjusted": adjusted[j],
             "verified": bool(adjusted[j] <= est.alpha)} for j in range(k)]


def _no_attribute_error(vlm_name: str, n_disc: int, failures: list[dict]) -> PromptPrismError:
    """The error of a discovery step that found no attribute: every answer malformed, or none proposed."""
    if failures and len(failures) == n_disc:
        return MalformedAnswerError(
            f"attribute discovery: every answer of {vlm_name} for the {n_disc} "
            f"sampled prompt(s) was malformed (no 'Model A contains:' list); first problem: "
            f"{failures[0]['error']}"
        )
    return EmptyAttributesError(
        f"attribute discovery: {vlm_name} proposed no attribute under "
        f"'Model A contains:' for any of the {n_disc} sampled prompt(s)"
        + (f" ({len(failures)} malformed)" if failures else "")
        + "; nothing to verify. Try more discovery prompts (n_discovery_prompts, --discovery-prompts) "
          "or another model."
    )
