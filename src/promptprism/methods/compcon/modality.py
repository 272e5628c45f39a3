"""What CompCon's loop does differently for images and for text: the three steps that touch the samples.

The loop (discovery -> verification over the bank -> descriptions scored on new prompts, :mod:`.pipeline`)
is the same for both; a :class:`Modality` supplies

* ``samples(source, prompt)``: a model's samples for a prompt (images of a bank or generator; answers of a
  table or a chat model), the generator call;
* ``discovery_message(...)``: the discovery request showing A's samples against B's (an image grid for the
  VLM; the answers as text for a language model), read by the same parser;
* ``scores(sample_lists, attributes)``: the verification score of each sample for each attribute
  (``S[i, k]``), with each sample's prompt index, and ``thresholds(null, quantile)``: when a score counts as
  "has the attribute". The rest of the rule (per-prompt fractions, diverging prompts, ranking) is
  :mod:`.verify`, shared.

:class:`ImageModality` is the paper's: CLIP cosine similarity, thresholds the quantile of the null set.
:class:`TextModality` scores answers with a text encoder (the same cosine rule, attribute text against answer
text) or with a judge that says yes or no per answer (score 1 or 0, threshold 0.5; any object with the
naming judges' ``decide(description, texts)``, e.g. :class:`promptprism.methods.naming.ChatJudge`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ...errors import InputError, OptionError
from ...llm.answers import MAX_ANSWER_CHARS, clip_text, parse_attributes, parse_names
from ...llm.conversation import user_message
from . import verify
from .image_sources import image_grid, load_image
from .templates import render

#: images loaded and embedded at a time
EMBED_CHUNK = 64


class Modality(Protocol):
    """The sample-specific steps of CompCon (see the module docstring)."""

    kind: str  #: "image" or "text"
    template_names: dict[str, str]  #: the loop's template role -> the template file used for it

    def samples(self, source: Any, prompt: str) -> list[Any]:
        """``source``'s samples for ``prompt`` (empty when it has none)."""

    def discovery_message(self, template: str, prompt: str, samples_a: Sequence[Any],
                          samples_b: Sequence[Any]) -> dict:
        """The user message asking what A's samples show that B's don't."""

    def parse_discovery(self, answer: str) -> list[str]:
        """The attributes in the discovery answer (``ValueError`` when it is malformed)."""

    def scores(self, sample_lists: Sequence[Sequence[Any]], attributes: Sequence[str]
               ) -> tuple[np.ndarray, np.ndarray]:
        """(S: n_samples x K verification scores, each sample's group index into ``sample_lists``)."""

    def thresholds(self, null_scores: np.ndarray, quantile: float) -> np.ndarray:
        """tau_k: a sample has attribute k when S[i, k] > tau_k."""

    def record(self) -> dict:
        """What verifies, for ``result.json``'s ``models``."""

    def calibration(self) -> dict:
        """The 'has the attribute' rule, for ``result.json``'s ``calibration``."""


def _groups(sample_lists: Sequence[Sequence[Any]]) -> np.ndarray:
    return np.repeat(np.arange(len(sample_lists)), [len(x) for x in sample_lists])


class _AttributeVectors:
    """Attribute texts embedded once, in one batch, and looked up by name afterwards (so an attribute's
    vector in the description step is the very one verification used)."""

    def __init__(self, embed: Callable[[list[str]], Any]) -> None:
        self._embed = embed
        self._memo: dict[str, np.ndarray] = {}

    def __call__(self, names: Sequence[str]) -> np.ndarray:
        new = [n for n in dict.fromkeys(names) if n not in self._memo]
        if new:
            emb = np.asarray(self._embed(new), dtype=np.float64)
            if emb.ndim != 2 or emb.shape[0] != len(new):
                raise InputError(f"the embedder returned {emb.shape} for {len(new)} attribute texts")
            self._memo.update(zip(new, emb, strict=True))
        return np.stack([self._memo[n] for n in names])


class ImageModality:
    """Images: a grid of A's over B's for the VLM (C.1), CLIP cosine similarity for verification."""

    kind = "image"
    template_names = {"attribute_discovery": "attribute_discovery", "description": "description",
                      "prompt_generation": "prompt_generation"}

    def __init__(self, embedder: Any, *, images_per_prompt: int = 4, grid_cell: int = 256) -> None:
        self.embedder = embedder
        self.images_per_prompt = images_per_prompt
        self.grid_cell = grid_cell
        self._vectors = _AttributeVectors(embedder.embed_texts)

    def samples(self, source: Any, prompt: str) -> list[Any]:
        """A bank's image paths (loaded when needed), or a generator's images."""
        if hasattr(source, "image_paths") and not getattr(source, "can_generate", False):
            return source.image_paths(prompt)
        return source.images(prompt)

    def discovery_message(self, template: str, prompt: str, samples_a: Sequence[Any],
                          samples_b: Sequence[Any]) -> dict:
        """The C.1 prompt with one image: A's images (top row) over B's."""
        k = self.images_per_prompt
        grid = image_grid(samples_a[:k], samples_b[:k], cell=self.grid_cell)
        return user_message(render(template, prompt=prompt), [grid])

    def parse_discovery(self, answer: str) -> list[str]:
        """The items under "Model A contains:" (:func:`promptprism.llm.answers.parse_attributes`)."""
        return parse_attributes(answer)

    def scores(self, sample_lists: Sequence[Sequence[Any]], attributes: Sequence[str]
               ) -> tuple[np.ndarray, np.ndarray]:
        """cos(CLIP image, CLIP attribute text); images loaded and embedded ``EMBED_CHUNK`` at a time."""
        flat = [im for imgs in sample_lists for im in imgs]
        chunks = [
            np.asarray(self.embedder.embed_images([load_image(x) for x in flat[i: i + EMBED_CHUNK]]))
            for i in range(0, len(flat), EMBED_CHUNK)
        ]
        emb = np.concatenate(chunks).astype(np.float64) if chunks else np.zeros((0, 1))
        if emb.shape[0] != len(flat):
            raise InputError(f"the CLIP embedder returned {emb.shape[0]} image embeddings for {len(flat)} "
                             "images")
        return verify.similarity_matrix(emb, self._vectors(attributes)), _groups(sample_lists)

    def thresholds(self, null_scores: np.ndarray, quantile: float) -> np.ndarray:
        """The quantile of the null set's similarities (:func:`.verify.calibrate_thresholds`)."""
        return verify.calibrate_thresholds(null_scores, quantile)

    def record(self) -> dict:
        """``{"clip": its name}`` for ``result.json``'s ``models``."""
        return {"clip": getattr(self.embedder, "name", type(self.embedder).__name__)}

    def calibration(self) -> dict:
        """The paper's rule: cosine above the quantile of the null set."""
        return {"rule": "quantile of the null set", "has_attribute": "cos(image, attribute) > threshold"}


