"""The Regions page: the region map over the pixel grid and the per-region CMS table first, then the curves
over the generated sets (checkpoints, in the order given), the pixel CKA matrix ordered by region, and a few
images of each set when the inputs are at hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from . import figures
from .answer import answer_block
from .common import display_name, finish, mapping, notes_block, run_details, safe_figure, thumb
from .core import reloader, renderer, warn_missing
from .html import Page, cards, details, el, fmt, note, p, table
from .rankings import rankings_block
from .regions_view import region_samples, region_table
from .summary import TIE, cms_with_interval, lowest_regions, lowest_text, regions_verdict, set_intervals

#: images shown per set
IMAGES_PER_SET = 8
#: real images averaged for the background of the region map
MEAN_IMAGES = 1000


def _take(images: Any, idx: np.ndarray) -> np.ndarray:
    """Images ``idx`` of an array or of an image set read on demand (``ImageRows.read``), as float."""
    if hasattr(images, "read") and not isinstance(images, np.ndarray):
        return np.asarray(images.read(idx), dtype=float)
    return np.asarray(images[idx], dtype=float)


def _cka(result: Any, base_dir: Any, notes: list[str]) -> np.ndarray | None:
    if result.cka_matrix is not None:
        return np.asarray(result.cka_matrix, dtype=float)
    if base_dir is not None and (Path(base_dir) / "cka_matrix.npy").exists():
        try:
            return np.load(Path(base_dir) / "cka_matrix.npy", mmap_mode="r")
        except (OSError, ValueError) as exc:
            notes.append(f"cka_matrix.npy could not be read ({exc})")
            return None
    notes.append(
        "the pixel CKA matrix is not in result.json (large images) and cka_matrix.npy is not beside it"
    )
    return None


def _ordered(cka: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, list[int]]:
    order = np.argsort(labels, kind="stable")
    sizes = np.bincount(labels)
    d = len(order)
    step = max(1, int(np.ceil(d / 400)))
    if step > 1:  # block means, a block of rows at a time (the matrix may be memory-mapped from disk)
        k = -(-d // step)
        out = np.empty((k, k))
        for b in range(k):
            rows = np.asarray(cka[np.sort(order[b * step : (b + 1) * step])], dtype=float)[:, order]
            pad = np.full((rows.shape[0], k * step), np.nan)
            pad[:, :d] = rows
            out[b] = np.nanmean(pad.reshape(rows.shape[0], k, step), axis=(0, 2))
        return out, [int(c) // step for c in np.cumsum(sizes)[:-1]]
    return np.asarray(cka, dtype=float)[np.ix_(order, order)], [int(c) for c in np.cumsum(sizes)[:-1]]


def _images_block(inputs: Any, names: list[str]) -> Any:
    blocks = []
    real = mapping(inputs).get("real")
    gen = mapping(inputs).get("generated")
    sets: list[tuple[str, Any]] = []
    if real is not None:
        sets.append(("real", real))
    if isinstance(gen, dict):
        sets += list(gen.items())
    elif isinstance(gen, (list, tuple)):
        sets += list(zip(names, gen, strict=False))
    for name, arr in sets:
        try:
            first = _take(arr, np.arange(min(IMAGES_PER_SET, len(arr))))
            picks = [figures.array_thumbnail(im) for im in first]
        except (TypeError, ValueError, IndexError) as exc:
            blocks.append(note(f"{name}: images could not be drawn ({exc})"))
            continue
        blocks.append(
            el(
                "div",
                el("h4", f"{name} · first {len(picks)} of {len(arr):,}"),
                el("div", [thumb(v, "", title=f"{name} #{i}") for i, v in enumerate(picks)], cls="gallery"),
                cls="side",
            )
        )
    return blocks


def _at(values: Any, i: int) -> Any:
    return values[i] if isinstance(values, list) and i < len(values) else None


def _region_colors(k: int) -> dict[str, str]:
    try:
        return {f"region {r}": c for r, c in enumerate(figures.region_colors(k))}
    except ImportError:
        return {}


def _mean_real(real: Any, h: int, w: int) -> np.ndarray | None:
    """The mean of (at most MEAN_IMAGES, evenly spaced) real images: the background of the region map."""
    if real is None:
        return None
    try:
        n = len(real)
        arr = _take(real, np.unique(np.linspace(0, n - 1, min(n, MEAN_IMAGES)).astype(np.int64)))
        return arr.mean(axis=0) if arr.ndim >= 3 and arr.shape[1:3] == (h, w) else None
    except (TypeError, ValueError, IndexError):
        return None


def _cms_rows(result: Any, head: dict) -> tuple[list[list[Any]], list[str]]:
    """The CMS table's rows (each set's lowest regions in bold) and one 'lowest region' line per set."""
    rows = []
    lowest_lines = []
    for k, name in enumerate(result.names):
        row = list(head["region_cms"][k])
        iv = set_intervals(result, k)
        region_iv = iv.get("region_cms") if isinstance(iv.get("region_cms"), list) else []
        lows = set(lowest_regions(row, region_iv)) if len(row) > 1 else set()
        rows.append(
            [
                name,
                cms_with_interval(head["cms"][k], iv.get("cms")),
                cms_with_interval(head["product_cms"][k], iv.get("product_cms")),
            ]
            + [
                el("b", shown) if r in lows else shown
                for r, v in enumerate(row) for shown in [cms_with_interval(v, _at(region_iv, r))]
            ]
        )
        if len(row) > 1:
            lowest_lines.append(f"{name}: lowest region {lowest_text(row, region_iv or None)}")
    return rows, lowest_lines


def _intervals_text(result: Any) -> str:
    """What the brackets of the CMS table are (or that there are none)."""
    boot = getattr(result, "bootstrap", None)
    if not (isinstance(boot, dict) and boot):
        return "No bootstrap intervals in this result. "
    return (
        "CMS: eq. 4, the same with or without intervals. 'U-form': the U-form estimate on all images and its "
        f"{fmt(boot.get('level', 0.95))} bootstrap interval for the population CMS "
        f"({boot.get('replicates', '?')} replicates, seed {boot.get('seed', '?')}); eq. 4 reads low by "
        "about 1/n on n images and can lie outside that interval. "
        + (f"Intervals not calibrated here: {boot['validity']['reason']}. "
           if not boot.get("validity", {"holds": True})["holds"] else "")
    )


def _cms_table(result: Any, head: dict) -> Any:
    """The CMS per region: one row per generated set, with its intervals and lowest regions."""
    headers = ["generated set", "CMS (eq. 4)", "product"] + [
        f"region {r} ({s} px)" for r, s in enumerate(result.region_sizes)
    ]
    rows, lowest_lines = _cms_rows(result, head)
    block_bias = getattr(result, "block_bias", None)
    return el(
        "div",
        el("h3", "CMS per region"),
        table(
            headers,
            rows,
            numeric=range(1, len(headers)),
            row_attrs=[{"data_pp_item": True, "data_pp_group": str(n)} for n in result.names],
        ),
        [p(line) for line in lowest_lines],
        p(
            "Bold: each set's lowest region, the part of the image that differs most, and every region tied "
            f"with it (within {TIE:g}, or with overlapping intervals): tied regions cannot be ordered. "
            + _intervals_text(result),
            cls="muted small",
        ),
        note(str(block_bias)) if block_bias else None,
    )


def _add_overview(page: Page, result: Any, head: dict, mean_real: Any, notes: list[str]) -> None:
    """The overview: notes, cards, the region map beside the CMS table, the rankings."""
    h, w, c = result.image_shape
    region_map = safe_figure(
        figures.region_map,
        np.asarray(result.regions, dtype=np.int64).reshape(h, w),
        background=mean_real,
        alt="region map over the pixel grid",
        caption=f"Regions: clusters of the pixel-by-pixel CKA of the real images "
        f"(sizes {', '.join(str(s) for s in result.region_sizes)} pixels).",
    )
    cms_table = _cms_table(result, head)
    page.add(
        "Overview",
        answer_block(regions_verdict(result, head), [], []),
        notes_block(notes),
        cards(
            [
                (f"{result.n_regions}", f"regions (suggested: {result.suggested_n_regions})"),
                (f"{h}×{w}×{c}", "image shape"),
                (f"{result.n_real:,}", "real images"),
                (f"{len(result.names)}", "generated sets"),
                (fmt(result.gamma), "kernel γ"),
            ]
        ),
        el(
            "div",
            el("div", el("h3", "Region map"), el("div", cls="pp-widget", data_pp_widget="heat"), region_map),
            cms_table,
            cls="grid2",
        ),
        region_table(result, head),
        rankings_block(getattr(result, "ranking", None)),
    )


def _add_curves(page: Page, result: Any, head: dict) -> None:
    """The whole-image, product and per-region CMS over the generated sets, in the order given."""
    series = {"CMS (whole image)": head["cms"], "product of regions": head["product_cms"]}
    region = np.asarray(head["region_cms"], dtype=float).reshape(len(result.names), -1)
    series.update({f"region {r}": region[:, r] for r in range(region.shape[1])})
    page.add(
        "Curves over the generated sets",
        safe_figure(
            figures.curves,
            result.names,
            series,
            ylabel="CMS to real images",
            styles={"CMS (whole image)": "k-o", "product of regions": "k--"},
            colors=_region_colors(region.shape[1]),
            alt="CMS curves over the generated sets",
            caption="One point per generated set, in the order given on the command line "
            "(checkpoints, epochs): the whole-image CMS, the product over regions, "
            "and each region's CMS.",
        ),
        anchor="curves",
    )


def _cka_figure(cka: np.ndarray | None, labels: np.ndarray, notes: list[str]) -> Any:
    """The pixel CKA matrix ordered by region (block means when large), or the note saying why not."""
    if cka is None:
        return note(notes[-1])
    mat, bounds = _ordered(cka, labels)
    reduced = f" ({mat.shape[0]}×{mat.shape[0]} block means)" if mat.shape[0] < len(labels) else ""
    return safe_figure(
        figures.matrix_heatmap,
        mat,
        bounds,
        title=f"pixel CKA of the real images, {len(labels)} pixels by region{reduced}",
        alt="CKA matrix ordered by region",
        caption="Blocks on the diagonal: pixels that vary together form a region; lines "
        "mark region boundaries.",
    )


def _add_cka(page: Page, result: Any, base_dir: Any, labels: np.ndarray, notes: list[str]) -> None:
    """The CKA matrix beside the cross-region CKA table."""
    cka = _cka(result, base_dir, notes)
    cross = np.asarray(result.cross_region_cka, dtype=float)
    off = cross[~np.eye(len(cross), dtype=bool)] if len(cross) > 1 else np.zeros(1)
    cross_table = table(
        ["region"] + [str(r) for r in range(len(cross))],
        [[str(r)] + [fmt(v, 3) for v in row] for r, row in enumerate(cross)],
        numeric=range(1, len(cross) + 1),
    )
    page.add(
        "CKA matrix",
        el(
            "div",
            _cka_figure(cka, labels, notes),
            el(
                "div",
                el("h3", "Cross-region CKA"),
                cross_table,
                p(
                    f"0 = independent regions (Theorem 1's assumption): max "
                    f"{off.max():.3f}, mean {off.mean():.3f} off the diagonal.",
                    cls="muted small",
                ),
            ),
            cls="grid2",
        ),
        anchor="cka",
    )


@renderer("regions")
def render_regions(
    result: Any, *, inputs: Any = None, base_dir: Any = None, notes: list[str] | None = None, **_: Any
) -> str:
    """The Regions report page (see the module docstring)."""
    notes = list(notes or []) + [str(n) for n in getattr(result, "notes", None) or []]
    h, w, _c = result.image_shape
    labels = np.asarray(result.regions, dtype=np.int64)
    mean_real = _mean_real(mapping(inputs).get("real"), h, w)
    page = Page(
        f"Regions · {len(result.names)} generated set{'s' if len(result.names) != 1 else ''} vs "
        f"{display_name(result.config.get('real'), 'real images')}",
        "Disentangled CMS: which pixel regions make generated images differ from real ones. "
        "CMS 1 = same distribution; lower = further apart. The product of region CMS approximates "
        "the whole-image CMS when regions are independent.",
    )
    head = result.headline()
    _add_overview(page, result, head, mean_real, notes)
    _add_curves(page, result, head)
    _add_cka(page, result, base_dir, labels, notes)
    imgs = _images_block(inputs, list(result.names))
    if imgs:
        page.add("Images", imgs)
    page.add(
        "Run details",
        run_details(
            result,
            [
                ("MMD² per set", ", ".join(fmt(v) for v in result.mmd2)),
                ("images per set", ", ".join(map(str, result.n_generated))),
            ],
        ),
        details("constant pixels", p(", ".join(map(str, result.constant_pixels)) or "none")),
    )
    samples, thumbs = region_samples(inputs, list(result.names))
    view = {
        "group_label": "generated set",
        "samples": samples,
        "thumbs": thumbs,
        "shape": [h, w],
        "labels": labels.tolist(),
        "intervals": [set_intervals(result, k).get("region_cms") or [] for k in range(len(result.names))],
    }
    return finish(page, kind="Regions", result=result, view=view)


@reloader("regions")
def reload_regions(result: Any, result_dir: Path) -> tuple[dict, None, list[str]]:
    """The real and generated images again, from where result.json's ``inputs`` records them (relative to
    the results folder, then absolute), for older results from the paths in ``config``; a set whose content
    differs from its recorded fingerprint is refused."""
    from ..data.images import load_images
    from ..errors import PromptPrismError
    from ..provenance import locate, verify

    notes: list[str] = []
    missing: list[str] = []
    inputs: dict[str, Any] = {}
    records = getattr(result, "inputs", None) or {}
    real = result.config.get("real")
    gens = result.config.get("generated") or []
    for key, path in [("real", real)] + [(f"generated {i}", g) for i, g in enumerate(gens)]:
        name = "real" if key == "real" else result.names[int(key.split()[1])]
        if name in records:
            found = locate(records[name], result_dir)
            path = found if found is not None else records[name].get("path")
            if found is not None:
                verify(name, found, records)
        if not path:
            continue
        if not Path(path).exists():
            notes.append(f"{path} not found: its images are not shown")
            missing.append(f"{name} {path}")
            continue
        try:
            arr = load_images(path, key)
        except PromptPrismError as exc:
            notes.append(f"{path}: {exc}")
            continue
        if key == "real":
            inputs["real"] = arr
        else:
            inputs.setdefault("generated", {})[result.names[int(key.split()[1])]] = arr
    warn_missing(missing, "their images")
    return inputs, None, notes
