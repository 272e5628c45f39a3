"""Compact summaries of results: HTML for notebooks (``Result._repr_html_``: a small table) and text for
``repr`` (a few lines: kind, sizes, headline numbers). No figures, no matplotlib."""

from __future__ import annotations

from typing import Any

from ..methods.regions.result import TIE, lowest_regions
from ..results import SUMMARY_RENDERERS
from .html import el, fmt, fnum, table

SUMMARIES: dict = {}


def cms_with_interval(value: Any, iv: Any) -> str:
    """eq. 4's CMS, then (when there is an interval) the U-form estimate it is built around and the
    interval, labelled: ``0.309 · U-form 0.436 [0.281, 0.595]`` (the interval is the U-form's: beside eq. 4's
    value alone it would seem to exclude it)."""
    if isinstance(iv, dict) and "low" in iv and "high" in iv:
        u = f"{fmt(iv['debiased'])} " if "debiased" in iv else ""
        return f"{fmt(value)} · U-form {u}[{fmt(iv['low'])}, {fmt(iv['high'])}]"
    return fmt(value)


def summary(kind: str):
    """Decorator: register a function as the notebook summary of a result ``kind``."""
    def register(fn):
        SUMMARIES[kind] = fn
        return fn

    return register


def summary_html(result: Any) -> str:
    """The compact HTML summary table of a result (``Result._repr_html_``)."""
    kind = getattr(result, "kind", type(result).__name__)
    fn = SUMMARIES.get(kind, _generic)
    title, rows, extra = fn(result)
    head = el("div", el("b", title), style="margin:2px 0 4px")
    body = table(["", ""], [(el("b", k), v) for k, v in rows])
    return str(el("div", head, body, extra, cls="promptprism-summary"))


def summary_text(result: Any) -> str:
    """A few lines for ``repr``: the title, then one aligned line per headline row."""
    kind = getattr(result, "kind", type(result).__name__)
    try:
        title, rows, _ = SUMMARIES.get(kind, _generic)(result)
    except Exception as exc:  # a repr must never fail (e.g. a hand-made result with odd fields)
        return f"<{type(result).__name__} ({kind}): summary unavailable: {type(exc).__name__}: {exc}>"
    width = max((len(str(k)) for k, _ in rows), default=0)
    lines = [type(result).__name__]
    lines += [f"  {str(k):<{width}}  {_text(v, 240 if k == 'verdict' else 100)}" for k, v in rows]
    return "\n".join(lines)


SUMMARY_RENDERERS.update(text=summary_text, html=summary_html)  # (results show themselves through these)


def _text(v: Any, limit: int = 100) -> str:
    import html
    import re

    s = html.unescape(re.sub(r"<[^>]+>", "", str(v)))
    return s if len(s) <= limit else s[: limit - 1] + "…"


def lowest_text(values: Any, intervals: Any = None) -> str:
    """'2 (0.9382)', or '2 (0.9382), tied with 0 (0.9384)' when another region is within the tie rule."""
    lows = lowest_regions(values, intervals)
    if not lows:
        return "–"
    first = f"{lows[0]} ({fmt(values[lows[0]])})"
    if len(lows) == 1:
        return first
    rule = "within their intervals" if isinstance(intervals, list) and intervals else f"within {TIE:g}"
    others = ", ".join(f"{r} ({fmt(values[r])})" for r in lows[1:])
    return f"{first}, tied {rule} with {others}"


