"""The reference-metrics page: precision, recall, density, coverage, FD, KID, MMD and CLIPScore per generated
set, with intervals, each set's notes (what was left out and why) and its per-prompt breakdown; and the same
table as a section of the Scendi page when ``diversity --reference`` attached them."""

from __future__ import annotations

from typing import Any

from .._words import and_join
from ..stats.intervals import format_estimate
from .answer import answer_block, finding_card, severity
from .common import finish, notes_block, run_details
from .core import renderer
from .explore import views_note
from .html import Page, details, el, fnum, num, p, table
from .sets_view import given_sets, sets_view

#: (field, header, format) of the headline table
COLUMNS = (("precision", "precision", ".3f"), ("recall", "recall", ".3f"), ("density", "density", ".3f"),
           ("coverage", "coverage", ".3f"), ("fd", "FD", ".4g"), ("kid", "KID", ".3g"),
           ("mmd2", "MMD²", ".3g"), ("clip_score", "CLIPScore", ".3f"))
PER_PROMPT = (("n", "n", "d"), ("precision", "precision", ".3f"), ("density", "density", ".3f"),
              ("recall", "recall", ".3f"), ("coverage", "coverage", ".3f"), ("kid", "KID", ".3g"),
              ("fd", "FD", ".4g"), ("clip_score", "CLIPScore", ".3f"), ("truncated", "truncated", "d"))


def _get(m: Any, key: str) -> Any:
    return m.get(key) if isinstance(m, dict) else getattr(m, key, None)


def _cell(m: Any, key: str, spec: str) -> str:
    return format_estimate(_get(m, key), (_get(m, "intervals") or {}).get(key), lambda v: fnum(v, spec))


def metrics_table(rows: list[tuple[str, Any]]) -> Any:
    """The headline table: one (name, SetMetrics or its dict) per row."""
    body = [(name, f"{_get(m, 'n'):,}", *(_cell(m, k, s) for k, _, s in COLUMNS)) for name, m in rows]
    return table(["set", "n", *(h for _, h, _ in COLUMNS)], body, numeric=range(1, 2 + len(COLUMNS)))


def set_notes(name: str, m: Any) -> list[str]:
    """A set's notes, the prompt truncation first, each prefixed by the set's name."""
    out = []
    t = _get(m, "truncation") or {}
    if t:
        out.append(f"{name}: {t['truncated']} of {t['prompts']} prompts were longer than the text encoder's "
                   f"{t['context_length']} tokens and were truncated before CLIPScore")
    valid = _get(m, "interval_validity") or {}
    if valid and not valid["holds"]:
        out.append(f"{name}: intervals not calibrated here ({', '.join(valid['not_calibrated'])}): "
                   f"{valid['reason']}")
    return out + [f"{name}: {n}" for n in (_get(m, "notes") or [])]


def merged_notes(models: list[Any]) -> list[str]:
    """Every set's notes, a note that several sets share said once, naming them."""
    who: dict[str, list[str]] = {}
    for m in models:
        name = _get(m, "name")
        for n in set_notes(name, m):
            who.setdefault(n.removeprefix(f"{name}: "), []).append(name)
    return [f"{', '.join(names)}: {text}" for text, names in who.items()]


def _per_prompt(m: Any, ids: dict[str, int]) -> Any:
    """A set's per-prompt table; each row opens the prompt's samples of every set (``data-pp-prompt``)."""
    rows = _get(m, "per_prompt") or []
    if not rows:
        return None
    body = [(r["prompt"], *(fnum(r.get(k), s) if s != "d" else str(r.get(k, "–")) for k, _, s in PER_PROMPT))
            for r in rows]
    headers = ["prompt", *(h for _, h, _ in PER_PROMPT)]
    attrs = [{"data_pp_item": True, "data_pp_prompt": ids[r["prompt"]], "data_pp_group": _get(m, "name")}
             for r in rows]
    title = f"{_get(m, 'name')}: {len(rows)} prompts broken down (click a row for every set's samples)"
    return details(title, table(headers, body, numeric=range(1, len(headers)), row_attrs=attrs))


def fd_name(config: Any) -> str:
    """What the Fréchet distance is called on these features: FID only on Inception's."""
    encoder = (config or {}).get("output_encoder") if isinstance(config, dict) else None
    if not encoder:
        return "the Fréchet distance (FD) on the given embeddings (FID only when they are Inception-v3's)"
    if "inception" in str(encoder).lower():
        return f"the Fréchet distance on Inception-v3 features (FID; encoder {encoder})"
    return f"the Fréchet distance (FD) on {encoder} features (not FID, which is FD on Inception-v3's)"


ABOUT = ("Precision and recall (Kynkäänniemi et al. 2019), density and coverage (Naeem et al. 2020) on k-NN "
         "balls; {fd}; KID (unbiased polynomial-kernel MMD² "
         "averaged over random subsets) and MMD²; CLIPScore = 2.5 max(cos, 0) (Hessel et al. 2021) between "
         "each prompt and its output in one joint space. Brackets: bootstrap intervals over prompts; for KID "
         "and MMD² a normal interval from the U-statistic's variance (docs/metrics.md says what each covers "
         "and where).")


def _fd_short(config: Any) -> str:
    encoder = (config or {}).get("output_encoder") if isinstance(config, dict) else None
    return "FID" if encoder and "inception" in str(encoder).lower() else "FD"


