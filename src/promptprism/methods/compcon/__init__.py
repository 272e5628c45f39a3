"""CompCon: what differs between two text-to-image models (or, :class:`TextModality`, two language
models), in words.

A vision-language model proposes visual attributes that model A's images show and model B's don't; CLIP
verifies them over a prompt bank; a language model describes the prompts that trigger the top attribute and is
refined over iterations by generating new prompts and scoring how many diverge. Built from the paper
(Discovering Divergent Representations between Text-to-Image Models) and its supplement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

#: module -> the public names it defines, imported on first use (see :mod:`promptprism._lazy`)
_EXPORTS = {
    # the chat client lives in promptprism.llm; these names stay here for the old imports
    "...llm": ("ChatClient", "EndpointError", "MalformedAnswerError", "ask", "png_data_url", "user_message"),
    ".embedding": ("ClipEmbedder", "TransformersClip"),
    ".evaluation": ("evaluate_predictions", "id2_prompt_pairs", "load_id2_splits", "predictions_from_result"),
    ".image_sources": ("CallableGenerator", "ImageBank", "ImageSource", "load_prompt_bank", "missing_images"),
    ".modality": ("ImageModality", "Modality", "TextModality"),
    ".pipeline": ("CompCon", "CompConResult", "EmptyAttributesError", "split_mode_prompts"),
    ".templates": ("load_templates",),
    ".text_sources": ("AnswerTable", "ChatAnswers"),
    ".verify": (
        "attribute_scores", "calibrate_thresholds", "description_score", "diverging_matrix",
        "diverging_prompts", "has_attribute", "prompt_fractions", "rank_attributes", "sign_test",
        "similarity_matrix",
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from ...llm import ChatClient, EndpointError, MalformedAnswerError, ask, png_data_url, user_message
    from .embedding import ClipEmbedder, TransformersClip
    from .evaluation import evaluate_predictions, id2_prompt_pairs, load_id2_splits, predictions_from_result
    from .image_sources import CallableGenerator, ImageBank, ImageSource, load_prompt_bank, missing_images
    from .modality import ImageModality, Modality, TextModality
    from .pipeline import CompCon, CompConResult, EmptyAttributesError, split_mode_prompts
    from .templates import load_templates
    from .text_sources import AnswerTable, ChatAnswers
    from .verify import (
        attribute_scores,
        calibrate_thresholds,
        description_score,
        diverging_matrix,
        diverging_prompts,
        has_attribute,
        prompt_fractions,
        rank_attributes,
        sign_test,
        similarity_matrix,
    )

__all__ = [
    "AnswerTable",
    "CallableGenerator",
    "ChatAnswers",
    "ChatClient",
    "ClipEmbedder",
    "CompCon",
    "CompConResult",
    "EmptyAttributesError",
    "EndpointError",
    "ImageBank",
    "ImageModality",
    "ImageSource",
    "MalformedAnswerError",
    "Modality",
    "TransformersClip",
    "ask",
    "attribute_scores",
    "calibrate_thresholds",
    "description_score",
    "diverging_matrix",
    "diverging_prompts",
    "evaluate_predictions",
    "has_attribute",
    "id2_prompt_pairs",
    "load_id2_splits",
    "load_prompt_bank",
    "load_templates",
    "missing_images",
    "png_data_url",
    "predictions_from_result",
    "prompt_fractions",
    "rank_attributes",
    "similarity_matrix",
    "TextModality",
    "split_mode_prompts",
    "sign_test",
    "user_message",
]
