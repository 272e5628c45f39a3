"""``promptprism regions``: which pixel regions make generated images differ from real ones."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import typer
from rich.table import Table

from ..backend import resolve_backend
from ..errors import OptionError
from ..kernels.bandwidth import Bandwidth
from ..methods.regions.options import BLOCK_ESTIMATORS
from ..methods.regions.result import lowest_regions
from ..scale import current_client, execution
from ..stats.intervals import format_estimate
from . import _inputs as inp
from ._app import app, console, run_state
from ._bandwidth import bandwidth_option
from ._options import NAMES, PRECISION_CHOICE, SEED, Choice, Integer, resolve_sets, typed
from ._output import print_written, save_outputs
from .report import NO_REPORT

if TYPE_CHECKING:  # (the method is imported when the command runs)
    from ..methods.regions import RegionsResult


def print_regions(result: RegionsResult, out: Path | None, *, quiet: bool = False) -> None:
    """One row per generated set: whole-image CMS, the product over regions, each region's CMS (eq. 4);
    with intervals, each cell's U-form estimate and its interval on the lines below, labelled."""
    if not quiet:
        h, w, c = result.image_shape
        table = Table(title=f"Disentangled CMS: {result.n_regions} regions of {h}x{w}x{c} images, "
                            f"gamma={result.gamma:.4g}, n_real={result.n_real}")
        head, u_form = result.headline(), result.u_form()
        table.add_column("generated set")
        table.add_column("CMS (eq. 4)", justify="right")
        table.add_column("product", justify="right")
        for r, size in enumerate(result.region_sizes):
            table.add_column(f"region {r} ({size} px)", justify="right")
        for k, name in enumerate(result.names):
            row = head["region_cms"][k]
            iv = result.intervals[k] if u_form else {}
            u = {key: u_form[key][k] for key in ("cms", "product_cms", "region_cms")} if u_form else {}
            bounds = iv["region_cms"] if iv else [None] * len(row)
            cells = [_cell(v, u["region_cms"][r] if u else None, b) for r, (v, b) in
                     enumerate(zip(row, bounds, strict=True))]
            for worst in lowest_regions(row, bounds if iv else None) if len(row) > 1 else []:
                first, _, rest = cells[worst].partition("\n")
                cells[worst] = f"[bold]{first}[/]" + (f"\n{rest}" if rest else "")
            whole = _cell(head["cms"][k], u.get("cms"), iv.get("cms"))
            prod = _cell(head["product_cms"][k], u.get("product_cms"), iv.get("product_cms"))
            table.add_row(name, whole, prod, *cells)
        console.print(table)
        _print_intervals(result)
        for note in getattr(result, "notes", None) or []:
            console.print(f"! {note}", highlight=False, markup=False, soft_wrap=True)
        if getattr(result, "ranking", None):
            console.print(f"ranking: {result.ranking['words']}", highlight=False, markup=False,
                          soft_wrap=True)
        if result.block_bias:
            console.print(result.block_bias, highlight=False, markup=False)
        cross = np.asarray(result.cross_region_cka, dtype=float)
        off = cross[~np.eye(len(cross), dtype=bool)] if len(cross) > 1 else np.zeros(1)
        console.print(f"cross-region CKA on the real images (0 = independent, Theorem 1's assumption): "
                      f"max {off.max():.3f}, mean {off.mean():.3f}; suggested number of regions: "
                      f"{result.suggested_n_regions}")
        if h * w <= 32 * 32:
            grid = result.region_map()
            console.print("region map:")
            for line in grid:
                console.print(" ".join(_label(v) for v in line), highlight=False)
    if out is not None:
        console.print(f"results: {out / 'result.json'}")


def _cell(value: float, u_value: float | None, interval: dict | None) -> str:
    """eq. 4's value; with an interval, below it 'U-form' with the U-form estimate and its interval."""
    if interval is None or u_value is None:
        return f"{value:.4f}"
    return f"{value:.4f}\nU-form " + format_estimate(u_value, interval, ".4f", sep="\n")


