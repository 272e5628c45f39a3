"""``promptprism diversity``: Scendi (prompt-aware diversity) of one or several models' paired sets."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from ..backend import resolve_backend
from ..kernels.bandwidth import Bandwidth
from ..kernels.gram import KERNELS
from ..methods.scendi.options import GAMMA_ESTIMATORS, INTERVAL_METHODS
from ..results import to_jsonable
from ..scale import current_client, execution
from ..stats.intervals import format_estimate
from . import _inputs as inp
from ._app import app, console, err_console
from ._bandwidth import bandwidth_option
from ._options import (
    CHUNK_SIZE,
    CONFIDENCE,
    NAMES,
    PARTITION_ROWS,
    PRECISION_CHOICE,
    SEED,
    Choice,
    Integer,
    Number,
    resolve_sets,
    typed,
)
from ._output import print_written, save_outputs
from .metrics import compute_metrics, print_metrics
from .report import NO_REPORT

if TYPE_CHECKING:  # (the methods are imported when the command runs)
    from ..methods.metrics import MetricsResult
    from ..methods.scendi import Scendi, ScendiComparison, ScendiResult


def _with_interval(r: ScendiResult, key: str, fmt: str) -> str:
    validity = r.bootstrap.get("validity") or {}
    text = format_estimate(getattr(r, key), r.intervals.get(key), fmt,
                           calibrated=key not in (validity.get("not_calibrated") or []))
    if key in r.clipped:  # clipped to its range: marked after the number
        first, sep, rest = text.partition(" ")
        text = f"{first}!{sep}{rest}"
    return text


def print_diversity(results: list[ScendiResult], *, quiet: bool = False,
                    differences: list[dict] | None = None, rankings: dict | None = None) -> None:
    """One table, a row per model: Scendi (model-driven), Scendi_T (prompt-driven), order 2, Vendi, RKE,
    the model share and, with a bootstrap, their intervals; then the pairwise differences."""
    if quiet:
        return
    from ..methods.scendi.bootstrap import interval_notes
    from ..methods.scendi.ranges import NO_SPLIT_NOTE, clipped_notes

    kernel = results[0].config["kernel"]
    level = next((r.bootstrap["level"] for r in results if r.bootstrap), None)
    how = next((r.bootstrap.get("interval", "basic").split(" (")[0] for r in results if r.bootstrap), "")
    title = f"Prompt-aware diversity (Scendi, {kernel} kernel): model-driven vs prompt-driven"
    if level is not None:
        title += (f"; [{level:.0%} jackknife intervals over prompts]" if how.startswith("jackknife")
                  else f"; [{level:.0%} bootstrap intervals over prompts]")
    table = Table(title=title)
    for col in ("model", "n", "scendi", "scendi_prompt", "scendi order-2", "vendi", "rke", "model share"):
        table.add_column(col, justify="left" if col == "model" else "right")
    for r in results:
        table.add_row(escape(r.name), str(r.n), _with_interval(r, "scendi", ".4g"),
                      _with_interval(r, "scendi_prompt", ".4g"), f"{r.scendi_order2:.4g}",
                      _with_interval(r, "vendi", ".4g"), _with_interval(r, "rke", ".4g"),
                      _with_interval(r, "model_share", ".1%"))
    console.print(table)
    for r in results:
        console.print(f"Gamma* ({r.name}): {r.gamma_estimator}", highlight=False, soft_wrap=True)
        if r.model_share is None:  # no output diversity: the table shows '–' for the share, this says why
            console.print(f"! {r.name}: {NO_SPLIT_NOTE}", highlight=False, soft_wrap=True, markup=False)
        for line in clipped_notes(r.clipped, r.gamma_estimator):
            console.print(f"! {r.name}: {line}", highlight=False, soft_wrap=True, markup=False)
        for line in interval_notes(r.intervals, r.summary() | {"scendi_prompt": r.scendi_prompt,
                                                                "prompt_share": r.prompt_share}):
            console.print(f"* {r.name}: {line}", highlight=False, soft_wrap=True, markup=False)
        validity = r.bootstrap.get("validity")
        if r.intervals and validity and not validity.get("holds", True):
            which = validity.get("not_calibrated") or []
            what = "" if len(which) in (0, 6) else f" ({', '.join(which)})"
            console.print(f"! {r.name}: intervals not calibrated here{what}: {validity['reason']}",
                          highlight=False, soft_wrap=True, markup=False)
    if differences:
        diff = Table(title="Differences between models (a - b)")
        for col in ("a", "b", "metric", "difference", "interval", "beyond the noise?", "by"):
            diff.add_column(col)
        for d in differences:
            fmt = ".1%" if d["metric"] == "model_share" else ".4g"
            diff.add_row(d["a"], d["b"], d["metric"], format(d["difference"], fmt),
                         f"[{format(d['low'], fmt)}, {format(d['high'], fmt)}]",
                         "yes" if d["separated"] else "no", d["method"])
        console.print(diff)
    for r in (rankings or {}).values():
        console.print(f"ranking: {r['words']}", highlight=False, markup=False, soft_wrap=True)
    if len(results) == 1 and results[0].clusters:
        r = results[0]
        clusters = Table(title="Model-driven clusters (top eigenvectors of Lambda_I) and their top samples")
        clusters.add_column("#", justify="right")
        clusters.add_column("share", justify="right")
        clusters.add_column("top samples (prompt -> output)")
        for c in r.clusters:
            shown = "; ".join(f"{s.prompt} -> {s.output if s.output is not None else f'row {s.index}'}"
                              for s in c.top_samples[:3])
            clusters.add_row(str(c.rank), f"{c.share:.1%}", escape(shown))
        console.print(clusters)


def _with_reference(comparison: ScendiComparison, inputs: list[Path], reference: Path | None, *, seed: int,
                    quiet: bool, names: list[str], **encoding: Any
                    ) -> tuple[ScendiComparison, MetricsResult | None]:
    """With ``--reference``: each model's Scendi result with its reference-set metrics (``reference_metrics``)
    attached, and those metrics; without, the comparison as it is and None."""
    if reference is None:
        return comparison, None
    from ..methods.metrics import ReferenceMetrics

    metrics_result, _ = compute_metrics(inputs, reference, ReferenceMetrics(seed=seed), quiet=quiet,
                                        names=names, **encoding)
    models = [dataclasses.replace(r, reference_metrics=to_jsonable(m))
              for r, m in zip(comparison.models, metrics_result.models, strict=True)]
    return dataclasses.replace(comparison, models=models), metrics_result


def _sources(names: list[str], inputs: list[Path], reference: Path | None) -> dict[str, Path]:
    """The input files by set name, for result.json's ``inputs`` (the reference set under its own key)."""
    sources = dict(zip(names, inputs, strict=True))
    if reference is not None:
        sources["reference" if "reference" not in sources else "reference (--reference)"] = reference
    return sources


