"""Appendix D: scoring CompCon's output against the ID^2 ground truth with a judge model.

* ID^2 splits (Table 5): 60 (diverging visual attribute, diverging prompt concepts) pairs, shipped as
  ``prompts/id2_splits.json``. The data set's prompts and images are not published; :func:`id2_prompt_pairs`
  regenerates prompt pairs for a split with the D.2 dataset-creation prompt, to rebuild it.
* Attribute score: the judge rates (truth attribute, predicted attribute) 1-3 with the D.1 attribute-scoring
  prompt; description score: (truth concepts, predicted key concepts) 1-3 with the description-scoring prompt.
* A rating r becomes the score (r - 1) / 2 in {0, 0.5, 1} (the paper reports scores in [0, 1] without saying
  how ratings map to them; this linear map is our convention). Top-1 uses the first prediction, top-k the best
  of the first k; both are averaged over the splits that have predictions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from ..._progress import progress_enabled, track
from ..._version import __version__
from ...errors import InputError, OptionError
from ...llm.answers import parse_prompt_pairs, parse_rating
from ...llm.conversation import ChatModel, MalformedAnswerError, ask, user_message
from ...results import Result
from .templates import load_templates, render


def load_id2_splits() -> list[dict]:
    """The 60 ID^2 ground-truth splits of Table 5: ``{id, attribute, concepts}``."""
    text = resources.files(__package__).joinpath("prompts", "id2_splits.json").read_text(encoding="utf-8")
    return json.loads(text)["splits"]


def rating_score(rating: int) -> float:
    """1 -> 0.0, 2 -> 0.5, 3 -> 1.0."""
    return (int(rating) - 1) / 2.0


def _quoted(items: Sequence[str]) -> str:
    return "(" + ", ".join(json.dumps(str(s), ensure_ascii=False) for s in items) + ")"


def judge_attribute(
    judge: ChatModel, truth: str, predicted: str, templates: Mapping[str, str], reasks: int = 2
) -> int:
    """The judge's 1-3 rating of a predicted attribute against the truth (D.1 attribute-scoring prompt)."""
    text = render(templates["attribute_scoring"], sets=_quoted([truth, predicted]))
    return ask(judge, [user_message(text)], parse_rating, what="attribute score", reasks=reasks)[0]


def judge_description(
    judge: ChatModel,
    truth: Sequence[str],
    predicted: Sequence[str],
    templates: Mapping[str, str],
    reasks: int = 2,
) -> int:
    """The judge's 1-3 rating of predicted key concepts against the truth (D.1 description-scoring prompt)."""
    text = render(templates["description_scoring"], sets=f"{_quoted(truth)}, {_quoted(predicted)}")
    return ask(judge, [user_message(text)], parse_rating, what="description score", reasks=reasks)[0]


def predictions_from_result(result: Any) -> dict:
    """A CompCon result (object or its dict) -> ``{"attributes": [ranked names], "descriptions": [[concepts],
    ...]}``; descriptions: every described iteration, best score first (ties: attribute rank, iteration)."""
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    attributes = [a["attribute"] for a in data.get("attributes", [])]
    cands = []
    for rank, d in enumerate(data.get("descriptions", [])):
        for it in d.get("iterations", []):
            if it.get("key_concepts"):
                score = it.get("score")
                cands.append(
                    (-(score if score is not None else -1.0), rank, it["iteration"], it["key_concepts"])
                )
    cands.sort(key=lambda c: c[:3])
    return {"attributes": attributes, "descriptions": [c[3] for c in cands]}


@dataclass(frozen=True)
class CompConEvaluation(Result):
    """Appendix D scores; ``per_split`` holds every judge rating."""

    kind = "compcon-eval"

    summary: dict  #: attribute_top1, attribute_top{k}, description_top1, description_top{k}, n_splits
    per_split: list[dict]
    judge: dict
    config: dict
    failures: list[dict] = field(default_factory=list)
    version: str = __version__


