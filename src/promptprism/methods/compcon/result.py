"""What a CompCon run returns (:class:`CompConResult`) and the records it is assembled from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..._version import __version__
from ...results import Result


@dataclass(frozen=True)
class CompConResult(Result):
    """What :meth:`CompCon.fit` returns; ``save(dir)`` writes ``dir/result.json``.

    ``attributes``: ranked, each ``{attribute, rank, score (fraction of evaluated prompts diverging),
    n_diverging, n_prompts, diverging_prompts, threshold, mean_fraction_a, mean_fraction_b, proposed_for,
    held_out: {n_prompts, a_only, b_only, threshold, p_value, p_adjusted, verified}}``.
    ``descriptions``: per described attribute ``{attribute, diverging_set, non_diverging_set, iterations: [
    {iteration, description, key_concepts, score, generated_prompts, diverging, sampled_diverging,
    sampled_non_diverging, error}], best, n_iterations, stopped_early, stop_reason, scored}``.
    """

    kind = "compcon"

    attributes: list[dict]
    descriptions: list[dict]
    discovery: list[dict]  #: per sampled prompt: the attributes the VLM proposed (or the error)
    calibration: dict  #: the threshold rule and its parameters
    models: dict  #: model A, model B, the LLM, the VLM, CLIP (images) or the verifier (text)
    n_prompts: int  #: bank prompts evaluated (images from both models)
    seed: int
    config: dict
    skipped_prompts: dict = field(default_factory=dict)  #: model -> prompts without images (skipped)
    failures: list[dict] = field(default_factory=list)  #: malformed answers that were given up on
    seeded_from: dict | None = None  #: the PromptSplit mode the run started from
    timings: dict = field(default_factory=dict)
    modality: str = "image"  #: "image" or "text" (LLM answers)
    version: str = __version__


def models_record(*, model_a: Any, model_b: Any, llm: Any, vlm: Any, verifier: dict) -> dict:
    """The models of a run as recorded in ``result.json``: A, B, the LLM, the VLM (the discovery model) and
    what verifies (``clip`` for images; ``verifier`` for text: the encoder or the judge)."""
    return {
        "A": _describe_source(model_a),
        "B": _describe_source(model_b),
        "llm": _describe_client(llm),
        "vlm": _describe_client(vlm),
        **verifier,
    }


def calibration_record(*, quantile: float, null: str, min_fraction: float, modality: Any,
                       alpha: float) -> dict:
    """The verification rule (:mod:`.verify`; the modality's "has the attribute") and the held-out check,
    as recorded in ``result.json``."""
    what = "images" if modality.kind == "image" else "answers"
    rule = modality.calibration()
    return {
        "rule": rule["rule"],
        "quantile": quantile,
        "null": f"{what} of model B" if null == "reference" else f"{what} of A and B",
        "min_fraction": min_fraction,
        "has_attribute": rule["has_attribute"],
        "diverging": "fraction_A >= min_fraction and fraction_B < min_fraction",
        "held_out": "exact sign test of A-only against B-only prompts among the ranked prompts discovery did "
                    "not see, thresholds calibrated on the other prompts; Holm over the attributes",
        "alpha": alpha,
    }


def _describe_source(src: Any) -> dict:
    return src.describe() if hasattr(src, "describe") else {"name": getattr(src, "name", type(src).__name__)}


def _describe_client(c: Any) -> dict:
    return c.describe() if hasattr(c, "describe") else {"model": getattr(c, "model", type(c).__name__)}
