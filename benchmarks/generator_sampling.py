"""Images/s of ``promptprism generate`` with the Fashion generator: batched calls vs one image per call.

    python benchmarks/generator_sampling.py [--weights DIR] [--images 64] [--steps 20] [--batch-size 64]

Both runs go through :func:`promptprism.generate.generate_images` into a fresh manifest, with the same
checkpoint, seeds and DDIM steps (CFG 2, so two UNet passes per step); the only difference is that the
one-by-one generator is the plain callable ``fn(prompt, seed=)`` wrapping a batch of one. CPU time and the
load average are printed beside the wall times: on a shared machine wall time depends on the load.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def _timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def main() -> None:
    from promptprism.generate import generate_images
    from promptprism.models.fashion import class_prompts, fashion_generator

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default=None, help="a checkpoint folder (default: the packaged final one)")
    ap.add_argument("--images", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    batched = fashion_generator(args.weights, steps=args.steps, batch_size=args.batch_size)

    def one_by_one(prompt: str, seed: int = 0):
        return batched([prompt], [seed])[0]

    with tempfile.TemporaryDirectory() as tmp:
        prompts = Path(tmp) / "prompts.txt"
        prompts.write_text("\n".join(class_prompts()) + "\n")
        samples = max(1, args.images // 10)
        n = 10 * samples
        rows = []
        for name, gen in (("batched", batched), ("one by one", one_by_one)):
            wall, cpu = _timed(lambda gen=gen, name=name: generate_images(
                prompts, out=Path(tmp) / f"{name.replace(' ', '_')}.jsonl", generator=gen, samples=samples,
                steps=args.steps, progress=False))
            rows.append((name, wall, cpu))
    load = os.getloadavg()
    print(f"{n} images of 16 px, {args.steps} DDIM steps, CFG 2, batch {args.batch_size}; load average "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    for name, wall, cpu in rows:
        print(f"{name:>11}: {n / wall:7.2f} images/s wall ({wall:.1f} s), {n / cpu:7.2f} images per CPU-s")
    print(f"batched / one by one: {rows[1][1] / rows[0][1]:.2f}x wall, {rows[1][2] / rows[0][2]:.2f}x CPU")


if __name__ == "__main__":
    main()