def _strings(value: Any, where: str) -> list[str]:
    """A list of non-empty strings; one string is a one-item list (never its characters)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: expected a list of strings, got {_kind(value)}")
    return [v for v in value if v.strip()]


def _kind(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        bad = next((v for v in value if not isinstance(v, str)), None)
        return f"a list holding {type(bad).__name__} {bad!r}"[:120]
    return f"{type(value).__name__} {value!r}"[:120]


def normalise_prediction(key: Any, pred: Any) -> dict:
    """One prediction -> ``{"attributes": [str], "descriptions": [[str]]}``: a CompCon result (object or
    dict with ``kind``), or a dict of ``attributes`` (a list of names; one string is one attribute) and
    ``descriptions`` (a list of concept lists; one list of strings is one description). Anything else is an
    :class:`InputError` naming the key."""
    where = f"prediction {str(key)!r}"
    if hasattr(pred, "to_dict") or (isinstance(pred, Mapping) and "kind" in pred):
        try:
            return predictions_from_result(pred)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise InputError(f"{where}: not a readable CompCon result ({type(exc).__name__}: "
                             f"{exc})") from None
    if not isinstance(pred, Mapping):
        raise InputError(f"{where}: expected a CompCon result or an object with 'attributes' and "
                         f"'descriptions', got {_kind(pred)}")
    attributes = _strings(pred.get("attributes", []), f"{where}: 'attributes'")
    raw = pred.get("descriptions", [])
    if isinstance(raw, (list, tuple)) and raw and all(isinstance(c, str) for c in raw):
        raw = [raw]  # one description given as its concept list
    if not isinstance(raw, (list, tuple)):
        raise InputError(f"{where}: 'descriptions' must be a list of concept lists, got {_kind(raw)}")
    descriptions = [_strings(c, f"{where}: 'descriptions'[{i}]") for i, c in enumerate(raw)]
    return {"attributes": attributes, "descriptions": [d for d in descriptions if d]}


def _match_split(key: Any, splits: list[dict]) -> dict | None:
    for s in splits:
        if str(s["id"]) == str(key) or s["attribute"].casefold() == str(key).casefold():
            return s
    return None


def judge_split(judge: ChatModel, split: dict, prediction: dict, *, k: int, templates: Any, reasks: int,
                failures: list[dict]) -> dict:
    """One split's row: the judge's ratings of the first ``k`` predicted attributes and descriptions against
    the ground truth (D.1) and their top-1 / top-k scores; a malformed judge answer is appended to
    ``failures`` (the row then keeps the ratings gathered before it)."""
    row: dict[str, Any] = {
        "split": split["id"],
        "truth_attribute": split["attribute"],
        "truth_concepts": split["concepts"],
        "attribute_ratings": [],
        "description_ratings": [],
    }
    try:
        row["attribute_ratings"] = [
            judge_attribute(judge, split["attribute"], a, templates, reasks)
            for a in prediction["attributes"][:k]
        ]
        row["description_ratings"] = [
            judge_description(judge, split["concepts"], c, templates, reasks)
            for c in prediction["descriptions"][:k]
        ]
    except MalformedAnswerError as exc:
        failures.append({"split": split["id"], "error": str(exc)})
    for name, ratings in (
        ("attribute", row["attribute_ratings"]),
        ("description", row["description_ratings"]),
    ):
        s = [rating_score(r) for r in ratings]
        row[f"{name}_top1"] = s[0] if s else 0.0
        row[f"{name}_top{k}"] = max(s) if s else 0.0
    return row


def evaluate_predictions(
    predictions: Mapping[Any, Any],
    judge: ChatModel,
    *,
    splits: list[dict] | None = None,
    k: int = 5,
    template_dir: str | None = None,
    reasks: int = 2,
    progress: bool | None = False,
) -> CompConEvaluation:
    """Score predictions per split (keyed by split id or ground-truth attribute). Each value is a CompCon
    result (object or dict with ``kind``) or ``{"attributes": [...], "descriptions": [[...], ...]}`` (see
    :func:`normalise_prediction`). ``k``: top-k scores use the first ``k`` predictions (``k >= 1``)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise OptionError(f"k must be >= 1, got {k!r}")
    k = int(k)
    if not isinstance(predictions, Mapping) or not predictions:
        raise InputError("predictions must be a non-empty mapping split -> prediction")
    splits = load_id2_splits() if splits is None else splits
    templates = load_templates(template_dir)
    rows, failures = [], []
    items = list(predictions.items())
    for key, pred in track(
        items, total=len(items), description="judging", enabled=progress_enabled(progress)
    ):
        split = _match_split(key, splits)
        if split is None:
            raise InputError(
                f"prediction key {key!r} matches no ID^2 split (use an id 0-{len(splits) - 1} or the "
                "split's attribute)"
            )
        rows.append(judge_split(judge, split, normalise_prediction(key, pred), k=k, templates=templates,
                                reasks=reasks, failures=failures))
    summary: dict[str, Any] = {"n_splits": len(rows)}
    for name in ("attribute_top1", f"attribute_top{k}", "description_top1", f"description_top{k}"):
        summary[name] = float(np.mean([r[name] for r in rows])) if rows else 0.0
    judge_info = (
        judge.describe() if hasattr(judge, "describe") else {"model": getattr(judge, "model", "judge")}
    )
    return CompConEvaluation(
        summary=summary,
        per_split=rows,
        judge=judge_info,
        config={"k": k, "rating_to_score": "(rating - 1) / 2", "reasks": reasks},
        failures=failures,
    )


def id2_prompt_pairs(
    llm: ChatModel, split: Mapping[str, Any], *, template_dir: str | None = None, reasks: int = 2
) -> list[tuple[str, str]]:
    """Appendix D.2: five (original, altered) prompt pairs for an ID^2 split (dataset-creation prompt)."""
    templates = load_templates(template_dir)
    tup = f"[({', '.join(json.dumps(c) for c in split['concepts'])}), {json.dumps(split['attribute'])}]"
    text = render(templates["dataset_generation"], semantic_attribute_set=tup)
    return ask(
        llm,
        [user_message(text)],
        parse_prompt_pairs,
        what=f"ID^2 prompts for split {split.get('id')}",
        reasks=reasks,
    )[0]
