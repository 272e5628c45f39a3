"""PromptSplit guidance on the Fashion-MNIST generator (PromptSplit paper, section 5.4): a results folder.

    python benchmarks/guidance_fashion.py --out DIR [--checkpoint CKPT] [--per-prompt 16]
        [--reference-per-class 40] [--steps 20] [--scales 0,100,200,400,800] [--rho 0.2] [--rho-scale 200]
        [--schedule constant] [--constant-prediction] [--seeds 0,1,2] [--reference model|real]

The experiment itself is the package's (``promptprism.demos.guidance``, also a section of
``promptprism demo --trained-generator``): the reference is the base model's own samples with a white frame on
trouser/sandal/bag (plain on T-shirt/sneaker/dress); samples are guided toward it on pixels and evaluated
on EfficientNet-Lite0 features against a second such reference (PromptSplit distance, significant modes and
their prompts, per-prompt distances, 5-NN accuracy, Frechet distance, Scendi). Writes DIR/result.json,
DIR/table.md and DIR/curve.png after every run (an interrupted sweep keeps what it measured) and prints
the rows, the wall and CPU time and the load average.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from promptprism.demos.guidance import SweepOptions, sweep, table_rows, write_results
    from promptprism.models.fashion import load_checkpoint, packaged_checkpoint

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=None, help="default: the packaged final checkpoint")
    ap.add_argument("--out", required=True)
    ap.add_argument("--per-prompt", type=int, default=16)
    ap.add_argument("--reference-per-class", type=int, default=40)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--scales", default="0,100,200,400,800")
    ap.add_argument("--rho", type=float, default=0.2)
    ap.add_argument("--rho-scale", type=float, default=200.0)
    ap.add_argument("--schedule", default="constant")
    ap.add_argument("--constant-prediction", action="store_true",
                    help="the curve with the noise prediction held constant in the gradient (one row at "
                         "--rho-scale with the gradient through the UNet)")
    ap.add_argument("--no-compare", action="store_true", help="no row with the other gradient")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--permutations", type=int, default=200)
    ap.add_argument("--reference", choices=("model", "real"), default="model")
    a = ap.parse_args(argv)
    options = SweepOptions(scales=tuple(float(v) for v in a.scales.split(",")), rho=a.rho,
                           rho_scale=a.rho_scale, per_prompt=a.per_prompt,
                           reference_per_class=a.reference_per_class, steps=a.steps, schedule=a.schedule,
                           through_model=not a.constant_prediction, compare_gradient=not a.no_compare,
                           seeds=tuple(int(v) for v in a.seeds.split(",")), permutations=a.permutations,
                           reference=a.reference)
    out = Path(a.out)
    t0, c0 = time.perf_counter(), time.process_time()
    checkpoint = load_checkpoint(a.checkpoint or packaged_checkpoint())

    def report(rows: list[dict], _images) -> None:
        write_results(out, rows, options)
        print(" | ".join(table_rows(rows[-1:])[0]), f"| {time.perf_counter() - t0:.0f} s", flush=True)

    sweep(checkpoint, options, on_row=report)
    print(f"{time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU, load average "
          f"{os.getloadavg()[0]:.1f} (2-core AMD EPYC)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
