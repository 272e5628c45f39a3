"""The PromptSplit page: the verdict (is there a significant difference?), the disagreeing prompts and the
eigenvalue chart (with the permutation null band) first, then per mode its significance, top prompts and the
strongest samples of each model side by side, then a map of the samples coloured by mode (:mod:`.map`).

The gallery needs nothing but result.json for text outputs and image-file outputs (their paths are in it);
array images (the demo) and the map need the inputs: pass them, or let ``promptprism report DIR`` read them
again from ``config['test']`` / ``config['reference']`` (or ``DIR/data/{test,reference}.npz``).

Results written before the significance test existed (no ``significance``, ``p_value``, ``ranking_basis``,
``bandwidth_scan`` fields) render too: the page then says that no test was run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..data.paired import PairedSet
from .common import (
    finish,
    image_folders,
    mapping,
    notes_block,
    run_details,
    set_display_names,
    text_card,
    thumb,
    visual_of,
)
from .core import renderer
from .descriptions import description_block, facet_verdicts, finding_description, quality_block
from .explore import all_prompts_block, mode_id, promptsplit_view, views_note
from .facets import facets_block
from .html import Page, bar, cards, details, el, fmt, fnum, note, num, p, table
from .map import MAP_POINTS, map_section, mode_label
from .promptsplit_inputs import check_images, check_sets
from .significance import (
    is_significant,
    modes_card,
    null_and_flags,
    page_verdict,
    prompt_rows,
    ranking_basis,
    ranking_block,
    scan_block,
    sig_tag,
    significance_block,
    significance_of,
)
from .svg import eigenvalue_bars_svg, svg_figure

#: samples per model shown for each mode
GALLERY_PER_SIDE = 8
#: modes per sign shown open; the others are folded (still in the page)
OPEN_MODES = 3
#: the sets' names when the user gave none and where they were read tells them not apart (as the verdict
#: calls them then: 'the test set')
SIDE_TITLE = {"test": "test set", "reference": "reference set"}
_mode_label = mode_label


# ------------------------------------------------------------------------------------------------ gallery
def _sample_cell(s: Any, images: dict[str, Any], bases: dict[str, list[Path]]) -> Any:
    caption = el("div", el("div", f"score {fnum(s.score, '+.3g')}"), el("div", s.prompt))
    visual, why = visual_of(s.output, index=s.index, images=images.get(s.set), bases=bases.get(s.set, ()))
    if visual is not None:
        return thumb(visual, caption, title=f"{s.prompt} | {s.output or ''} | #{s.index}")
    if why:
        return text_card(why, caption)
    return text_card(s.output if s.output is not None else f"sample #{s.index} (no output recorded)", caption)


def _cells(samples: list, images, bases) -> Any:
    cells = [_sample_cell(s, images, bases) for s in samples]
    has_thumbs = any('class="thumb"' in c for c in cells)
    return el("div", cells, cls="gallery") if has_thumbs else el("div", cells)


def _side_block(title: str, samples: list, note_text: str, images, bases) -> Any:
    """A model's samples on a mode, split by score sign: positive scores lie in the mode's direction (what
    the favoured model does more), negative ones at its other end; the two are never mixed unlabelled."""
    samples = samples[:GALLERY_PER_SIDE]
    # a score that is not a number (null in result.json) goes with the positive ones, shown as '–'
    neg = [s for s in samples if num(s.score) < 0]
    pos = [s for s in samples if not num(s.score) < 0]
    if not samples:
        body: Any = p("no samples", cls="muted")
    elif not neg or not pos:
        body = [
            _cells(samples, images, bases),
            None if pos else p("all negative scores: the other end of the mode's direction", cls="muted"),
        ]
    else:
        body = [
            p(f"positive scores ({len(pos)}): in the mode's direction", cls="muted small"),
            _cells(pos, images, bases),
            p(
                f"negative scores ({len(neg)}): the other end of the mode's direction (large |score| "
                "too, but the opposite of what the mode adds)",
                cls="muted small",
            ),
            _cells(neg, images, bases),
        ]
    return el("div", el("h4", title, el("span", f" · {note_text}", cls="muted small")), body, cls="side")


def _prompts_table(mode: Any, ids: dict) -> Any:
    """A mode's top prompts with each one's share of the eigenvalue."""
    lam = num(mode.eigenvalue)
    lam = lam if lam == lam else 0.0
    prompts = [
        (
            pl.prompt,
            el(
                "span",
                bar(abs(num(pl.contribution) / lam) if lam else 0.0, neg=mode.side != "test", width=60),
                fnum(num(pl.contribution) / lam, ".0%") if lam else "–",
            ),
            pl.n_test,
            pl.n_reference,
        )
        for pl in mode.top_prompts[:6]
    ]
    return table(
        ["top prompts", "share of the eigenvalue", "n test", "n ref"],
        prompts,
        numeric=(2, 3),
        row_attrs=[{"data_pp_prompt": ids.get(pl.prompt)} for pl in mode.top_prompts[:6]],
    )


def _mode_card(mode: Any, images, bases, names: dict[str, str], alpha: float | None, ids: dict,
               description: dict | None = None, quality: Any = None) -> Any:
    """One mode: its eigenvalue and significance, its description, its quality verdict, top prompts and both
    models' samples."""
    pos = mode.side == "test"
    label = _mode_label(mode.side, mode.rank)
    by_side = {mode.side: mode.top_samples, ("reference" if pos else "test"): mode.top_samples_other}
    favoured = f"strongest on this mode ({_the(names, mode.side)} does more of it)"
    cols = [
        _side_block(
            names[s],
            by_side.get(s, []),
            favoured if s == mode.side else "its strongest on this mode, for contrast",
            images,
            bases,
        )
        for s in ("test", "reference")
    ]
    flag = is_significant(mode, alpha)
    return el(
        "div",
        el(
            "h3",
            el("span", label, cls="tag" if pos else "tag neg"),
            f" {_the(names, mode.side)} does more · eigenvalue {fnum(mode.eigenvalue, '+.4g')} ",
            sig_tag(mode, alpha),
        ),
        description_block(description),
        quality,
        p(
            "Not significant: a mode of this size appears in data where the two models do not differ; "
            "read it as a guess, not a finding.",
            cls="muted small",
        )
        if flag is False
        else None,
        _prompts_table(mode, ids),
        el("div", cols, cls="grid2"),
        cls="card pos" if pos else "card neg",
        id=f"mode{'p' if pos else 'n'}{mode.rank}",
        style="opacity:0.8" if flag is False else None,
        data_pp_mode=mode_id(mode.side, mode.rank),
        data_pp_item=True,
        data_pp_side=mode.side,
        data_pp_sig="0" if flag is False else "1",
    )


