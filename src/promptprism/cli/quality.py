"""``promptprism quality DIR --real REAL``: on each finding of a split result, which model is closer to real
data (or to gold answers), with a test; added to DIR's result.json and report as one transaction."""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import InputError
from ..methods.metrics.findings import CLOSENESS
from . import _inputs as inp
from ._app import app, console
from ._options import SEED, Choice, Integer, Number, typed
from ._output import print_written, save_outputs
from .report import NO_REPORT


@app.command("quality")
def quality(
    folder: Path = typer.Argument(..., metavar="DIR", help="A split results folder (result.json)."),
    inputs: list[Path] | None = typer.Argument(None, metavar="[TEST REF]",
                                               help="The split's two sets (default: the paths result.json "
                                                    "records, checked against their fingerprints)."),
    real: Path = typer.Option(..., "--real", help=f"Real data (or gold answers) on the same prompts: "
                                                  f"{inp.INPUT_HELP}."),
    closeness: str = typed("precision", Choice(CLOSENESS), "--closeness",
                           help="precision (inside the real samples' k-NN balls; images, any embedding) or "
                                "gold (cosine to the nearest real output of the same prompt; texts with gold "
                                "answers)."),
    nearest_k: int = typed(5, Integer(), "--nearest-k", help="k of the k-NN balls (precision)."),
    alpha: float = typed(0.05, Number(), "--alpha", help="Family-wise level over the findings (Holm)."),
    permutations: int = typed(2000, Integer(), "--permutations",
                              help="Permutations of the within-prompt test (>= 99)."),
    bootstrap: int = typed(500, Integer(), "--bootstrap", help="Bootstrap replicates over prompts (>= 50)."),
    confidence: float = typed(0.95, Number(), "--confidence", help="Level of the intervals."),
    seed: int = SEED,
    out: Path | None = typer.Option(None, "--out", "-o", help="Results folder to write (default: DIR)."),
    text_model: str = inp.TEXT_MODEL,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No lines per finding."),
    no_report: bool = NO_REPORT,
) -> None:
    """Which model is closer to real data on each significant finding of a split result.

    For each significant mode, both models' samples on the prompts that carry it are scored against the real
    samples of the same prompts; a within-prompt permutation test (Holm over the modes) says whether one is
    closer, with bootstrap intervals over prompts.
    """
    import dataclasses

    from ..data.inputs import load_input
    from ..methods.metrics import FindingQuality
    from ..results import load_result

    estimator = FindingQuality(closeness=closeness, nearest_k=nearest_k, alpha=alpha,
                               permutations=permutations, bootstrap=bootstrap, confidence=confidence,
                               seed=seed)
    result = load_result(folder)
    if result.kind != "promptsplit":
        raise InputError(f"{folder}: holds a {result.kind} result; quality verdicts need a split result")
    paths = list(inputs or [])
    if len(paths) not in (0, 2):
        raise InputError(f"{folder}: a split result takes its 2 inputs (TEST REF) or none, got {len(paths)}")
    sets = inp.recorded_sets(result, folder, dict(zip(("test", "reference"), paths or [None, None],
                                                      strict=True)), result.config, text_model)
    findings = result.findings()
    if not findings:
        raise InputError(f"{folder}: no significant mode with prompts that carry it; nothing to judge")
    reference = dataclasses.replace(load_input(inp.results_folder_input(real), text_model=text_model),
                                    name="real data")
    record = estimator.fit(findings, {"test": sets["test"], "reference": sets["reference"]}, reference)
    judged = dataclasses.replace(result, quality=record)
    written = save_outputs(judged, out or folder, report=not no_report, inputs=sets, quiet=quiet,
                           sources={"real data": inp.results_folder_input(real)},
                           amend=out is None or Path(out).resolve() == Path(folder).resolve())
    if not quiet:
        for entry in record["findings"]:
            console.print(entry["verdict"], markup=False, soft_wrap=True)
    print_written(written)
