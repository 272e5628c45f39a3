"""The Scendi page: the Scendi / Vendi / RKE table (several models side by side), then per model its
model-driven clusters (eigenvectors of Λ_I) as galleries next to the unconditioned ones (of C_II).

Cluster samples whose output is an image file become thumbnails (paths as in result.json, or relative to the
input's folder); array images can be passed as ``images={model name: array}``; other outputs are text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..stats.intervals import format_estimate
from . import figures
from .common import (
    finish,
    image_folders,
    mapping,
    run_details,
    safe_figure,
    text_card,
    thumb,
    visual_of,
)
from .core import reloader, renderer
from .descriptions import description_block, finding_description, quality_block
from .html import Page, bar, data_uri, el, fmt, fnum, num, p, table
from .metrics import reference_section
from .rankings import rankings_block
from .scendi_answer import scendi_answer

#: samples shown per cluster
SAMPLES_PER_CLUSTER = 6


def _models(result: Any) -> list[Any]:
    return list(result.models) if getattr(result, "kind", "") == "scendi_comparison" else [result]


def _cluster_block(c: Any, images: Any, bases: list[Path], view: dict, where: dict) -> Any:
    """A cluster's samples; its data (samples, thumbnails) also goes to ``view`` for the cluster view."""
    cells = []
    cid = len(view["clusters"])
    samples = []
    view["clusters"].append({**where, "rank": c.rank, "share": c.share, "eigenvalue": c.eigenvalue,
                             "samples": samples})
    for s in c.top_samples[:SAMPLES_PER_CLUSTER]:
        caption = el("div", el("div", f"score {fnum(s.score, '+.3g')}"), el("div", s.prompt))
        visual, why = visual_of(s.output, index=s.index, images=images, bases=bases)
        samples.append({"i": s.index, "p": s.prompt, "t": s.output, "sc": s.score})
        if visual is not None:
            samples[-1]["im"] = len(view["thumbs"])
            view["thumbs"].append(data_uri(visual[0], visual[1]))
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
            f"#{c.rank} · {fnum(c.share, '.1%')} of the trace",
            el("span", f" · eigenvalue {fnum(c.eigenvalue, '.4g')}", cls="muted small"),
            data_pp_cluster=cid,
            title="open this cluster beside its counterpart",
        ),
        body,
        cls="side",
    )


def _interval(m: Any, key: str) -> tuple[float, float] | None:
    iv = getattr(m, "intervals", None)
    iv = iv.get(key) if isinstance(iv, dict) else None
    try:
        return (float(iv["low"]), float(iv["high"])) if isinstance(iv, dict) else None
    except (KeyError, TypeError, ValueError):
        return None


def with_interval(m: Any, key: str, *, percent: bool = False) -> str:
    """``m.key`` formatted, followed by its bootstrap interval ``[low, high]`` when the result has one."""
    show = (lambda v: fnum(v, ".1%")) if percent else fmt
    boot = getattr(m, "bootstrap", None)
    validity = boot.get("validity") if isinstance(boot, dict) else None
    flagged = (validity.get("not_calibrated") or []) if isinstance(validity, dict) else []
    return format_estimate(getattr(m, key, None), _interval(m, key), show, calibrated=key not in flagged)


def _overlaps(models: list[Any]) -> Any:
    """Without a ``differences`` record: per pair of models with Scendi intervals, whether they overlap."""
    lines = []
    for i, a in enumerate(models):
        for b in models[i + 1 :]:
            ia, ib = _interval(a, "scendi"), _interval(b, "scendi")
            if ia is None or ib is None:
                continue
            apart = ia[1] < ib[0] or ib[1] < ia[0]
            lines.append(
                f"{a.name} vs {b.name}: Scendi intervals "
                + (
                    "do not overlap: the difference is larger than the intervals"
                    if apart
                    else "overlap: the difference is within the resampling noise"
                )
            )
    return el("div", el("h3", "Differences between models"), [p(x) for x in lines]) if lines else None


def _differences(result: Any) -> Any:
    diffs = [d for d in (getattr(result, "differences", None) or []) if isinstance(d, dict)]
    if not diffs:
        return _overlaps(_models(result)) if len(_models(result)) > 1 else None
    rows = [
        (
            str(d.get("a", "?")),
            str(d.get("b", "?")),
            str(d.get("metric", "?")),
            fmt(d.get("difference")),
            f"[{fmt(d.get('low'))}, {fmt(d.get('high'))}]",
            el("b", "yes") if d.get("separated") else "no: within the noise",
        )
        for d in diffs
    ]
    n_sep = sum(1 for d in diffs if d.get("separated"))
    return el(
        "div",
        el("h3", "Differences between models"),
        table(["a", "b", "metric", "a − b", "interval", "larger than the intervals?"], rows, numeric=(3,)),
        p(
            f"{n_sep} of {len(diffs)} differences are larger than their bootstrap intervals (the interval of "
            "a − b excludes 0); the others cannot be told apart from resampling noise.",
            cls="muted small",
        ),
    )