# --------------------------------------------------------------------------------------------------- page
def _names(result: Any, sets: dict[str, PairedSet]) -> dict[str, str]:
    """The two sets' names, one scheme for the title, headings and verdict (:func:`set_display_names`): as
    the user gave them, else shortened from where they were read, else the sides' own words."""
    given = result.given_names() if callable(getattr(result, "given_names", None)) else None
    where = {s: result.config.get(s) or (sets[s].where if s in sets else None) for s in ("test", "reference")}
    where = {s: None if w in (s, "") else w for s, w in where.items()}  # (a side's own word names nothing)
    return set_display_names(where, SIDE_TITLE, given=given)


def _bases(result: Any, sets: dict[str, PairedSet], base_dir: Any) -> dict[str, list[Path]]:
    return {
        s: image_folders((sets[s].source if s in sets else None) or result.config.get(s), base_dir)
        for s in ("test", "reference")
    }


def _map_or_note(result: Any, sets: dict, map_points: int, names: dict[str, str], step: Callable,
                 texts: dict) -> tuple:
    """The map section and what it leaves for the views (``sink``), or a note when it cannot be drawn."""
    sink: dict = {}
    try:
        return map_section(result, sets, map_points, names, step=step, sink=sink, texts=texts), sink
    except (ImportError, ArithmeticError, ValueError, TypeError, RuntimeError, np.linalg.LinAlgError) as exc:
        # the map is an extra: a missing package or a degenerate subsample (e.g. an eigen-solver that does
        # not converge) leaves a note, never a failed command
        return [note(f"map not drawn: {type(exc).__name__}: {exc}")], {}