class TextModality:
    """Text answers: shown as text to the discovery model; verified by a text encoder (``encode``: texts ->
    (n, d)) with the quantile rule, or by a ``judge`` (``decide(description, texts) -> [bool]``)."""

    kind = "text"
    template_names = {"attribute_discovery": "attribute_discovery_text", "description": "description_text",
                      "prompt_generation": "prompt_generation_text"}

    def __init__(self, *, encode: Callable[[list[str]], Any] | None = None, judge: Any = None,
                 answers_shown: int = 2, name: str = "") -> None:
        if (encode is None) == (judge is None):
            raise OptionError("text CompCon verifies with a text encoder or a judge: give exactly one",
                              parameter="judge")
        self.encode, self.judge = encode, judge
        self.answers_shown = answers_shown
        self.name = name or getattr(judge, "name", "") or "text encoder"
        self._vectors = _AttributeVectors(encode) if encode is not None else None

    def samples(self, source: Any, prompt: str) -> list[str]:
        """The source's answers to ``prompt`` (a table's rows, or a chat model's answers)."""
        return list(source.samples(prompt))

    def discovery_message(self, template: str, prompt: str, samples_a: Sequence[Any],
                          samples_b: Sequence[Any]) -> dict:
        """The text discovery prompt with up to ``answers_shown`` answers of each model."""
        def shown(answers: Sequence[Any]) -> str:
            first = answers[: self.answers_shown]
            return "\n\n".join(f"[{i + 1}] {clip_text(a)}" for i, a in enumerate(first))

        return user_message(render(template, prompt=prompt, answers_a=shown(samples_a),
                                   answers_b=shown(samples_b)))

    def parse_discovery(self, answer: str) -> list[str]:
        """The naming module's reading of a namer's answer: the "Model A contains:" items, or, from a model
        too small to keep the format, its first sentence of at most 15 words (the held-out check is what
        keeps a bad one out). An answer that lists only "Model B contains:" is malformed."""
        if re.search(r"model\s*b\s*contains?", answer[:MAX_ANSWER_CHARS], re.IGNORECASE) and not re.search(
                r"model\s*a\s*contains?", answer[:MAX_ANSWER_CHARS], re.IGNORECASE):
            raise ValueError('no "Model A contains:" section')
        return parse_names(answer)

    def scores(self, sample_lists: Sequence[Sequence[Any]], attributes: Sequence[str]
               ) -> tuple[np.ndarray, np.ndarray]:
        """cos(encoder answer, encoder attribute), or 1.0 / 0.0 for the judge's yes / no."""
        flat = [str(x) for xs in sample_lists for x in xs]
        groups = _groups(sample_lists)
        if not flat:
            return np.zeros((0, len(attributes))), groups
        if self.judge is not None:
            cols = []
            for attr in attributes:
                said = list(self.judge.decide(attr, flat, shown_a=(), shown_b=()))
                if len(said) != len(flat):
                    raise InputError(f"the judge gave {len(said)} decisions for {len(flat)} answers")
                cols.append(np.asarray(said, dtype=np.float64))
            return np.stack(cols, axis=1), groups
        emb = np.asarray(self.encode(flat), dtype=np.float64)
        if emb.ndim != 2 or emb.shape[0] != len(flat):
            raise InputError(f"the text encoder returned {emb.shape} for {len(flat)} answers")
        return verify.similarity_matrix(emb, self._vectors(attributes)), groups

    def thresholds(self, null_scores: np.ndarray, quantile: float) -> np.ndarray:
        """Encoder: the quantile of the null set (as for images); judge: 0.5 (a "yes")."""
        if self.judge is not None:
            return np.full(np.asarray(null_scores).shape[1], 0.5)
        return verify.calibrate_thresholds(null_scores, quantile)

    def record(self) -> dict:
        """``{"verifier": the judge (and its client) or the text encoder}`` for ``result.json``."""
        client = getattr(self.judge, "client", None)
        how = {"judge": self.name} if self.judge is not None else {"text_encoder": self.name}
        if client is not None and hasattr(client, "describe"):
            how["judge_client"] = client.describe()
        return {"verifier": how}

    def calibration(self) -> dict:
        """The judge's yes/no, or the encoder's cosine above the quantile of the null set."""
        if self.judge is not None:
            return {"rule": "the judge's yes or no (threshold 0.5 on 1/0)",
                    "has_attribute": "the judge says the attribute applies to the answer"}
        return {"rule": "quantile of the null set", "has_attribute": "cos(answer, attribute) > threshold"}
