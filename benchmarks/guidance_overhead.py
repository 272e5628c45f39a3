"""Seconds per denoising step of the shared sampler, unguided vs PromptSplit-guided, on one batch.

    python benchmarks/guidance_overhead.py --checkpoint CKPT [--batch 96] [--steps 5] [--repeats 3]

Rows: unguided (CFG 2); guided over pixels with the gradient through the UNet (the exact eq. 5 gradient)
and with the noise prediction held constant; guided over EfficientNet-Lite0 features (64 px, torch). The
reference is 240 real Fashion-MNIST test images. Times are process CPU seconds and wall seconds (the
median of ``--repeats``); the machine's load is printed beside them.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--batch", type=int, default=96)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)

    import torch

    from promptprism.embed.efficientnet import EfficientNetLite0Encoder
    from promptprism.guidance import PromptSplitGuidance, sample, sample_seeds
    from promptprism.models.fashion import NULL_CLASS, load_checkpoint, real_images

    ckpt = load_checkpoint(a.checkpoint)
    x, y = real_images("test", ckpt.image_size)
    ref = x[:240].reshape(240, -1) / 127.5 - 1.0
    classes = np.arange(a.batch) % 10
    onehot = np.eye(NULL_CLASS)
    effnet = EfficientNetLite0Encoder(size=64).torch_encoder()
    with torch.no_grad():
        ref_eff = effnet(torch.tensor(ref, dtype=torch.float32).reshape(240, 1, *x.shape[1:])).numpy()
    kw = dict(sigma_prompt=0.5, scale=100.0)
    setups = {
        "unguided": None,
        "pixels, gradient through the UNet": PromptSplitGuidance(ref, onehot[y[:240]], onehot[classes], **kw),
        "pixels, prediction held constant": PromptSplitGuidance(ref, onehot[y[:240]], onehot[classes],
                                                                through_model=False, **kw),
        "EfficientNet-Lite0 64 px, through the UNet": PromptSplitGuidance(
            ref_eff, onehot[y[:240]], onehot[classes], encoder=effnet, **kw),
    }
    print(f"batch {a.batch}, {a.steps} DDIM steps, CFG 2, torch threads {torch.get_num_threads()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    base = None
    for name, guide in setups.items():
        cpu, wall = [], []
        for _ in range(a.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            with torch.no_grad() if guide is None else torch.enable_grad():
                sample(ckpt.unet, ckpt.scheduler, classes, null_condition=NULL_CLASS, guidance_scale=2.0,
                       steps=a.steps, seeds=sample_seeds(0, a.batch), batch_size=a.batch, guidance=guide)
            wall.append((time.perf_counter() - t0) / a.steps)
            cpu.append((time.process_time() - c0) / a.steps)
        c = float(np.median(cpu))
        base = base or c
        print(f"{name:45s} {c:.3f} CPU s/step ({c / base:.1f}x unguided), {np.median(wall):.3f} wall s/step")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
