"""The K-way PromptSplit page: the verdict, the K x K distance matrix with family-wise significance, each
model against the rest (its deviating prompts and its strongest samples against the others'), then every
comparison's modes folded; and its compact summary (``repr`` / notebook table)."""

from __future__ import annotations

from typing import Any

from ..stats.intervals import format_p
from .common import finish, notes_block, run_details
from .compare_view import compare_view, kway_sets
from .core import renderer
from .descriptions import deviation_blocks, facet_verdicts, quality_block
from .explore import views_note
from .facets import facets_block
from .html import Page, details, el, fmt, p, snippet, table
from .summary import summary


def _matrix(r: Any) -> Any:
    alpha = r.significance.get("alpha")
    rows = []
    for a, name in enumerate(r.names):
        cells = []
        for b in range(len(r.names)):
            if a == b:
                cells.append("–")
                continue
            pv = r.pair_p_values[a][b]
            sig = pv is not None and alpha is not None and pv <= alpha
            text = fmt(r.distances[a][b]) + ("" if pv is None else f" (p {format_p(pv, alpha)})")
            cells.append(el("b", text) if sig else text)
        rows.append((el("b", name), *cells))
    return table(["test \\ reference", *r.names], rows, numeric=tuple(range(1, len(r.names) + 1)),
                 cls="pp-matrix")


def _samples(items: list[dict]) -> Any:
    return table(["model", "#", "prompt", "output", "score"],
                 [(s["model"], s["index"], snippet(s["prompt"], 80), snippet(s.get("output") or "", 160),
                   fmt(s["score"], 3)) for s in items[:6]], numeric=(1, 4))


def _deviation_block(d: dict, rest_distance: float, named: list | None = None) -> Any:
    head = (f"{d['model']}: distance to {d['against']} {fmt(rest_distance)}; "
            + (f"{d['significant_modes']} significant modes ({d['modes_more']} it produces more, "
               f"{d['modes_less']} less)" if d["tested"] else "not tested")
            + ("; differs from " + ", ".join(d["separated_from"]) if d["separated_from"] else "")
            + (" — deviates from the rest" if d["deviates"] else ""))
    body = list(named or [])
    if d.get("attributed_prompts"):
        body.append(p(f"Prompts on which {d['model']} is the one that deviates (of the models whose "
                      "comparison with the rest lists a prompt, the one with the largest disagreement):"))
        body.append(table(["prompt", "disagreement", "share"],
                          [(snippet(x["prompt"], 120), fmt(x["disagreement"], 3), f"{x['share']:.1%}")
                           for x in d["attributed_prompts"][:15]], numeric=(1, 2)))
    if d["prompts"]:
        body.append(p(f"All prompts of {d['model']}'s comparison with the rest (significant modes):"))
        body.append(table(["prompt", "share of the significant modes"],
                          [(snippet(x["prompt"], 120), f"{x['share']:.1%}") for x in d["prompts"][:10]],
                          numeric=(1,)))
    if d["top_samples"]:
        body += [p(f"Strongest samples of {d['model']} on its mode +{d['mode']['rank']} "
                   f"(eigenvalue {fmt(d['mode']['eigenvalue'])}, p {d['mode']['p_value']:.2g}):"),
                 _samples(d["top_samples"]), p("... and of the others on the same mode:"),
                 _samples(d["others_samples"])]
    body.insert(0, el("button", f"open {d['model']}'s samples against the rest's", type="button",
                      cls="pp-open", data_pp_model=d["model"]))
    return el("div", details(head, *body, open_=d["deviates"]), data_pp_item=True, data_pp_group=d["model"])


def _prompt_table(r: Any, view: dict) -> Any:
    """Every prompt with each model's number of samples and the share of its deviation attributed to it;
    a row opens the prompt's outputs of all K models side by side."""
    rows, attrs = [], []
    for k, pr in enumerate(view["prompts"][:500]):
        dev = pr["dev"]
        lead = max(dev, key=lambda m: dev[m] or 0) if dev else None
        rows.append((snippet(pr["prompt"], 120), *[pr["n"].get(m, "–") for m in r.names],
                     f"{lead} ({dev[lead]:.1%})" if lead and dev[lead] is not None else "–"))
        attrs.append({"data_pp_prompt": k, "data_pp_item": True})
    return table(["prompt", *[f"n {m}" for m in r.names], "deviating model (share)"], rows,
                 numeric=tuple(range(1, len(r.names) + 1)), row_attrs=attrs)