def _print_intervals(result: RegionsResult) -> None:
    """What the bracketed lines of the table are, whether they are calibrated here, and the region ties."""
    if not result.bootstrap:
        return
    boot = result.bootstrap
    level = boot["level"]
    console.print("CMS: eq. 4 (the plug-in estimate, also in result.json, curves.csv and promptprism check; "
                  "the same with or without --bootstrap). 'U-form' lines: the U-form estimate on all "
                  f"images and its {level:.0%} bootstrap interval for the population CMS "
                  f"({boot['replicates']} resamples of the {boot['resample']}, seed {boot['seed']}; "
                  "*_uform columns in curves.csv); eq. 4 reads low by about 1/n on n images and can lie "
                  "outside that interval", highlight=False, markup=False)
    valid = boot.get("validity") or {}
    if valid and not valid["holds"]:
        console.print(f"! intervals not calibrated here: {valid['reason']}", highlight=False,
                      markup=False, soft_wrap=True)
    for k, name in enumerate(result.names):
        ties = result.region_ties(k)
        if ties:
            pairs = ", ".join(f"{a} and {b}" for a, b in ties)
            console.print(f"{name}: regions {pairs} tie within their {level:.0%} intervals (their "
                          "order is not resolved)", highlight=False, markup=False)


def _label(v: int) -> str:
    return "0123456789abcdefghijklmnopqrstuvwxyz"[v] if v < 36 else "#"


#: the real images: the regions are found from --real; the CMS compares against --reference (metrics' role)
REAL = typer.Option(..., "--real", help="Real (training) images, that the regions are found from (and that "
                                        "the CMS compares against without --reference): a folder, a .npy "
                                        "array (n, H, W) or (n, H, W, C), or a .csv/.jsonl manifest with an "
                                        "'image' column.")
REFERENCE = typer.Option(None, "--reference",
                         help="Held-out real images, that the CMS compares the generated sets against "
                              "(default: --real; the role of metrics' --reference), same formats.")


