"""The trained-generator demo (``promptprism demo --trained-generator``): the methods on a diffusion model
trained here (Fashion-MNIST, 16 px).

From a folder of checkpoints of one training run (``step-N``/``epoch-N``, see
:mod:`promptprism.models.fashion_train`) and a second generator fine-tuned to answer one prompt with
another class, it samples every set with the same seeds and writes, under ``--out``:

* ``quality.json``: per prompt, the share of the final model's samples that a pixel classifier (logistic
  regression fitted on real training images) puts in the prompt's class, and the Frechet distance of the
  samples to the real test set on pixels; the real test set's own accuracy beside it;
* ``monitoring/``: disentangled CMS per region per checkpoint against the real test set (``regions``);
* ``cfg-diversity/``: Scendi (model- and prompt-driven diversity) and Vendi at each CFG scale (``diversity``);
* ``split/``: PromptSplit between the second generator and the final one (``split``);
* ``guidance/``: PromptSplit guidance over a range of scales (section 5.4 of the paper,
  :mod:`promptprism.demos.guidance`);
* ``report.html`` (the summary with links to each report) and ``summary.json``.

The sections are functions of a :class:`DemoContext` returning a :class:`DemoSection`; the run (their order,
the summary written after each, Ctrl-C, the size presets) is :mod:`promptprism.demos.fashion_run`. Each
method's result is written by ``ctx.save`` (default :func:`promptprism.report.save_result`: result.json and
its report as one transaction). Nothing is printed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..io import atomic_write_bytes, atomic_write_text
from ..stats.intervals import format_estimate
from ._save import Saver, default_saver

DEFAULT_SCALES = (1.0, 2.0, 4.0, 8.0)
QUALITY_SCALE = 2.0  #: the CFG scale of the quality, monitoring and split sets
MAX_STEPS = 1000  #: DDIM steps cannot exceed the training schedule's timesteps
DEMO_BYTES_PER_SAMPLE = 256 * 1024  #: one sample's memory over the sections (pixels, embeddings; generous)
CLASSIFIER_TRAIN_IMAGES = 10_000
REAL_FIT_IMAGES, REAL_TEST_IMAGES = 2000, 2000
MAJOR_SHARE = 0.05  #: a prompt's share of the PromptSplit disagreement named in the summary


@dataclass
class DemoSection:
    """One block of the summary: a title, a sentence, a table and the folder of its own report."""

    title: str
    text: str
    headers: list[str]
    rows: list[list[Any]]
    folder: str | None = None
    figures: list = field(default_factory=list)  #: [PNG under the demo's folder, caption], below the table


@dataclass
class DemoContext:
    """What an experiment needs: the checkpoints, the sampler settings, the seeds and the real data."""

    out: Path
    training: list[Path]  #: checkpoints of the training run, in training order (the last is the final one)
    second: Path | None  #: the fine-tuned second generator (None: not in the weights folder)
    per_prompt: int
    steps: int
    seed: int
    report: bool  #: write each method's report.html beside its result.json
    real_test: np.ndarray = field(repr=False, default=None)  #: (n, s, s) uint8
    real_test_labels: np.ndarray = field(repr=False, default=None)
    classifier: Any = field(repr=False, default=None)
    cache: dict = field(repr=False, default_factory=dict)
    options: dict = field(default_factory=dict)  #: the further experiments' options, by name
    save: Saver = field(repr=False, default=None)  #: writes a method's result (and report) into a folder

    def __post_init__(self) -> None:
        if self.save is None:
            self.save = default_saver()

    @property
    def classes(self) -> np.ndarray:
        """The class of every sample: ``per_prompt`` per class, in class order."""
        return np.repeat(np.arange(10), self.per_prompt)

    def samples(self, checkpoint: Path, scale: float) -> np.ndarray:
        """The checkpoint's images for :attr:`classes` at CFG ``scale``: the same seeds for every set."""
        from ..guidance import sample_seeds
        from ..models.fashion import load_checkpoint, sample_images

        key = (str(checkpoint), float(scale))
        if key not in self.cache:
            # kept on disk: a second run (e.g. with one more checkpoint) samples only the new sets
            stored = (self.out / "samples" / f"{checkpoint.name}_cfg{scale:g}_n{self.per_prompt}_"
                      f"steps{self.steps}_seed{self.seed}.npy")
            if stored.is_file():
                self.cache[key] = np.load(stored)
                return self.cache[key]
            t0 = time.perf_counter()
            seeds = sample_seeds(self.seed, self.classes.size)
            self.cache[key] = sample_images(load_checkpoint(checkpoint), self.classes, seeds,
                                            guidance_scale=scale, steps=self.steps)
            self.cache.setdefault("seconds", []).append(time.perf_counter() - t0)
            stored.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(stored, _npy_bytes(self.cache[key]))
        return self.cache[key]

    def paired(self, images: np.ndarray, name: str):
        """A PairedSet: one-hot prompt embeddings (10-d), pixel output embeddings in [0, 1]."""
        from ..data.paired import PairedSet
        from ..models.fashion import class_prompts

        prompts = class_prompts()
        return PairedSet(np.eye(10)[self.classes], images.reshape(len(images), -1) / 255.0,
                         prompts=[prompts[c] for c in self.classes], name=name)


