"""The CompCon page: the attribute ranking first, then for each described attribute its best description,
the diverging prompts with the images of both models, and the descriptions iteration by iteration.

Images (or, for text CompCon, answers) come from the two sources: the ones the command used
(``inputs={'A': source, 'B': source}``), or, for ``promptprism report DIR``, the image banks named in
``models`` when they still exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import figures
from .answer import answer_block
from .common import finish, mapping, notes_block, run_details, safe_figure
from .compcon_samples import IMAGES_PER_MODEL, attribute_view, prompt_row
from .core import reloader, renderer
from .html import Page, cards, details, el, fmt, fnum, note, p, snippet, table

#: diverging prompts shown per attribute
PROMPTS_SHOWN = 6
#: attributes in the ranking chart
CHART_ATTRIBUTES = 15


def _best_description(d: dict, best: dict) -> Any:
    """The best description of an attribute's diverging prompts, or a note saying why there is none."""
    if not best.get("description"):
        return note(f"no description: {d.get('stop_reason') or 'none was produced'}")
    score = (
        "unscored (an image bank cannot render new prompts)"
        if best.get("score") is None
        else f"{fnum(best['score'], '.0%')} of its generated prompts diverge"
    )
    return el(
        "div",
        el("h3", "Best description"),
        p(el("b", best["description"])),
        p(
            f"key concepts: {', '.join(best.get('key_concepts') or []) or '–'} · iteration "
            f"{best.get('iteration')} · {score}",
            cls="muted",
        ),
        cls="card pos",
    )


def _diverging_prompts(prompts: list, sources: dict, names: dict[str, str]) -> list:
    """The first diverging prompts with both models' images (or the prompts alone), and all of them."""
    if not prompts:
        return []
    out: list[Any] = [
        el(
            "h3",
            f"Diverging prompts ({len(prompts)}; first {min(len(prompts), PROMPTS_SHOWN)} "
            f"shown with up to {IMAGES_PER_MODEL} samples of each model)",
        )
    ]
    if sources:
        out += [prompt_row(pr, sources, names) for pr in prompts[:PROMPTS_SHOWN]]
    else:
        out.append(
            note(
                "The images are not at hand (the image banks named in the result are gone, or the "
                "models were Python generators): prompts only."
            )
        )
        out.append(el("ul", [el("li", pr) for pr in prompts[:PROMPTS_SHOWN]]))
    if len(prompts) > PROMPTS_SHOWN:
        out.append(
            details(f"all {len(prompts)} diverging prompts", el("ul", [el("li", pr) for pr in prompts]))
        )
    return out


def _iterations_block(d: dict, best: dict) -> list:
    """The descriptions iteration by iteration (the best one shaded) and the prompts written from them."""
    rows, hl = [], []
    for i, it in enumerate(d.get("iterations") or []):
        n_gen = len(it.get("generated_prompts") or [])
        n_div = sum(bool(x) for x in it.get("diverging") or [])
        if best and it.get("iteration") == best.get("iteration"):
            hl.append(i)
        rows.append(
            [
                it.get("iteration"),
                it.get("description") or el("i", it.get("error") or "–"),
                ", ".join(it.get("key_concepts") or []),
                fnum(it.get("score"), ".0%"),
                f"{n_div}/{n_gen}" if d.get("scored") else f"{n_gen} (not rendered)",
            ]
        )
    out: list[Any] = [
        el("h3", "Descriptions per iteration"),
        table(
            ["iteration", "description", "key concepts", "score", "diverging / generated"],
            rows,
            numeric=(0, 3),
            highlight=hl,
        )
        if rows
        else p("no iterations", cls="muted"),
        p(
            f"{d.get('n_iterations', len(rows))} iteration(s); {d.get('stop_reason') or ''}. Shaded: the "
            "best iteration. Score: the fraction of the prompts written from the description whose images "
            "diverge (A shows the attribute, B does not).",
            cls="muted small",
        ),
    ]
    gen = [
        (it.get("iteration"), pr, "yes" if flag else "no")
        for it in d.get("iterations") or []
        for pr, flag in zip(
            it.get("generated_prompts") or [],
            (it.get("diverging") or []) + [False] * len(it.get("generated_prompts") or []),
            strict=False,
        )
    ]
    if gen:
        out.append(
            details(f"generated prompts ({len(gen)})", table(["iteration", "prompt", "diverges"], gen))
        )
    return out


def _description_block(d: dict, attr: dict | None, sources: dict, names: dict[str, str]) -> list:
    """One described attribute: its best description, diverging prompts and iterations."""
    best = d.get("best") or {}
    prompts = list((attr or {}).get("diverging_prompts") or d.get("diverging_set") or [])
    return [
        _best_description(d, best),
        *_diverging_prompts(prompts, sources, names),
        *_iterations_block(d, best),
    ]


