"""Running the trained-generator demo section by section (``promptprism demo --trained-generator``).

The demo is a list of sections, ``(name, fn)`` with ``fn(context) -> DemoSection | None``
(:data:`SECTIONS`; the command appends the guidance one). Each section computes its numbers and writes its
method's result through ``context.save`` (one transaction: result.json and its report); after each, the
summary (``summary.json``) and the summary page (``report.html``) are written again, atomically, so a run
stopped by Ctrl-C keeps every finished section: :func:`run_fashion_demo` then raises :class:`DemoStopped`
(a ``KeyboardInterrupt``) naming the kept sections and the unfinished one. Two size presets,
:data:`QUICK` (the default: about two minutes on a quiet 2-core machine) and :data:`FULL`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._interrupts import noticed_interrupts
from .._validation import check_memory, check_positive_number, check_seed
from ..errors import Interrupted, OptionError, Terminated
from ..io import atomic_write_text, check_out_dir
from ._save import Saver, default_saver
from .fashion import (
    DEFAULT_SCALES,
    DEMO_BYTES_PER_SAMPLE,
    MAX_STEPS,
    REAL_TEST_IMAGES,
    DemoContext,
    DemoSection,
    Experiment,
    _write_figures,
    cfg_section,
    monitoring_section,
    pixel_classifier,
    quality_section,
    split_section,
)
from .fashion_text import TEXT_SECTIONS, TextSizes
from .fashion_text_guide import text_guidance_section, text_regions_section
from .fashion_verdicts import verdicts_section

#: the built-in sections, in order: (name, fn(context) -> DemoSection | None); add one by appending. The
#: text generator's experiments first, then the class-conditioned generator's (its training run's
#: checkpoints, its fine-tuned second generator, who is closer to real data where they differ)
SECTIONS: list[tuple[str, Experiment]] = [
    *TEXT_SECTIONS, ("text-guidance", text_guidance_section), ("text-regions", text_regions_section),
    ("quality", quality_section), ("monitoring", monitoring_section), ("cfg-diversity", cfg_section),
    ("split", split_section), ("verdicts", verdicts_section)]


@dataclass(frozen=True)
class DemoSizes:
    """How much the demo samples and resamples: ``per_prompt`` samples per class prompt and set, ``steps``
    DDIM steps, the CFG ``scales``, ``bootstrap`` resamples of the intervals (regions, Scendi), and the
    guidance section's ``guide_scales``, ``guide_per_prompt``, ``guide_reference_per_class`` and
    ``guide_permutations`` (PromptSplit's permutation test)."""

    name: str
    per_prompt: int
    steps: int
    scales: tuple[float, ...]
    bootstrap: int
    guide_scales: tuple[float, ...]
    guide_per_prompt: int
    guide_reference_per_class: int
    guide_permutations: int
    text: TextSizes = TextSizes()  #: the text generator's sections

    def describe(self) -> str:
        """One line: the preset's name and its sizes."""
        return (f"{self.name} sizes: {self.per_prompt} samples per prompt, {self.steps} DDIM steps, CFG "
                f"{', '.join(f'{s:g}' for s in self.scales)}, {self.bootstrap} bootstrap resamples; guidance "
                f"scales {', '.join(f'{s:g}' for s in self.guide_scales)}, {self.guide_per_prompt} per "
                f"prompt, {self.guide_reference_per_class} reference images per class, "
                f"{self.guide_permutations} permutations; text generator: {self.text.captions} captions, "
                f"{self.text.steps} DDIM steps")


QUICK = DemoSizes("quick", per_prompt=40, steps=10, scales=(1.0, 2.0, 4.0, 8.0), bootstrap=100,
                  guide_scales=(0.0, 200.0), guide_per_prompt=8, guide_reference_per_class=20,
                  guide_permutations=100)
FULL = DemoSizes("full", per_prompt=40, steps=20, scales=DEFAULT_SCALES, bootstrap=200,
                 guide_scales=(0.0, 50.0, 100.0, 200.0, 400.0), guide_per_prompt=16,
                 guide_reference_per_class=40, guide_permutations=200,
                 text=TextSizes(captions=500, per_prompt=4, steps=20, scales=(1.0, 2.0, 3.0, 5.0, 8.0),
                               guide_per_family=32, regions_per_family=64, regions_real=2000,
                               regions_bootstrap=200))


class DemoStopped(Interrupted):
    """The run was interrupted: ``kept`` sections are written in ``out``, ``unfinished`` was running (an
    :class:`~promptprism.errors.Interrupted`: it says what the run kept)."""

    def __init__(self, out: Path, kept: Sequence[str], unfinished: str) -> None:
        super().__init__(out, tuple(kept), unfinished)
        self.out, self.kept, self.unfinished = Path(out), tuple(kept), unfinished

    def line(self) -> str:
        """``stopped: kept sections A, B in DIR; C was not finished``."""
        kept = f"kept sections {', '.join(self.kept)} in {self.out}" if self.kept else "kept no section"
        return f"stopped: {kept}; {self.unfinished} was not finished"

    def __str__(self) -> str:
        return self.line().removeprefix("stopped: ")


class DemoTerminated(DemoStopped, Terminated):
    """:class:`DemoStopped` by SIGTERM (the command line then exits 143)."""


def check_sizes(per_prompt: int, steps: int, seed: int) -> None:
    """The sampler's sizes, checked before anything runs."""
    check_positive_number(per_prompt, "per_prompt", integer=True)
    check_positive_number(steps, "steps", integer=True)
    check_seed(seed)
    if per_prompt < 10:
        raise OptionError(f"per_prompt must be at least 10 in the generator demo, got {per_prompt}",
                          parameter="per_prompt")
    if steps > MAX_STEPS:
        raise OptionError(f"steps must be at most {MAX_STEPS:,} (the timesteps the generator was trained "
                          f"on), got {steps}", parameter="steps")
    check_memory(per_prompt * 10 * DEMO_BYTES_PER_SAMPLE, what=f"per_prompt {per_prompt} (10 classes of "
                                                               "samples per checkpoint)")


def pick_sections(available: Sequence[tuple[str, Experiment]],
                  names: str | None) -> list[tuple[str, Experiment]]:
    """The sections named in ``names`` (comma-separated, in that order; None: all of ``available``)."""
    if names is None:
        return list(available)
    known = dict(available)
    picked = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in picked if n not in known]
    if unknown or not picked or len(set(picked)) != len(picked):
        raise OptionError(f"sections must be distinct names out of {', '.join(known)}, got {names!r}",
                          parameter="sections")
    return [(n, known[n]) for n in picked]