@app.command("regions", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def regions(
    ctx: typer.Context,
    real: Path = REAL,
    generated: list[Path] = typer.Option(..., "--generated", "-g",
                                         help="One or more generated sets (checkpoints, epochs), same "
                                              "formats: --generated A B C."),
    out: Path = typer.Option(..., "--out", "-o", help="Results folder (result.json, curves.csv, "
                                                      "cka_matrix.npy)."),
    names: str = NAMES,
    n_regions: int = typed("auto", Integer(words=("auto",), minimum=1), "--regions", "-C",
                           help="Number of regions C, or 'auto' (largest dendrogram gap)."),
    reference: Path | None = REFERENCE,
    gamma: Bandwidth = bandwidth_option(
        "--gamma", kind="gamma",
        help="Kernel gamma: a number, or 'median' (1 / median Euclidean distance between real images), or "
             "scaled '0.5*median'."),
    block_size: int = typed("none", Integer(words=("none",)), "--block-size",
                            help="Mini-batch size b of the CMS estimator, or 'none' (all images, exact eq. "
                                 "4). The paper's block average is biased downwards (b = 150: 0.924 where "
                                 "eq. 4 gives 0.987); the default --block-estimator corrects it."),
    block_estimator: str = typed("corrected", Choice(BLOCK_ESTIMATORS), "--block-estimator",
                                 help="With --block-size: 'corrected' (pair means pooled over blocks, put "
                                      "into eq. 4 for all images; targets the full estimate) or 'paper' "
                                      "(average of per-block CMS, biased downwards)."),
    bootstrap: int = typed(0, Integer(), "--bootstrap",
                           help="Bootstrap resamples B for 95% intervals of the whole-image, product and "
                                "per-region CMS (0: off; at least 20; seeded by --seed; images resampled, "
                                "or blocks with --block-size)."),
    cka_block_size: int = typed("auto", Integer(words=("auto", "none")), "--cka-block-size",
                                help="Mini-batch size of the pixel CKA: 'auto' (100, or all images when "
                                     "fewer), a number, or 'none'."),
    cka_images: int = typed(1000, Integer(), "--cka-images",
                            help="Real images (seeded subsample) for the CKA matrix."),
    max_regions: int = typed(10, Integer(), "--max-regions", help="Largest C that 'auto' considers."),
    min_region_size: int = typed("auto", Integer(words=("auto",)), "--min-region-size",
                                 help="Smallest region the dendrogram cut keeps ('auto': a quarter of the "
                                      "average region size)."),
    seed: int = SEED,
    precision: str = typed("float64", PRECISION_CHOICE, "--precision",
                           help="float64, or float32 for a 2-3x faster pixel CKA product on large images "
                                "(entries change by ~1e-6)."),
    plot: bool = typer.Option(False, "--plot", help="Also write curves.png (CMS, product and each region per "
                                                    "set) and regions.png (needs matplotlib)."),
    scheduler: str = inp.SCHEDULER,
    workers: int = inp.WORKERS,
    partition_rows: int = typed(512, Integer(), "--partition-rows",
                                help="Images per task of the sums over images (the exact CMS takes pairs of "
                                     "chunks of this many images)."),
    quiet: bool = inp.QUIET,
    no_report: bool = NO_REPORT,
    device: str = inp.DEVICE,
) -> None:
    """Disentangled mean embeddings: the CMS of generated to real images, region by region.

    Regions: clusters of the pixel-by-pixel CKA matrix of the real images.
    Per generated set: whole-image CMS, the product of region CMS (Theorem 1) and each region's CMS.
    """
    from ..methods.regions import RegionCMS

    gen_paths, gen_names = resolve_sets(_generated_paths(generated, ctx.args), names)
    resolve_backend(device, name="--device")  # a bad value is refused naming the flag
    estimator = RegionCMS(
        n_regions=n_regions, gamma=gamma, block_size=block_size, cka_block_size=cka_block_size,
        cka_max_images=cka_images, max_regions=max_regions,
        min_region_size=None if min_region_size == "auto" else min_region_size, seed=seed,
        progress=False if quiet else None, precision=precision, partition_rows=partition_rows,
        bootstrap=bootstrap, block_estimator=block_estimator, device=device)
    with execution(scheduler=scheduler, workers=workers):
        real_images, gen_sets, ref = _load_images(real, gen_paths, reference)
        result = estimator.fit(real_images).compare(gen_sets, gen_names, reference=ref)
    result = _with_inputs(result, real, gen_paths, reference)
    written = save_outputs(result, out, report=not no_report, quiet=quiet,
                           inputs={"real": real_images, "generated": gen_sets},
                           sources=_sources(real, gen_paths, gen_names, reference),
                           extra=(lambda folder: write_plots(result, folder)) if plot else None)
    print_regions(result, None, quiet=quiet)
    print_written(written)


def _generated_paths(generated: list[Path], extra: list[str]) -> list[Path]:
    """``--generated A B C``: the first after the flag, and the rest (left over by click as extra args)."""
    for arg in extra:
        if arg.startswith("-"):
            raise OptionError(f"unknown option {arg!r}; see promptprism regions --help")
    return list(generated) + [Path(a) for a in extra]


def _load_images(real: Path, gen_paths: list[Path], reference: Path | None) -> tuple:
    """(real, generated sets, reference or None), each checked to have the real images' shape."""
    from ..data.images import ImageRows, load_images
    from ..methods.regions.sources import check_same_shape

    # on a cluster the workers read their own images (the paths must be readable there); here, one load
    reader = ImageRows.open if current_client() is not None else load_images

    def load(path: Path, name: str) -> object:
        return reader(path, name, columns=run_state().columns_for(path))

    real_images = load(real, "real")
    gen_sets = [load(p, "generated") for p in gen_paths]
    ref = load(reference, "reference") if reference is not None else None
    for p, g in zip(gen_paths, gen_sets, strict=True):
        check_same_shape(g.shape, real_images.shape[1:], f"generated ({p})")
    return real_images, gen_sets, ref


def _sources(real: Path, gen: list[Path], names: list[str], reference: Path | None) -> dict[str, Path]:
    """The image sets' paths by name, for result.json's ``inputs``."""
    sources = {"real": real, **dict(zip(names, gen, strict=True))}
    if reference is not None:
        sources["reference"] = reference
    return sources


def _with_inputs(result: RegionsResult, real: Path, gen: list[Path], reference: Path | None) -> RegionsResult:
    import dataclasses

    config = dict(result.config, real=str(real), generated=[str(p) for p in gen],
                  reference=None if reference is None else str(reference))
    return dataclasses.replace(result, config=config)


def write_plots(result: RegionsResult, out: Path) -> None:
    """curves.png (one x position per generated set) and regions.png (the region map), atomically."""
    import io

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptionError("--plot needs matplotlib (pip install matplotlib); curves.csv has the same "
                          "numbers") from None
    from ..io import atomic_write_bytes

    x = np.arange(len(result.names))
    head = result.headline()
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(x, head["cms"], "k-o", label=f"CMS (whole image, {head['estimate']})")
    ax.plot(x, head["product_cms"], "k--", label="product of regions")
    region = np.asarray(head["region_cms"], dtype=float)
    for r in range(region.shape[1]):
        ax.plot(x, region[:, r], "-", label=f"region {r}")
    ax.set_xticks(x, result.names, rotation=45, ha="right")
    ax.set_ylabel("CMS to real images")
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    atomic_write_bytes(out / "curves.png", buf.getvalue())
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.imshow(result.region_map(), cmap="tab10", interpolation="nearest")
    ax.set_title(f"{result.n_regions} regions")
    ax.axis("off")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    atomic_write_bytes(out / "regions.png", buf.getvalue())
