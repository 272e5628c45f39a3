"""The PromptSplit page: disagreeing prompts and the eigenvalue chart first, then per mode its top prompts and
the strongest samples of each model side by side, then a t-SNE map of the samples coloured by mode.

The gallery needs nothing but result.json for text outputs and image-file outputs (their paths are in it);
array images (the demo) and the map need the inputs: pass them, or let ``promptprism report DIR`` read them
again from ``config['test']`` / ``config['reference']`` (or ``DIR/data/{test,reference}.npz``).

The map: a seeded subsample of at most ``map_points`` samples (the rate is printed under it). Each point is
coloured by the mode on which it has the largest |score|, with scores from the exact PromptSplit route run on
those same samples (same kernel, bandwidths and eta as the result): when the subsample is the whole data and
the result used the exact route these are the result's own modes; otherwise they are the subsample's
estimate of them, named by sign and rank like the result's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..data.paired import PairedSet
from . import figures
from .common import (
    display_name,
    finish,
    mapping,
    notes_block,
    run_details,
    safe_figure,
    text_card,
    thumb,
    visual_of,
)
from .core import reloader, renderer
from .html import Page, bar, cards, details, el, fmt, note, p, table

#: at most this many samples go into the t-SNE map (a seeded subsample above it)
MAP_POINTS = 2000
#: samples per model shown for each mode
GALLERY_PER_SIDE = 8
#: modes per sign shown open; the others are folded (still in the page)
OPEN_MODES = 3
#: the map colours the top modes of each sign, up to this many
MAP_MODES_PER_SIGN = 4
#: a point is 'weak' when its largest |score| is below this fraction of its mode's 99th percentile
WEAK = 0.25
SIDE_TITLE = {"test": "test model", "reference": "reference model"}
POS_PALETTE = ("#1f4e9c", "#3f8fd8", "#1a9c8c", "#7fb3e8")
NEG_PALETTE = ("#c8461c", "#e8912c", "#a8326e", "#f0b87a")


def _mode_label(side: str, rank: int) -> str:
    return f"{'+' if side == 'test' else '−'}{rank}"


def _check_sets(result: Any, inputs: Any, notes: list[str]) -> dict[str, PairedSet]:
    sets: dict[str, PairedSet] = {}
    for side, n in (("test", result.n_test), ("reference", result.n_reference)):
        s = mapping(inputs).get(side)
        if s is None:
            continue
        if not isinstance(s, PairedSet):
            notes.append(f"inputs['{side}'] is a {type(s).__name__}, not a PairedSet; it is not used")
        elif len(s) != n:
            notes.append(
                f"the {side} input has {len(s):,} samples but the result was computed on {n:,}; "
                "it is not used (the data changed since the run?)"
            )
        else:
            sets[side] = s
    return sets


def _check_images(result: Any, images: Any, notes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for side, n in (("test", result.n_test), ("reference", result.n_reference)):
        arr = mapping(images).get(side)
        if arr is None:
            continue
        try:
            k = len(arr)
        except TypeError:
            notes.append(f"images['{side}'] has no length; not used")
            continue
        if k != n:
            notes.append(
                f"images['{side}'] holds {k:,} images but the {side} set has {n:,} samples; not used"
            )
            continue
        out[side] = arr
    return out


# ------------------------------------------------------------------------------------------------ gallery
def _sample_cell(s: Any, images: dict[str, Any], bases: dict[str, list[Path]]) -> Any:
    caption = el("div", el("div", f"score {s.score:+.3g}"), el("div", s.prompt))
    visual, why = visual_of(s.output, index=s.index, images=images.get(s.set), bases=bases.get(s.set, ()))
    if visual is not None:
        return thumb(visual, caption, title=f"{s.prompt} | {s.output or ''} | #{s.index}")
    if why:
        return text_card(why, caption)
    return text_card(s.output if s.output is not None else f"sample #{s.index} (no output recorded)", caption)


def _side_block(title: str, samples: list, note_text: str, images, bases) -> Any:
    cells = [_sample_cell(s, images, bases) for s in samples[:GALLERY_PER_SIDE]]
    has_thumbs = any('class="thumb"' in c for c in cells)
    body = el("div", cells, cls="gallery") if has_thumbs else el("div", cells)
    return el(
        "div",
        el("h4", title, el("span", f" · {note_text}", cls="muted small")),
        body if cells else p("no samples", cls="muted"),
        cls="side",
    )


def _mode_card(mode: Any, images, bases, names: dict[str, str]) -> Any:
    pos = mode.side == "test"
    label = _mode_label(mode.side, mode.rank)
    lam = mode.eigenvalue
    prompts = [
        (
            pl.prompt,
            el(
                "span",
                bar(abs(pl.contribution / lam) if lam else 0.0, neg=not pos, width=60),
                f"{pl.contribution / lam:.0%}" if lam else "–",
            ),
            pl.n_test,
            pl.n_reference,
        )
        for pl in mode.top_prompts[:6]
    ]
    by_side = {mode.side: mode.top_samples, ("reference" if pos else "test"): mode.top_samples_other}
    favoured = f"strongest on this mode ({names[mode.side]} does more of it)"
    cols = [
        _side_block(
            names[s],
            by_side.get(s, []),
            favoured if s == mode.side else "its strongest, for contrast",
            images,
            bases,
        )
        for s in ("test", "reference")
    ]
    return el(
        "div",
        el(
            "h3",
            el("span", label, cls="tag" if pos else "tag neg"),
            f" {names[mode.side]} does more · eigenvalue {lam:+.4g}",
        ),
        table(["top prompts", "share of the eigenvalue", "n test", "n ref"], prompts, numeric=(2, 3)),
        el("div", cols, cls="grid2"),
        cls="card pos" if pos else "card neg",
        id=f"mode{'p' if pos else 'n'}{mode.rank}",
    )


def _strongest_modes(result: Any, k: int = 3, floor: float = 0.2) -> dict[str, list]:
    """Per prompt, the reported modes that add most to its disagreement d_p = sum_j lambda_j c_pj: the
    largest terms lambda_j c_pj among the modes that list it, each at least ``floor`` of their sum (at most
    ``k``)."""
    parts: dict[str, list[tuple[float, Any]]] = {}
    for mode in result.modes:
        for pl in mode.top_prompts:
            part = mode.eigenvalue * pl.contribution
            if part > 0:
                parts.setdefault(pl.prompt, []).append((part, mode))
    out = {}
    for prompt, items in parts.items():
        items.sort(key=lambda t: -t[0])
        total = sum(t[0] for t in items)
        out[prompt] = [m for part, m in items[:k] if part >= floor * total]
    return out


# ---------------------------------------------------------------------------------------------------- map
def _subsample(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n, size=min(k, n), replace=False)) if k < n else np.arange(n)


def _joint_features(t: np.ndarray, z: np.ndarray, cfg: dict) -> np.ndarray:
    """Coordinates whose Euclidean distances follow the product kernel: [t/σ_t, z/σ_z] (gaussian) or the
    unit-normalised [t, z] (cosine)."""
    if cfg.get("kernel") == "gaussian" and cfg.get("sigma_prompt") and cfg.get("sigma_output"):
        return np.hstack([t / float(cfg["sigma_prompt"]), z / float(cfg["sigma_output"])])
    tn = t / np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-300)
    zn = z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-300)
    return np.hstack([tn, zn])


def mode_scores(
    result: Any, t: dict[str, np.ndarray], z: dict[str, np.ndarray], n_modes: int
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Exact-route scores of the given samples (test rows first) on their own top ``n_modes`` modes per sign,
    with the result's kernel, bandwidths and eta: (scores (N, k), labels '+1', '−1', ..., eigenvalues)."""
    from ..methods.promptsplit import _select_modes, joint_gram, signed_weights
    from ..stats.eigen import weighted_gram_eigenpairs

    cfg = result.config
    n, m = t["test"].shape[0], t["reference"].shape[0]
    eta = float(cfg.get("eta", 1.0))
    gram = joint_gram(
        t["test"],
        z["test"],
        t["reference"],
        z["reference"],
        kernel=cfg.get("kernel", "gaussian"),
        sigma_prompt=cfg.get("sigma_prompt"),
        sigma_output=cfg.get("sigma_output"),
    )
    # a few modes of a large Gram matrix: Lanczos (ARPACK, to machine precision) beats the full spectrum
    eig = weighted_gram_eigenpairs(
        gram,
        signed_weights(n, m, eta),
        n_positive=n_modes,
        n_negative=n_modes,
        solver="lanczos" if n + m > 500 else "auto",
    )
    sel = _select_modes(eig.eigenvalues, n_modes, 1.0 + eta)
    vals = eig.eigenvalues[sel]
    labels, counts = [], {"test": 0, "reference": 0}
    for v in vals:
        side = "test" if v > 0 else "reference"
        counts[side] += 1
        labels.append(_mode_label(side, counts[side]))
    return eig.scores[:, sel], labels, vals


