"""Quality of the text-conditioned Fashion generator (28 px, MiniLM prompts).

    python benchmarks/generator_text_quality.py [--checkpoint final] [--samples 550] [--steps 20] [--cfg 2]
                                                [--real 1000] [--train 10000] [--no-fd]

Samples one image per caption prompt (``experiment_prompts(550)``, cycled to ``--samples``), then prints:
the class accuracy of a pixel logistic regression fitted on ``--train`` real training images, on the samples
(label = the prompt's class) and on the real test images; the Frechet distance on EfficientNet-Lite0
features (1280-d, L2-normalised) of the samples to ``--real`` real test images beside the distance between
two halves of those; the attribute accuracy per attribute and per rare / common cell.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    import torch

    from promptprism.datasets import fashion_mnist
    from promptprism.methods.metrics.frechet import frechet_distance
    from promptprism.models.fashion_captions import parse_prompt
    from promptprism.models.fashion_text import experiment_prompts, generate, load_checkpoint
    from promptprism.models.fashion_text_quality import (
        attribute_accuracy,
        class_accuracy,
        fit_pixel_classifier,
    )

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default="final")
    ap.add_argument("--samples", type=int, default=550)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--cfg", type=float, default=2.0)
    ap.add_argument("--real", type=int, default=1000)
    ap.add_argument("--train", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-fd", action="store_true", help="skip the EfficientNet-Lite0 Frechet distance")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0, c0 = time.perf_counter(), time.process_time()
    ckpt = load_checkpoint(args.checkpoint)
    pool = experiment_prompts(550, args.seed)
    prompts = [pool[i % len(pool)] for i in range(args.samples)]
    images = generate(prompts, seed=args.seed, guidance_scale=args.cfg, steps=args.steps, checkpoint=ckpt)
    t_gen = time.perf_counter() - t0
    labels = np.array([parse_prompt(p)[0] for p in prompts])
    rng = np.random.default_rng(args.seed)
    xr, yr = fashion_mnist("train")
    xt, yt = fashion_mnist("test")
    ir, it = rng.permutation(yr.size)[: args.train], rng.permutation(yt.size)[: args.real]
    clf = fit_pixel_classifier(xr[ir], yr[ir], seed=args.seed)
    acc_real, acc_gen = class_accuracy(clf, xt[it], yt[it]), class_accuracy(clf, images, labels)
    print(f"checkpoint {args.checkpoint} ({ckpt.meta.get('steps')} steps); {len(prompts)} samples, CFG "
          f"{args.cfg}, {args.steps} DDIM steps ({t_gen:.0f} s); load average {os.getloadavg()[0]:.1f}")
    print(f"class accuracy (pixel logistic regression on {args.train} real training images): samples "
          f"{acc_gen:.3f}, real test {acc_real:.3f}, ratio {acc_gen / acc_real:.2f} (target >= 0.90)")
    if not args.no_fd:
        from promptprism.embed.efficientnet import EfficientNetLite0Encoder

        enc = EfficientNetLite0Encoder()

        def embed(ims: np.ndarray) -> np.ndarray:
            return enc.encode_images([np.repeat(im[..., None], 3, axis=2) for im in ims])

        f_gen, f_test = embed(images), embed(xt[it])
        half = len(f_test) // 2
        fd, fd_real = frechet_distance(f_gen, f_test), frechet_distance(f_test[:half], f_test[half:])
        print(f"Frechet distance (EfficientNet-Lite0) to {args.real} real test images: {fd:.4f}; two halves "
              f"of them: {fd_real:.4f}; ratio {fd / fd_real:.2f} (target <= 3)")
    for key, (acc, n) in attribute_accuracy(images, prompts, ckpt.thresholds).items():
        print(f"attribute accuracy {key:>10}: {acc:.3f} over {n} prompt words (chance 0.5)")
    print(f"{time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU")


if __name__ == "__main__":
    main()
