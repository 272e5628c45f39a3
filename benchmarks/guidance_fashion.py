"""PromptSplit guidance on the Fashion-MNIST generator (PromptSplit paper, section 5.4): a results folder.

    python benchmarks/guidance_fashion.py --checkpoint CKPT --out DIR [--per-prompt 32] [--steps 25]
        [--base-scale 2] [--scales 0,0.5,1,2,4] [--rho 1] [--seed 0]

The reference (what the base model never makes): real Fashion-MNIST test images of three *guided* classes
(trouser, sandal, bag) with a white 2-pixel frame, and plain real images of three *control* classes
(T-shirt, sneaker, dress). The model was trained on unframed images, so before guidance PromptSplit should
find significant modes on the guided prompts only; guidance toward the reference (pixels as the guidance
encoder, one-hot class prompts) should make them vanish without creating modes on the controls and without
destroying the objects (the frame leaves the garment in the middle, so a classifier of real images still
recognises it: quality stays measurable on the guided prompts too).

Everything is evaluated in a space the guidance never saw, EfficientNet-Lite0 features (64 px), against
reference images disjoint from the guidance's: PromptSplit distance, significant modes (permutation test)
and the prompts they sit on, a per-prompt kernel distance to the reference (guided vs control prompts),
k-NN classifier accuracy (real training images as neighbours) and the Frechet distance to the real test
images of the same classes, Scendi diversity with rho = 0 and rho > 0; and the guidance overhead per step.
Writes DIR/result.json, DIR/table.md and DIR/curve.png (the distances over the guidance scale).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

GUIDED = ("trouser", "sandal", "bag")
CONTROL = ("T-shirt", "sneaker", "dress")
FRAME = 2


def framed(images: np.ndarray, width: int = FRAME) -> np.ndarray:
    """uint8 images (n, s, s) with a white ``width``-pixel frame (the style the base model never makes)."""
    out = images.copy()
    out[:, :width, :] = out[:, -width:, :] = 255
    out[:, :, :width] = out[:, :, -width:] = 255
    return out


def reference_sets(image_size: int, per_class: int, seed: int, guided=GUIDED, control=CONTROL):
    """Two disjoint reference sets (guidance, evaluation): uint8 images and class indices, framed on the
    guided classes."""
    from promptprism.generators.fashion import CLASS_NAMES, real_images

    x, y = real_images("test", image_size)
    rng = np.random.default_rng(seed)
    sets = ([], []), ([], [])
    for name in (*guided, *control):
        c = CLASS_NAMES.index(name)
        idx = rng.permutation(np.flatnonzero(y == c))[: 2 * per_class]
        for half, (imgs, labs) in zip((idx[:per_class], idx[per_class:]), sets, strict=True):
            imgs.append(framed(x[half]) if name in guided else x[half])
            labs.append(np.full(len(half), c))
    return [(np.concatenate(i), np.concatenate(lab)) for i, lab in sets]


def model_reference_sets(ckpt, per_class: int, seed: int, steps: int, guided=GUIDED, control=CONTROL):
    """Two disjoint reference sets (guidance, evaluation) made by the base model itself (its own samples,
    seeds disjoint from the evaluated generations'), framed on the guided classes: the reference then
    differs from the unguided model *only* by the frame on the guided prompts, whatever the model's
    quality."""
    from promptprism.generators.fashion import CLASS_NAMES, sample_images
    from promptprism.guidance import sample_seeds

    classes = np.repeat([CLASS_NAMES.index(n) for n in (*guided, *control)], per_class)
    out = []
    for k in (1, 2):
        imgs = sample_images(ckpt, classes, sample_seeds(seed + 1000 * k, len(classes)), guidance_scale=2.0,
                             steps=steps, batch_size=96)
        is_guided = np.isin(classes, [CLASS_NAMES.index(n) for n in guided])
        imgs[is_guided] = framed(imgs[is_guided])
        out.append((imgs, classes))
    return out


def to_pixels(images: np.ndarray) -> np.ndarray:
    """uint8 (n, s, s) -> float rows in [-1, 1] (n, s * s): the guidance's embedding (pixels)."""
    return images.reshape(len(images), -1).astype(np.float64) / 127.5 - 1.0


def guided_samples(ckpt, classes: np.ndarray, *, reference, scale: float, rho: float, steps: int,
                   seed: int, cfg: float = 2.0, batch_size: int = 96, sigma_prompt: float = 0.5,
                   through_model: bool = True):
    """uint8 samples of ``classes`` guided toward ``reference`` (images, classes) with pixel embeddings;
    also the seconds taken."""
    from promptprism.generators.fashion import NULL_CLASS, sample_images
    from promptprism.guidance import PromptSplitGuidance, sample_seeds

    ref_imgs, ref_cls = reference
    onehot = np.eye(NULL_CLASS)
    guidance = None
    if scale > 0 or rho > 0:
        guidance = PromptSplitGuidance(to_pixels(ref_imgs), onehot[ref_cls], onehot[classes], scale=scale,
                                       rho=rho, sigma_prompt=sigma_prompt, seed=seed,
                                       through_model=through_model)
    t0 = time.perf_counter()
    images = sample_images(ckpt, classes, sample_seeds(seed, len(classes)), guidance_scale=cfg, steps=steps,
                           batch_size=batch_size, guidance=guidance)
    return images, time.perf_counter() - t0


def per_prompt_distance(gen: np.ndarray, gen_cls: np.ndarray, ref: np.ndarray, ref_cls: np.ndarray,
                        sigma: float) -> dict[int, float]:
    """PromptSplit distance of each prompt's samples alone to that prompt's reference rows (with one prompt
    it is ||C_gen - C_ref||_F^2 of the output kernel)."""
    import torch

    from promptprism.guidance import promptsplit_distance

    out = {}
    for c in np.unique(ref_cls):
        a, b = torch.tensor(gen[gen_cls == c]), torch.tensor(ref[ref_cls == c])
        one_a, one_b = torch.ones((len(a), 1), dtype=a.dtype), torch.ones((len(b), 1), dtype=b.dtype)
        out[int(c)] = promptsplit_distance(a, one_a, b, one_b, sigma_output=sigma, sigma_prompt=1.0).item()
    return out


def evaluate(gen_feats, gen_cls, ref_feats, ref_cls, *, seed: int, permutations: int = 200) -> dict:
    """PromptSplit of the generations against the evaluation reference: distance, significant modes and the
    prompts they sit on; per-prompt distances."""
    from promptprism import PromptSplit
    from promptprism.data.paired import PairedSet
    from promptprism.generators.fashion import CLASS_NAMES
    from promptprism.kernels import median_pairwise_distance

    onehot = np.eye(len(CLASS_NAMES))
    names = np.array(CLASS_NAMES)
    res = PromptSplit(kernel="gaussian", method="exact", sigma_prompt=0.5, sigma_output="median",
                      permutations=permutations, seed=seed, n_modes=6).fit(
        PairedSet(onehot[gen_cls], gen_feats, prompts=list(names[gen_cls]), name="generated"),
        PairedSet(onehot[ref_cls], ref_feats, prompts=list(names[ref_cls]), name="reference"))
    modes = [{"side": m.side, "rank": m.rank, "eigenvalue": m.eigenvalue, "p_value": m.p_value,
              "prompt": m.top_prompts[0].prompt if m.top_prompts else None}
             for m in res.modes if m.significant]
    sigma = median_pairwise_distance(np.concatenate([gen_feats, ref_feats]), seed=seed)
    per = per_prompt_distance(gen_feats, gen_cls, ref_feats, ref_cls, sigma)
    return {"distance": res.distance, "significant_modes": modes, "per_prompt": {CLASS_NAMES[c]: v
                                                                                   for c, v in per.items()}}


def quality(gen_feats, gen_cls, real_feats, real_cls, train_feats, train_cls, k: int = 5) -> dict:
    """k-NN accuracy (neighbours: real training images) per prompt and the Frechet distance to the real
    test images of the same classes."""
    from promptprism.methods.metrics.frechet import frechet_distance

    sims = gen_feats @ train_feats.T  # unit rows: cosine similarity
    nn = np.argpartition(-sims, k, axis=1)[:, :k]
    votes = np.array([np.bincount(train_cls[row], minlength=10).argmax() for row in nn])
    acc = {int(c): float(np.mean(votes[gen_cls == c] == c)) for c in np.unique(gen_cls)}
    return {"accuracy": acc, "frechet": frechet_distance(gen_feats, real_feats)}


def diversity(gen_feats, gen_cls, seed: int) -> dict:
    """Scendi of the generations (model-driven diversity exp(Scendi_I)) and Vendi."""
    from promptprism import Scendi
    from promptprism.data.paired import PairedSet

    r = Scendi(seed=seed).fit(PairedSet(np.eye(10)[gen_cls], gen_feats, name="generated"))
    return {"scendi": r.scendi, "vendi": r.vendi}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--per-prompt", type=int, default=32)
    ap.add_argument("--reference-per-class", type=int, default=100)
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--base-scale", type=float, default=2.0)
    ap.add_argument("--scales", default="0,0.5,1,2,4")
    ap.add_argument("--rho", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--constant-prediction", action="store_true",
                    help="the curve with through_model=False (the noise prediction as a constant in the "
                         "gradient); one row at the base scale with the gradient through the model")
    ap.add_argument("--reference", choices=("model", "real"), default="model",
                    help="the reference: the base model's own samples (default) or real test images, framed "
                         "on the guided classes")
    a = ap.parse_args(argv)

    from promptprism.embed.efficientnet import EfficientNetLite0Encoder
    from promptprism.generators.fashion import CLASS_NAMES, load_checkpoint, real_images

    ckpt = load_checkpoint(a.checkpoint)
    size = ckpt.image_size
    guide_ref, eval_ref = (reference_sets(size, a.reference_per_class, a.seed) if a.reference == "real" else
                           model_reference_sets(ckpt, a.reference_per_class, a.seed, a.steps))
    prompts = np.array([CLASS_NAMES.index(n) for n in (*GUIDED, *CONTROL)])
    classes = np.repeat(prompts, a.per_prompt)
    enc = EfficientNetLite0Encoder(size=64)
    embed = enc.encode_images
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    real_x, real_y = real_images("test", size)
    keep = np.isin(real_y, prompts)
    real_feats, real_cls = embed(list(real_x[keep][::8])), real_y[keep][::8]
    train_x, train_y = real_images("train", size)
    pick = np.random.default_rng(a.seed).permutation(len(train_y))[:1000]
    train_feats, train_cls = embed(list(train_x[pick])), train_y[pick]
    eval_feats = embed(list(eval_ref[0]))
    curve = not a.constant_prediction  # the curve's gradient; one row at the base scale with the other
    runs = [(s, 0.0, curve) for s in (float(v) for v in a.scales.split(","))]
    runs += [(1.0, a.rho, curve), (1.0, 0.0, not curve)]
    rows = []
    for mult, rho, through in runs:
        imgs, secs = guided_samples(ckpt, classes, reference=guide_ref, scale=mult * a.base_scale, rho=rho,
                                    steps=a.steps, seed=a.seed, through_model=through)
        feats = embed(list(imgs))
        row = {"scale_multiple": mult, "scale": mult * a.base_scale, "rho": rho, "through_model": through,
               "seconds": secs,
               "seconds_per_step": secs / a.steps, **evaluate(feats, classes, eval_feats, eval_ref[1],
                                                               seed=a.seed),
               **quality(feats, classes, real_feats, real_cls, train_feats, train_cls),
               **diversity(feats, classes, a.seed)}
        row["accuracy"] = {CLASS_NAMES[c]: v for c, v in row["accuracy"].items()}
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "significant_modes"}), flush=True)
        np.save(out / f"samples_scale{mult:g}_rho{rho:g}{'' if through else '_const'}.npy", imgs)
        write_results(out, sorted(rows, key=lambda r: (r["through_model"] != curve, r["rho"], r["scale"])),
                      vars(a))  # after every run: an interrupted sweep keeps what it measured
    return 0