def _map_section(result: Any, sets: dict[str, PairedSet], map_points: int, names: dict[str, str]) -> list:
    if set(sets) != {"test", "reference"}:
        return [
            note(
                "The map needs the embeddings of both sets, which result.json does not hold: write the "
                "report from the command that computed the result, or keep the inputs where config "
                "names them and run promptprism report DIR."
            )
        ]
    total = result.n_test + result.n_reference
    k = max(2, min(int(map_points), total))
    rng = np.random.default_rng(result.seed)
    k_test = min(result.n_test, max(1, round(k * result.n_test / total)))
    idx = {
        "test": _subsample(result.n_test, k_test, rng),
        "reference": _subsample(result.n_reference, k - k_test, rng),
    }
    if min(len(v) for v in idx.values()) < 2 or k < 12:
        return [note(f"too few samples ({k}) for a map")]
    t = {s: np.asarray(sets[s].prompt_embeddings[idx[s]], dtype=np.float64) for s in idx}
    z = {s: np.asarray(sets[s].output_embeddings[idx[s]], dtype=np.float64) for s in idx}
    per_sign = min(MAP_MODES_PER_SIGN, int(result.config.get("n_modes") or MAP_MODES_PER_SIGN))
    scores, labels, vals = mode_scores(result, t, z, per_sign)
    shown = sum(len(v) for v in idx.values())
    whole = shown == total
    if whole and result.method == "exact":
        ref = np.r_[
            [mm.eigenvalue for mm in result.positive_modes[:per_sign]],
            [mm.eigenvalue for mm in result.negative_modes[:per_sign]],
        ]
        mine = np.r_[vals[vals > 0], vals[vals < 0]]
        agree = ref.size == mine.size and np.allclose(np.sort(ref), np.sort(mine), rtol=1e-6, atol=1e-12)
        origin = (
            "the result's own modes"
            if agree
            else "modes recomputed on these samples (their eigenvalues differ from the result's)"
        )
    elif whole:
        origin = f"the exact route's modes on all samples (the result used the {result.method} route)"
    else:
        origin = "modes re-estimated by the exact route on this subsample"
    feats = _joint_features(
        np.vstack([t["test"], t["reference"]]), np.vstack([z["test"], z["reference"]]), result.config
    )
    xy = _tsne(feats, result.seed)
    if scores.shape[1] == 0:
        assign = np.array(["no mode"] * shown)
        colors = {"no mode": "#888888"}
    else:
        # |score| in units of the mode's own spread (its 99th percentile here), so that the top mode, whose
        # scores are the largest, does not take every point
        spread = np.quantile(np.abs(scores), 0.99, axis=0)
        strength = np.abs(scores) / np.where(spread > 0, spread, 1.0)
        best = strength.argmax(axis=1)
        weak = strength.max(axis=1) < WEAK
        assign = np.array([labels[j] for j in best], dtype=object)
        assign[weak] = "weak"
        colors = {}
        pos_i = neg_i = 0
        for lab in labels:
            if lab.startswith("+"):
                colors[lab], pos_i = POS_PALETTE[pos_i % len(POS_PALETTE)], pos_i + 1
            else:
                colors[lab], neg_i = NEG_PALETTE[neg_i % len(NEG_PALETTE)], neg_i + 1
        colors["weak"] = "#c9ccd2"
    groups = [names["test"], names["reference"]]
    markers = [names["test"]] * len(idx["test"]) + [names["reference"]] * len(idx["reference"])
    rate = shown / total
    fig = safe_figure(
        figures.scatter_map,
        xy,
        assign.astype(str),
        groups,
        colors,
        markers,
        {names["test"]: "o", names["reference"]: "^"},
        f"t-SNE of the joint (prompt, output) embeddings · {shown:,} of {total:,} samples",
        alt="t-SNE map of the samples coloured by mode",
    )
    return [
        fig,
        p(
            f"Sampling rate: {shown:,} of {total:,} samples ({rate:.1%}"
            + ("" if whole else f", a random subsample seeded with {result.seed}, proportional per set")
            + "). "
            f"Each point is coloured by the mode (top {per_sign} of each sign: {origin}) on which it has "
            "the largest |score|, each mode's scores measured in units of their 99th percentile |score| on "
            f"the map's samples; 'weak': below {WEAK:g} of that on every coloured mode (where the models "
            "agree). Circles: test model, triangles: reference. t-SNE places similar samples close "
            "together; distances between far-apart groups mean little.",
            cls="muted small",
        ),
    ]


