"""CompCon's description step (paper section 3, supplement C.1-C.3): per attribute, the LLM describes the
prompts that trigger it and proposes new ones; the new prompts are rendered, verified with CLIP and scored.

:func:`sample_prompts` is the sampling of C.2, :func:`describe_attribute` the loop over iterations with the
early stopping of C.3, :func:`description_round` one iteration (description, prompt generation) and
:func:`score_prompts` its scoring; :class:`DescriptionTarget` is the attribute they describe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..._progress import track
from ...llm.answers import parse_description, parse_prompt_list
from ...llm.conversation import MalformedAnswerError, ask, user_message
from . import verify
from .templates import render


class DescriptionOptions(Protocol):
    """What the description step reads of its estimator (:class:`~.pipeline.CompCon` is one)."""

    llm: Any
    templates: Any
    batch_size: int
    n_generated: int
    iterations: int
    early_stop_iterations: int
    early_stop_score: float
    min_fraction: float
    reasks: int
    modality: Any  #: :class:`~.modality.Modality`: the templates, the samples and their scores

#: the fields of an iteration kept as an attribute's best description
BEST_KEYS = ("iteration", "description", "key_concepts", "score")


def sample_prompts(
    rng: np.random.Generator, previous: list[str], pool: list[str], *, batch_size: int
) -> list[str]:
    """C.2: up to ``batch_size`` (B) prompts from the previous iteration (random order when more), then
    random prompts from the bank ``pool`` to fill up to B."""
    b = batch_size
    prev = list(dict.fromkeys(previous))
    if len(prev) > b:
        prev = [prev[i] for i in sorted(rng.choice(len(prev), size=b, replace=False))]
    rest = [p for p in pool if p not in set(prev)]
    n_fill = min(b - len(prev), len(rest))
    fill = [rest[i] for i in sorted(rng.choice(len(rest), size=n_fill, replace=False))] if n_fill else []
    return prev + fill


@dataclass(frozen=True)
class DescriptionTarget:
    """One attribute to describe: its name and threshold ``tau``, the two sources (images or answers) and
    whether both can answer new prompts (``scored``; else one unscored iteration)."""

    attribute: str
    tau: float
    model_a: Any
    model_b: Any
    scored: bool


def describe_attribute(est: DescriptionOptions, target: DescriptionTarget, *, d_set: list[str],
                       n_set: list[str], rng: np.random.Generator, failures: list[dict], show: bool) -> dict:
    """Describe one attribute over iterations (C.2 sampling, C.3 early stopping) with the options of ``est``.

    ``d_set`` / ``n_set``: the diverging and non-diverging prompts. Malformed answers are recorded in the
    iteration and appended to ``failures``. Returns the entry of ``CompConResult.descriptions``.
    """
    attr, scored = target.attribute, target.scored
    entry: dict[str, Any] = {
        "attribute": attr,
        "diverging_set": d_set,
        "non_diverging_set_size": len(n_set),
        "iterations": [],
        "best": None,
        "n_iterations": 0,
        "stopped_early": False,
        "stop_reason": "",
        "scored": scored,
    }
    if not d_set:
        entry["stop_reason"] = "no diverging prompts to describe"
        return entry
    prev_div: list[str] = []
    prev_non: list[str] = []
    best_score = -1.0
    n_iter = est.iterations if scored else 1
    for it in track(range(n_iter), total=n_iter, description=f"describing {attr!r}", enabled=show):
        record = _iteration(est, target, it, sample_prompts(rng, prev_div, d_set, batch_size=est.batch_size),
                            sample_prompts(rng, prev_non, n_set, batch_size=est.batch_size), failures)
        entry["iterations"].append(record)
        entry["n_iterations"] = it + 1
        prev_div = [p for p, d in zip(record["generated_prompts"], record["diverging"], strict=True) if d]
        prev_non = [p for p, d in zip(record["generated_prompts"], record["diverging"], strict=True) if not d]
        if record["score"] is not None and record["score"] > best_score:
            best_score = record["score"]
            entry["best"] = {k: record[k] for k in BEST_KEYS}
        if not scored:
            entry["stop_reason"] = (
                "model A or B is a fixed bank (images or answers): the generated prompts cannot be "
                "answered, so descriptions are not scored and not iterated"
            )
            if record["description"] is not None:
                entry["best"] = {k: record[k] for k in BEST_KEYS}
            break
        if it + 1 >= est.early_stop_iterations and best_score <= est.early_stop_score:
            if it + 1 < n_iter:
                entry["stopped_early"] = True
            entry["stop_reason"] = (
                f"early stop: best score {max(best_score, 0.0):.3f} <= "
                f"{est.early_stop_score:g} after {it + 1} iterations"
            )
            break
    else:
        entry["stop_reason"] = f"ran all {n_iter} iterations"
    return entry


def _iteration(est: DescriptionOptions, target: DescriptionTarget, it: int, sampled_d: list[str],
               sampled_n: list[str], failures: list[dict]) -> dict:
    """One iteration's record: :func:`description_round` on the sampled prompts, or its error (a malformed
    answer, also appended to ``failures``)."""
    record: dict[str, Any] = {
        "iteration": it,
        "sampled_diverging": sampled_d,
        "sampled_non_diverging": sampled_n,
        "description": None,
        "key_concepts": [],
        "generated_prompts": [],
        "diverging": [],
        "score": None,
        "error": None,
    }
    try:
        record.update(description_round(est, target, sampled_d=sampled_d, sampled_n=sampled_n))
    except MalformedAnswerError as exc:
        record["error"] = str(exc)
        failures.append({"stage": "description", "attribute": target.attribute, "iteration": it,
                         "error": str(exc), "answers": exc.answers})
    return record


def description_round(est: DescriptionOptions, target: DescriptionTarget, *, sampled_d: list[str],
                      sampled_n: list[str]) -> dict:
    """One iteration (C.1): the LLM describes ``sampled_d`` against ``sampled_n`` and, in the same
    conversation, generates ``est.n_generated`` prompts; when ``target.scored``, they are rendered with both
    models and the score is the fraction diverging (:func:`.verify.description_score`). Returns the
    iteration's ``description``, ``key_concepts``, ``generated_prompts``, ``diverging`` (and ``score``,
    ``n_rendered``).
    """
    attr = target.attribute
    names = est.modality.template_names
    text = render(
        est.templates[names["description"]],
        attribute=attr,
        diverging_prompts="\n".join(sampled_d),
        non_diverging_prompts="\n".join(sampled_n),
    )
    (description, concepts), convo, _ = ask(
        est.llm, [user_message(text)], parse_description, what=f"description for {attr!r}", reasks=est.reasks
    )
    gen = render(est.templates[names["prompt_generation"]], num_prompts=est.n_generated,
                 description=description,
                 attribute=attr)
    prompts, _, _ = ask(
        est.llm, convo + [user_message(gen)], parse_prompt_list, what=f"prompt generation for {attr!r}",
        reasks=est.reasks,
    )
    prompts = prompts[: est.n_generated]
    out: dict[str, Any] = {
        "description": description,
        "key_concepts": concepts,
        "generated_prompts": prompts,
        "diverging": [False] * len(prompts) if not target.scored else [],
    }
    if target.scored:
        out.update(score_prompts(est, target, prompts))
    return out


def score_prompts(est: DescriptionOptions, target: DescriptionTarget, prompts: list[str]) -> dict:
    """The generated ``prompts`` answered (rendered) by both models and verified with the attribute's
    threshold: ``diverging`` per prompt, ``score`` (the fraction diverging) and ``n_rendered``."""
    samples_a = [est.modality.samples(target.model_a, p) for p in prompts]
    samples_b = [est.modality.samples(target.model_b, p) for p in prompts]
    keep = [i for i in range(len(prompts)) if samples_a[i] and samples_b[i]]
    flags = [False] * len(prompts)
    if keep:
        sa, ga = est.modality.scores([samples_a[i] for i in keep], [target.attribute])
        sb, gb = est.modality.scores([samples_b[i] for i in keep], [target.attribute])
        tau = np.array([target.tau])
        d = verify.diverging_prompts(sa, ga, sb, gb, tau, len(keep), est.min_fraction)[:, 0]
        for j, i in enumerate(keep):
            flags[i] = bool(d[j])
    return {"diverging": flags, "score": verify.description_score(flags), "n_rendered": len(keep)}
