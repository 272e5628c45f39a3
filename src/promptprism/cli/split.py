"""``promptprism split``: PromptSplit between a test and a reference set."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from ..kernels.bandwidth import Bandwidth
from ..kernels.gram import KERNELS
from ..methods.promptsplit.aggregate import AGGREGATES
from ..methods.promptsplit.options import EXACT_MAX_SAMPLES, METHODS, PRECISIONS, RANKINGS
from ..report.html import fnum
from ..scale import current_client, execution
from ..stats.intervals import format_p
from . import _inputs as inp
from ._app import app, console
from ._bandwidth import SIGMA_OR_STABLE, bandwidth_option
from ._options import (
    ALPHA,
    CHUNK_SIZE,
    FEATURES,
    NAMES,
    PARTITION_ROWS,
    SEED,
    TOP_K,
    Choice,
    Integer,
    Number,
    resolve_sets,
    split_named,
    typed,
)
from ._output import print_written, save_outputs
from .report import NO_REPORT

if TYPE_CHECKING:
    from ..methods.promptsplit import PromptSplitResult


#: characters of an output shown in the table (the whole one is in result.json and on the page): without a
#: terminal's width to wrap to, one long answer made the table hundreds of characters wide
SAMPLE_CHARS = 120


def _cut(text: str) -> str:
    """``text`` on one line, at most :data:`SAMPLE_CHARS` characters (an ellipsis says it was cut)."""
    one = " ".join(str(text).split())
    return one if len(one) <= SAMPLE_CHARS else one[: SAMPLE_CHARS - 1] + "…"


def _p_cell(mode: Any, alpha: float | None) -> str:
    if mode.p_value is None:
        return "-"
    return f"{format_p(mode.p_value, alpha)}{' *' if mode.significant else ''}"


def print_promptsplit(result: PromptSplitResult, out: Path | None, *, quiet: bool = False,
                      names: tuple[str, str] | None = None) -> None:
    """The verdict, a short table of the top modes (with p-values) and prompts, then where the results are;
    ``names`` (test, reference): the sets' names, shown beside their sides."""
    from ..methods.promptsplit.verdicts import named_verdict, side_label

    said = named_verdict(result.verdict, names)
    if not quiet and result.identical:
        console.print(escape(said), soft_wrap=True)
    elif not quiet:
        tested = bool(result.significance) and any(m.p_value is not None for m in result.modes)
        alpha = (result.significance or {}).get("alpha")
        table = Table(title=f"PromptSplit ({result.method}, {result.config['kernel']} kernel): "
                            f"n_test={result.n_test}, n_reference={result.n_reference}, "
                            f"||Lambda||_F^2={result.distance:.4g}")
        table.add_column("mode")
        table.add_column("eigenvalue", justify="right")
        if tested:
            table.add_column("p (family-wise)", justify="right")
        table.add_column("top prompts (share of the eigenvalue)", ratio=3)
        table.add_column("strongest sample: output", ratio=2)
        for mode in result.positive_modes[:4] + result.negative_modes[:4]:
            label = escape(f"{'+' if mode.side == 'test' else '-'}{mode.rank} {side_label(mode.side, names)}")
            prompts = "; ".join(f"{escape(p.prompt)} ({fnum(p.contribution / mode.eigenvalue, '.0%')})"
                                for p in mode.top_prompts[:2])
            best = mode.top_samples[0] if mode.top_samples else None
            sample = "" if best is None else escape(_cut(best.output or f"{best.set} #{best.index}"))
            p_cells = [_p_cell(mode, alpha)] if tested else []
            cells = [label, f"{mode.eigenvalue:+.4g}", *p_cells, prompts, sample]
            table.add_row(*cells)
        if result.modes:
            console.print(table)
        if result.modes and tested:
            s = result.significance
            drawn = s.get("permutations_drawn")
            count = f"{s['permutations']} permutations"
            if drawn is not None and drawn < s["permutations"]:
                count = f"{drawn} of {s['permutations']} permutations drawn (the test stopped early)"
            console.print(f"p: family-wise over all modes, {count}; "
                          f"* = significant at alpha = {s['alpha']:g}, the others are not",
                          soft_wrap=True)
        if said:
            console.print(escape(said), soft_wrap=True)
        if result.prompt_ranking:
            ranking = Table(title="Prompts where the models disagree most"
                                  + (" (significant modes)" if tested else ""))
            ranking.add_column("#", justify="right")
            ranking.add_column("prompt")
            ranking.add_column("share", justify="right")
            for i, row in enumerate(result.prompt_ranking[:10], 1):
                ranking.add_row(str(i), escape(row["prompt"]), fnum(row["share"], ".1%"))
            console.print(ranking)
    for key, scan in result.bandwidth_scan.items():
        if not quiet or not scan.get("plateau", True):
            console.print(f"{'' if scan.get('plateau') else 'note: '}sigma_{key} = {scan['chosen']:.4g} "
                          f"('stable' rule): {escape(scan['note'])}", soft_wrap=True)
    if out is not None:
        console.print(f"results: {escape(str(out / 'result.json'))}")


