"""The PromptSplit page's statements about significance: the verdict sentence, the per-mode tags, the
modes card, the prompt ranking (with its basis) and the bandwidth scan. Every field is read with a default,
so results written before the significance test existed render too (the page says no test was run).
"""

from __future__ import annotations

import re
from typing import Any

from .._words import and_join
from .html import bar, details, el, fmt, fnum, kv_table, link, num, p, table
from .map import mode_label
from .svg import bandwidth_scan_svg, svg_figure


# ------------------------------------------------------------------------------------------ significance
def significance_of(result: Any) -> dict:
    """The result's permutation-test record (empty for results without one)."""
    sig = getattr(result, "significance", None)
    return sig if isinstance(sig, dict) else {}


def _p(mode: Any) -> float | None:
    v = getattr(mode, "p_value", None)
    try:
        return None if v is None else float(v)
    except (TypeError, ValueError):
        return None


def is_significant(mode: Any, alpha: float | None) -> bool | None:
    """Whether a mode is significant: its own flag, else p <= alpha; None when neither is known."""
    sig = getattr(mode, "significant", None)
    if sig is not None:
        return bool(sig)
    pv = _p(mode)
    return None if pv is None or alpha is None else pv <= alpha


def sig_tag(mode: Any, alpha: float | None) -> Any:
    """A 'significant' / 'not significant' tag with the p-value, or None if unknown."""
    flag = is_significant(mode, alpha)
    pv = _p(mode)
    if flag is None:
        return None
    ptxt = f"p = {fmt(pv, 2)}" if pv is not None else "p not recorded"
    if flag:
        return el("span", f"significant · {ptxt}", cls="tag", style="background:#2e7d32")
    return el("span", f"not significant · {ptxt}", cls="tag", style="background:#8a8f98")


def verdict(result: Any) -> str | None:
    """One plain sentence about the whole comparison: identical sets, the test's own verdict, or (no test)
    None."""
    if getattr(result, "identical", False):
        return (
            "The test and reference sets hold the same (prompt, output) pairs: they are identical, so there "
            "is no difference to report (every eigenvalue is zero up to round-off)."
        )
    sig = significance_of(result)
    if sig.get("verdict"):
        return str(sig["verdict"])
    if sig:
        n_sig = sig.get("n_significant")
        if n_sig == 0:
            return (
                f"No significant difference between test and reference at alpha = {fmt(sig.get('alpha'))}; "
                f"largest eigenvalue p = {fmt(sig.get('p_largest'), 2)}."
            )
    return None


def _kernels(match: re.Match) -> str:
    return and_join(match.group(1).split(", "))


#: the kernel aggregation's words in a verdict, as a reader says them (no result.json field names)
_AGGREGATION_WORDS = (
    (re.compile(r"; aggregated over (\d+) kernels: p = ([^,;]+)"),
     lambda m: f"; tested over {m.group(1)} kernels together: p = {m.group(2)}"),
    (re.compile(r", modes also found by (.+?) \(significance\.aggregation\)"),
     lambda m: f"; the {_kernels(m)} kernels find these modes too"),
    (re.compile(r"modes found by (.+?) \(significance\.aggregation\)"),
     lambda m: f"modes found by the {_kernels(m)} kernels"),
    (re.compile(r" ?\(significance\.aggregation\)"), lambda m: ""),
)


def page_verdict(result: Any, names: dict[str, str], defaults: dict[str, str]) -> str | None:
    """:func:`verdict` in the page's words: the sets called by the page's ``names`` (as the title and the
    headings call them; ``defaults``, the sides' own words, leave the verdict's 'the test set'), the kernel
    aggregation said without result.json field names."""
    from ..methods.promptsplit.verdicts import named_verdict

    said = verdict(result)
    if not said:
        return said
    if names == defaults:
        said = said.replace("that the reference produces", "that the reference set produces", 1)
    else:
        said = named_verdict(said, (names["test"], names["reference"]))
    return plain_verdict(said)


def plain_verdict(said: str) -> str:
    """A stored verdict with the kernel aggregation said as a reader says it (no result.json field name)."""
    for pattern, words in _AGGREGATION_WORDS:
        said = pattern.sub(words, said)
    return said


def modes_card(result: Any) -> tuple[str, str]:
    """(value, label) of the modes card: how many modes are significant of how many reported, or how many
    were reported without a test (never 'k / k', which reads like a score)."""
    n_pos, n_neg = len(result.positive_modes), len(result.negative_modes)
    if getattr(result, "identical", False):
        return "none", "modes · the sets are identical"
    sig = significance_of(result)
    alpha = sig.get("alpha")
    if sig:
        n_sig = sum(1 for m in result.modes if is_significant(m, alpha))
        return f"{n_sig} significant", f"modes · of {n_pos} + {n_neg} reported (alpha = {fmt(alpha)})"
    return f"{n_pos} + {n_neg}", "modes reported (+ / −) · no significance test"