def _eigen_figure(result: Any, null: Any, flags: Any) -> Any:
    """The top eigenvalues of each sign, with the permutation null band when there is one."""
    cfg = result.config
    chart = eigenvalue_bars_svg(result.eigenvalues, int(cfg.get("n_modes") or 10), null_top=null,
                                significant=flags, label="top positive and negative eigenvalues")
    return svg_figure(
        chart,
        caption=f"Top {len(result.positive_modes)} positive and {len(result.negative_modes)} negative "
        f"eigenvalues of Λ = C_test − η C_ref (η = {fmt(cfg.get('eta', 1.0))}). "
        + (
            "Grey band: what the permutation null (no difference) gives at that rank; pale hatched bars: "
            "modes that are not significant. "
            if null
            else ""
        )
        + "A few tall bars: a few clear differences; a flat spectrum: diffuse ones.",
    )


def _untested(result: Any, names: dict[str, str]) -> str:
    """The verdict of a run without a significance test: the distance and the largest eigenvalue of each
    sign, said to be untested."""
    tops = []
    for modes, what in ((result.positive_modes, f"what {_the(names, 'test')} produces more"),
                        (result.negative_modes, f"what {_the(names, 'reference')} produces more")):
        if modes:
            tops.append(f"{'+' if modes[0].eigenvalue > 0 else '−'}{fmt(abs(modes[0].eigenvalue))} ({what})")
    return (f"Not tested for significance (no permutations were run): PromptSplit distance "
            f"{fmt(result.distance)}" + (f"; largest eigenvalues {' and '.join(tops)}" if tops else "") + ".")


def _the(names: dict[str, str], side: str) -> str:
    """A set as a sentence calls it: 'the test set' (the sides' own words) or its name."""
    return f"the {names[side]}" if names[side] == SIDE_TITLE[side] else names[side]


def _overview(result: Any, names: dict[str, str], notes: list[str], view: dict, alpha: Any, ids: dict,
              eig: Any) -> list:
    """The verdict, the run's cards, the significance, the prompt ranking beside the eigenvalues."""
    said = page_verdict(result, names, SIDE_TITLE) or _untested(result, names)
    modes_value, modes_label = modes_card(result)
    return [
        el("p", el("b", said), cls="pp-verdict"),
        notes_block(notes),
        cards(
            [
                (f"{result.n_test:,}", f"samples · {names['test']}"),
                (f"{result.n_reference:,}", f"samples · {names['reference']}"),
                (fmt(result.distance), "‖Λ‖²_F (PromptSplit distance)"),
                (modes_value, modes_label),
                (f"{result.method}", f"route · {result.config.get('kernel', '?')} kernel"),
            ]
        ),
        significance_block(result),
        views_note(view["left_out"]),
        el(
            "div",
            ranking_block(result, names, alpha, ids),
            el(
                "div",
                el("h3", "Eigenvalues"),
                el("div", cls="pp-widget", data_pp_widget="modes"),
                eig,
                scan_block(result),
            ),
            cls="grid2",
        ),
    ]


def _add_modes(page: Page, result: Any, card: Callable[[Any], Any], names: dict[str, str]) -> None:
    """The positive and the negative modes, the first OPEN_MODES of each sign open, the rest folded."""
    for title, modes in (
        ("Positive modes", result.positive_modes),
        ("Negative modes", result.negative_modes),
    ):
        if not modes:
            page.add(title, p("none: no eigenvalue of this sign above round-off", cls="muted"))
            continue
        side = modes[0].side
        page.add(
            title,
            p(
                f"What {_the(names, side)} produces more, strongest first. Per mode: the prompts "
                f"that load on it, and the samples of each model that score highest on it "
                f"(up to {GALLERY_PER_SIDE} per model, split by the sign of their score).",
                cls="muted",
            ),
            [card(mm) for mm in modes[:OPEN_MODES]],
            details(
                f"{len(modes) - OPEN_MODES} more {title.lower()} "
                f"({_mode_label(side, OPEN_MODES + 1)} … {_mode_label(side, len(modes))})",
                [card(mm) for mm in modes[OPEN_MODES:]],
            )
            if len(modes) > OPEN_MODES
            else None,
        )


