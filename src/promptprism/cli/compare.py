"""``promptprism compare``: K-way PromptSplit over K >= 2 sets on the same prompts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from ..kernels.bandwidth import Bandwidth
from ..methods.promptsplit.aggregate import AGGREGATES
from ..methods.promptsplit.options import PAIR_DETAILS
from ..scale import current_client, execution
from ..stats.intervals import format_p
from . import _inputs as inp
from ._app import app, console, err_console
from ._options import ALPHA, CHUNK_SIZE, FEATURES, NAMES, SEED, TOP_K, Choice, Integer, resolve_sets, typed
from ._output import print_written, save_outputs
from .report import NO_REPORT
from .split import (
    ETA,
    KERNEL,
    METHOD,
    PERMUTATIONS,
    PRECISION,
    SIGMA_OUTPUT,
    SIGMA_PROMPT,
    permutation_count,
)

if TYPE_CHECKING:
    from ..methods.promptsplit.kway import KWaySplit
    from ..methods.promptsplit.kway_result import KWayResult

#: an estimated test longer than this is announced on stderr before it starts (seconds)
COST_NOTE_SECONDS = 60.0
#: an estimated test longer than this is refused unless --force is given (seconds: 15 minutes)
COST_LIMIT_SECONDS = 900.0


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200 else \
        f"{seconds / 3600:.1f} h"


def check_cost(estimator: KWaySplit, counts: list[int], *, force: bool) -> None:
    """Say what the K-way test will cost when it is long (:data:`COST_NOTE_SECONDS`), and refuse it above
    :data:`COST_LIMIT_SECONDS` unless ``force``: the estimate from K, the rows and the permutations."""
    from ..errors import OptionError
    from ..methods.promptsplit.comparisons import comparisons

    seconds = estimator.test_seconds(counts)
    if seconds <= COST_NOTE_SECONDS:
        return
    pairs, rest = comparisons(len(counts))
    total = sum(counts)
    method = estimator.route_name(total)
    labellings = estimator.resolved_permutations(method) + 1
    what = (f"the permutation test of {len(counts)} sets ({len(pairs) + len(rest):,} comparisons x "
            f"{labellings:,} labellings of {min(total, estimator.null_samples):,} samples) takes about "
            f"{_minutes(seconds)} (a rough estimate for this machine's BLAS threads)")
    if seconds > COST_LIMIT_SECONDS and not force:
        raise OptionError(f"{what}, over the {_minutes(COST_LIMIT_SECONDS)} limit; pass --force to run it, "
                          "or lower --permutations (0: no test) or compare fewer sets")
    err_console.print(f"note: {what}", markup=False, highlight=False, soft_wrap=True)


def _cell(result: KWayResult, a: int, b: int) -> str:
    if a == b:
        return "-"
    p = result.pair_p_values[a][b]
    alpha = result.significance.get("alpha")
    star = " *" if p is not None and alpha is not None and p <= alpha else ""
    return f"{result.distances[a][b]:.3g}" + ("" if p is None else f" (p {format_p(p, alpha)}){star}")


def print_kway(result: KWayResult, *, quiet: bool = False) -> None:
    """The K x K distance table with family-wise p-values, each model against the rest, the verdict."""
    if quiet:
        return
    table = Table(title=f"K-way PromptSplit ({result.method}): ||Lambda||_F^2 of each pair (row = test)")
    table.add_column("")
    for name in result.names:
        table.add_column(escape(name), justify="right")
    for a, name in enumerate(result.names):
        table.add_row(escape(name), *[_cell(result, a, b) for b in range(len(result.names))])
    console.print(table)
    if float(result.config.get("eta", 1.0)) != 1.0:
        console.print(f"eta = {result.config['eta']:g}: a pair's test takes the set listed first as its test "
                      "side (row above the diagonal); the cells below it are the other operator's distances, "
                      "not tested", markup=False, highlight=False, soft_wrap=True)
    rest = Table(title="Each model against the others" + (" (pooled)" if len(result.names) > 2 else ""))
    for col in ("model", "distance to the rest", "significant modes", "differs from",
                "prompts where it is the one that deviates"):
        rest.add_column(col)
    for d, dist in zip(result.deviations, result.rest_distances, strict=True):
        attributed = d["attributed_prompts"] if len(result.names) > 2 else d["prompts"]
        prompts = "; ".join(escape(p["prompt"]) for p in attributed[:3])
        if len(attributed) > 3:
            prompts += f" (+{len(attributed) - 3} more)"
        rest.add_row(escape(d["model"]) + (" *" if d["deviates"] else ""), f"{dist:.3g}",
                     str(d["significant_modes"]) if d["tested"] else "-",
                     escape(", ".join(d["separated_from"])) or "-", prompts)
    console.print(rest)
    if result.significance:
        console.print(f"p: family-wise over every mode of {result.significance['comparisons']} comparisons, "
                      f"{result.significance['permutations']} permutations; * = significant at alpha = "
                      f"{result.significance['alpha']:g}; a model marked * deviates from the rest: it "
                      "differs significantly from the others, at least half of it on prompts attributed to "
                      "it",
                      soft_wrap=True)
    console.print(escape(result.verdict), soft_wrap=True)


@app.command("compare")
def compare_command(
    inputs: list[Path] = typer.Argument(..., help=f"One paired set per model, all on the same prompts: "
                                                  f"{inp.INPUT_HELP}; NAME=PATH names a set."),
    names: str = NAMES,
    out: Path = typer.Option(..., "--out", "-o", help="Results folder (result.json is written there)."),
    kernel: str = KERNEL, method: str = METHOD, eta: float = ETA,
    sigma_prompt: Bandwidth = SIGMA_PROMPT, sigma_output: Bandwidth = SIGMA_OUTPUT,
    features: int = FEATURES,
    modes: int = typed(10, Integer(), "--modes", help="Modes reported per sign and comparison."),
    seed: int = SEED, chunk_size: int = CHUNK_SIZE, top_k: int = TOP_K,
    permutations: int = PERMUTATIONS, alpha: float = ALPHA,
    null_samples: int = typed(20000, Integer(), "--null-samples",
                              help="The test runs on at most this many samples over all sets (a seeded "
                                   "subsample above, exact on it)."),
    precision: str = PRECISION,
    aggregate: str = typed("none", Choice(AGGREGATES), "--aggregate",
                           help="The test over a kernel family (auto: by the outputs' modality; text, "
                                "image; each kernel costs one more test) or none (the fitted kernel alone). "
                                "split's default is auto: pass auto for its p-values with two sets."),
    pair_details: str = typed("leading", Choice(PAIR_DETAILS), "--pair-details",
                              help="What each pair's modes list: leading (the samples and prompts of its "
                                   "significant modes and of its largest mode of each sign) or all (every "
                                   "mode's; result.json grows as K^2). Against the rest: every mode's."),
    scheduler: str = inp.SCHEDULER, workers: int = inp.WORKERS,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars and no table."),
    force: bool = typer.Option(False, "--force",
                               help="Run a permutation test estimated to take over 15 minutes (refused "
                                    "otherwise; the estimate is printed)."),
    text_model: str = inp.TEXT_MODEL, image_model: str = inp.IMAGE_MODEL, clip_model: str = inp.CLIP_MODEL,
    prompts: Path = inp.PROMPTS, cache: Path = inp.CACHE, no_cache: bool = inp.NO_CACHE,
    device: str = inp.DEVICE, batch_size: int = inp.BATCH_SIZE, no_report: bool = NO_REPORT,
) -> None:
    """K-way PromptSplit: which of K models deviates from the others, on which prompts, beyond noise.

    Every pair (a K x K matrix of PromptSplit distances) and each model against the pooled others, from one
    joint fit; one permutation test (labels exchanged among all K within each prompt) controls the
    family-wise error over every mode of every comparison. Two inputs give the `split` result.
    """
    from ..methods.promptsplit.kway import KWaySplit

    estimator = KWaySplit(
        kernel=kernel, method=method, eta=eta, sigma_prompt=sigma_prompt, sigma_output=sigma_output,
        n_features=features, n_modes=modes, seed=seed, chunk_size=chunk_size, top_k=top_k,
        permutations=permutation_count(permutations), alpha=alpha, null_samples=null_samples,
        precision=precision, device=device, aggregate=aggregate, pair_details=pair_details,
        progress=False if quiet else None)
    inputs, names = resolve_sets(inputs, names)
    enc = dict(prompts=prompts, text_model=text_model, image_model=image_model, clip_model=clip_model,
               cache=cache, no_cache=no_cache, device=device, batch_size=batch_size, quiet=quiet)
    scheduler, workers = inp.cluster_for(method, scheduler, workers)
    with execution(scheduler=scheduler, workers=workers):
        sets = [inp.load_cli_input(p, name=n, client=current_client(), **enc)
                for p, n in zip(inputs, names, strict=True)]
        check_cost(estimator, [len(s) for s in sets], force=force)
        result = estimator.fit(sets, names)
    written = save_outputs(result, out, report=not no_report, quiet=quiet,
                           inputs={n: s for n, s in zip(names, sets, strict=True)},
                           sources=dict(zip(names, inputs, strict=True)))
    print_kway(result, quiet=quiet)
    print_written(written)