def significance_block(result: Any) -> Any:
    """The permutation test's settings and outcome as a table, or a note that no test was run."""
    sig = significance_of(result)
    if not sig:
        return p(
            "No significance test in this result (it was off, or the result predates it): the modes and "
            "the prompt ranking below may be sampling noise. Run with permutations to test them.",
            cls="muted small",
        )
    rows = [
        ("test", f"{sig.get('test', 'permutation')} ({sig.get('scheme', '?')} relabelling)"),
        ("permutations", fmt(sig.get("permutations"))),
        ("alpha", fmt(sig.get("alpha"))),
        ("correction", sig.get("correction") or "–"),
        ("largest eigenvalue p", fmt(sig.get("p_largest"), 3)),
        ("significant modes", fmt(sig.get("n_significant"))),
        ("seed", fmt(sig.get("seed"))),
    ]
    if sig.get("approximation"):  # (the record's name for how the test departs from the plain one)
        label = "subsample" if sig.get("subsample_eigenvalues") else "approximation"
        rows.append((label, sig["approximation"]))
    return details("significance test", kv_table(rows))


_NEGATIVE_SHARE = (" † A negative share: on this prompt the other model shows more of these modes than the "
                   "model they favour (against their overall direction); the shares of all prompts add up "
                   "to 100 %.")
#: a mode characterises a prompt when its part of the prompt's disagreement exceeds its overall part by this
STANDS_OUT = 0.05


def _main_mode(result: Any, alpha: float | None) -> dict[str, tuple[Any, float, float]]:
    """Per prompt, its characteristic mode, if one stands out: (mode, fraction of the prompt's disagreement
    d_p = sum_j lambda_j c_pj it adds, the mode's fraction of the whole sum_j lambda_j^2). The mode chosen
    is the one whose fraction for this prompt most exceeds its overall fraction, and only when it does by at
    least ``STANDS_OUT`` (so a mode that dominates every prompt equally labels none of them). Significant
    modes only, when the test ran."""
    tested = bool(significance_of(result))
    modes = [m for m in result.modes if not (tested and is_significant(m, alpha) is False)]
    lam = {id(m): num(m.eigenvalue) for m in modes}
    modes = [m for m in modes if lam[id(m)] == lam[id(m)]]
    total = sum(lam[id(m)] ** 2 for m in modes)
    parts: dict[str, list[tuple[float, Any]]] = {}
    for mode in modes:
        for pl in mode.top_prompts:
            part = lam[id(mode)] * num(pl.contribution)
            if part == part:
                parts.setdefault(pl.prompt, []).append((part, mode))
    out = {}
    for prompt, items in parts.items():
        d_p = sum(v for v, _ in items if v > 0)
        if d_p <= 0 or total <= 0:
            continue
        scored = [(v / d_p, lam[id(m)] ** 2 / total, m) for v, m in items if v > 0]
        frac, overall, m = max(scored, key=lambda t: t[0] - t[1])
        if frac - overall >= STANDS_OUT:
            out[prompt] = (m, frac, overall)
    return out


def _dominant_mode(result: Any, alpha: float | None) -> dict[str, tuple[Any, float, float]]:
    """Per prompt, the mode that adds most of its disagreement: (mode, that fraction of the prompt's
    disagreement, the prompt's share of the mode's eigenvalue, contribution / lambda). Shown where no mode
    stands out (:func:`_main_mode`), so that every row says which mode carries it."""
    tested = bool(significance_of(result))
    out: dict[str, tuple[Any, float, float]] = {}
    parts: dict[str, list[tuple[float, float, Any]]] = {}
    for mode in result.modes:
        lam = num(mode.eigenvalue)
        if (tested and is_significant(mode, alpha) is False) or not lam == lam or lam == 0:
            continue
        for pl in mode.top_prompts:
            c = num(pl.contribution)
            if c == c and lam * c > 0:
                parts.setdefault(pl.prompt, []).append((lam * c, c / lam, mode))
    for prompt, items in parts.items():
        d_p = sum(v for v, _, _ in items)
        v, carried, mode = max(items, key=lambda t: t[0])
        out[prompt] = (mode, v / d_p, carried)
    return out


def ranking_basis(result: Any) -> str:
    """Which modes the prompt ranking was computed from, in words."""
    basis = getattr(result, "ranking_basis", None)
    if basis:
        return str(basis)
    return "all reported modes (no significance test)"


