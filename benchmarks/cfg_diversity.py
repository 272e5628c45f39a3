"""Scendi over the classifier-free guidance scale on the packaged Fashion generator, on EfficientNet-Lite0
features and with more samples than the demo (which uses pixels, 40 per prompt).

    python benchmarks/cfg_diversity.py [--per-prompt 100] [--scales 1,2,4,8] [--seeds 0,1] [--steps 20]

For each seed and CFG scale: samples of the final packaged checkpoint (10 class prompts, ``--per-prompt``
each, the same seeds at every scale), embedded by EfficientNet-Lite0 at 64 px; Scendi's model-driven
diversity, the prompt-driven part and Vendi with their intervals (Scendi's defaults: cosine kernel,
one-hot prompts). Prints one line per set, the wall and CPU time and the load average.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    from promptprism.data.paired import PairedSet
    from promptprism.embed.efficientnet import EfficientNetLite0Encoder
    from promptprism.guidance import sample_seeds
    from promptprism.methods.scendi import Scendi, compare
    from promptprism.models.fashion import load_checkpoint, packaged_checkpoint, sample_images

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-prompt", type=int, default=100)
    ap.add_argument("--scales", default="1,2,4,8")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    t0, c0 = time.perf_counter(), time.process_time()
    ckpt = load_checkpoint(packaged_checkpoint())
    enc = EfficientNetLite0Encoder(size=64)
    classes = np.repeat(np.arange(10), args.per_prompt)
    scales = [float(s) for s in args.scales.split(",")]

    def cell(m, key: str) -> str:
        iv = (m.intervals or {}).get(key)
        return f"{getattr(m, key):.3f}" + (f" [{iv['low']:.3f}, {iv['high']:.3f}]" if iv else "")

    for seed in (int(s) for s in args.seeds.split(",")):
        sets = []
        for scale in scales:
            images = sample_images(ckpt, classes, sample_seeds(seed, classes.size), guidance_scale=scale,
                                   steps=args.steps, batch_size=100)
            feats = enc.encode_images(list(images))
            sets.append(PairedSet(np.eye(10)[classes], feats, name=f"CFG {scale:g}"))
        result = compare(sets, Scendi(seed=seed, bootstrap=200))
        for scale, m in zip(scales, result.models, strict=True):
            print(f"seed {seed} | CFG {scale:g} | Scendi {cell(m, 'scendi')} | prompt-driven "
                  f"{cell(m, 'scendi_prompt')} | Vendi {cell(m, 'vendi')}", flush=True)
    print(f"{time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU, load average "
          f"{os.getloadavg()[0]:.1f} (2-core AMD EPYC)")


if __name__ == "__main__":
    main()