def _compare(sets: list, estimator: Scendi) -> ScendiComparison:
    """Scendi of every set (one comparison); prompt-rank warnings become one ``warning:`` line each."""
    from ..methods.scendi import PromptRankWarning, compare

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PromptRankWarning)
        comparison = compare(sets, estimator, names=[s.name for s in sets])
    for w in caught:
        if issubclass(w.category, PromptRankWarning):
            err_console.print(f"warning: {w.message}", markup=False, highlight=False, soft_wrap=True)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return comparison


@app.command("diversity")
def diversity(
    inputs: list[Path] = typer.Argument(..., help=f"One paired set per model: {inp.INPUT_HELP}; NAME=PATH "
                                                  "names a set."),
    out: Path = typer.Option(..., "--out", "-o", help="Results folder (result.json is written there)."),
    names: str = NAMES,
    kernel: str = typed("cosine", Choice(KERNELS, noun="kernel"), "--kernel",
                        help="cosine (exact) or gaussian (random Fourier features)."),
    sigma_prompt: Bandwidth = bandwidth_option(
        "--sigma-prompt", help="Gaussian prompt bandwidth: a number or a rule ('median', '0.5*median')."),
    sigma_output: Bandwidth = bandwidth_option(
        "--sigma-output", help="Gaussian output bandwidth (also the shared one)."),
    features: int = typed(2000, Integer(), "--features",
                          help="RFF features r = 2D of each modality's map (even; split maps the joint pair "
                               "with one r); the reference implementation uses 5000 (2 x 2500)."),
    shared_frequencies: bool = typer.Option(False, "--shared-frequencies/--separate-frequencies",
                                            help="One set of RFF frequencies and one bandwidth for prompts "
                                                 "and outputs (same embedding space, e.g. CLIP)."),
    gamma_estimator: str = typed("auto", Choice(GAMMA_ESTIMATORS), "--gamma-estimator",
                                 help="Gamma* (prompt -> output): in-sample (the paper), debiased, cross-fit "
                                      "(out of fold) or auto (debiased while rank(C_TT) < the prompts, else "
                                      "in-sample when 2 rank(C_TT) < n, else cross-fit)."),
    n_folds: int = typed(5, Integer(), "--folds",
                         help="Folds of the cross-fitted Gamma* (prompts per fold)."),
    ridge: float = typed("cv", Number(words=("cv",)), "--ridge",
                         help="Ridge of the cross-fitted Gamma*: 'cv' (chosen by cross-validation) or a "
                              "number >= 0."),
    bootstrap: int = typed("auto", Integer(words=("auto",), minimum=0, why=" (0 turns it off)"),
                           "--bootstrap",
                           help="Bootstrap replicates (prompts resampled with their outputs) for confidence "
                                "intervals; 0 = off; auto = 200 when cheap (matrices <= 600, and the "
                                "jackknife's one refit per prompt within the same budget), else off."),
    confidence: float = CONFIDENCE,
    interval: str = typed("auto", Choice(INTERVAL_METHODS), "--interval",
                                 help="jackknife (delete-one-prompt, bias-corrected; calibrated on the "
                                      "simulation grid), basic (bootstrap), or auto (jackknife; basic for "
                                      "the cross-fitted estimator)."),
    precision: str = typed("float64", PRECISION_CHOICE, "--precision",
                                  help="float64 or float32 for the sample-space matrices and eigen-solves."),
    clusters: int = typed(5, Integer(), "--clusters",
                          help="Model-driven clusters reported (eigenvectors of Lambda_I)."),
    top_k: int = typed(10, Integer(), "--top-k", help="Samples listed per cluster."),
    seed: int = SEED, chunk_size: int = CHUNK_SIZE, partition_rows: int = PARTITION_ROWS,
    scheduler: str = inp.SCHEDULER, workers: int = inp.WORKERS,
    quiet: bool = inp.QUIET,
    text_model: str = inp.TEXT_MODEL, image_model: str = inp.IMAGE_MODEL, clip_model: str = inp.CLIP_MODEL,
    prompts: Path = inp.PROMPTS, cache: Path = inp.CACHE, no_cache: bool = inp.NO_CACHE,
    device: str = inp.DEVICE, batch_size: int = inp.BATCH_SIZE, no_report: bool = NO_REPORT,
    reference: Path = typer.Option(None, "--reference", "-r",
                                   help="A reference set (real samples; same formats): adds precision, "
                                        "recall, density, coverage, FD, KID, MMD and CLIPScore against it "
                                        "beside Scendi ('promptprism metrics' defaults)."),
) -> None:
    """Scendi: how much of a model's output diversity comes from the model, not from its prompts.

    Splits the output kernel covariance C_II = Lambda_T (prompt-driven) + Lambda_I (model-driven, a Schur
    complement) and reports exp-entropies of both beside Vendi and RKE, with bootstrap intervals; several
    inputs give one table and say which differences exceed the intervals.
    """
    from ..methods.scendi import Scendi

    resolve_backend(device, name="--device")  # the encoder's and the array core's device: refused by flag
    estimator = Scendi(
        kernel=kernel, sigma_prompt=sigma_prompt, sigma_output=sigma_output, n_features=features,
        shared_frequencies=shared_frequencies, n_clusters=clusters, top_k=top_k, seed=seed,
        chunk_size=chunk_size, partition_rows=partition_rows, progress=False if quiet else None,
        gamma_estimator=gamma_estimator, n_folds=n_folds, ridge=ridge, bootstrap=bootstrap,
        confidence=confidence, interval=interval, precision=precision, device=device)
    inputs, names = resolve_sets(inputs, names)
    enc = dict(prompts=prompts, text_model=text_model, image_model=image_model, clip_model=clip_model,
               cache=cache, no_cache=no_cache, device=device, batch_size=batch_size, quiet=quiet)
    with execution(scheduler=scheduler, workers=workers):
        sets = [inp.load_cli_input(p, name=n, client=current_client(), **enc)  # every input read first
                for p, n in zip(inputs, names, strict=True)]
        comparison = _compare(sets, estimator)
    comparison, metrics_result = _with_reference(comparison, inputs, reference, seed=seed, names=names, **enc)
    result: ScendiResult | ScendiComparison = comparison.models[0] if len(sets) == 1 else comparison
    written = save_outputs(result, out, report=not no_report, inputs={s.name: s for s in sets}, quiet=quiet,
                           sources=_sources(names, inputs, reference))
    _print_all(comparison, metrics_result, quiet=quiet)
    print_written(written)


def _print_all(comparison: ScendiComparison, metrics_result: MetricsResult | None, *, quiet: bool) -> None:
    """The diversity table, the differences and rankings, and the reference metrics when asked for."""
    print_diversity(comparison.models, quiet=quiet, differences=comparison.differences,
                    rankings=comparison.rankings)
    if metrics_result is not None:
        print_metrics(metrics_result, quiet=quiet)
