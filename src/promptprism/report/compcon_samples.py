"""The two models' samples on the CompCon page: image thumbnails (a bank's paths or a generator's images),
or, for text CompCon, the models' first answers as text; and the data of the attribute view."""

from __future__ import annotations

from typing import Any

from . import figures
from .common import thumb
from .html import data_uri, el, p, snippet

#: samples shown per model for each prompt
IMAGES_PER_MODEL = 3
#: characters of each answer shown (text CompCon)
ANSWER_CHARS = 400
#: diverging prompts with thumbnails in the attribute view
VIEW_PROMPTS = 200
ATTRIBUTE_FIELDS = ("attribute", "rank", "score", "n_diverging", "n_prompts", "mean_fraction_a",
                    "mean_fraction_b", "threshold")


def _images(source: Any, prompt: str, k: int) -> tuple[list, str | None]:
    """Up to ``k`` thumbnails of ``source``'s images for ``prompt``: paths of a bank, or a generator's
    (memoised) images; none for a text source (its answers are shown as text, :func:`_prompt_row`)."""
    if hasattr(source, "samples"):
        return [], "answers are shown on the page"
    try:
        if hasattr(source, "image_paths") and not getattr(source, "can_generate", False):
            items = source.image_paths(prompt)[:k]
        else:
            items = list(source.images(prompt))[:k]
        return [figures.pil_thumbnail(it) for it in items], None
    except figures.FiguresUnavailable as exc:
        return [], str(exc)
    except Exception as exc:  # a user's generator or a missing file: the page says so and goes on
        return [], f"{type(exc).__name__}: {exc}"


def prompt_row(prompt: str, sources: dict[str, Any], names: dict[str, str]) -> Any:
    """One prompt with each model's samples beside it (thumbnails, or answers as text)."""
    cols = []
    for key in ("A", "B"):
        src = sources.get(key)
        if src is None:
            continue
        if hasattr(src, "samples"):  # text CompCon: the model's first answers
            answers = _answers(src, prompt)
            body = el("div", [p(snippet(a, ANSWER_CHARS), cls="small") for a in answers]
                      or p("no answer", cls="muted small"))
            cols.append(el("div", el("h4", f"{names[key]}"), body, cls="side"))
            continue
        thumbs, why = _images(src, prompt, IMAGES_PER_MODEL)
        body = (
            el("div", [thumb(t, "", title=f"{names[key]}: {prompt}") for t in thumbs], cls="gallery")
            if thumbs
            else p(why or "no images", cls="muted small")
        )
        cols.append(el("div", el("h4", f"{names[key]}"), body, cls="side"))
    return el("div", el("div", el("b", prompt)), el("div", cols, cls="grid2") if cols else None, cls="card")


def _answers(source: Any, prompt: str) -> list[str]:
    """Up to ``IMAGES_PER_MODEL`` answers of a text source (none when it fails: the page goes on)."""
    try:
        return [str(a) for a in source.samples(prompt)[:IMAGES_PER_MODEL]]
    except Exception:  # a chat endpoint gone since the run: the prompt is still shown
        return []


def attribute_view(attrs: list[dict], sources: dict[str, Any], names: dict[str, str]) -> dict:
    """The data of the attribute view: per attribute its numbers and diverging prompts, per prompt up to
    ``IMAGES_PER_MODEL`` thumbnails of each model (the first ``VIEW_PROMPTS`` prompts)."""
    prompts: dict[str, dict] = {}
    thumbs: list[str] = []
    out = []
    for a in attrs:
        ids = []
        for pr in a.get("diverging_prompts") or []:
            if pr not in prompts and len(prompts) < VIEW_PROMPTS:
                entry: dict[str, Any] = {"prompt": pr}
                for key, src in sources.items():
                    visuals, why = _images(src, pr, IMAGES_PER_MODEL)
                    entry[key] = list(range(len(thumbs), len(thumbs) + len(visuals)))
                    thumbs += [data_uri(v[0], v[1]) for v in visuals]
                    entry[f"{key}_why"] = why
                prompts[pr] = entry
            if pr in prompts:
                ids.append(list(prompts).index(pr))
        out.append({k: a.get(k) for k in ATTRIBUTE_FIELDS} | {"prompts": ids})
    return {"names": names, "attributes": out, "prompts": list(prompts.values()), "thumbs": thumbs}
