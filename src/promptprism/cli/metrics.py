"""``promptprism metrics``: generated sets against a reference set (precision, recall, density, coverage, FD,
KID, MMD and CLIPScore), with intervals and a per-prompt breakdown."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from ..errors import OptionError
from ..kernels import KERNELS
from ..kernels.bandwidth import Bandwidth
from ..methods.metrics.options import ALIGNMENT_CHOICES
from ..stats.intervals import format_estimate
from . import _inputs as inp
from ._app import app, console, err_console
from ._bandwidth import bandwidth_option
from ._options import (
    CONFIDENCE,
    NAMES,
    NEAREST_K,
    SEED,
    Choice,
    Integer,
    resolve_sets,
    typed,
    unique_names,
)
from ._output import print_written, save_outputs
from .report import NO_REPORT

if TYPE_CHECKING:  # (the method is imported when the command runs)
    from ..methods.metrics import MetricsResult, ReferenceMetrics

_COLUMNS = (("precision", ".3f"), ("recall", ".3f"), ("density", ".3f"), ("coverage", ".3f"),
            ("fd", ".4g"), ("kid", ".4g"), ("mmd2", ".3g"), ("clip_score", ".3f"))


def _cell(m: Any, key: str, fmt: str) -> str:
    return format_estimate(getattr(m, key), m.intervals.get(key), fmt, missing="-")


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
    inputs: list[Path] = typer.Argument(..., help=f"One generated set per model: {inp.INPUT_HELP}; NAME=PATH "
                                                  "names a set. Without --reference, GEN REF: the last "
                                                  "of two inputs is the reference."),
    reference: Path = typer.Option(None, "--reference", "-r",
                                   help="The reference set the generated sets are compared against (its "
                                        "outputs are the real samples; same formats)."),
    names: str = NAMES,
    out: Path = typer.Option(..., "--out", "-o", help="Results folder (result.json is written there)."),
    nearest_k: int = NEAREST_K,
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
    confidence: float = CONFIDENCE,
    min_group_size: int = typed(10, Integer(), "--min-group-size",
                                help="Generated samples a prompt needs to be broken down."),
    alignment: str = typed("auto", Choice(ALIGNMENT_CHOICES), "--alignment",
                           help="CLIPScore: auto (when the encoder declares prompts and outputs one joint "
                                "text-image space: CLIP, SigLIP, open_clip), on (you assert it: computed "
                                "with a note; refused when the dimensions or known encoders differ), off."),
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

    inputs, reference = _reference_argument(inputs, reference)
    estimator = ReferenceMetrics(
        nearest_k=nearest_k, subsets=subsets, subset_size=subset_size, mmd_kernel=mmd_kernel,
        mmd_sigma=mmd_sigma, bootstrap=bootstrap, confidence=confidence, min_group_size=min_group_size,
        alignment=alignment, seed=seed)
    result, sets = compute_metrics(inputs, reference, estimator, quiet=quiet, text_model=text_model,
                                   image_model=image_model, clip_model=clip_model, prompts=prompts,
                                   cache=cache, no_cache=no_cache, device=device, batch_size=batch_size,
                                   names=names)
    written = save_outputs(result, out, report=not no_report, inputs=sets, quiet=quiet,
                           sources=sources_of(result, inputs, reference))
    print_metrics(result, quiet=quiet)
    print_written(written)


def _reference_argument(inputs: list[Path], reference: Path | None) -> tuple[list[Path], Path]:
    """(generated sets, reference): ``--reference REF``, or ``GEN REF`` (two inputs, the last the
    reference, said in a note); anything else without --reference is refused with the command to run."""
    if reference is not None:
        return inputs, reference
    if len(inputs) == 2:
        err_console.print(f"note: {inputs[1]} is the reference set (GEN REF; --reference names it "
                          "explicitly)", markup=False, soft_wrap=True, highlight=False)
        return inputs[:1], inputs[1]
    shown = " ".join(str(p) for p in inputs[:-1]) or "GEN"
    raise OptionError(f"reference: no reference set; pass it with --reference, e.g. promptprism metrics "
                      f"{shown} --reference {inputs[-1] if len(inputs) > 1 else 'REF'} --out OUT")


def sources_of(result: MetricsResult, inputs: list[Path], reference: Path) -> dict[str, Path]:
    """The inputs' paths by the names the result gives them (the reference under its own name)."""
    names = [m.name for m in result.models]
    return {**dict(zip(names, inputs, strict=True)), result.reference: reference}


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
                    names: str | list[str] | None = None, **encoding: Any) -> tuple[MetricsResult, dict]:
    """Read the generated sets and the reference (every input first), then compare; also what the report
    needs to show the inputs. ``names``: the generated sets' names (``--names``, or already resolved), the
    reference named by its file, told apart from them. ``encoding``: the shared encoder options of
    :func:`inp.read_cli_input`. An ``.npz`` file (or ``.npy`` folder) with ``output_embeddings`` and no
    ``prompt_embeddings`` is read as outputs only."""
    inputs, gen_names = (inputs, list(names)) if isinstance(names, list) else resolve_sets(inputs, names)
    names = [*gen_names, *unique_names([reference], taken=gen_names)]
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

    result = estimator.fit([data(g)[1] for g in gen], data(ref)[1], names=[data(g)[0] for g in gen],
                           reference_name=data(ref)[0], spaces=spaces, truncation=truncation,
                           joint=[g.paired.name for g in paired if g.joint_space])
    import dataclasses

    # which features FD and the k-NN metrics ran on (None: embeddings given), for the report's wording
    encoder = None if isinstance(ref, tuple) else ref.encoders.get("output")
    result = dataclasses.replace(result, config={**result.config, "output_encoder": encoder})
    sets = {g.paired.name: g.paired for g in paired}
    # the reference's samples too (the per-prompt rows open both sides)
    if not isinstance(ref, tuple) and result.reference not in sets:
        sets[result.reference] = ref.paired
    return result, sets


__all__ = ["compute_metrics", "metrics", "print_metrics"]
