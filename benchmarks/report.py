"""Time to render a PromptSplit report (page + figures + map), at 120 and 12,000 samples per set.

    python benchmarks/report.py [--sizes 120 12000] [--repeat 1]

Data: a synthetic comparison with 60 prompts (16-d prompt embeddings) and 384-d outputs in which the test
model over-produces two output clusters; the result comes from ``PromptSplit(method='exact')`` at 120 and
``method='rff'`` (r = 1000) above, without the permutation test. Only the report is timed (the PromptSplit
page with the inputs, as the CLI renders it; thumbnails are text cards; matplotlib and scikit-learn are
imported during the first size's run, so its first repeat includes their import); the fit is not. Per step:
the time from each step's start to the next (the step names are the progress messages). Prints the
machine's load average too: the machine may be shared, so read the wall times with it (CPU time is less
sensitive to load).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from promptprism import PairedSet, PromptSplit
from promptprism.report.promptsplit import render_promptsplit


def make_sets(n: int, seed: int = 0) -> tuple[PairedSet, PairedSet]:
    """Test and reference sets of ``n`` samples each (60 prompts; test over-produces two clusters)."""
    rng = np.random.default_rng(seed)
    n_prompts, d_t, d_z = 60, 16, 384
    prompt_vecs = rng.standard_normal((n_prompts, d_t))
    centres = rng.standard_normal((8, d_z)) * 2.0
    sets = []
    for side in ("test", "reference"):
        lab = rng.integers(0, n_prompts, n)
        probs = np.full(8, 1 / 8) if side == "reference" else np.r_[[0.3, 0.3], np.full(6, 0.4 / 6)]
        cl = rng.choice(8, size=n, p=probs)
        z = centres[cl] + rng.standard_normal((n, d_z))
        sets.append(PairedSet(prompt_vecs[lab] + 0.05 * rng.standard_normal((n, d_t)), z,
                              prompts=[f"prompt {i}" for i in lab],
                              outputs=[f"an output of cluster {c}, sample {i}" for i, c in enumerate(cl)],
                              name=side))
    return sets[0], sets[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[120, 12_000])
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for n in args.sizes:
        test, ref = make_sets(n)
        method = "exact" if 2 * n <= 5000 else "rff"
        t0 = time.perf_counter()
        # the permutation test is off: it changes the fit's time, not the report's (the page only draws
        # the null band and the p-values it records)
        est = PromptSplit(seed=0, n_modes=10, method=method, n_features=1000, permutations=0)
        result = est.fit(test, ref)
        fit_s = time.perf_counter() - t0
        best = None
        for _ in range(args.repeat):
            marks: list[tuple[str, float]] = []

            def step(name: str, marks: list = marks) -> None:
                marks.append((name, time.perf_counter()))

            t0, c0 = time.perf_counter(), time.process_time()
            page = render_promptsplit(result, inputs={"test": test, "reference": ref}, step=step)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            if best is None or wall < best[0]:
                names = ["start", *(m[0] for m in marks)]
                stamps = [t0, *(m[1] for m in marks), t0 + wall]
                spans = zip(names, stamps, stamps[1:], strict=False)
                steps = ", ".join(f"{a.removeprefix('report: ').removeprefix('map: ')} {b - a_t:.2f}"
                                  for a, a_t, b in spans)
                best = (wall, cpu, steps, len(page))
        wall, cpu, steps, size = best
        print(f"n = m = {n:>6,}: report {wall:6.2f} s wall, {cpu:5.2f} s CPU (best of {args.repeat}; page "
              f"{size / 1e6:.2f} MB) · fit ({method}) {fit_s:.2f} s · load {os.getloadavg()[0]:.1f}")
        print(f"    steps (s): {steps}")


if __name__ == "__main__":
    main()