def _model_names(models: dict) -> dict[str, str]:
    """The display names of models A and B (told apart when they are the same)."""
    names = {k: str((models.get(k) or {}).get("name") or k) for k in ("A", "B")}
    if names["A"] == names["B"]:
        names = {"A": f"A ({names['A']})", "B": f"B ({names['B']})"}
    return names


def compcon_verdict(result: Any, names: dict[str, str]) -> str:
    """One sentence: the top attribute model A shows and model B does not, on how many prompts, and whether
    it held on the held-out prompts; or that none was found."""
    attrs = result.attributes or []
    if not attrs:
        return f"No attribute was found that {names['A']} shows and {names['B']} does not."
    top, held = attrs[0], (attrs[0].get("held_out") or {})
    check = ("" if "verified" not in held else
             "; it holds on the held-out prompts" if held.get("verified") else
             "; it does not hold on the held-out prompts")
    return (f"{names['A']} shows {str(top.get('attribute'))!r} where {names['B']} does not, on "
            f"{fmt(top.get('n_diverging'))} of {fmt(top.get('n_prompts'))} prompts "
            f"({fnum(top.get('score'), '.0%')}){check}.")


def _overview(result: Any, notes: list[str]) -> list:
    """Notes, the run's cards, the top attribute and where the run started from."""
    models = result.models or {}
    attrs = result.attributes or []
    described = [d for d in result.descriptions or [] if d.get("best")]
    llm, vlm = models.get("llm") or {}, models.get("vlm") or {}
    text = getattr(result, "modality", "image") == "text"
    verifier = models.get("verifier") or {}
    overview = [
        answer_block(compcon_verdict(result, _model_names(models)), [], []),
        notes_block(notes),
        cards(
            [
                (f"{result.n_prompts:,}", f"prompts with {'answers' if text else 'images'} of both models"),
                (f"{len(attrs)}", "attributes proposed and verified"),
                (f"{sum(bool((a.get('held_out') or {}).get('verified')) for a in attrs)}",
                 "hold on held-out prompts"),
                (f"{len(described)}", "described"),
                (snippet(llm.get("model", "?"), 30), "language model"),
                (snippet(vlm.get("model", "?"), 30), "discovery model" if text else "vision-language model"),
                (snippet(str(verifier.get("judge") or verifier.get("text_encoder") or "?"), 30), "verifier")
                if text else (snippet(models.get("clip", "?"), 30), "CLIP"),
            ]
        ),
    ]
    if result.seeded_from:
        sf = result.seeded_from
        overview.append(
            p(
                f"Started from PromptSplit mode {sf.get('mode')} ({len(sf.get('prompts') or [])} "
                f"prompts{', models swapped' if sf.get('swapped') else ''}).",
                cls="muted",
            )
        )
    return overview


RANKING_HEADERS = ["#", "attribute", "diverging", "score", "mean frac. A", "mean frac. B", "threshold",
                   "held-out A-only/B-only", "held-out p (Holm)"]


def _add_ranking(page: Page, attrs: list[dict]) -> None:
    """The attribute ranking: a chart of the top scores beside the first 25 rows, all rows folded."""
    shown = attrs[:CHART_ATTRIBUTES]
    chart = (
        safe_figure(
            figures.hbars,
            [a["attribute"] for a in shown],
            [a["score"] for a in shown],
            xlabel="fraction of prompts where A shows it and B does not",
            limit=1.0,
            alt="attribute ranking",
        )
        if shown
        else p("no attributes", cls="muted")
    )
    rows = [
        (
            a["rank"],
            a["attribute"],
            f"{a['n_diverging']}/{a['n_prompts']}",
            fnum(a.get("score"), ".0%"),
            fmt(a.get("mean_fraction_a"), 3),
            fmt(a.get("mean_fraction_b"), 3),
            fmt(a.get("threshold"), 3),
            _held_out_counts(a.get("held_out")),
            fnum((a.get("held_out") or {}).get("p_adjusted"), ".3g"),
        )
        for a in attrs
    ]
    attr_rows = [{"data_pp_item": True, "data_pp_attr": i} for i in range(len(attrs))]
    page.add(
        "Attribute ranking",
        el(
            "div",
            chart,
            el(
                "div",
                table(RANKING_HEADERS, rows[:25], numeric=(0, 2, 3, 4, 5, 6, 8), row_attrs=attr_rows[:25]),
                p(
                    "Fractions: share of a prompt's samples the verifier finds the attribute in, "
                    "averaged over prompts. Held-out: prompts discovery never saw where only A (only B) "
                    "shows it, and the exact sign test's p-value, Holm-adjusted over the attributes.",
                    cls="muted small",
                ),
            ),
            cls="grid2",
        ),
        details(
            f"all {len(rows)} attributes",
            table(RANKING_HEADERS, rows, numeric=(0, 2, 3, 4, 5, 6, 8), row_attrs=attr_rows),
        )
        if len(rows) > 25
        else None,
        anchor="attributes",
    )


