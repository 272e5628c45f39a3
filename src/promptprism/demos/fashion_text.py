"""The papers' experiments on the text-prompted Fashion-MNIST generator (28 px, free-text prompts), as
sections of ``promptprism demo --trained-generator`` (:data:`TEXT_SECTIONS`).

Prompts are the caption rules' own phrasings (:mod:`promptprism.models.fashion_captions`): a prompt names a
class and some of its measured attributes ("a photo of a dark, small bag"). Prompt embeddings are the
bundled MiniLM's sentence embeddings, outputs the samples' pixels on 0..1.

* :func:`text_quality_section` -- real test images captioned by the frozen rules, one sample per caption:
  class accuracy by a pixel classifier of real images, attribute accuracy per attribute and per rare /
  common cell, pixel Frechet distance against the real halves';
* :func:`text_real_section` -- PromptSplit between those samples and the real images they were prompted
  from: which caption families the generator gets wrong;
* :func:`text_split_section` -- PromptSplit between the planted second generator (bag captions with dark and
  light swapped) and the generator fine-tuned as long without the swap: the planted family should rank first;
* :func:`text_cfg_section` -- Scendi over classifier-free guidance scales on the same free-text prompts.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..io import atomic_write_bytes, atomic_write_text
from .fashion import DemoContext, DemoSection, grid_png, scale_rows

PLANTED = ("bag", "brightness")  #: the second generator's swapped (class, attribute)
SECOND = "second-dark-light-bag"  #: its packaged checkpoint
QUALITY_CFG = 2.0


@dataclass(frozen=True)
class TextSizes:
    """The text generator's sizes: ``captions`` real test images captioned (one sample each), ``per_prompt``
    samples per prompt of the planted-family split, ``steps`` DDIM steps, the CFG ``scales`` of Scendi;
    ``guide_per_family`` samples (and reference images) per family of the guidance section, its
    ``guide_scale``; ``regions_per_family`` samples per family and checkpoint of the regions section and
    ``regions_real`` real training images for its pixel CKA, ``regions_bootstrap`` its resamples (0: no
    intervals)."""

    captions: int = 150
    per_prompt: int = 2
    steps: int = 8
    scales: tuple[float, ...] = (1.0, 2.0)
    guide_per_family: int = 8
    guide_scale: float = 40.0
    regions_per_family: int = 24
    regions_real: int = 400
    regions_bootstrap: int = 0


def _sizes(ctx: DemoContext) -> TextSizes:
    return ctx.options.get("text") or TextSizes()


def _checkpoint(ctx: DemoContext, name: str) -> Any:
    from ..models.fashion_text import load_checkpoint, packaged_weights

    key = ("text-checkpoint", name)
    if key not in ctx.cache:
        folder = Path(ctx.options.get("text_weights") or packaged_weights()) / name
        ctx.cache[key] = load_checkpoint(folder)
    return ctx.cache[key]


def text_samples(ctx: DemoContext, name: str, prompts: list[str], scale: float, tag: str) -> np.ndarray:
    """uint8 (n, 28, 28) samples of checkpoint ``name`` for ``prompts`` at CFG ``scale`` (seeded by the demo's
    seed; cached in memory under ``tag``)."""
    from ..guidance import sample_seeds
    from ..models.fashion_text import sample_text_images

    key = ("text", name, tag, float(scale))
    if key not in ctx.cache:
        t0 = time.perf_counter()
        seeds = sample_seeds(ctx.seed, len(prompts))
        ctx.cache[key] = sample_text_images(_checkpoint(ctx, name), prompts, seeds, guidance_scale=scale,
                                            steps=_sizes(ctx).steps)
        ctx.cache.setdefault("seconds", []).append(time.perf_counter() - t0)
    return ctx.cache[key]


def text_paired(images: np.ndarray, prompts: list[str], name: str) -> Any:
    """A PairedSet: MiniLM sentence embeddings of the prompts, pixel rows on 0..1 as outputs."""
    from ..data.paired import PairedSet
    from ..embed.registry import get_encoder

    text = get_encoder("minilm", modality="text", device="cpu").encode_texts(list(prompts))
    pixels = np.asarray(images, dtype=np.float64).reshape(len(images), -1) / 255.0
    return PairedSet(np.asarray(text, dtype=np.float64), pixels, prompts=list(prompts), name=name)


def captioned_real(ctx: DemoContext) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``captions`` seeded real test images, their labels and their captions under the final checkpoint's
    frozen thresholds (the training rules, applied unchanged)."""
    from ..datasets import fashion_mnist
    from ..models import fashion_captions as fc

    if "text-real" not in ctx.cache:
        x, y = fashion_mnist("test")
        idx = np.sort(np.random.default_rng([ctx.seed, 28]).permutation(y.size)[:_sizes(ctx).captions])
        thresholds = _checkpoint(ctx, "final").thresholds
        attrs = fc.attribute_table(x[idx], y[idx], thresholds)
        ctx.cache["text-real"] = (x[idx], y[idx], fc.captions(y[idx], attrs, ctx.seed))
    return ctx.cache["text-real"]