def _tsne(x: np.ndarray, seed: int) -> np.ndarray:
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE
    from threadpoolctl import threadpool_limits

    n = x.shape[0]
    x = x - x.mean(axis=0)
    if x.shape[1] > 50 and n > 50:
        x = PCA(50, random_state=seed).fit_transform(x)
    perplexity = float(min(30.0, max(2.0, (n - 1) / 3.0)))
    tsne = TSNE(2, perplexity=perplexity, init="pca", learning_rate="auto", max_iter=500, random_state=seed)
    # few OpenMP threads: t-SNE's Barnes-Hut loop slows down by 10x or more when its threads compete with
    # other work for the cores, and gains little from many threads at a few thousand points
    with threadpool_limits(max(1, min(4, (os.cpu_count() or 2) // 2)), user_api="openmp"):
        return tsne.fit_transform(x)


# --------------------------------------------------------------------------------------------------- page
@renderer("promptsplit")
def render_promptsplit(
    result: Any,
    *,
    inputs: Any = None,
    images: Any = None,
    base_dir: Any = None,
    notes: list[str] | None = None,
    map_points: int = MAP_POINTS,
    **_: Any,
) -> str:
    """The PromptSplit report page (see the module docstring)."""
    notes = list(notes or [])
    sets = _check_sets(result, inputs, notes)
    imgs = _check_images(result, images, notes)
    cfg = result.config
    names = {
        s: display_name(cfg.get(s) or (sets[s].name if s in sets else None), SIDE_TITLE[s])
        for s in ("test", "reference")
    }
    if names["test"] == names["reference"]:
        names = dict(SIDE_TITLE)
    bases: dict[str, list[Path]] = {}
    for s in ("test", "reference"):
        src = (sets[s].source if s in sets else None) or cfg.get(s)
        bases[s] = [Path(src).parent] if src and ("/" in str(src) or "\\" in str(src)) else []
        if base_dir is not None:
            bases[s].append(Path(base_dir))
    page = Page(
        f"PromptSplit · {names['test']} vs {names['reference']}",
        "Where two prompt-guided models disagree. Positive modes (blue): what the test model produces "
        "more than the reference; negative modes (orange): what the reference produces more.",
    )
    n_pos, n_neg = len(result.positive_modes), len(result.negative_modes)
    ranking_rows = []
    top_share = max((abs(r["share"]) for r in result.prompt_ranking[:10]), default=1.0) or 1.0
    strongest = _strongest_modes(result)
    for i, r in enumerate(result.prompt_ranking[:10], 1):
        tags = [
            el("span", _mode_label(m.side, m.rank), cls="tag" if m.side == "test" else "tag neg",
               title=f"{names[m.side]} does more")
            for m in strongest.get(r["prompt"], [])
        ]
        ranking_rows.append(
            (
                i,
                r["prompt"],
                el("span", bar(abs(r["share"]) / top_share, width=60), f"{r['share']:.1%}"),
                el("span", [[t, " "] for t in tags]) if tags else "–",
                r["n_test"],
                r["n_reference"],
            )
        )
    ranking = el(
        "div",
        el("h3", "Prompts where the models disagree most"),
        table(
            ["#", "prompt", "share of the disagreement", "main modes", "n test", "n ref"],
            ranking_rows,
            numeric=(0, 4, 5),
        )
        if ranking_rows
        else p("no prompt ranking in the result", cls="muted"),
        p(
            "Share: the prompt's part of Σλ², the disagreement the reported modes capture. Main modes: those "
            "that add most to it (+: the test model does more, −: the reference does more).",
            cls="muted small",
        ),
    )
    eig = safe_figure(
        figures.eigenvalue_bars,
        result.eigenvalues,
        int(cfg.get("n_modes") or 10),
        alt="top positive and negative eigenvalues",
        caption=f"Top {n_pos} positive and {n_neg} negative eigenvalues of Λ = C_test − "
        f"η C_ref (η = {fmt(cfg.get('eta', 1.0))}). A few tall bars: a few clear "
        "differences; a flat spectrum: diffuse ones.",
    )
    page.add(
        "Overview",
        notes_block(notes),
        cards(
            [
                (f"{result.n_test:,}", f"samples · {names['test']}"),
                (f"{result.n_reference:,}", f"samples · {names['reference']}"),
                (fmt(result.distance), "‖Λ‖²_F (PromptSplit distance)"),
                (f"{n_pos} / {n_neg}", "positive / negative modes"),
                (f"{result.method}", f"route · {cfg.get('kernel', '?')} kernel"),
            ]
        ),
        el("div", ranking, el("div", el("h3", "Eigenvalues"), eig), cls="grid2"),
    )
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
                f"What the {names[side]} produces more, strongest first. Per mode: the prompts "
                f"that load on it, and the samples of each model that score highest on it "
                f"(up to {GALLERY_PER_SIDE} per model).",
                cls="muted",
            ),
            [_mode_card(mm, imgs, bases, names) for mm in modes[:OPEN_MODES]],
            details(
                f"{len(modes) - OPEN_MODES} more {title.lower()} "
                f"({_mode_label(side, OPEN_MODES + 1)} … {_mode_label(side, len(modes))})",
                [_mode_card(mm, imgs, bases, names) for mm in modes[OPEN_MODES:]],
            )
            if len(modes) > OPEN_MODES
            else None,
        )
    try:
        map_block = _map_section(result, sets, map_points, names)
    except (ImportError, ArithmeticError, ValueError, RuntimeError, np.linalg.LinAlgError) as exc:
        # the map is an extra: a missing package or a degenerate subsample (e.g. an eigen-solver that does
        # not converge) leaves a note, never a failed command after result.json is written
        map_block = [note(f"map not drawn: {type(exc).__name__}: {exc}")]
    page.add("Map of the samples", map_block, anchor="map")
    more = [
        ("distance ‖Λ‖²_F", fmt(result.distance, 6)),
        ("spectrum computed", f"{len(result.eigenvalues)} eigenvalues"),
    ]
    page.add(
        "Run details",
        run_details(result, more),
        details(
            f"full prompt ranking ({len(result.prompt_ranking)} prompts)",
            table(
                ["#", "prompt", "disagreement", "share", "n test", "n ref"],
                [
                    (
                        i,
                        r["prompt"],
                        fmt(r["disagreement"]),
                        f"{r['share']:.2%}",
                        r["n_test"],
                        r["n_reference"],
                    )
                    for i, r in enumerate(result.prompt_ranking, 1)
                ],
                numeric=(0, 2, 3, 4, 5),
            ),
        ),
    )
    return finish(page, kind="PromptSplit")


# ------------------------------------------------------------------------------------- inputs, re-read
@reloader("promptsplit")
def reload_promptsplit(result: Any, result_dir: Path) -> tuple[dict, dict, list[str]]:
    """Read the test and reference sets again from ``config`` (a path as given, or relative to the results
    folder), else ``result_dir/data/{test,reference}.npz``; an ``images`` array in an .npz is used for the
    gallery. Inputs that need an encoder (manifests, image folders) are not embedded again: their galleries
    come from result.json and the map is left out, with a note."""
    from ..data.loaders import load_paired
    from ..errors import PromptPrismError

    inputs, images, notes = {}, {}, []
    for side in ("test", "reference"):
        where = result.config.get(side)
        candidates = []
        if where:
            candidates += [Path(where), result_dir / str(where)]
        candidates.append(result_dir / "data" / f"{side}.npz")
        path = next((c for c in candidates if c.exists() and _is_embeddings(c)), None)
        if path is None:
            if where and any(Path(c).exists() for c in candidates[:2]):
                notes.append(
                    f"{side} input {where}: raw generations (not embeddings); the map needs them "
                    "embedded, so it is left out here (the command that ran the method draws it)"
                )
            else:
                notes.append(
                    f"{side} input {where or '(not recorded)'} not found; the map and array "
                    "thumbnails are left out"
                )
            continue
        try:
            inputs[side] = load_paired(path, name=side)
        except PromptPrismError as exc:
            notes.append(f"{side} input could not be read again: {exc}")
            continue
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as zf:
                if "images" in zf.files:
                    images[side] = zf["images"]
    return inputs, images, notes


def _is_embeddings(path: Path) -> bool:
    return path.suffix.lower() == ".npz" or (path.is_dir() and (path / "prompt_embeddings.npy").exists())