def _verdict(result: Any) -> str:
    ms, fd = list(result.models), _fd_short(result.config)
    if not ms:
        return "No generated set in this result."
    if len(ms) == 1:
        m = ms[0]
        return (f"{m.name} against the reference ({result.n_reference:,} samples): precision "
                f"{fnum(m.precision, '.3f')}, recall {fnum(m.recall, '.3f')}, coverage "
                f"{fnum(m.coverage, '.3f')}; {fd} {fnum(m.fd, '.4g')} (intervals in the table).")

    parts = [_leaders(ms, "fd", "closest to the reference by " + fd, ".4g", low=True),
             _leaders(ms, "precision", "highest precision", ".3f"),
             _leaders(ms, "recall", "highest recall", ".3f")]
    said = [x for x in parts if x]
    text = "; ".join(said)
    return text[:1].upper() + text[1:] + "." if said else "No metric could be computed."


def _leaders(ms: list[Any], key: str, what: str, spec: str, *, low: bool = False) -> str:
    """Who leads on ``key``, tie-aware as the diversity page's rankings are (``stats.ranking``): the sets
    that share the first rank, two sets tied where their intervals overlap or, without intervals, where
    their values are equal (the words say which); '' when no set has the value."""
    import numpy as np

    from ..stats.ranking import intervals_separated, tied_ranks

    have = [m for m in ms if num(_get(m, key)) == num(_get(m, key))]
    if not have:
        return ""
    values = [num(_get(m, key)) for m in have]
    ivs = [(_get(m, "intervals") or {}).get(key) for m in have]
    with_iv = all(isinstance(iv, dict) and num(iv.get("low")) == num(iv.get("low"))
                  and num(iv.get("high")) == num(iv.get("high")) for iv in ivs)
    v = np.asarray(values, float)
    if with_iv:
        separated = intervals_separated([num(iv["low"]) for iv in ivs], [num(iv["high"]) for iv in ivs])
        separated &= v[:, None] != v[None, :]
    else:
        separated = v[:, None] != v[None, :]
    ranks = tied_ranks(values, separated, higher_is_better=not low)
    order = sorted(range(len(have)), key=lambda k: values[k] * (1 if low else -1))
    first = [k for k in order if ranks[k] == 1]
    if len(first) == 1:
        m = have[first[0]]
        alone = "" if with_iv or len(have) == 1 else ", no interval"
        return f"{what}: {m.name} ({fnum(_get(m, key), spec)}{alone})"
    names = [have[k].name for k in first]
    who = and_join(names)
    if len({values[k] for k in first}) == 1:
        return f"{what}: {who}, tied ({fnum(values[first[0]], spec)} each)"
    each = ", ".join(f"{have[k].name} {_cell(have[k], key, spec)}" for k in first)
    return f"{what}: {who}, tied within their intervals ({each})"


def _findings(result: Any) -> list:
    cards = []
    for m in result.models:
        rows = [r for r in (_get(m, "per_prompt") or []) if num(r.get("coverage")) == num(r.get("coverage"))]
        worst = min(rows, key=lambda r: num(r.get("coverage"))) if rows else None
        cards.append(finding_card(
            f"{m.name}: precision {_cell(m, 'precision', '.3f')}, recall {_cell(m, 'recall', '.3f')}",
            f"density {_cell(m, 'density', '.3f')}, coverage {_cell(m, 'coverage', '.3f')}, KID "
            f"{_cell(m, 'kid', '.3g')} ({_get(m, 'n') or 0:,} samples)",
            where=None if worst is None else
            f"lowest coverage on the prompt below ({fnum(worst.get('coverage'), '.3f')})",
            sure="brackets: intervals (see below)" if _get(m, "intervals") else "no intervals in this result",
            quote=None if worst is None else worst.get("prompt")))
    return cards


@renderer("metrics")
def render_metrics(result: Any, *, inputs: Any = None, base_dir: Any = None, notes: list[str] | None = None,
                   **_: Any) -> str:
    """The reference-metrics report page; ``inputs`` (set name -> PairedSet, the reference under its name)
    give the per-prompt rows their samples."""
    page = Page(f"Against the reference {result.reference}",
                f"{len(result.models)} generated set(s) against {result.n_reference:,} reference samples in "
                f"{result.dim} dimensions.")
    all_notes = merged_notes(result.models)
    about = ABOUT.replace("{fd}", fd_name(result.config))
    caveats = [(severity(n), n) for n in [*(notes or []), *all_notes]]
    page.add("Metrics", answer_block(_verdict(result), _findings(result), caveats),
             metrics_table([(m.name, m) for m in result.models]), p(about))
    names = [*(m.name for m in result.models), result.reference]
    order = list(dict.fromkeys(r["prompt"] for m in result.models for r in (_get(m, "per_prompt") or [])))
    view = sets_view(names, given_sets(names, inputs), int(getattr(result, "seed", 0) or 0), order, base_dir)
    ids = {p["prompt"]: i for i, p in enumerate(view["prompts"])}
    breakdowns = [b for m in result.models if (b := _per_prompt(m, ids)) is not None]
    if breakdowns:
        page.add("Per prompt", p(f"Prompts with at least {result.config.get('min_group_size')} generated "
                                 "samples; recall, coverage, KID and FD need reference samples of the same "
                                 "prompt."), *breakdowns, views_note(view["left_out"]))
    page.add("Run", run_details(result))
    return finish(page, kind="metrics", result=result, view=view, embed_result=False)


def reference_section(models: list[Any]) -> Any:
    """The Scendi page's section for ``diversity --reference`` (None when no model has reference metrics)."""
    rows = [(m.name, m.reference_metrics) for m in models if getattr(m, "reference_metrics", None)]
    if not rows:
        return None
    notes = [n for name, m in rows for n in set_notes(name, m)]
    about = ABOUT.replace("{fd}", fd_name(None))
    return el("div", el("h3", "Against the reference set"), metrics_table(rows), p(about), notes_block(notes))