def text_quality_section(ctx: DemoContext) -> DemoSection:
    """Class and attribute accuracy of the final text checkpoint, prompted by real images' captions."""
    from ..datasets import fashion_mnist
    from ..methods.metrics.frechet import frechet_distance
    from ..models.fashion_text_quality import attribute_accuracy, class_accuracy, fit_pixel_classifier

    x, y, prompts = captioned_real(ctx)
    gen = text_samples(ctx, "final", prompts, QUALITY_CFG, "captions")
    xt, yt = fashion_mnist("train")
    fit = np.random.default_rng([ctx.seed, 5000]).permutation(yt.size)[:5000]
    clf = fit_pixel_classifier(xt[fit], yt[fit], seed=ctx.seed)
    acc_gen, acc_real = class_accuracy(clf, gen, y), class_accuracy(clf, x, y)
    attrs = attribute_accuracy(gen, prompts, _checkpoint(ctx, "final").thresholds)
    flat = x.reshape(len(x), -1) / 255.0
    fd = frechet_distance(gen.reshape(len(gen), -1) / 255.0, flat)
    half = len(flat) // 2
    fd_real = frechet_distance(flat[:half], flat[half:])
    data = {"class_accuracy_samples": acc_gen, "class_accuracy_real": acc_real, "attribute_accuracy": attrs,
            "frechet_distance_pixels": fd, "frechet_distance_real_halves": fd_real, "cfg_scale": QUALITY_CFG,
            "steps": _sizes(ctx).steps, "n_captions": len(prompts)}
    atomic_write_text(ctx.out / "text-quality.json", json.dumps(data, indent=2) + "\n")
    rows = [["class accuracy (pixel classifier of real images)", f"{acc_gen:.3f}", f"{acc_real:.3f}"]]
    rows += [[f"attribute accuracy: {k}", f"{v:.3f} ({n} words)", "chance 0.5"]
             for k, (v, n) in attrs.items()]
    rows.append(["pixel Frechet distance", f"{fd:.3g}", f"{fd_real:.3g} (two halves of the real images)"])
    text = (f"{len(prompts)} real test images captioned by the generator's own frozen rules; one sample of "
            f"the text generator (checkpoint final, CFG {QUALITY_CFG:g}, {_sizes(ctx).steps} DDIM steps) per "
            "caption. A sample's attributes are measured from its pixels by the same rules (chance 0.5).")
    figures = _real_beside_samples(ctx, x, gen, y, prompts)
    return DemoSection("Quality of the text generator", text, ["measure", "samples", "real images"], rows,
                       None, figures)


def _real_beside_samples(ctx: DemoContext, real: np.ndarray, gen: np.ndarray, labels: np.ndarray,
                         prompts: list[str]) -> list[list[str]]:
    """``text-quality.png``: per class (rows), real test images (left) beside the samples their captions
    prompted (right), the same captions in the same order; [[path, caption]] or [] if a class is missing."""
    order = [np.flatnonzero(labels == c) for c in range(10)]
    shown = min(6, *(len(o) for o in order))
    if shown == 0:
        return []
    idx = np.concatenate([o[:shown] for o in order])
    atomic_write_bytes(ctx.out / "text-quality.png", grid_png([real[idx], gen[idx]], shown, shown, gap=128))
    example = "; ".join(f"'{prompts[o[0]]}'" for o in order[:3])
    caption = (f"Real test images (left) and the text generator's samples for their captions (right), "
               f"{shown} per class, one row per class (first captions: {example}).")
    return [["text-quality.png", caption]]


def _ranking_rows(result: Any, n: int = 10) -> list[list[str]]:
    return [[r["prompt"], f"{r['disagreement']:.3g}", f"{r['share']:.3f}"] for r in result.prompt_ranking[:n]]


def text_real_section(ctx: DemoContext) -> DemoSection:
    """PromptSplit between the text generator's samples and the real images their captions describe."""
    from ..methods.promptsplit import PromptSplit
    from ..models import fashion_captions as fc

    x, _, prompts = captioned_real(ctx)
    gen = text_samples(ctx, "final", prompts, QUALITY_CFG, "captions")
    test = text_paired(gen, prompts, "text generator (final)")
    ref = text_paired(x, prompts, "real test images")
    result = PromptSplit(seed=ctx.seed).fit(test, ref)
    ctx.save(result, ctx.out / "text-real", report=ctx.report, quiet=True,
             images={"test": gen, "reference": x})
    top = [r["prompt"] for r in result.prompt_ranking[:10]]
    rare = [p for p in top if fc.is_rare(*fc.parse_prompt(p))]
    sig = (result.significance or {}).get("n_significant", "n/a")
    text = (f"PromptSplit between the text generator's samples and the {len(prompts)} real images whose "
            f"captions prompted them: distance {result.distance:.4g}, significant modes {sig}. Top prompts "
            f"naming a rare combination (thinned to 10% in training): {len(rare)} of {len(top)}"
            f"{': ' + ', '.join(rare) if rare else ''}.")
    return DemoSection("Where the text generator departs from real data (PromptSplit)", text,
                       ["prompt", "disagreement", "share of the captured spectrum"], _ranking_rows(result),
                       "text-real")


