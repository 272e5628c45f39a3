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
    n_diverging, n_prompts, diverging_prompts, threshold, mean_fraction_a, mean_fraction_b, proposed_for}``.
    ``descriptions``: per described attribute ``{attribute, diverging_set, non_diverging_set, iterations: [
    {iteration, description, key_concepts, score, generated_prompts, diverging, sampled_diverging,
    sampled_non_diverging, error}], best, n_iterations, stopped_early, stop_reason, scored}``.
    """

    kind = "compcon"

    attributes: list[dict]
    descriptions: list[dict]
    discovery: list[dict]  #: per sampled prompt: the attributes the VLM proposed (or the error)
    calibration: dict  #: the threshold rule and its parameters
    models: dict  #: model A, model B, the LLM, the VLM, CLIP
    n_prompts: int  #: bank prompts evaluated (images from both models)
    seed: int
    config: dict
    skipped_prompts: dict = field(default_factory=dict)  #: model -> prompts without images (skipped)
    failures: list[dict] = field(default_factory=list)  #: malformed answers that were given up on
    seeded_from: dict | None = None  #: the PromptSplit mode the run started from
    timings: dict = field(default_factory=dict)
    version: str = __version__


def models_record(*, model_a: Any, model_b: Any, llm: Any, vlm: Any, embedder: Any) -> dict:
    """The models of a run as recorded in ``result.json``: A, B, the LLM, the VLM and CLIP."""
    return {
        "A": _describe_source(model_a),
        "B": _describe_source(model_b),
        "llm": _describe_client(llm),
        "vlm": _describe_client(vlm),
        "clip": getattr(embedder, "name", type(embedder).__name__),
    }


def calibration_record(*, quantile: float, null: str, min_fraction: float) -> dict:
    """The threshold rule of the CLIP verification (:mod:`.verify`), as recorded in ``result.json``."""
    return {
        "rule": "quantile of the null set",
        "quantile": quantile,
        "null": "images of model B" if null == "reference" else "images of A and B",
        "min_fraction": min_fraction,
        "has_attribute": "cos(image, attribute) > threshold",
        "diverging": "fraction_A >= min_fraction and fraction_B < min_fraction",
    }


def _describe_source(src: Any) -> dict:
    return src.describe() if hasattr(src, "describe") else {"name": getattr(src, "name", type(src).__name__)}


def _describe_client(c: Any) -> dict:
    return c.describe() if hasattr(c, "describe") else {"model": getattr(c, "model", type(c).__name__)}
