"""Scendi benchmark: time and peak memory of ``Scendi.fit`` for n = 1k, 10k, 100k pairs.

Rows: the cosine kernel on 512-d embeddings (prompts and outputs), and the gaussian kernel with random
Fourier features, 2 x 2500 = 5000 features per modality (the reference implementation's size; the joint
covariance is then 10,000 x 10,000). The data are synthetic (200 distinct prompts, outputs = a prompt-driven
part plus a model-driven cluster plus noise), written to a folder of .npy files that is read memory-mapped,
so the set itself never has to fit in memory: the covariance is accumulated chunk by chunk.

Each row runs in its own process so that its peak resident memory (``ru_maxrss``) is its own; the table also
gives the peak of the allocations made during ``fit`` (tracemalloc: numpy arrays included) and the input's
size on disk. A row that runs longer than ``--max-seconds`` is stopped and reported as skipped.

    python benchmarks/scendi.py            # n = 1k, 10k, 100k
    python benchmarks/scendi.py --quick    # n = 1k, 10k
    python benchmarks/scendi.py --targets  # the speed targets (below), float64 and float32

``--targets``: gaussian kernel, one shared set of 2 x 2500 random Fourier frequencies (sigma 3.5) for 512-d
prompts and 512-d outputs, 100 distinct prompts x n/100 outputs, at n = 1,000 (target: under 5 s) and
n = 10,000 (target: under 20 s), on a quiet 2-core machine. Each row is a fresh process (start-up included
in neither column: the time is ``Scendi.fit``'s); it prints the wall time, the process CPU time (less
sensitive to other processes on a loaded machine; with 2 BLAS threads it can be up to twice the wall time),
the route taken and the load average before the row, so that the conditions of the measurement are stated.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

DIM = 512
N_PROMPTS = 200
RFF_FEATURES = 5000  # 2 x 2500


def make_data(folder: Path, n: int, seed: int = 0, chunk: int = 20_000) -> None:
    """prompt_embeddings / output_embeddings (n x 512, float32) as .npy files, written chunk by chunk."""
    rng = np.random.default_rng(seed)
    bank = rng.standard_normal((N_PROMPTS, DIM)).astype(np.float32)
    styles = rng.standard_normal((10, DIM)).astype(np.float32)
    folder.mkdir(parents=True, exist_ok=True)
    pe = np.lib.format.open_memmap(folder / "prompt_embeddings.npy", mode="w+", dtype=np.float32,
                                   shape=(n, DIM))
    oe = np.lib.format.open_memmap(folder / "output_embeddings.npy", mode="w+", dtype=np.float32,
                                   shape=(n, DIM))
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        which = rng.integers(0, N_PROMPTS, b - a)
        style = rng.integers(0, 10, b - a)
        pe[a:b] = bank[which]
        oe[a:b] = bank[which] + 0.8 * styles[style] + 0.5 * rng.standard_normal((b - a, DIM))
    pe.flush()
    oe.flush()
    del pe, oe


def run_row(kernel: str, folder: str) -> dict:
    """One fit, in this process; prints a JSON line."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import promptprism as pp

    data = pp.load_paired(folder, name="bench")
    est = (pp.Scendi(kernel="cosine", seed=0) if kernel == "cosine" else
           pp.Scendi(kernel="gaussian", n_features=RFF_FEATURES, seed=0))
    tracemalloc.start()
    t0 = time.perf_counter()
    res = est.fit(data)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    maxrss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {"seconds": seconds, "traced_peak_mb": peak / 2**20, "maxrss_mb": maxrss_kib / 1024,
            "scendi": res.scendi, "vendi": res.vendi, "timings": res.timings}


def target_row(n: int, precision: str) -> dict:
    """One --targets fit, in this process."""
    import os

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import promptprism as pp

    rng = np.random.default_rng(0)
    per = n // 100
    bank = rng.standard_normal((100, DIM))
    styles = rng.standard_normal((10, DIM))
    which = np.repeat(np.arange(100), per)
    t = bank[which]
    x = bank[which] + 0.8 * styles[rng.integers(0, 10, n)] + 0.5 * rng.standard_normal((n, DIM))
    est = pp.Scendi(kernel="gaussian", n_features=RFF_FEATURES, shared_frequencies=True, sigma_output=3.5,
                    sigma_prompt=3.5, precision=precision, bootstrap=0, seed=0)
    load = os.getloadavg()[0]
    c0, t0 = time.process_time(), time.perf_counter()
    res = est.fit((t, x))
    return {"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0, "load": load,
            "route": res.config["route"], "scendi": res.scendi, "vendi": res.vendi,
            "model_share": res.model_share, "timings": res.timings}