def write_results(out: Path, rows: list[dict], config: dict) -> None:
    """result.json, table.md and curve.png."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps({"config": config, "seed": config["seed"], "rows": rows},
                                                indent=2) + "\n")
    lines = ["| scale | rho | grad through model | PromptSplit distance | significant modes (prompt) | "
             "per-prompt distance guided / control | k-NN acc. guided / control | Frechet | Scendi | Vendi | "
             "s/step |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        g = np.mean([r["per_prompt"][n] for n in GUIDED])
        c = np.mean([r["per_prompt"][n] for n in CONTROL])
        ag = np.mean([r["accuracy"][n] for n in GUIDED])
        ac = np.mean([r["accuracy"][n] for n in CONTROL])
        sig = r["significant_modes"]
        modes = ", ".join(f"{m['side'][0]}{m['rank']} {m['prompt']}" for m in sig) or "none"
        lines.append(f"| {r['scale']:g} | {r['rho']:g} | {r['through_model']} | {r['distance']:.4f} | "
                     f"{len(sig)}: {modes} |"
                     f" {g:.4f} / {c:.4f} | {ag:.2f} / {ac:.2f} | {r['frechet']:.3f} | "
                     f"{r['scendi']:.2f} | {r['vendi']:.2f} | {r['seconds_per_step']:.2f} |")
    (out / "table.md").write_text("\n".join(lines) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    through = not config.get("constant_prediction", False)
    curve = [r for r in rows if r["rho"] == 0 and r["through_model"] == through]
    s = [r["scale"] for r in curve]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for names, label in ((GUIDED, "guided prompts"), (CONTROL, "control prompts")):
        ax.plot(s, [np.mean([r["per_prompt"][n] for n in names]) for r in curve], "o-", label=label)
    ax.plot(s, [r["distance"] for r in curve], "k--", label="PromptSplit distance (all)")
    ax.set_xlabel("guidance scale")
    ax.set_ylabel("distance to the reference")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "curve.png", dpi=120)


if __name__ == "__main__":
    sys.exit(main())
