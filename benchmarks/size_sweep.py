"""Each default command across input sizes, to catch a cliff: a size that takes longer than a larger one.

    python benchmarks/size_sweep.py                         # split, compare (3 sets), diversity
    python benchmarks/size_sweep.py --only split diversity  # a subset
    python benchmarks/size_sweep.py --sizes 500 1000 2000   # rows per set

A default's cost should grow with the input. Where a rule switches route with the size (dense or Lanczos
eigen-solves, the test's statistic uncompressed or in a principal subspace, bootstrap intervals on or off),
a size just below the switch can cost more than one well above it; three such cliffs were found this way
(`split --method exact` at n = m = 1,500: 6.6 s against 2.7 s at 2,500; `diversity` at 500 unique prompts:
74 s against 0.5 s at 1,000; `compare` of 3 x 2,000 rows: 30 s against 20 s at 3 x 4,000).

Each command runs as a whole command-line process with its defaults (report off) on the data of
``compare.py`` (384-d prompts and outputs, 20 prompt clusters, every prompt distinct; ``compare`` takes the
test set's prompts for all three sets, its outputs, and two perturbed copies of them). Prints per command and
size the wall seconds, the fit's timings from result.json, and ``cliff`` where a size took more than
``--ratio`` times the next larger size's seconds. Some cliffs are by design: ``method='auto'`` moves from the
exact route to random features above a size (cheaper, approximate), the two-way test keeps the whole
operand up to 1,000 rows (the uncompressed statistic), and ``diversity`` gives intervals by default only
while they are cheap.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from busy_machine import cpu_model  # noqa: E402
from compare import CLI, _installed_like, promptsplit_sets  # noqa: E402

SIZES = (250, 500, 1000, 1500, 2000, 3000, 4000, 6000)
COMMANDS = ("split", "compare", "diversity")


def write_sets(folder: Path, n: int) -> dict[str, Path]:
    """The .npz inputs of size ``n``: test, reference and two perturbed copies of the test's outputs."""
    t, x, t_ref, y = promptsplit_sets(n, 0)
    rng = np.random.default_rng(5)
    moved = x.copy()
    moved[: n // 5] = y[: n // 5]
    arrays = {"test": (t, x), "reference": (t_ref, y),
              "noisy": (t, x + 0.3 * rng.standard_normal(x.shape)),
              "moved": (t, moved + 0.3 * rng.standard_normal(x.shape))}
    paths = {}
    for name, (prompts, outputs) in arrays.items():
        paths[name] = folder / f"{name}-{n}.npz"
        np.savez(paths[name], prompt_embeddings=prompts.astype(np.float32),
                 output_embeddings=outputs.astype(np.float32))
    return paths


def command(which: str, paths: dict[str, Path], out: Path) -> list[str]:
    inputs = {"split": ["test", "reference"], "compare": ["test", "noisy", "moved"], "diversity": ["test"]}
    return [*CLI, which, *(str(paths[k]) for k in inputs[which]), "--out", str(out), "--no-report",
            "--quiet", "--seed", "0"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", choices=COMMANDS, default=list(COMMANDS))
    ap.add_argument("--sizes", nargs="+", type=int, default=list(SIZES), help="rows per set")
    ap.add_argument("--ratio", type=float, default=1.25, help="a size slower than this times the next "
                                                              "larger one is a cliff")
    args = ap.parse_args()
    sizes = sorted(set(args.sizes))
    import os

    print(f"# {cpu_model()}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = _installed_like(folder / "pycache")
        paths = {n: write_sets(folder, n) for n in sizes}
        # an untimed first run compiles the package's bytecode into the cache (as an install does)
        warm_up = command("split", paths[sizes[0]], folder / "warm-up")
        subprocess.run(warm_up, capture_output=True, check=False, env=env)
        for which in args.only:
            seconds = {}
            for n in sizes:
                out = folder / f"out-{which}-{n}"
                t0 = time.perf_counter()
                proc = subprocess.run(command(which, paths[n], out), capture_output=True, text=True,
                                      check=False, env=env)
                seconds[n] = time.perf_counter() - t0
                if proc.returncode != 0:
                    print(f"{which:>9} {n:>6}: FAILED (exit {proc.returncode}) {proc.stderr.strip()[-300:]}")
                    continue
                timings = json.loads((out / "result.json").read_text()).get("timings") or {}
                parts = ", ".join(f"{k[:-2]} {v:.2f}" for k, v in timings.items() if k != "total_s")
                print(f"{which:>9} {n:>6} rows a set: {seconds[n]:6.2f} s  ({parts})", flush=True)
            for small, large in zip(sizes, sizes[1:], strict=False):
                if small in seconds and large in seconds and seconds[small] > args.ratio * seconds[large]:
                    print(f"{which:>9} cliff: {small} rows took {seconds[small]:.2f} s, {large} rows "
                          f"{seconds[large]:.2f} s", flush=True)


if __name__ == "__main__":
    main()