def targets(max_seconds: float) -> None:
    """The issue's targets: n = 1,000 under 5 s and n = 10,000 under 20 s (quiet 2-core machine)."""
    print(f"Scendi.fit, gaussian, shared frequencies 2 x {RFF_FEATURES // 2}, {DIM}+{DIM}-d, "
          "100 prompts x n/100 outputs")
    header = (f"{'n':>7}{'precision':>10}  {'route':<32}{'wall s':>9}{'cpu s':>9}{'target s':>10}{'load':>7}"
              f"{'scendi':>11}{'vendi':>10}{'model share':>13}")
    print(header)
    print("-" * len(header))
    for n, goal in ((1_000, 5.0), (10_000, 20.0)):
        for precision in ("float64", "float32"):
            cmd = [sys.executable, __file__, "--_target", str(n), precision]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=max_seconds, check=False)
            except subprocess.TimeoutExpired:
                print(f"{n:>7,}{precision:>10}   skipped: still running after {max_seconds:.0f} s",
                      flush=True)
                continue
            if proc.returncode != 0:
                print(f"{n:>7,}{precision:>10}  failed: {proc.stderr.strip().splitlines()[-1:]}", flush=True)
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"{n:>7,}{precision:>10}  {r['route']:<32}{r['seconds']:>9.1f}{r['cpu_seconds']:>9.1f}"
                  f"{goal:>10.0f}{r['load']:>7.1f}{r['scendi']:>11.3f}{r['vendi']:>10.2f}"
                  f"{r['model_share']:>13.4f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n = 1k and 10k only")
    ap.add_argument("--max-seconds", type=float, default=600.0, help="stop a row after this long")
    ap.add_argument("--kernels", default="cosine,rff", help="comma-separated: cosine, rff")
    ap.add_argument("--targets", action="store_true", help="the speed targets (gaussian 2 x 2500)")
    ap.add_argument("--_row", nargs=2, metavar=("KERNEL", "FOLDER"), help=argparse.SUPPRESS)
    ap.add_argument("--_target", nargs=2, metavar=("N", "PRECISION"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._row:
        print(json.dumps(run_row(*args._row)))
        return
    if args._target:
        print(json.dumps(target_row(int(args._target[0]), args._target[1])))
        return
    if args.targets:
        targets(args.max_seconds)
        return
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    print(f"Scendi.fit: {DIM}-d prompts and outputs, {N_PROMPTS} distinct prompts; "
          f"rff = gaussian with {RFF_FEATURES} features per modality (2 x {RFF_FEATURES // 2})")
    header = (f"{'kernel':<8}{'n':>9}{'data MB':>10}{'time s':>10}{'fit peak MB':>13}{'max RSS MB':>12}"
              f"{'scendi':>10}{'vendi':>10}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            folder = Path(tmp) / f"n{n}"
            make_data(folder, n)
            data_mb = 2 * n * DIM * 4 / 2**20
            for kernel in kernels:
                cmd = [sys.executable, __file__, "--_row", "cosine" if kernel == "cosine" else "gaussian",
                       str(folder)]
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.max_seconds,
                                          check=False)
                except subprocess.TimeoutExpired:
                    print(f"{kernel:<8}{n:>9,}{data_mb:>10.0f}   skipped: still running after "
                          f"{args.max_seconds:.0f} s", flush=True)
                    continue
                if proc.returncode != 0:
                    print(f"{kernel:<8}{n:>9,}  failed: {proc.stderr.strip().splitlines()[-1:]}", flush=True)
                    continue
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                print(f"{kernel:<8}{n:>9,}{data_mb:>10.0f}{r['seconds']:>10.1f}{r['traced_peak_mb']:>13.0f}"
                      f"{r['maxrss_mb']:>12.0f}{r['scendi']:>10.3f}{r['vendi']:>10.2f}", flush=True)
            for f in folder.iterdir():
                f.unlink()


if __name__ == "__main__":
    main()