def summary_of(ctx: DemoContext, sections: list[tuple[str, DemoSection]], seconds: float, *,
               scales: tuple[float, ...], sizes: str, complete: bool, figures: dict | None = None) -> dict:
    """What summary.json holds: the finished sections, the settings and the time so far."""
    return {"sections": [{"name": name, **s.__dict__} for name, s in sections], "seed": ctx.seed,
            "per_prompt": ctx.per_prompt, "steps": ctx.steps, "scales": list(scales), "sizes": sizes,
            "bootstrap": ctx.options.get("bootstrap"), "complete": complete,
            "checkpoints": [p.name for p in ctx.training], "second": ctx.second.name if ctx.second else None,
            "seconds": seconds, "sampling_seconds": sum(ctx.cache.get("seconds", [])),
            "figures": figures or {}}


def write_summary(out: Path, summary: dict, report: bool) -> None:
    """(``report``) the summary page, then summary.json, each replaced atomically."""
    if report:
        from ..report.generator_demo import render_generator_demo

        atomic_write_text(out / "report.html", render_generator_demo(summary, out))
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2, default=str) + "\n")


def run_fashion_demo(out: Path, *, weights: Path | None, per_prompt: int, steps: int, seed: int,
                     scales: tuple[float, ...] = DEFAULT_SCALES, report: bool = True, guidance: Any = None,
                     extra: tuple[Experiment, ...] = (), save: Saver | None = None,
                     on_section: Callable[[DemoSection, float], None] | None = None,
                     sections: Sequence[tuple[str, Experiment]] | None = None, bootstrap: int = 200,
                     sizes: str = "custom", options: dict | None = None) -> dict:
    """Run every section (default :data:`SECTIONS`, then ``extra``, named by their function) on the
    generator's checkpoints, writing the summary after each; returns it. ``guidance``: the guidance
    section's options (``guidance.SweepOptions``; None skips it); ``save``: writes each method's result
    (default :func:`promptprism.report.save_result`); ``on_section(section, seconds since the start)`` as
    each finishes; ``bootstrap``: the intervals' resamples; ``sizes``: the preset's name, recorded;
    ``options``: further sections' options by name (e.g. ``"text"``: the text generator's sizes).
    Ctrl-C raises :class:`DemoStopped` once the finished sections' summary is written."""
    from ..datasets import check_fashion_mnist
    from ..models.fashion import find_checkpoints, packaged_weights, real_images

    check_out_dir(out)
    check_sizes(per_prompt, steps, seed)
    check_positive_number(bootstrap, "bootstrap", integer=True)
    training, second = find_checkpoints(Path(weights) if weights is not None else packaged_weights())
    check_fashion_mnist()
    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    size = json.loads((training[-1] / "promptprism_generator.json").read_text())["image_size"]
    plan = [*(SECTIONS if sections is None else sections), *((fn.__name__.removesuffix("_section"), fn)
                                                            for fn in extra)]
    done: list[tuple[str, DemoSection]] = []
    current = "setting up"
    with noticed_interrupts() as interrupts:  # (a Ctrl-C swallowed where it landed: the next section stops)
        try:
            x, y = real_images("test", size)
            idx = np.random.default_rng(seed).permutation(y.size)[:REAL_TEST_IMAGES]
            ctx = DemoContext(out=out, training=training, second=second, per_prompt=per_prompt, steps=steps,
                              seed=seed, report=report, real_test=x[idx], real_test_labels=y[idx],
                              classifier=pixel_classifier(seed, size), save=save or default_saver(),
                              options={**(options or {}), "guidance": guidance, "scales": tuple(scales),
                                       "bootstrap": bootstrap})
            partial = {"scales": tuple(scales), "sizes": sizes}
            for current, run in plan:
                interrupts.check()
                section = run(ctx)
                if section is not None:
                    finished = [*done, (current, section)]
                    write_summary(out, summary_of(ctx, finished, time.perf_counter() - t0, complete=False,
                                                  **partial), report)
                    done = finished  # kept once its summary is written
                    if on_section is not None:
                        on_section(section, time.perf_counter() - t0)
            current = "the sample grids"
            interrupts.check()
            figures = _write_figures(ctx, tuple(scales))
            summary = summary_of(ctx, done, time.perf_counter() - t0, complete=True, figures=figures,
                                 **partial)
            write_summary(out, summary, report)
        except KeyboardInterrupt as exc:
            stopped = DemoTerminated if isinstance(exc, Terminated) else DemoStopped
            raise stopped(out, [name for name, _ in done], current) from None
    return summary