def _quality_ids(r: Any) -> list[str]:
    """The findings of ``promptprism quality`` that are not a model against the rest: the pairs, then every
    prompt."""
    quality = getattr(r, "quality", None) or {}
    ids = [e["id"] for rec in (quality, quality.get("judge") or {}) for e in rec.get("findings", [])]
    ids += [quality["overall"]["id"]] if isinstance(quality.get("overall"), dict) else []
    return [i for i in dict.fromkeys(ids) if not i.endswith(" vs rest")]


def _comparison_row(c: Any) -> tuple:
    sig = c.significance or {}
    return (f"{c.config['test']} vs {c.config['reference']}", fmt(c.distance),
            sig.get("n_significant", "–"),
            "" if sig.get("p_largest") is None else format_p(sig["p_largest"], sig.get("alpha")),
            "; ".join(x["prompt"] for x in c.prompt_ranking[:3]))


@renderer("promptsplit_kway")
def render_kway(result: Any, *, inputs: Any = None, base_dir: Any = None, notes: list[str] | None = None,
                **_: Any) -> str:
    """The K-way PromptSplit report page; ``inputs``: the K PairedSets by model name (outputs per prompt)."""
    r = result
    notes = [*(getattr(r, "notes", None) or []), *(notes or [])]  # (the fit's caveats first)
    view = compare_view(r, kway_sets(r, inputs, notes), base_dir)
    page = Page(f"K-way PromptSplit: {len(r.names)} models",
                f"{', '.join(r.names)} · {r.method} route · {sum(r.n_samples):,} samples · seed {r.seed}")
    page.add("Verdict", p(el("b", r.verdict), cls="pp-verdict"), notes_block(notes),
             p("Row a, column b: ||Λ||²_F of Λ = C_a − η C_b (the PromptSplit distance) and the smallest "
               "family-wise p-value among that pair's modes; bold = significant. The family is every mode "
               "of every pair and of each model against the pooled others."), _matrix(r))
    page.add("Each model against the rest",
             p("A prompt is attributed to the model whose comparison with the rest disagrees most on it (a "
               "deviating model also shows, diluted, in every other model's comparison with a rest that "
               "holds it); a model deviates when it differs significantly from the rest and another model, "
               "at least half of its disagreement with the rest on prompts attributed to it."),
             [_deviation_block(d, dist, [quality_block(r, f"{d['model']} vs rest"),
                                         *deviation_blocks(r, d["model"])])
              for d, dist in zip(r.deviations, r.rest_distances, strict=True)])
    verdicts = [(f, quality_block(r, f)) for f in _quality_ids(r)]
    if verdicts:
        page.add("Who is closer to real data, who the judge prefers",
                 [el("div", p(el("b", f)), block) for f, block in verdicts if block is not None])
    page.add("Prompts", p("Click a prompt to see all models' outputs for it side by side; a deviation's "
                          "button opens that model's strongest samples against the rest's.", cls="muted"),
             views_note(view["left_out"]), _prompt_table(r, view))
    if view.get("facets"):
        page.add("Your metadata", facets_block(view["facets"], view["names"], with_share=False,
                                                verdicts=facet_verdicts(r)),
                 anchor="facets")
    rows = [_comparison_row(c) for c in r.pairs + r.one_vs_rest]
    page.add("Comparisons", table(["comparison", "‖Λ‖²_F", "significant modes", "p (largest mode)",
                                   "top prompts"], rows, numeric=(1, 2, 3)),
             run_details(r, [("significance", str(r.significance))]))
    return finish(page, kind="promptsplit_kway", result=r, view=view, embed_result=False)


@summary("promptsplit_kway")
def kway_summary(r: Any):
    """Title, headline rows and the distance table of a K-way result (``repr`` and notebooks)."""
    rows = [("models", ", ".join(f"{n} ({k:,})" for n, k in zip(r.names, r.n_samples, strict=True))),
            ("route", f"{r.method}, {r.config.get('kernel', '?')} kernel, seed {r.seed}"),
            ("pairs", f"{len(r.pairs)}; significant: "
                      + (", ".join(f"{a}–{b}" for a, b in r.significant_pairs) or "none")),
            ("verdict", r.verdict)]
    extra = table(["", *r.names], [(n, *[fmt(v, 3) for v in row]) for n, row in zip(r.names, r.distances,
                                                                                      strict=True)])
    return "K-way PromptSplit result", rows, extra