def _model_section(r: Any, images: Any, bases: list[Path], view: dict, owner: Any = None) -> list:
    """A model's clusters beside the unconditioned ones; each model-driven cluster with its name and its
    quality verdicts (``owner``: the result that holds them, the comparison for several models)."""
    out: list[Any] = [
        p(
            f"{r.n:,} samples · model-driven share {with_interval(r, 'model_share', percent=True)} of the "
            f"output variance (prompt-driven {with_interval(r, 'prompt_share', percent=True)}).",
            cls="muted",
        )
    ]
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
        kinds = [{"model": r.name, "kind": k, "row": i} for k in ("model-driven", "unconditioned")]
        left = (
            el("div", _cluster_block(r.clusters[i], images, bases, view, kinds[0]),
               description_block(finding_description(r, cluster=r.clusters[i].rank)),
               _cluster_quality(owner if owner is not None else r, r, r.clusters[i].rank))
            if i < len(r.clusters) else el("div")
        )
        right = (
            _cluster_block(r.clusters_unconditioned[i], images, bases, view, kinds[1])
            if i < len(r.clusters_unconditioned)
            else el("div")
        )
        rows.append(
            el(
                "div",
                left,
                right,
                cls="grid2 card",
                data_pp_item=True,
                data_pp_group=str(getattr(r, "name", "model")),
            )
        )
    return out + [header, rows]


def _scores_table(models: list[Any]) -> Any:
    """Scendi, Scendi_T, Vendi, RKE and the model share of each model, with their intervals."""
    shares = [num(m.model_share) for m in models]
    top = max((v for v in shares if v == v), default=1.0) or 1.0
    rows = [
        (
            m.name,
            f"{m.n:,}",
            with_interval(m, "scendi"),
            with_interval(m, "scendi_prompt"),
            fmt(m.scendi_order2),
            with_interval(m, "vendi"),
            with_interval(m, "rke"),
            el("span", bar(num(m.model_share) / top), with_interval(m, "model_share", percent=True)),
        )
        for m in models
    ]
    return table(
        ["model", "n", "Scendi", "Scendi_T (prompt)", "Scendi order 2", "Vendi", "RKE", "model share"],
        rows,
        numeric=range(1, 8),
    )


def _intervals_text(models: list[Any]) -> str:
    """What the brackets are (bootstrap level, replicates, seed), the Γ* estimator and where the intervals
    are not calibrated."""
    boot = next(
        (m.bootstrap for m in models if isinstance(getattr(m, "bootstrap", None), dict) and m.bootstrap), None
    )
    gammas = sorted({str(getattr(m, "gamma_estimator", "") or "") for m in models} - {""})
    return (
        f"Brackets: {fmt(boot.get('level', 0.95))} intervals ({boot.get('interval', 'bootstrap')}: "
        f"{boot.get('replicates', '?')} replicates, {boot.get('resample', 'prompts')} resampled, seed "
        f"{boot.get('seed', '?')}). "
        if boot
        else "No bootstrap intervals in this result: differences between models may be noise. "
    ) + (f"Γ* estimator: {', '.join(gammas)}." if gammas else "")  # (calibration: in the caveats)


def _scores_chart(models: list[Any]) -> Any:
    """Grouped bars of the four effective numbers of modes per model."""
    return safe_figure(
        figures.grouped_bars,
        [m.name for m in models],
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


def _overview(result: Any, models: list[Any], notes: list[str] | None) -> list:
    """Notes and warnings, the scores table (its intervals, differences, rankings) beside the chart, and
    the reference-set metrics."""
    scores = _scores_table(models)
    about = _intervals_text(models)
    chart = _scores_chart(models)
    cfg = models[0].config if models else {}
    return [
        el(
            "div",
            el(
                "div",
                el("h3", "Scores"),
                scores,
                p(
                    f"{cfg.get('kernel', '?')} kernel; model share = Tr(Λ_I): the part of the output "
                    "kernel covariance the prompts do not explain. " + about,
                    cls="muted small",
                ),
                _differences(result),
                rankings_block(getattr(result, "rankings", None)),
            ),
            el("div", chart),
            cls="grid2",
        ),
        reference_section(models),
    ]


def _folders(m: Any, sources: Any, base_dir: Any) -> list[Path]:
    """Where a model's image-file outputs may be (its input's folder, then the results folder)."""
    return image_folders(getattr(sources.get(m.name), "source", None) or m.config.get("input"), base_dir)


def _cluster_quality(owner: Any, r: Any, rank: int) -> Any:
    """The quality verdicts of cluster ``rank`` of model ``r`` (``promptprism quality``), or None."""
    return quality_block(owner, f"cluster {rank}" if owner is r else f"{r.name} cluster {rank}")


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
    view: dict = {"group_label": "model", "clusters": [], "thumbs": []}
    sections = [_model_section(m, mapping(images).get(m.name), _folders(m, mapping(inputs), base_dir), view,
                               owner=result) for m in models]
    page.add("Overview", scendi_answer(result, models, notes, view, with_interval),
             *_overview(result, models, notes))
    for m, section in zip(models, sections, strict=True):
        page.add(f"Clusters · {m.name}", *section, anchor=f"clusters-{names.index(m.name)}")
    for m in models:
        page.add(
            f"Run details · {m.name}" if len(models) > 1 else "Run details",
            run_details(m),
            anchor=f"details-{names.index(m.name)}",
        )
    return finish(page, kind="Scendi", result=result, view=view)


@reloader("scendi")
@reloader("scendi_comparison")
def reload_scendi(result: Any, result_dir: Path) -> tuple[None, None, list[str]]:
    """Nothing to read again: cluster samples carry their outputs (image paths are found where they are)."""
    return None, None, []
