"""The Scendi page: the Scendi / Vendi / RKE table (several models side by side), then per model its
model-driven clusters (eigenvectors of Λ_I) as galleries next to the unconditioned ones (of C_II).

Cluster samples whose output is an image file become thumbnails (paths as in result.json, or relative to the
input's folder); array images can be passed as ``images={model name: array}``; other outputs are text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import figures
from .common import finish, mapping, notes_block, run_details, safe_figure, text_card, thumb, visual_of
from .core import reloader, renderer
from .html import Page, bar, el, fmt, note, p, table

#: samples shown per cluster
SAMPLES_PER_CLUSTER = 6


def _models(result: Any) -> list[Any]:
    return list(result.models) if getattr(result, "kind", "") == "scendi_comparison" else [result]


def _cluster_block(c: Any, images: Any, bases: list[Path]) -> Any:
    cells = []
    for s in c.top_samples[:SAMPLES_PER_CLUSTER]:
        caption = el("div", el("div", f"score {s.score:+.3g}"), el("div", s.prompt))
        visual, why = visual_of(s.output, index=s.index, images=images, bases=bases)
        cells.append(
            thumb(visual, caption, title=f"{s.prompt} | {s.output or ''}")
            if visual is not None
            else text_card(why or (s.output if s.output is not None else f"row {s.index}"), caption)
        )
    body = el("div", cells, cls="gallery") if any('class="thumb"' in x for x in cells) else el("div", cells)
    return el(
        "div",
        el(
            "h4",
            f"#{c.rank} · {c.share:.1%} of the trace",
            el("span", f" · eigenvalue {c.eigenvalue:.4g}", cls="muted small"),
        ),
        body,
        cls="side",
    )


def _model_section(r: Any, images: Any, bases: list[Path]) -> list:
    out: list[Any] = [
        p(
            f"{r.n:,} samples · model-driven share {r.model_share:.1%} of the output variance "
            f"(prompt-driven {r.prompt_share:.1%}).",
            cls="muted",
        )
    ]
    out += [note(w) for w in r.warnings or []]
    k = max(len(r.clusters), len(r.clusters_unconditioned))
    if k == 0:
        return out + [p("no clusters in the result", cls="muted")]
    header = el(
        "div",
        el(
            "h3",
            "Model-driven clusters (Λ_I)",
            el("div", "what the model varies beyond its prompts", cls="muted small"),
        ),
        el(
            "h3",
            "Unconditioned clusters (C_II)",
            el("div", "the outputs' own clusters, prompts ignored", cls="muted small"),
        ),
        cls="grid2",
    )
    rows = []
    for i in range(k):
        left = _cluster_block(r.clusters[i], images, bases) if i < len(r.clusters) else el("div")
        right = (
            _cluster_block(r.clusters_unconditioned[i], images, bases)
            if i < len(r.clusters_unconditioned)
            else el("div")
        )
        rows.append(el("div", left, right, cls="grid2 card"))
    return out + [header, rows]


@renderer("scendi")
@renderer("scendi_comparison")
def render_scendi(
    result: Any,
    *,
    inputs: Any = None,
    images: Any = None,
    base_dir: Any = None,
    notes: list[str] | None = None,
    **_: Any,
) -> str:
    """The Scendi report page, for one model (kind 'scendi') or several ('scendi_comparison')."""
    models = _models(result)
    names = [m.name for m in models]
    which = ", ".join(names) if len(names) <= 3 else f"{len(names)} models"
    page = Page(
        f"Scendi · prompt-aware diversity of {which}",
        "How diverse each model's outputs are because of the model itself (Scendi, from Λ_I) rather than "
        "because of its prompts (Scendi_T, from Λ_T), beside the prompt-unaware Vendi and RKE.",
    )
    top = max((m.model_share for m in models), default=1.0) or 1.0
    rows = [
        (
            m.name,
            f"{m.n:,}",
            fmt(m.scendi),
            fmt(m.scendi_prompt),
            fmt(m.scendi_order2),
            fmt(m.vendi),
            fmt(m.rke),
            el("span", bar(m.model_share / top), f"{m.model_share:.1%}"),
        )
        for m in models
    ]
    scores = table(
        ["model", "n", "Scendi", "Scendi_T (prompt)", "Scendi order 2", "Vendi", "RKE", "model share"],
        rows,
        numeric=range(1, 8),
    )
    chart = safe_figure(
        figures.grouped_bars,
        names,
        {
            "Scendi (model-driven)": [m.scendi for m in models],
            "Scendi_T (prompt-driven)": [m.scendi_prompt for m in models],
            "Vendi": [m.vendi for m in models],
            "RKE": [m.rke for m in models],
        },
        ylabel="effective number of modes",
        alt="Scendi, Vendi and RKE per model",
        caption="Exponentiated entropies: an effective number of distinct modes. Vendi counts all "
        "output diversity; Scendi only what remains once the prompts are accounted for.",
    )
    cfg = models[0].config if models else {}
    page.add(
        "Overview",
        notes_block(notes),
        el(
            "div",
            el(
                "div",
                el("h3", "Scores"),
                scores,
                p(
                    f"{cfg.get('kernel', '?')} kernel; model share = Tr(Λ_I): the part of the output "
                    "kernel covariance the prompts do not explain.",
                    cls="muted small",
                ),
            ),
            el("div", chart),
            cls="grid2",
        ),
    )
    sources = mapping(inputs)
    for m in models:
        src = getattr(sources.get(m.name), "source", None) or m.config.get("input")
        bases = [Path(src).parent] if src and ("/" in str(src) or "\\" in str(src)) else []
        if base_dir is not None:
            bases.append(Path(base_dir))
        page.add(
            f"Clusters · {m.name}",
            *_model_section(m, mapping(images).get(m.name), bases),
            anchor=f"clusters-{names.index(m.name)}",
        )
    for m in models:
        page.add(
            f"Run details · {m.name}" if len(models) > 1 else "Run details",
            run_details(m),
            anchor=f"details-{names.index(m.name)}",
        )
    return finish(page, kind="Scendi")


@reloader("scendi")
@reloader("scendi_comparison")
def reload_scendi(result: Any, result_dir: Path) -> tuple[None, None, list[str]]:
    """Nothing to read again: cluster samples carry their outputs (image paths are found where they are)."""
    return None, None, []
