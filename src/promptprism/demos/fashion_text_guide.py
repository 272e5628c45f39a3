"""Two more of the papers' experiments on the text-prompted Fashion-MNIST generator, as sections of
``promptprism demo --trained-generator`` (appended to :data:`promptprism.demos.fashion_text.TEXT_SECTIONS`):

* :func:`text_guidance_section` -- PromptSplit guidance (eq. 5) of the final checkpoint toward real images of
  one family on another family's prompts (the light-bag prompts toward real dark bags: the swap the planted
  second generator was fine-tuned on, made by guidance instead), with control families (light sandals,
  light pullovers) whose reference is the model's own samples; the per-family distance to a second,
  disjoint reference before and after, the measured attribute, and how much the controls moved
  (:mod:`promptprism.models.fashion_text_guidance`);
* :func:`text_regions_section` -- disentangled CMS per pixel region (Algorithm 1 of the disentangled mean
  embeddings paper; regions from the CKA of real training images' pixels) of the packaged checkpoints
  (final and the planted second), on the planted family's prompts against real images of that family, and
  on a control family's.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..io import atomic_write_text
from .fashion import DemoContext, DemoSection, with_interval
from .fashion_text import QUALITY_CFG, SECOND, TextSizes, _checkpoint, _sizes, text_samples
from .guidance import per_prompt_distance

GUIDED = ("bag", "brightness", "light")  #: the guided family's prompts
TARGET = ("bag", "brightness", "dark")  #: the family whose real images are the guided family's reference
CONTROLS = (("sandal", "brightness", "light"), ("pullover", "brightness", "light"))


def _family_name(family: tuple[str, str, str]) -> str:
    return f"{family[2]} {family[0]}"


def guidance_run(ctx: DemoContext, sizes: TextSizes) -> dict:
    """The numbers of :func:`text_guidance_section` (one dict, as written to text-guidance.json)."""
    from ..datasets import fashion_mnist
    from ..guidance import sample_seeds
    from ..kernels import median_pairwise_distance
    from ..models import fashion_text_guidance as tg
    from ..models.fashion_text import sample_text_images

    ckpt, n, steps = _checkpoint(ctx, "final"), sizes.guide_per_family, _sizes(ctx).steps
    families = [GUIDED, *CONTROLS]
    prompts = [p for f in families for p in tg.family_cycle(f, n)]
    fam = np.repeat(np.arange(len(families)), n)
    x, y = fashion_mnist("test")
    real_guide, real_eval = tg.real_family_images(x, y, ckpt.thresholds, TARGET, n, ctx.seed)
    seeds = sample_seeds(ctx.seed, len(prompts))
    before = sample_text_images(ckpt, prompts, seeds, guidance_scale=QUALITY_CFG, steps=steps)
    # the controls' guidance reference: their own unguided samples (eq. 5 has nothing to change there);
    # their evaluation reference: samples of other seeds
    own = sample_text_images(ckpt, prompts[n:], sample_seeds(ctx.seed + 1000, len(prompts) - n),
                             guidance_scale=QUALITY_CFG, steps=steps)
    guide_ref, eval_ref = np.concatenate([real_guide, before[n:]]), np.concatenate([real_eval, own])
    sigma = max(median_pairwise_distance(tg.pixel_rows(eval_ref), seed=ctx.seed),
                0.5 * float(np.sqrt(eval_ref[0].size)))
    guide = tg.family_guidance(guide_ref, fam, fam, len(families), scale=sizes.guide_scale, seed=ctx.seed)
    after = sample_text_images(ckpt, prompts, seeds, guidance_scale=QUALITY_CFG, steps=steps, guidance=guide)
    per = [per_prompt_distance(tg.pixel_rows(s), fam, tg.pixel_rows(eval_ref), fam, sigma)
           for s in (before, after)]  # each family's samples against its reference rows (eq. 3)
    d0, d1 = ([p[f] for f in range(len(families))] for p in per)
    moved = [float(np.abs(after[fam == f].astype(float) - before[fam == f]).mean())
             for f in range(len(families))]
    shares = [tg.attribute_share(s[fam == 0], GUIDED, ckpt.thresholds, TARGET[2]) for s in (before, after)]
    ctx.cache["text-guidance-images"] = (before, after, n)
    return {"families": [_family_name(f) for f in families], "guided": _family_name(GUIDED),
            "reference": f"real {_family_name(TARGET)} images", "distance_before": d0, "distance_after": d1,
            "pixel_change": moved, "target_share_before": shares[0], "target_share_after": shares[1],
            "scale": sizes.guide_scale, "per_family": n, "steps": steps, "cfg": QUALITY_CFG,
            "sigma_output": sigma, "seed": ctx.seed}


def text_guidance_section(ctx: DemoContext) -> DemoSection:
    """Eq. 5 guidance of the text generator toward real images of one family, with control families."""
    from ..io import atomic_write_bytes
    from .fashion import grid_png

    data = guidance_run(ctx, _sizes(ctx))
    out = ctx.out / "text-guidance"
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "result.json", json.dumps(data, indent=2) + "\n")
    before, after, n = ctx.cache["text-guidance-images"]
    shown = min(6, n)
    atomic_write_bytes(out / "samples.png", grid_png([before, after], n, shown, n_rows=len(data["families"]),
                                                     gap=128))
    rows = [[f"{name}{' (guided)' if k == 0 else ' (control)'}", f"{b:.4f}", f"{a:.4f}",
             f"{(a - b) / b:+.0%}" if b > 0 else "n/a", f"{m:.1f}"]
            for k, (name, b, a, m) in enumerate(zip(data["families"], data["distance_before"],
                                                    data["distance_after"], data["pixel_change"],
                                                    strict=True))]
    text = (f"PromptSplit guidance (paper, eq. 5) of the final text checkpoint, scale {data['scale']:g}, on "
            f"pixels with one-hot family prompts: the {data['guided']} prompts are guided toward "
            f"{data['reference']} (the planted swap, by guidance instead of fine-tuning); the control "
            f"families' reference is their own unguided samples. {data['per_family']} samples per family, "
            f"the same seeds before and after; distance: PromptSplit distance of each family's samples to a "
            f"second, disjoint reference. Share of the guided samples measured {TARGET[2]}: "
            f"{data['target_share_before']:.2f} before, {data['target_share_after']:.2f} after.")
    figures = [["text-guidance/samples.png", f"Unguided (left) and guided (right) samples, the same seeds; "
                                             f"rows: {', '.join(data['families'])}."]]
    return DemoSection("Text generator: guidance toward one family (PromptSplit guidance, eq. 5)", text,
                       ["family", "distance before", "after", "change", "mean pixel change (0-255)"], rows,
                       None, figures)  # its folder holds result.json and the samples, no method report


def _family_sets(ctx: DemoContext, family: tuple[str, str, str], n: int) -> tuple[list[np.ndarray], Any]:
    """Samples of ``family``'s prompts from final and the second checkpoint (the same seeds), and the
    real test images of the family that each prompt names (the reference)."""
    from ..datasets import fashion_mnist
    from ..models import fashion_text_guidance as tg

    prompts = tg.family_cycle(family, n)
    sets = [text_samples(ctx, name, prompts, QUALITY_CFG, f"regions-{'-'.join(family)}")
            for name in ("final", SECOND)]
    x, y = fashion_mnist("test")
    real, _ = tg.real_family_images(x, y, _checkpoint(ctx, "final").thresholds, family, n, ctx.seed)
    return sets, real


def text_regions_section(ctx: DemoContext) -> DemoSection | None:
    """Disentangled CMS per pixel region of the packaged text checkpoints, on the planted family and a
    control family, each against real images of that family."""
    from ..datasets import fashion_mnist
    from ..methods.regions import RegionCMS
    from ..models.fashion_text import packaged_names

    if ctx.options.get("text_weights") is None and SECOND not in packaged_names():
        return None
    sizes = _sizes(ctx)
    xt, _ = fashion_mnist("train")
    fit = np.random.default_rng([ctx.seed, 45]).permutation(len(xt))[:sizes.regions_real]
    est = RegionCMS(seed=ctx.seed, bootstrap=sizes.regions_bootstrap, max_regions=6)
    fitted = est.fit(xt[fit] / 255.0)
    names = ["final", SECOND]
    rows, found = [], {}
    for family, folder in ((TARGET, "text-regions"), (CONTROLS[0], None)):
        sets, real = _family_sets(ctx, family, sizes.regions_per_family)
        result = fitted.compare([s / 255.0 for s in sets], names, reference=real / 255.0)
        if folder is not None:
            ctx.save(result, ctx.out / folder, report=ctx.report, quiet=True)
        found[_family_name(family)] = {"cms": list(map(float, result.cms)),
                                       "region_cms": np.asarray(result.region_cms).tolist()}
        for k, name in enumerate(names):
            iv = result.intervals[k] if k < len(result.intervals) else {}
            rows.append([_family_name(family), name, with_interval(result.cms[k], iv.get("cms")),
                         *[f"{v:.3f}" for v in result.region_cms[k]]])
        sizes_px = result.region_sizes
    gap = np.abs(np.subtract(*found[_family_name(TARGET)]["region_cms"]))
    atomic_write_text(ctx.out / "text-regions.json", json.dumps(
        {"families": found, "region_sizes": list(map(int, sizes_px)), "checkpoints": names,
         "widest_gap_region": int(np.argmax(gap)), "seed": ctx.seed}, indent=2) + "\n")
    text = (f"Disentangled CMS (Algorithm 1) of the packaged text checkpoints per pixel region (regions from "
            f"the CKA of {fit.size} real training images' pixels), on the prompts of the planted family "
            f"({_family_name(TARGET)}: the second checkpoint was fine-tuned with dark and light swapped on "
            f"bags) and of a control family ({_family_name(CONTROLS[0])}), each against real test images "
            f"of that family; 1 = indistinguishable from real. The region where the checkpoints differ most "
            f"on the planted family: region {int(np.argmax(gap))}.")
    headers = ["family", "checkpoint", "CMS", *[f"region {r} ({s} px)" for r, s in enumerate(sizes_px)]]
    return DemoSection("Text generator: checkpoints region by region (disentangled CMS)", text, headers, rows,
                       "text-regions")
