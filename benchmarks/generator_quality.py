"""Quality of the packaged Fashion generator on EfficientNet-Lite0 features (beside the demo's pixel numbers).

    python benchmarks/generator_quality.py [--per-prompt 40] [--steps 20] [--real 2000] [--train 2000]

Samples the final packaged checkpoint (CFG 2, the demo's seeds), embeds them, ``--real`` real test images and
``--train`` real training images (all at the model's 16 px, upscaled by the encoder's own preprocessing)
with EfficientNet-Lite0 (1280-d, L2-normalised), and prints: the per-prompt accuracy of a 5-NN classifier
fitted on the training features, on the samples and on the real test images, and the Frechet distance of
the samples to the real test images (with two halves of the real test set for scale).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    from promptprism.embed.efficientnet import EfficientNetLite0Encoder
    from promptprism.guidance import sample_seeds
    from promptprism.methods.metrics.frechet import frechet_distance
    from promptprism.models.fashion import (
        CLASS_NAMES,
        load_checkpoint,
        packaged_checkpoint,
        real_images,
        sample_images,
    )
    from promptprism.models.quality import knn_accuracy

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-prompt", type=int, default=40)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--real", type=int, default=2000)
    ap.add_argument("--train", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0, c0 = time.perf_counter(), time.process_time()
    classes = np.repeat(np.arange(10), args.per_prompt)
    seeds = sample_seeds(args.seed, classes.size)
    gen = sample_images(load_checkpoint(packaged_checkpoint()), classes, seeds, guidance_scale=2.0,
                        steps=args.steps)
    rng = np.random.default_rng(args.seed)
    xt, yt = real_images("test", 16)
    xr, yr = real_images("train", 16)
    it, ir = rng.permutation(yt.size)[: args.real], rng.permutation(yr.size)[: args.train]
    enc = EfficientNetLite0Encoder()

    def embed(images: np.ndarray) -> np.ndarray:
        return enc.encode_images([np.repeat(im[..., None], 3, axis=2) for im in images])

    f_gen, f_test, f_train = embed(gen), embed(xt[it]), embed(xr[ir])
    acc_gen = knn_accuracy(f_gen, classes, f_train, yr[ir], k=5)
    acc_test = knn_accuracy(f_test, yt[it], f_train, yr[ir], k=5)
    half = len(f_test) // 2
    print(f"EfficientNet-Lite0 features, 5-NN on {args.train} real training images; {classes.size} samples "
          f"(CFG 2, {args.steps} DDIM steps), {args.real} real test images; load average "
          f"{os.getloadavg()[0]:.1f}")
    for c, name in enumerate(CLASS_NAMES):
        print(f"  {name:>10}: samples {acc_gen[c]:.2f}  real test {acc_test[c]:.2f}")
    print(f"  mean over prompts: samples {np.mean(list(acc_gen.values())):.3f}, "
          f"real test {np.mean(list(acc_test.values())):.3f}")
    fd, fd_real = frechet_distance(f_gen, f_test), frechet_distance(f_test[:half], f_test[half:])
    print(f"Frechet distance to the real test images: {fd:.4f} (two halves of the real test set: "
          f"{fd_real:.4f})")
    print(f"{time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU")


if __name__ == "__main__":
    main()
