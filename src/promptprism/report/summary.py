"""Compact HTML summaries for notebooks (``Result._repr_html_``): a small table, no figures, no matplotlib."""

from __future__ import annotations

from typing import Any

from .html import el, fmt, table

SUMMARIES: dict = {}


def summary(kind: str):
    def register(fn):
        SUMMARIES[kind] = fn
        return fn

    return register


def summary_html(result: Any) -> str:
    kind = getattr(result, "kind", type(result).__name__)
    fn = SUMMARIES.get(kind, _generic)
    title, rows, extra = fn(result)
    head = el("div", el("b", title), style="margin:2px 0 4px")
    body = table(["", ""], [(el("b", k), v) for k, v in rows])
    return str(el("div", head, body, extra, cls="promptprism-summary"))


def _generic(result: Any):
    data = result.to_dict() if hasattr(result, "to_dict") else {}
    rows = [
        (k, fmt(v) if isinstance(v, float) else str(v))
        for k, v in data.items()
        if isinstance(v, (str, int, float, bool))
    ][:12]
    return f"{getattr(result, 'kind', 'result')} result", rows, None


@summary("promptsplit")
def _promptsplit(r: Any):
    rows = [
        ("samples", f"{r.n_test:,} test · {r.n_reference:,} reference"),
        ("route", f"{r.method}, {r.config.get('kernel', '?')} kernel, seed {r.seed}"),
        ("‖Λ‖²_F", fmt(r.distance)),
        ("modes", f"{len(r.positive_modes)} positive · {len(r.negative_modes)} negative"),
    ]
    pairs = zip(r.positive_modes[:3], r.negative_modes[:3], strict=False)
    modes = [m for pair in pairs for m in pair] or r.modes[:3]
    extra = table(
        ["mode", "eigenvalue", "top prompts"],
        [
            (
                f"{'+' if m.side == 'test' else '−'}{m.rank}",
                fmt(m.eigenvalue),
                "; ".join(pl.prompt for pl in m.top_prompts[:3]),
            )
            for m in modes
        ],
        numeric=(1,),
    )
    return "PromptSplit result", rows, extra


@summary("regions")
def _regions(r: Any):
    h, w, c = r.image_shape
    rows = [
        ("regions", f"{r.n_regions} over {h}×{w}×{c} images (suggested {r.suggested_n_regions})"),
        ("real images", f"{r.n_real:,}"),
        ("kernel γ", fmt(r.gamma)),
    ]
    worst = [min(range(len(row)), key=row.__getitem__) if row else None for row in r.region_cms]
    extra = table(
        ["generated set", "CMS", "product", "lowest region"],
        [
            (
                name,
                fmt(r.cms[k]),
                fmt(r.product_cms[k]),
                "–" if worst[k] is None else f"{worst[k]} ({fmt(r.region_cms[k][worst[k]])})",
            )
            for k, name in enumerate(r.names)
        ],
        numeric=(1, 2),
    )
    return "Regions result", rows, extra


@summary("compcon")
def _compcon(r: Any):
    models = r.models or {}
    rows = [
        (
            "models",
            f"A = {(models.get('A') or {}).get('name', 'A')}, B = {(models.get('B') or {}).get('name', 'B')}",
        ),
        ("prompts", f"{r.n_prompts:,}"),
        ("attributes", str(len(r.attributes))),
    ]
    best = {d.get("attribute"): (d.get("best") or {}).get("description") for d in r.descriptions or []}
    extra = table(
        ["#", "attribute", "diverging", "description"],
        [
            (
                a["rank"],
                a["attribute"],
                f"{a['n_diverging']}/{a['n_prompts']}",
                best.get(a["attribute"]) or "",
            )
            for a in r.attributes[:5]
        ],
        numeric=(0, 2),
    )
    return "CompCon result", rows, extra


@summary("scendi")
@summary("scendi_comparison")
def _scendi(r: Any):
    models = list(r.models) if getattr(r, "kind", "") == "scendi_comparison" else [r]
    rows = [
        ("models", ", ".join(m.name for m in models)),
        ("kernel", str(models[0].config.get("kernel", "?"))),
    ]
    extra = table(
        ["model", "n", "Scendi", "Scendi_T", "Vendi", "RKE", "model share"],
        [
            (
                m.name,
                f"{m.n:,}",
                fmt(m.scendi),
                fmt(m.scendi_prompt),
                fmt(m.vendi),
                fmt(m.rke),
                f"{m.model_share:.1%}",
            )
            for m in models
        ],
        numeric=range(1, 7),
    )
    return "Scendi result", rows, extra