#: the options ``split`` and ``compare`` share (one definition, one meaning)
KERNEL = typed("gaussian", Choice(KERNELS), "--kernel",
               help="Kernel for prompts and outputs: gaussian or cosine.")
METHOD = typed("auto", Choice(METHODS), "--method",
               help=f"exact, rff (gaussian), sketch (cosine), or auto (exact up to {EXACT_MAX_SAMPLES:,} "
                    "samples, random features above).")
ETA = typed(1.0, Number(), "--eta", help="Weight of the reference covariance: Lambda = C_test - eta C_ref.")
SIGMA_PROMPT = bandwidth_option(
    "--sigma-prompt", rules=SIGMA_OR_STABLE,
    help="Prompt bandwidth: a number or a rule ('median', '0.5*median', or 'stable': the smallest multiple "
         "of the median at which the top eigenvalues settle).")
SIGMA_OUTPUT = bandwidth_option("--sigma-output", rules=SIGMA_OR_STABLE,
                                help="Output bandwidth: a number or a rule (as above).")
PERMUTATIONS = typed("auto", Integer(words=("auto",)), "--permutations",
                     help="Label permutations of the significance test (auto: 200 exact, 100 random "
                          "features; 0 turns it off).")
PRECISION = typed("auto", Choice(PRECISIONS), "--precision",
                  help="float32, float64, or auto (float32 for rff/sketch; exact: the inputs' own, float32 "
                       "for float32 embeddings, else float64); recorded in result.json.")


def _named(result: Any, names: list[str] | None) -> Any:
    """With ``--names TEST,REF`` (or ``NAME=PATH`` arguments): the two sets' names in ``config`` (``test``,
    ``reference``: what the report, the tables and describe call them) and in the verdict."""
    if names is None:
        return result
    import dataclasses

    from ..methods.promptsplit.verdicts import named_verdict

    significance = dict(result.significance)
    if significance.get("verdict"):
        significance["verdict"] = named_verdict(significance["verdict"], (names[0], names[1]))
    return dataclasses.replace(result, config={**result.config, "test": names[0], "reference": names[1],
                                               "names": [names[0], names[1]]},
                               significance=significance)


def permutation_count(value: int | str) -> int | None:
    """``--permutations``: 'auto' leaves the count to the method (None)."""
    return None if value == "auto" else value