def ranking_block(
    result: Any, names: dict[str, str], alpha: float | None, prompt_ids: dict[str, int] | None = None
) -> Any:
    """The top-10 prompt ranking table (share of Σλ², characteristic mode), or why there is none;
    ``prompt_ids`` links each row to its prompt's view."""
    basis = ranking_basis(result)
    ranking = list(result.prompt_ranking or [])
    if basis.startswith("none") or (significance_of(result) and not ranking):
        return el(
            "div",
            el("h3", "Prompts where the models disagree most"),
            p(
                "No prompt ranking: no mode is significant, so no prompt is shown as a place where the "
                "models disagree.",
            ),
        )
    shares = [abs(num(r.get("share"))) for r in ranking[:10]]
    top_share = max((v for v in shares if v == v), default=1.0) or 1.0
    main, dominant = _main_mode(result, alpha), _dominant_mode(result, alpha)
    rows = []
    for i, r in enumerate(ranking[:10], 1):
        mm = main.get(r["prompt"])
        cell: Any = el("span", "none stands out", cls="muted")
        if r["prompt"] in dominant:  # no mode stands out: still say which one carries this prompt
            m, frac, carried = dominant[r["prompt"]]
            cell = el("span", cell, " · mostly ",
                      el("span", mode_label(m.side, m.rank), cls="tag" if m.side == "test" else "tag neg"),
                      f" ({frac:.0%} of it; this prompt is {carried:.0%} of the mode)",
                      title="the mode that adds most of this prompt's disagreement, as it does for others")
        if mm is not None:
            m, frac, overall = mm
            cell = el(
                "span",
                el("span", mode_label(m.side, m.rank), cls="tag" if m.side == "test" else "tag neg"),
                f" {frac:.0%} here, {overall:.0%} overall · {names[m.side]}",
                title=f"{names[m.side]} does more",
            )
        rows.append(
            (
                i,
                r["prompt"],
                el("span", bar(abs(num(r.get("share"))) / top_share, width=60), fnum(r.get("share"), ".1%"),
                   "†" if num(r.get("share")) < 0 else ""),
                cell,
                r["n_test"],
                r["n_reference"],
            )
        )
    return el(
        "div",
        el("h3", "Prompts where the models disagree most"),
        table(
            ["#", "prompt", "share of the disagreement", "characteristic mode", "n test", "n ref"],
            rows,
            numeric=(0, 4, 5),
            row_attrs=prompt_rows(ranking[:10], prompt_ids),
        )
        if rows
        else p("no prompt ranking in the result", cls="muted"),
        _more_prompts(len(rows), prompt_ids),
        p(
            f"Ranked from: {basis}. Share: the prompt's part of Σλ² over those modes. Characteristic mode: "
            "the mode whose part of this prompt's disagreement exceeds its part of the whole the most (by at "
            f"least {STANDS_OUT:.0%}: the fractions here and overall), and the model that does more of it; "
            "'none stands out' when the prompt's disagreement is spread like everyone's; the mode that adds "
            "most of it is named then, with the prompt's share of that mode's eigenvalue."
            + (_NEGATIVE_SHARE if any(num(r.get("share")) < 0 for r in ranking[:10]) else ""),
            cls="muted small",
        ),
    )


def _more_prompts(shown: int, prompt_ids: dict[str, int] | None) -> Any:
    """'The top 10 of N prompts', with a link to the table of all of them (the page's "All prompts")."""
    if not prompt_ids:
        return None
    n = len(prompt_ids)
    return p(
        f"The top {shown:,} of {n:,} prompts" if shown < n else f"All {n:,} prompts",
        "; every prompt, sortable and searchable: ",
        link("All prompts", "prompts"),
        ".",
        cls="small pp-more-prompts",
    )


def prompt_rows(ranking: list, prompt_ids: dict[str, int] | None) -> list[dict] | None:
    """Row attributes that link ranking rows to their prompts' views (and make them searchable)."""
    if prompt_ids is None:
        return None
    return [{"data_pp_item": True, "data_pp_prompt": prompt_ids.get(r["prompt"])} for r in ranking]


def null_and_flags(result: Any, alpha: float | None) -> tuple[dict | None, dict | None]:
    """The permutation null of the top eigenvalue and each side's per-mode significance flags (or Nones)."""
    sig = significance_of(result)
    null = sig.get("null_top") if isinstance(sig.get("null_top"), dict) else None
    if sig.get("subsample_eigenvalues"):  # (a subsample's null is not on the scale of the full sets' chart)
        null = None
    if not sig:
        return None, None
    flags: dict[str, list] = {"test": [], "reference": []}
    for m in result.modes:
        flags[m.side].append(is_significant(m, alpha))
    return null, flags


def scan_block(result: Any) -> Any:
    """The bandwidth-scan notes (chosen σ per kind), or None without a scan."""
    scan = getattr(result, "bandwidth_scan", None)
    if not isinstance(scan, dict) or not scan:
        return None
    lines = []
    for kind in ("prompt", "output"):
        s = scan.get(kind)
        if isinstance(s, dict):
            lines.append(
                p(
                    f"σ_{kind}: chosen {fmt(s.get('chosen'))} "
                    f"({'plateau found' if s.get('plateau') else 'no plateau: the median was kept'}; "
                    f"tolerance {fmt(s.get('tolerance'))}). {s.get('note') or ''}",
                    cls="muted small",
                )
            )
    fig = svg_figure(
        bandwidth_scan_svg(scan, label="bandwidth scan: top eigenvalues against the bandwidth"),
        caption="The top eigenvalues over the scanned bandwidths (multiples of the median distance); the "
        "smallest bandwidth from which they stop changing (within the tolerance) is chosen.",
    )
    return el("div", el("h3", "Bandwidth scan"), fig, lines)
