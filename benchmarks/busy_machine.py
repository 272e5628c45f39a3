"""A loaded machine costs its share of time, not 5-10x: the default command with the thread budget chosen at
its start (``PROMPTPRISM_THREADS=auto``) against every core (the behaviour before), under a competing load.

    python benchmarks/busy_machine.py                      # 2 competing busy processes, 3 runs each
    python benchmarks/busy_machine.py --load 0 --runs 5    # a quiet machine: auto must cost nothing

The competing load is ``--load`` processes that each spin on one core (bounded: they stop with this script).
The command is ``promptprism split`` on the exact route (n = m = ``--n``, 100 permutations), report off; the
two settings alternate (A B A B ...), so a drift in the machine's speed hits both. Prints the CPU, the load
average, each run's wall seconds and the medians, and the thread count ``auto`` chose.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def spin(stop_at: float) -> None:
    x = 0
    while time.time() < stop_at:
        x += 1


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def write_inputs(folder: Path, n: int) -> tuple[Path, Path]:
    import numpy as np

    rng = np.random.default_rng(0)
    paths = []
    for name, shift in (("test", 0.3), ("ref", 0.0)):
        t = rng.normal(size=(n, 16))
        z = rng.normal(size=(n, 32)) + shift * (t[:, :1] > 0)
        path = folder / f"{name}.npz"
        np.savez(path, prompt_embeddings=t, output_embeddings=z)
        paths.append(path)
    return paths[0], paths[1]


def run_once(threads: str, test: Path, ref: Path, out: Path) -> float:
    env = {**os.environ, "PROMPTPRISM_THREADS": threads}
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(var, None)
    cmd = [sys.executable, "-m", "promptprism", "split", str(test), str(ref), "--out", str(out),
           "--method", "exact", "--permutations", "100", "--no-report", "--quiet"]
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=int, default=2, help="competing busy processes")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--n", type=int, default=1500)
    args = parser.parse_args()
    from promptprism.scale.threads import choose_threads, usable_cpus

    cpus = usable_cpus()
    with tempfile.TemporaryDirectory() as tmp:
        test, ref = write_inputs(Path(tmp), args.n)
        stop_at = time.time() + 3600
        spinners = [mp.Process(target=spin, args=(stop_at,), daemon=True) for _ in range(args.load)]
        for s in spinners:
            s.start()
        try:
            time.sleep(2.0 if args.load else 0.0)
            chosen = choose_threads({})
            print(f"cpu: {cpu_model()}, {cpus} usable CPUs; competing load: {args.load} spinning "
                  f"processes; load average {os.getloadavg()[0]:.1f}; auto chose {chosen.threads} "
                  f"thread(s): {chosen.reason}")
            times = {"every core": [], "auto": []}
            for r in range(args.runs):
                for label, value in (("every core", str(cpus)), ("auto", "auto")):
                    seconds = run_once(value, test, ref, Path(tmp) / f"out-{label}-{r}".replace(" ", "_"))
                    times[label].append(seconds)
                    print(f"  run {r}: {label:10s} {seconds:6.2f} s", flush=True)
        finally:
            for s in spinners:
                s.terminate()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"median: every core {med['every core']:.2f} s, auto {med['auto']:.2f} s, "
          f"ratio {med['every core'] / med['auto']:.2f}x")


if __name__ == "__main__":
    main()
