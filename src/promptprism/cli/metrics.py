"""``promptprism metrics``: generated sets against a reference set (precision, recall, density, coverage, FD,
KID, MMD and CLIPScore), with intervals and a per-prompt breakdown."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from ..kernels import KERNELS
from ..kernels.bandwidth import Bandwidth
from ..methods.metrics.options import ALIGNMENT_CHOICES
from . import _inputs as inp
from ._app import app, console
from ._bandwidth import bandwidth_option
from ._options import SEED, Choice, Integer, Number, typed, unique_names
from ._output import print_written, save_outputs
from .report import NO_REPORT

if TYPE_CHECKING:  # (the method is imported when the command runs)
    from ..methods.metrics import MetricsResult, ReferenceMetrics

_COLUMNS = (("precision", ".3f"), ("recall", ".3f"), ("density", ".3f"), ("coverage", ".3f"),
            ("fd", ".4g"), ("kid", ".4g"), ("mmd2", ".3g"), ("clip_score", ".3f"))


def _cell(m: Any, key: str, fmt: str) -> str:
    value = getattr(m, key)
    if value is None:
        return "-"
    iv = m.intervals.get(key)
    text = format(value, fmt)
    return text if not iv else f"{text} [{format(iv['low'], fmt)}, {format(iv['high'], fmt)}]"


def print_metrics(result: MetricsResult, *, quiet: bool = False) -> None:
    """One row per generated set, then each set's notes (what was left out and why)."""
    if quiet:
        return
    level = result.config["confidence"]
    table = Table(title=f"Against the reference {result.reference!r} (n = {result.n_reference}, "
                        f"{result.dim} dimensions); [{level:.0%} intervals]")
    for col in ("set", "n", *(c for c, _ in _COLUMNS)):
        table.add_column(col, justify="left" if col == "set" else "right")
    for m in result.models:
        table.add_row(escape(m.name), str(m.n), *(_cell(m, key, fmt) for key, fmt in _COLUMNS))
    console.print(table)
    for m in result.models:
        if m.truncation:
            t = m.truncation
            console.print(f"{m.name}: {t['truncated']} of {t['prompts']} prompts longer than the text "
                          f"encoder's {t['context_length']} tokens were truncated before CLIPScore",
                          markup=False, highlight=False, soft_wrap=True)
        for note in m.notes:
            console.print(f"{m.name}: {note}", markup=False, highlight=False, soft_wrap=True)
        valid = m.interval_validity
        if valid and not valid["holds"]:
            console.print(f"! {m.name}: intervals not calibrated here "
                          f"({', '.join(valid['not_calibrated'])}): {valid['reason']}", markup=False,
                          highlight=False, soft_wrap=True)


def prompt_truncation(loaded: Any, *, text_model: str, clip_model: str | None, device: str,
                      batch_size: int) -> dict | None:
    """{'truncated': per-row bools, 'context_length'} when the prompts were text embedded here by an encoder
    that can count tokens (CLIP, open_clip); None otherwise (embeddings given: the counts are unknown)."""
    paired = loaded.paired
    if loaded.kind == "embeddings" or paired.prompts is None:
        return None
    from ..embed.registry import get_encoder

    enc = get_encoder(text_model, modality="text", clip_model=clip_model, device=device,
                      batch_size=batch_size)
    if not hasattr(enc, "token_counts"):
        return None
    counts, context = enc.token_counts(paired.prompts)
    return {"truncated": counts > context, "context_length": context}


def _spaces(loaded: Any) -> tuple[str, str] | None:
    enc = loaded.encoders
    return (enc["prompt"], enc["output"]) if "prompt" in enc and "output" in enc else None