def _held_out_counts(held: dict | None) -> str:
    """'A-only/B-only of n' for the held-out check, or a dash for a result from before it."""
    if not held:
        return "–"
    return f"{held['a_only']}/{held['b_only']} of {held['n_prompts']}"


def _run_extras(result: Any) -> list:
    """The attribute discovery, the answers given up on and the prompts skipped, folded."""
    disc = [
        (x.get("prompt"), ", ".join(x.get("attributes") or []) or el("i", x.get("error") or "none"))
        for x in result.discovery or []
    ]
    extra = [
        details(
            f"attribute discovery: {len(disc)} sampled prompts",
            table(["prompt", "attributes proposed"], disc),
        )
    ]
    if result.failures:
        failures = [
            (f.get("stage"), f.get("prompt") or f.get("attribute") or "", snippet(f.get("error"), 300))
            for f in result.failures
        ]
        extra.append(
            details(
                f"{len(result.failures)} malformed answer(s) given up on",
                table(["stage", "where", "error"], failures),
            )
        )
    if result.skipped_prompts:
        extra.append(
            details(
                "prompts skipped (no images)",
                table(["model", "prompts"], [(k, "; ".join(v)) for k, v in result.skipped_prompts.items()]),
            )
        )
    return extra


@renderer("compcon")
def render_compcon(result: Any, *, inputs: Any = None, notes: list[str] | None = None, **_: Any) -> str:
    """The CompCon report page (see the module docstring)."""
    notes = list(notes or [])
    models = result.models or {}
    names = _model_names(models)
    sources = {k: v for k, v in mapping(inputs).items() if k in ("A", "B") and v is not None}
    what = "answers" if getattr(result, "modality", "image") == "text" else "images"
    page = Page(
        f"CompCon · what {names['A']} shows and {names['B']} does not",
        f"{'Attributes' if what == 'answers' else 'Visual attributes'} found in model A's {what} and not in "
        f"model B's, the prompts that trigger them, and a description of those prompts in words.",
    )
    attrs = result.attributes or []
    page.add("Overview", *_overview(result, notes))
    _add_ranking(page, attrs)
    by_name = {a["attribute"]: a for a in attrs}
    for i, d in enumerate(result.descriptions or [], 1):
        page.add(
            f"Attribute {i}: {d.get('attribute')}",
            *_description_block(d, by_name.get(d.get("attribute")), sources, names),
            anchor=f"attr{i}",
        )
    if not result.descriptions and attrs:
        top = attrs[0]
        page.add(
            "Diverging prompts", *_description_block({"attribute": top["attribute"]}, top, sources, names)
        )
    page.add(
        "Run details",
        *_run_extras(result),
        run_details(result, [("calibration", result.calibration), ("models", models)]),
    )
    return finish(page, kind="CompCon", result=result, view=attribute_view(attrs, sources, names))


@reloader("compcon")
def reload_compcon(result: Any, result_dir: Path) -> tuple[dict, None, list[str]]:
    """The two image banks again, from ``models['A'|'B']['source']`` when they still exist."""
    from ..errors import PromptPrismError
    from ..methods.compcon.image_sources import ImageBank

    inputs, notes = {}, []
    for key in ("A", "B"):
        m = (result.models or {}).get(key) or {}
        src = m.get("source")
        if m.get("type") == "chat":
            continue  # text CompCon with a chat model: the answers are not re-asked for a report
        if m.get("type") == "answer table" and src:
            from ..methods.compcon.text_sources import AnswerTable

            try:
                inputs[key] = AnswerTable.load(src, name=m.get("name") or key)
            except PromptPrismError as exc:
                notes.append(f"model {key}: {exc}; its answers are not shown")
            continue
        if m.get("type") != "bank" or not src:
            notes.append(
                f"model {key} ({m.get('name', key)}) was a generator, not an image bank: its images "
                "are not shown here"
            )
            continue
        try:
            inputs[key] = ImageBank.load(src, name=m.get("name") or key)
        except PromptPrismError as exc:
            notes.append(f"model {key}: {exc}; its images are not shown")
    return inputs, None, notes