def planted_prompts(n_others: int = 36) -> list[str]:
    """The planted family's prompts (bag x brightness, both words) and ``n_others`` other caption prompts."""
    from ..models.fashion_text import experiment_prompts
    from ..models.fashion_text_quality import family_prompts

    planted = family_prompts(PLANTED[0], PLANTED[1], "dark") + family_prompts(PLANTED[0], PLANTED[1], "light")
    others = [p for p in experiment_prompts(550, seed=0) if p not in planted]
    return planted + others[::max(1, len(others) // n_others)][:n_others]


def text_split_section(ctx: DemoContext) -> DemoSection | None:
    """PromptSplit between the planted second text generator and the one fine-tuned as long without it."""
    from ..methods.promptsplit import PromptSplit
    from ..models.fashion_text import packaged_names
    from ..models.fashion_text_quality import family_share

    if ctx.options.get("text_weights") is None and SECOND not in packaged_names():
        return None
    prompts = [p for p in planted_prompts() for _ in range(_sizes(ctx).per_prompt)]
    images = {"test": text_samples(ctx, SECOND, prompts, QUALITY_CFG, "planted"),
              "reference": text_samples(ctx, "final", prompts, QUALITY_CFG, "planted")}
    test = text_paired(images["test"], prompts, f"second ({SECOND})")
    ref = text_paired(images["reference"], prompts, "final")
    result = PromptSplit(seed=ctx.seed).fit(test, ref)
    ctx.save(result, ctx.out / "text-split", report=ctx.report, quiet=True, images=images)
    top = [r["prompt"] for r in result.prompt_ranking[:10]]
    share = family_share(top, *PLANTED)
    sig = (result.significance or {}).get("n_significant", "n/a")
    text = (f"The second text generator was fine-tuned with 'dark' and 'light' swapped in every bag caption; "
            f"the reference, from the same checkpoint for as many steps without the swap. Half of the "
            f"{len(set(prompts))} prompts name a bag's brightness. PromptSplit distance "
            f"{result.distance:.4g}, significant modes {sig}; "
            + (f"{share:.0%} of the ten top-ranked prompts belong to the planted family." if top else
               "no mode is significant, so no prompt is ranked."))
    headers, rows = ["prompt", "disagreement", "share of the captured spectrum"], _ranking_rows(result)
    if not rows:  # no significant mode, so no ranking: the test's own numbers instead of an empty table
        p = (result.significance or {}).get("p_largest")
        headers = ["measure", "value"]
        rows = [["PromptSplit distance", f"{result.distance:.3g}"], ["significant modes", str(sig)],
                ["p of the largest eigenvalue", "n/a" if p is None else f"{p:.3g}"]]
    return DemoSection("The planted family: bag x brightness (PromptSplit)", text, headers, rows,
                       "text-split")


def text_cfg_section(ctx: DemoContext) -> DemoSection:
    """Scendi and Vendi of the text generator over CFG scales, on the real captions' free-text prompts."""
    from ..methods.scendi import Scendi, compare

    _, _, prompts = captioned_real(ctx)
    scales = _sizes(ctx).scales
    sets = [text_paired(text_samples(ctx, "final", prompts, s, "captions"), prompts, f"CFG {s:g}")
            for s in scales]
    result = compare(sets, Scendi(seed=ctx.seed, bootstrap=ctx.options.get("bootstrap", 200)))
    ctx.save(result, ctx.out / "text-diversity", report=ctx.report, quiet=True)
    rows = scale_rows(scales, result.models)
    text = (f"Diversity of the text generator's samples for {len(set(prompts))} distinct free-text prompts "
            "(MiniLM prompt embeddings, pixel outputs) at each classifier-free guidance scale: model-driven "
            "(Scendi) is what remains once the prompt is accounted for; prompt-driven is the prompts' share.")
    return DemoSection("Text generator: diversity over the CFG scale (Scendi)", text,
                       ["CFG scale", "Scendi (model-driven)", "prompt-driven", "Vendi"], rows,
                       "text-diversity")


#: the text generator's sections, in order (appended to the demo's by the command)
TEXT_SECTIONS = [("text-quality", text_quality_section), ("text-real", text_real_section),
                 ("text-split", text_split_section), ("text-diversity", text_cfg_section)]