@app.command("metrics")
def metrics(
    inputs: list[Path] = typer.Argument(..., help=f"One generated set per model: {inp.INPUT_HELP}."),
    reference: Path = typer.Option(..., "--reference", "-r", help="The reference set (same formats; its "
                                                                  "outputs are the real samples)."),
    out: Path = typer.Option(..., "--out", "-o", help="Results folder (result.json is written there)."),
    nearest_k: int = typed(5, Integer(), "--nearest-k",
                           help="k of the k-NN radii (precision, recall, density, coverage)."),
    subsets: int = typed(100, Integer(), "--subsets", help="Random subsets for KID and MMD."),
    subset_size: int = typed(1000, Integer(), "--subset-size",
                             help="Rows per subset (capped at the smaller set)."),
    mmd_kernel: str = typed("gaussian", Choice(KERNELS), "--mmd-kernel",
                            help="MMD's kernel: gaussian or cosine."),
    mmd_sigma: Bandwidth = bandwidth_option(
        "--mmd-sigma",
        help="Gaussian bandwidth: a number or a rule ('median', '0.5*median') on the reference."),
    bootstrap: int = typed(200, Integer(), "--bootstrap",
                           help="Bootstrap replicates over prompts for the intervals; 0 = off."),
    confidence: float = typed(0.95, Number(), "--confidence", help="Level of the intervals."),
    min_group_size: int = typed(10, Integer(), "--min-group-size",
                                help="Generated samples a prompt needs to be broken down."),
    alignment: str = typed("auto", Choice(ALIGNMENT_CHOICES), "--alignment",
                           help="CLIPScore: auto (when prompts and outputs share a joint space), on (refuse "
                                "otherwise), off."),
    seed: int = SEED, quiet: bool = inp.QUIET,
    text_model: str = inp.TEXT_MODEL, image_model: str = inp.IMAGE_MODEL, clip_model: str = inp.CLIP_MODEL,
    prompts: Path = inp.PROMPTS, cache: Path = inp.CACHE, no_cache: bool = inp.NO_CACHE,
    device: str = inp.DEVICE, batch_size: int = inp.BATCH_SIZE, no_report: bool = NO_REPORT,
) -> None:
    """Fidelity and diversity against a reference set, distances and prompt alignment.

    Precision and recall (Kynkäänniemi et al. 2019), density and coverage (Naeem et al. 2020), the Fréchet
    distance (FID on Inception features, FD-DINOv2 on DINOv2), KID and MMD on the output embeddings;
    CLIPScore (Hessel et al. 2021) when prompts and outputs come from one joint model. Several generated
    sets give one table.
    """
    from ..methods.metrics import ReferenceMetrics

    estimator = ReferenceMetrics(
        nearest_k=nearest_k, subsets=subsets, subset_size=subset_size, mmd_kernel=mmd_kernel,
        mmd_sigma=mmd_sigma, bootstrap=bootstrap, confidence=confidence, min_group_size=min_group_size,
        alignment=alignment, seed=seed)
    result, sets = compute_metrics(inputs, reference, estimator, quiet=quiet, text_model=text_model,
                                   image_model=image_model, clip_model=clip_model, prompts=prompts,
                                   cache=cache, no_cache=no_cache, device=device, batch_size=batch_size)
    written = save_outputs(result, out, report=not no_report, inputs=sets, quiet=quiet)
    print_metrics(result, quiet=quiet)
    print_written(written)


def _read_set(path: Path, name: str, quiet: bool, encoding: dict) -> Any:
    """A loaded input, or (name, output embeddings) for an outputs-only ``.npz`` / ``.npy`` folder: none of
    the reference-set metrics but CLIPScore and the per-prompt rows needs prompts."""
    from ..data.loaders import load_output_embeddings

    outputs = load_output_embeddings(path)
    if outputs is None:
        return inp.read_cli_input(path, name=name, quiet=quiet, **encoding)
    from .._validation import check_matrix

    return name, check_matrix(outputs, "output_embeddings", source=str(path))


def compute_metrics(inputs: list[Path], reference: Path, estimator: ReferenceMetrics, *, quiet: bool,
                    **encoding: Any) -> tuple[MetricsResult, dict]:
    """Read the generated sets and the reference (every input first), then compare; also what the report
    needs to show the inputs. ``encoding``: the shared encoder options of :func:`inp.read_cli_input`.
    An ``.npz`` file (or ``.npy`` folder) with ``output_embeddings`` and no ``prompt_embeddings`` is read as
    outputs only."""
    names = unique_names([*inputs, reference])
    loaded = [_read_set(p, n, quiet, encoding) for p, n in zip([*inputs, reference], names, strict=True)]
    *gen, ref = loaded
    paired = [g for g in gen if not isinstance(g, tuple)]
    truncation = {}
    for item in paired:
        t = prompt_truncation(item, text_model=encoding["text_model"], clip_model=encoding["clip_model"],
                              device=encoding["device"], batch_size=encoding["batch_size"])
        if t is not None:
            truncation[item.paired.name] = t
    spaces = {g.paired.name: s for g in paired if (s := _spaces(g)) is not None}

    def data(item: Any) -> tuple[str, Any]:
        return item if isinstance(item, tuple) else (item.paired.name, item.paired)

    result = estimator.compare([data(g)[1] for g in gen], data(ref)[1], names=[data(g)[0] for g in gen],
                               reference_name=data(ref)[0], spaces=spaces, truncation=truncation)
    return result, {g.paired.name: g.paired for g in paired}


__all__ = ["compute_metrics", "metrics", "print_metrics"]