def _add_run_details(page: Page, result: Any, ids: dict) -> None:
    """The configuration, seed and timings, and the full prompt ranking (folded)."""
    scope = getattr(result, "eigenvalues_scope", None)
    more = [
        ("distance ‖Λ‖²_F", fmt(result.distance, 6)),
        (
            "spectrum in result.json",
            f"{len(result.eigenvalues)} eigenvalues" + (f" ({scope})" if scope else ""),
        ),
    ]
    ranking = [
        (i, r["prompt"], fmt(r["disagreement"]), fnum(r.get("share"), ".2%"), r["n_test"], r["n_reference"])
        for i, r in enumerate(result.prompt_ranking, 1)
    ]
    page.add(
        "Run details",
        run_details(result, more),
        details(
            f"full prompt ranking ({len(result.prompt_ranking)} prompts; from {ranking_basis(result)})",
            table(
                ["#", "prompt", "disagreement", "share", "n test", "n ref"],
                ranking,
                numeric=(0, 2, 3, 4, 5),
                row_attrs=prompt_rows(result.prompt_ranking, ids),
            ),
        ),
    )


@renderer("promptsplit")
def render_promptsplit(
    result: Any,
    *,
    inputs: Any = None,
    images: Any = None,
    base_dir: Any = None,
    notes: list[str] | None = None,
    map_points: int = MAP_POINTS,
    step: Callable[[str], None] | None = None,
    **_: Any,
) -> str:
    """The PromptSplit report page (see the module docstring); ``step(name)`` is called before each step
    that can take a while (progress)."""
    step = step or (lambda _: None)
    notes = [*(getattr(result, "notes", None) or []), *(notes or [])]  # (the fit's caveats first)
    sets = check_sets(result, inputs, notes)
    # a manifest's texts read again by ``report DIR`` (placeholder embeddings: for the views, never the map)
    texts = {**check_sets(result, mapping(inputs).get("texts"), notes), **sets}
    imgs = check_images(result, images, notes)
    names = _names(result, texts)
    bases = _bases(result, texts, base_dir)
    page = Page(
        f"PromptSplit · {names['test']} vs {names['reference']}",
        "Where two prompt-guided models disagree. Positive modes (blue): what the test model produces "
        "more than the reference; negative modes (orange): what the reference produces more.",
    )
    alpha = significance_of(result).get("alpha")
    null, flags = null_and_flags(result, alpha)
    map_block, sink = _map_or_note(result, sets, map_points, names, step, texts)
    step("report: data of the views")
    view = promptsplit_view(result, texts, imgs, bases, names, sink,
                            facet_sets={**mapping(inputs).get("facets", {}), **sets})
    ids = {pr["prompt"]: k for k, pr in enumerate(view["prompts"])}
    step("report: eigenvalue chart")
    eig = _eigen_figure(result, null, flags)
    page.add("Overview", *_overview(result, names, notes, view, alpha, ids, eig))
    if view["prompts"]:
        page.add("All prompts", all_prompts_block(view, len(result.prompt_ranking or [])), anchor="prompts")
    step("report: mode galleries")

    def card(mode: Any) -> Any:
        return _mode_card(mode, imgs, bases, names, alpha, ids,
                          finding_description(result, side=mode.side, rank=mode.rank),
                          quality_block(result, f"mode {'+' if mode.side == 'test' else '-'}{mode.rank}"))

    if view.get("facets"):
        page.add("Your metadata", facets_block(view["facets"], names, verdicts=facet_verdicts(result)),
                 anchor="facets")
    _add_modes(page, result, card, names)
    page.add("Map of the samples", map_block, anchor="map")
    _add_run_details(page, result, ids)
    return finish(page, kind="PromptSplit", result=result, view=view)