@app.command("split")
def split(
    test: Path = typer.Argument(..., help=f"Test set: {inp.INPUT_HELP}."),
    reference: Path = typer.Argument(..., help="Reference set, any of the same kinds (embedded with the same "
                                               "models as TEST)."),
    out: Path = typer.Option(..., "--out", "-o", help="Results folder (result.json is written there)."),
    names: str = NAMES,
    kernel: str = KERNEL, method: str = METHOD, eta: float = ETA,
    sigma_prompt: Bandwidth = SIGMA_PROMPT, sigma_output: Bandwidth = SIGMA_OUTPUT,
    features: int = FEATURES,
    modes: int = typed(10, Integer(), "--modes", help="Modes reported per sign (positive and negative)."),
    seed: int = SEED, chunk_size: int = CHUNK_SIZE, top_k: int = TOP_K,
    rank_prompts_by: str = typed("contribution", Choice(RANKINGS), "--rank-prompts-by",
                                 help="contribution (share of the eigenvalue) or mean_score."),
    scheduler: str = inp.SCHEDULER,
    workers: int = inp.WORKERS,
    partition_rows: int = PARTITION_ROWS,
    permutations: int = PERMUTATIONS, alpha: float = ALPHA,
    null_samples: int = typed(20000, Integer(), "--null-samples",
                              help="The test runs on at most this many samples (a seeded subsample above, "
                                   "exact on it); its time grows with it."),
    precision: str = PRECISION,
    aggregate: str = typed("auto", Choice(AGGREGATES), "--aggregate",
                           help="The test over a kernel family (auto: by the outputs' modality; text, "
                                "image) or none (the fitted kernel alone)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars and no table."),
    text_model: str = inp.TEXT_MODEL, image_model: str = inp.IMAGE_MODEL, clip_model: str = inp.CLIP_MODEL,
    prompts: Path = inp.PROMPTS, cache: Path = inp.CACHE, no_cache: bool = inp.NO_CACHE,
    device: str = inp.DEVICE, batch_size: int = inp.BATCH_SIZE, no_report: bool = NO_REPORT,
    map_projection: str = typed("kernel-pca", Choice(("kernel-pca", "t-sne")), "--map-projection",
                                help="The report map's 2-D projection: kernel PCA with the result's kernel "
                                     "(one small eigen-solve), or t-SNE (scikit-learn; slower to load)."),
) -> None:
    """PromptSplit: which prompts make two models disagree, and how.

    Eigen-decomposes Lambda = C_test - eta C_ref of joint prompt (x) output kernel covariances: positive
    modes are what the test model does more, negative ones what the reference does more.
    """
    from ..methods.promptsplit import PromptSplit

    pair_names = None
    if names or split_named([test, reference])[1]:  # (both ways at once: refused in one line)
        (test, reference), pair_names = resolve_sets([test, reference], names)
    estimator = PromptSplit(
        kernel=kernel, method=method, eta=eta, sigma_prompt=sigma_prompt, sigma_output=sigma_output,
        n_features=features, n_modes=modes, seed=seed, chunk_size=chunk_size, top_k=top_k,
        rank_prompts_by=rank_prompts_by, partition_rows=partition_rows,
        permutations=permutation_count(permutations), alpha=alpha, null_samples=null_samples,
        progress=False if quiet else None, precision=precision, device=device, aggregate=aggregate)
    enc = dict(prompts=prompts, text_model=text_model, image_model=image_model, clip_model=clip_model,
               cache=cache, no_cache=no_cache, device=device, batch_size=batch_size, quiet=quiet)
    scheduler, workers = inp.cluster_for(method, scheduler, workers)
    with execution(scheduler=scheduler, workers=workers):
        client = current_client()
        test_set = inp.load_cli_input(test, name="test", client=client, **enc)
        reference_set = inp.load_cli_input(reference, name="reference", client=client, **enc)
        result = estimator.fit(test_set, reference_set)
    result = _named(result, pair_names)
    if not no_report:  # the report's map, computed once and kept in result.json
        from ..methods.promptsplit.layout import with_layout

        sets = {"test": test_set, "reference": reference_set}
        result = with_layout(result, sets, projection=map_projection)
    written = save_outputs(result, out, report=not no_report, quiet=quiet,
                           inputs={"test": test_set, "reference": reference_set},
                           sources={"test": test, "reference": reference})
    print_promptsplit(result, None, quiet=quiet, names=tuple(pair_names) if pair_names else None)
    print_written(written)