def _npy_bytes(array: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


#: a section: fn(context) -> DemoSection (None: skipped); the run's list is ``fashion_run.SECTIONS``
Experiment = Callable[[DemoContext], "DemoSection | None"]


def pixel_classifier(seed: int, image_size: int):
    """Logistic regression on real training pixels at the model's resolution (a seeded subsample)."""
    from sklearn.linear_model import LogisticRegression

    from ..models.fashion import real_images

    x, y = real_images("train", image_size)
    idx = np.random.default_rng(seed).permutation(y.size)[:CLASSIFIER_TRAIN_IMAGES]
    return LogisticRegression(max_iter=300).fit(x[idx].reshape(idx.size, -1) / 255.0, y[idx])


def _accuracy(clf, images: np.ndarray, labels: np.ndarray) -> list[float]:
    pred = clf.predict(images.reshape(len(images), -1) / 255.0)
    return [float(np.mean(pred[labels == c] == c)) for c in range(10)]


def quality_section(ctx: DemoContext) -> DemoSection:
    """Per-prompt classifier accuracy of the final model's samples and the Frechet distance (pixels)."""
    from ..methods.metrics.frechet import frechet_distance
    from ..models.fashion import class_prompts

    final = ctx.samples(ctx.training[-1], QUALITY_SCALE)
    flat = ctx.real_test.reshape(len(ctx.real_test), -1) / 255.0
    gen_acc = _accuracy(ctx.classifier, final, ctx.classes)
    real_acc = _accuracy(ctx.classifier, ctx.real_test, ctx.real_test_labels)
    fd = frechet_distance(final.reshape(len(final), -1) / 255.0, flat)
    half = len(flat) // 2
    fd_real = frechet_distance(flat[:half], flat[half:])
    rows = [[p, f"{g:.2f}", f"{r:.2f}"] for p, g, r in zip(class_prompts(), gen_acc, real_acc, strict=True)]
    rows.append(["all prompts", f"{np.mean(gen_acc):.3f}", f"{np.mean(real_acc):.3f}"])
    data = {"accuracy_generated": gen_acc, "accuracy_real_test": real_acc, "frechet_distance_pixels": fd,
            "frechet_distance_real_halves": fd_real, "cfg_scale": QUALITY_SCALE,
            "checkpoint": ctx.training[-1].name}
    atomic_write_text(ctx.out / "quality.json", json.dumps(data, indent=2) + "\n")
    text = (f"Samples of the final checkpoint ({ctx.training[-1].name}, CFG {QUALITY_SCALE:g}, "
            f"{ctx.steps} DDIM steps) classified by logistic regression on real training pixels (chance "
            f"0.10). Frechet "
            f"distance to {len(flat)} real test images on pixels: {fd:.3g} (two halves of the real test set: "
            f"{fd_real:.3g}).")
    return DemoSection("Quality of the generator", text, ["prompt", "accuracy on samples",
                                                          "accuracy on real test images"], rows)


def monitoring_section(ctx: DemoContext) -> DemoSection:
    """Algorithm 1 of the disentangled-mean-embeddings paper over the checkpoints of the training run."""
    from ..methods.regions import RegionCMS
    from ..models.fashion import real_images

    real_fit, _ = real_images("train", ctx.real_test.shape[1])
    fit_idx = np.random.default_rng(ctx.seed).permutation(len(real_fit))[:REAL_FIT_IMAGES]
    sets = [ctx.samples(p, QUALITY_SCALE) for p in ctx.training]
    names = [p.name for p in ctx.training]
    est = RegionCMS(seed=ctx.seed, bootstrap=ctx.options.get("bootstrap", 200), max_regions=6)
    # floats in [0, 1]: given uint8 arrays, RegionCMS computes in uint8 and its distances wrap around
    result = est.fit(real_fit[fit_idx] / 255.0).compare([s / 255.0 for s in sets], names,
                                                        reference=ctx.real_test / 255.0)
    ctx.save(result, ctx.out / "monitoring", report=ctx.report, quiet=True)
    rows = []
    for k, name in enumerate(names):
        iv = result.intervals[k] if k < len(result.intervals) else {}
        bounds = iv.get("region_cms") or [None] * len(result.region_cms[k])
        cells = [with_interval(v, b) for v, b in zip(result.region_cms[k], bounds, strict=True)]
        rows.append([name, with_interval(result.cms[k], iv.get("cms")), *cells])
    last = converges_last(result.region_cms)
    text = (f"Disentangled CMS of each checkpoint's samples against {len(ctx.real_test)} real test images, "
            f"per pixel region (regions from the CKA of {fit_idx.size} real training images; 95% bootstrap "
            f"intervals). 1 = indistinguishable from real. The region that converges last: region {last}.")
    headers = ["checkpoint", "CMS", *[f"region {r} ({s} px)" for r, s in enumerate(result.region_sizes)]]
    return DemoSection("Monitoring the training run, region by region", text, headers, rows, "monitoring")


def with_interval(value: float, bounds: dict | None) -> str:
    """``0.912 [0.901, 0.925]`` (or the value alone without an interval)."""
    return format_estimate(value, bounds, ".3f")


def converges_last(region_cms: Any, tolerance: float = 0.02) -> int:
    """The region whose CMS is the last to come within ``tolerance`` of its final value and stay there
    (a tie goes to the region with the lowest final CMS). ``region_cms``: (checkpoints, regions)."""
    cms = np.asarray(region_cms, dtype=float)
    close = np.abs(cms - cms[-1]) <= tolerance
    settle = [min(k for k in range(len(cms)) if close[k:, r].all()) for r in range(cms.shape[1])]
    return max(range(cms.shape[1]), key=lambda r: (settle[r], -cms[-1, r]))


def scale_rows(scales: tuple[float, ...], models: list) -> list[list[str]]:
    """One table row per CFG scale: the scale, Scendi, prompt-driven Scendi and Vendi with their intervals."""
    rows = []
    for s, m in zip(scales, models, strict=True):
        iv = m.intervals or {}
        rows.append([f"{s:g}", with_interval(m.scendi, iv.get("scendi")),
                     with_interval(m.scendi_prompt, iv.get("scendi_prompt")),
                     with_interval(m.vendi, iv.get("vendi"))])
    return rows


def cfg_section(ctx: DemoContext, scales: tuple[float, ...] | None = None) -> DemoSection:
    """Scendi and Vendi of the final model's samples at each CFG scale (default ``ctx.options['scales']``)."""
    from ..methods.scendi import Scendi, compare

    scales = scales or ctx.options.get("scales", DEFAULT_SCALES)
    final = ctx.training[-1]
    sets = [ctx.paired(ctx.samples(final, s), f"CFG {s:g}") for s in scales]
    result = compare(sets, Scendi(seed=ctx.seed, bootstrap=ctx.options.get("bootstrap", 200)))
    ctx.save(result, ctx.out / "cfg-diversity", report=ctx.report, quiet=True)
    rows = scale_rows(scales, result.models)
    text = ("Diversity of the final model's samples at each classifier-free guidance scale (prompt "
            "embeddings: one-hot over the 10 class prompts; outputs: pixels; cosine kernel; 95% intervals "
            "from a prompt "
            "bootstrap). Model-driven diversity (Scendi) is what remains once the prompt is accounted for.")
    return DemoSection("Diversity over the CFG scale", text, ["CFG scale", "Scendi (model-driven)",
                                                              "prompt-driven", "Vendi"], rows,
                       "cfg-diversity")


def matched_reference(ctx: DemoContext, meta: dict) -> Path:
    """The training checkpoint with as many steps as the second generator's start plus its fine-tune
    (the same amount of training, without the relabelling); the final checkpoint when there is none."""
    def steps(p: Path) -> int:
        return int(json.loads((p / "promptprism_generator.json").read_text()).get("steps", -1))

    start = [p for p in ctx.training if p.name == Path(str(meta.get("init"))).name]
    if start:
        target = steps(start[0]) + int(meta.get("steps", 0))
        same = [p for p in ctx.training if steps(p) == target]
        if same:
            return same[0]
    return ctx.training[-1]


def split_section(ctx: DemoContext) -> DemoSection | None:
    """PromptSplit between the fine-tuned second generator and the checkpoint trained as long."""
    from ..methods.promptsplit import PromptSplit

    if ctx.second is None:
        return None
    meta = json.loads((ctx.second / "promptprism_generator.json").read_text())
    first = matched_reference(ctx, meta)
    images = {"test": ctx.samples(ctx.second, QUALITY_SCALE), "reference": ctx.samples(first, QUALITY_SCALE)}
    test = ctx.paired(images["test"], f"second ({ctx.second.name})")
    ref = ctx.paired(images["reference"], f"first ({first.name})")
    sets = {"test": test, "reference": ref}
    result = PromptSplit(seed=ctx.seed).fit(test, ref)
    if ctx.report:  # the page's map (computed once, kept in result.json); the inputs: each prompt's images
        from ..methods.promptsplit.layout import with_layout

        result = with_layout(result, sets)
    ctx.save(result, ctx.out / "split", report=ctx.report, quiet=True, images=images, inputs=sets)
    ctx.cache["split"] = {"result": result, "test": test, "reference": ref, "images": images}
    sig = result.significance or {}
    major = [r["prompt"] for r in result.prompt_ranking if r["share"] >= MAJOR_SHARE]
    rows = [[r["prompt"], f"{r['disagreement']:.3g}", f"{r['share']:.3f}"]
            for r in result.prompt_ranking[:10]]
    headers = ["prompt", "disagreement", "share of the captured spectrum"]
    changed = ", ".join(f"{k} answered with {v}" for k, v in meta.get("answers", {}).items())
    text = (f"The second generator: {ctx.second.name}, fine-tuned for {meta.get('steps')} steps from "
            f"{Path(str(meta.get('init'))).name} with {changed}; the first: {first.name}, trained as long "
            f"without the change. PromptSplit distance {result.distance:.4g}; significant modes: "
            f"{sig.get('n_significant', 'n/a')} (permutation test, alpha "
            f"{result.config.get('alpha', 0.05)}); "
            f"prompts holding at least {MAJOR_SHARE:.0%} of the disagreement: {', '.join(major) or 'none'}. "
            f"Prompts ranked by {result.ranking_basis}:")
    return DemoSection("Where two generators differ (PromptSplit)", text, headers, rows, "split")


def grid_png(blocks: list[np.ndarray], per_prompt: int, shown: int = 6, zoom: int = 3, n_rows: int = 10,
             gap: int = 255) -> bytes:
    """One row per class (``n_rows`` prompts); per block (a sample set in class order) its first ``shown``
    samples of the class, blocks separated by a gap of grey level ``gap``; pixels enlarged ``zoom`` times."""
    import io

    from PIL import Image

    s = blocks[0].shape[1]
    spacer = np.full((s, 2), gap, np.uint8)
    rows = []
    for c in range(n_rows):
        parts = []
        for b in blocks:
            parts += [*b[c * per_prompt: c * per_prompt + shown], spacer]
        rows.append(np.concatenate(parts[:-1], axis=1))
    grid = np.concatenate(rows, axis=0).repeat(zoom, 0).repeat(zoom, 1)
    buf = io.BytesIO()
    Image.fromarray(grid).save(buf, format="PNG")
    return buf.getvalue()


def _write_figures(ctx: DemoContext, scales: tuple[float, ...]) -> dict[str, str]:
    names = ", ".join(p.name for p in ctx.training)
    scale_list = ", ".join(f"{s:g}" for s in scales)
    figures = {
        "samples-checkpoints.png": f"Samples per prompt (rows: the 10 class prompts), one block per "
                                   f"checkpoint "
                                   f"from left to right ({names}), CFG {QUALITY_SCALE:g}, the same seeds.",
        "samples-cfg.png": f"The final checkpoint's samples at CFG scales {scale_list} (one block per scale, "
                           "left to right), the same seeds.",
    }
    blocks = {"samples-checkpoints.png": [ctx.samples(p, QUALITY_SCALE) for p in ctx.training],
              "samples-cfg.png": [ctx.samples(ctx.training[-1], s) for s in scales]}
    for name, sets in blocks.items():
        atomic_write_bytes(ctx.out / name, grid_png(sets, ctx.per_prompt))
    return figures


def check_weights(weights: Path | None) -> None:
    """A weights folder that is not there: one clear line."""
    if weights is not None and not Path(weights).is_dir():
        raise InputError(f"weights {weights}: no such folder", parameter="weights")