def regions_verdict(result: Any, head: dict) -> str:
    """One sentence: the generated set furthest from the real images by CMS (the closest too, with several
    sets) and the region where it differs most (its lowest region CMS, ties named)."""
    names = list(result.names)
    cms = [float(v) if isinstance(v, (int, float)) and v == v else None for v in head["cms"] or []]
    known = [k for k in range(len(names)) if k < len(cms) and cms[k] is not None]
    if not known:
        return ("No CMS to compare with the real images." if not names else
                "The CMS of the generated sets is not in this result: nothing to compare.")
    worst = min(known, key=cms.__getitem__)
    row = list((head.get("region_cms") or [[]] * len(names))[worst] or [])
    where = ""
    if len(row) > 1 and any(isinstance(v, (int, float)) and v == v for v in row):
        iv = set_intervals(result, worst).get("region_cms")
        where = f", most in region {lowest_text(row, iv if isinstance(iv, list) and iv else None)}"
    if len(names) == 1:
        return f"{names[0]} against the real images: CMS {fmt(cms[0])} (1 = same distribution){where}."
    best = max(known, key=cms.__getitem__)
    return (f"Closest to the real images: {names[best]} (CMS {fmt(cms[best])}); furthest: {names[worst]} "
            f"(CMS {fmt(cms[worst])}){where}.")


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
    from .significance import modes_card, verdict

    value, label = modes_card(r)
    rows = [
        ("samples", f"{r.n_test:,} test · {r.n_reference:,} reference"),
        ("route", f"{r.method}, {r.config.get('kernel', '?')} kernel, seed {r.seed}"),
        ("‖Λ‖²_F", fmt(r.distance)),
        (
            "modes",
            f"{value} ({label.removeprefix('modes · ')})"
            if value == "none"
            else f"{value} {label.removeprefix('modes ').removeprefix('· ')}",
        ),
    ]
    said = verdict(r)
    if said:
        rows.append(("verdict", said))
    top = [x.get("prompt") for x in (r.prompt_ranking or [])[:1] if isinstance(x, dict)]
    if top:
        rows.append(("top prompt", str(top[0])))
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
    lows = [lowest_text(row, set_intervals(r, k).get("region_cms")) for k, row in enumerate(r.region_cms)]
    rows += [(f"{name}", f"CMS {fmt(r.cms[k])} · lowest region {lows[k]}") for k, name in enumerate(r.names)]
    extra = table(
        ["generated set", "CMS", "product", "lowest region"],
        [(name, fmt(r.cms[k]), fmt(r.product_cms[k]), lows[k]) for k, name in enumerate(r.names)],
        numeric=(1, 2),
    )
    return "Regions result", rows, extra


def set_intervals(result: Any, k: int) -> dict:
    """The intervals of generated set ``k`` from a RegionsResult's ``intervals``: one dict per set (a list
    in ``names`` order, or keyed by set name), or one dict when there is a single set; {} when absent."""
    ivs = getattr(result, "intervals", None)
    names = list(getattr(result, "names", []) or [])
    out: Any = None
    if isinstance(ivs, list) and k < len(ivs):
        out = ivs[k]
    elif isinstance(ivs, dict) and k < len(names) and isinstance(ivs.get(str(names[k])), dict):
        out = ivs[str(names[k])]
    elif isinstance(ivs, dict) and len(names) == 1 and ("cms" in ivs or "region_cms" in ivs):
        out = ivs
    return out if isinstance(out, dict) else {}


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
        ("hold on held-out prompts", str(sum(bool((a.get("held_out") or {}).get("verified"))
                                             for a in r.attributes))),
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
    rows += [
        (m.name, f"n {m.n:,} · Scendi {fmt(m.scendi)} · Vendi {fmt(m.vendi)} · "
         f"model {fnum(m.model_share, '.1%')}")
        for m in models[:6]
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
                fnum(m.model_share, ".1%"),
            )
            for m in models
        ],
        numeric=range(1, 7),
    )
    return "Scendi result", rows, extra


@summary("compcon-eval")
def _compcon_eval(r: Any):
    s = r.summary if isinstance(r.summary, dict) else {}
    k = (r.config or {}).get("k", "k") if isinstance(r.config, dict) else "k"
    rows = [
        ("splits", fmt(s.get("n_splits"))),
        (
            "attribute",
            f"top 1 {fmt(s.get('attribute_top1'), 3)} · best of {k} {fmt(s.get(f'attribute_top{k}'), 3)}",
        ),
        (
            "description",
            f"top 1 {fmt(s.get('description_top1'), 3)} · best of {k} {fmt(s.get(f'description_top{k}'), 3)}",
        ),
        ("judge failures", str(len(r.failures or []))),
    ]
    return "CompCon evaluation", rows, None
