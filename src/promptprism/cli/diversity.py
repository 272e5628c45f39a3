"""``promptprism diversity``: Scendi (prompt-aware diversity) of one or several models' paired sets."""

from __future__ import annotations

import warnings
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from ..methods.scendi import PromptRankWarning, Scendi, ScendiComparison, ScendiResult
from ..scale import open_client
from . import _inputs as inp
from ._app import app, console, err_console
from ._inputs import int_option
from ._options import unique_names
from ._output import print_written, save_outputs
from .report import NO_REPORT


def print_diversity(results: list[ScendiResult], *, quiet: bool = False) -> None:
    """One table, a row per model: Scendi (model-driven), Scendi_T (prompt-driven), order 2, Vendi, RKE."""
    if quiet:
        return
    kernel = results[0].config["kernel"]
    table = Table(title=f"Prompt-aware diversity (Scendi, {kernel} kernel): model-driven vs prompt-driven")
    for col in ("model", "n", "scendi", "scendi_prompt", "scendi order-2", "vendi", "rke",
                "model share"):
        table.add_column(col, justify="left" if col == "model" else "right")
    for r in results:
        table.add_row(escape(r.name), str(r.n), f"{r.scendi:.4g}", f"{r.scendi_prompt:.4g}",
                      f"{r.scendi_order2:.4g}",
                      f"{r.vendi:.4g}", f"{r.rke:.4g}", f"{r.model_share:.1%}")
    console.print(table)
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


@app.command("diversity")
def diversity(
    inputs: list[Path] = typer.Argument(..., help=f"One paired set per model: {inp.INPUT_HELP}."),
    out: Path = typer.Option(..., "--out", "-o", help="Results folder (result.json is written there)."),
    kernel: str = typer.Option("cosine", help="cosine (exact) or gaussian (random Fourier features)."),
    sigma_prompt: str = typer.Option("median", help="Gaussian prompt bandwidth: a number or a rule "
                                                    "('median', '0.5*median')."),
    sigma_output: str = typer.Option("median", help="Gaussian output bandwidth (also the shared one)."),
    features: str = typer.Option("2000", help="RFF features per modality, 2D (even); the reference "
                                              "implementation uses 5000 (2 x 2500)."),
    shared_frequencies: bool = typer.Option(False, "--shared-frequencies/--separate-frequencies",
                                            help="One set of RFF frequencies and one bandwidth for prompts "
                                                 "and outputs (same embedding space, e.g. CLIP)."),
    clusters: str = typer.Option("5", help="Model-driven clusters reported (eigenvectors of Lambda_I)."),
    top_k: str = typer.Option("10", help="Samples listed per cluster."),
    seed: str = typer.Option("0", help="Seed of every random draw (recorded in result.json)."),
    chunk_size: str = typer.Option("8192", help="Rows per streaming step."),
    partition_rows: str = typer.Option("262144", help="Rows per cluster task (rounded up to whole chunks)."),
    scheduler: str = inp.SCHEDULER, workers: int = inp.WORKERS,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars and no table."),
    text_model: str = inp.TEXT_MODEL, image_model: str = inp.IMAGE_MODEL, clip_model: str = inp.CLIP_MODEL,
    prompts: Path = inp.PROMPTS, cache: Path = inp.CACHE, no_cache: bool = inp.NO_CACHE,
    device: str = inp.DEVICE, batch_size: int = inp.BATCH_SIZE, no_report: bool = NO_REPORT,
) -> None:
    """Scendi: how much of a model's output diversity comes from the model, not from its prompts.

    Splits the output kernel covariance C_II = Lambda_T (prompt-driven) + Lambda_I (model-driven, a Schur
    complement) and reports exp-entropies of both beside Vendi and RKE; several inputs give one table.
    """
    estimator = Scendi(
        kernel=kernel, sigma_prompt=sigma_prompt, sigma_output=sigma_output,
        n_features=int_option(features, "--features"), shared_frequencies=shared_frequencies,
        n_clusters=int_option(clusters, "--clusters"), top_k=int_option(top_k, "--top-k"),
        seed=int_option(seed, "--seed"), chunk_size=int_option(chunk_size, "--chunk-size"),
        partition_rows=int_option(partition_rows, "--partition-rows"), progress=False if quiet else None)
    names = unique_names(inputs)
    enc = dict(prompts=prompts, text_model=text_model, image_model=image_model, clip_model=clip_model,
               cache=cache, no_cache=no_cache, device=device, batch_size=batch_size, quiet=quiet)
    results = []
    with open_client(scheduler, workers) as client:
        sets = [inp.load_cli_input(p, name=n, client=client, **enc)  # every input read first
                for p, n in zip(inputs, names, strict=True)]
        for s in sets:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", PromptRankWarning)
                results.append(estimator.fit(s, name=s.name, client=client))
            for w in caught:
                if issubclass(w.category, PromptRankWarning):
                    err_console.print(f"[bold yellow]warning:[/] {w.message}", highlight=False,
                                      soft_wrap=True)
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    result = results[0] if len(results) == 1 else ScendiComparison(models=results, seed=estimator.seed)
    written = save_outputs(result, out, report=not no_report, inputs={s.name: s for s in sets}, quiet=quiet)
    print_diversity(results, quiet=quiet)
    print_written(written)
