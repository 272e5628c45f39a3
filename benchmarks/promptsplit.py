"""PromptSplit benchmark: a table shaped like the paper's Table 1, measured on this machine.

    python benchmarks/promptsplit.py            # the table (exact up to n = 5,000; rff r = 1000/2000/3000)
    python benchmarks/promptsplit.py --quick    # small sizes only (a smoke run)
    python benchmarks/promptsplit.py --million  # also n = m = 1,000,000 .npy files, r = 2000
    python benchmarks/promptsplit.py --significance   # permutation test's cost next to the fit's

The table times the fit alone (``permutations=0``). ``--significance`` times the permutation test next to
the fit it belongs to (one run; the fit's time is the total minus ``timings['significance_s']``): the exact
route at n = m = 5,000 with 200 permutations (target: at most 3x the fit) and rff r = 2000 at
n = m = 100,000 with 100 permutations (target: under 10 minutes and 4 GB; the null then uses the documented
20,000-sample subsample). ``--sig-exact-n`` / ``--sig-rff-n`` change the sizes.

n is the size of each set (n = m). Embeddings are 384-d prompts and 384-d outputs (the sentence-model size)
drawn from a mixture whose test and reference differ in a few prompt clusters, so the modes are real. Every
timing is one run of ``PromptSplit.fit`` (all passes: bandwidth, features, covariance, eigen-decomposition,
scoring, summaries). Peak memory: the Python heap peak (tracemalloc, numpy buffers included) and the
process's peak resident set (the inputs are read in row blocks, never memory-mapped).

Targets on a 2-core machine: exact top-20 modes at n = m = 5,000 < 20 s; rff r = 3000 at n = m = 30,000
< 30 s; n = m = 1,000,000 from .npy, r = 2000, < 5 min and < 2 GB.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from promptprism import PairedSet, PromptSplit, load_paired

DIM = 384
N_PROMPTS = 2000  # distinct prompts in the bank; each set draws its prompts from it


def _bank(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_clusters = 20
    centres = rng.standard_normal((n_clusters, DIM))
    cluster = rng.integers(0, n_clusters, size=N_PROMPTS)
    prompts = centres[cluster] + 0.5 * rng.standard_normal((N_PROMPTS, DIM))
    out_centres = rng.standard_normal((n_clusters, DIM))
    return prompts.astype(np.float32), cluster, out_centres


def _draw(n: int, rng: np.random.Generator, bank, shifted: bool) -> tuple[np.ndarray, np.ndarray]:
    prompts, cluster, out_centres = bank
    idx = rng.integers(0, N_PROMPTS, size=n)
    centres = out_centres[cluster[idx]].copy()
    if shifted:  # the reference answers prompt clusters 0-2 differently
        moved = cluster[idx] < 3
        centres[moved] = np.roll(out_centres, 7, axis=0)[cluster[idx][moved]]
    outputs = centres + 0.7 * rng.standard_normal((n, DIM))
    return prompts[idx], outputs.astype(np.float32)


def make_sets(n: int, seed: int = 0) -> tuple[PairedSet, PairedSet]:
    bank = _bank(seed)
    rng = np.random.default_rng(seed + 1)
    t, x = _draw(n, rng, bank, shifted=False)
    tr, y = _draw(n, rng, bank, shifted=True)
    return PairedSet(t, x, name="test"), PairedSet(tr, y, name="reference")


def write_npy(folder: Path, n: int, seed: int, shifted: bool, chunk: int = 100_000) -> None:
    """Write n rows of each embedding as .npy files with plain file writes, chunk by chunk (no memory map,
    so the pages written never count in this process's resident set)."""
    folder.mkdir(parents=True, exist_ok=True)
    bank = _bank(0)
    rng = np.random.default_rng(seed)
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False,
              "shape": (n, DIM)}
    with open(folder / "prompt_embeddings.npy", "wb") as fp, \
            open(folder / "output_embeddings.npy", "wb") as fo:
        for fh in (fp, fo):
            np.lib.format.write_array_header_1_0(fh, header)
        for a in range(0, n, chunk):
            prompts, outputs = _draw(min(n, a + chunk) - a, rng, bank, shifted)
            fp.write(np.ascontiguousarray(prompts, dtype=np.float32).tobytes())
            fo.write(np.ascontiguousarray(outputs, dtype=np.float32).tobytes())


def measure(est: PromptSplit, test, ref) -> tuple[float, float, float]:
    """(seconds, heap peak GB, resident peak GB so far); also prints the fit's CPU seconds."""
    tracemalloc.start()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    est.fit(test, ref)
    secs = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = cpu1.ru_maxrss / 1024**2  # KiB -> GiB
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    print(f"  ({type(est).__name__} {est.method}: {secs:.1f} s wall, {cpu:.1f} s CPU, load average "
          f"{os.getloadavg()[0]:.1f})", flush=True)
    return secs, peak / 1024**3, rss


def significance_costs(exact_n: int, rff_n: int, seed: int) -> None:
    """Print fit time and permutation-test time side by side (one run each)."""
    print("\n# permutation test cost (n = m; one run: fit = total - test)")
    print("| route | n | permutations | fit (s) | test (s) | test / fit | heap peak (GB) | approximation |")
    print("|---|---|---|---|---|---|---|---|")
    for method, n, k, extra in (("exact", exact_n, 200, {}), ("rff", rff_n, 100, {"n_features": 2000})):
        if n <= 0:
            continue
        test, ref = make_sets(n, seed)
        est = PromptSplit(method=method, n_modes=10, seed=seed, permutations=k, **extra)
        tracemalloc.start()
        res = est.fit(test, ref)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        sig_s = res.timings["significance_s"]
        fit_s = res.timings["total_s"] - sig_s
        approx = "subsample" if res.significance.get("approximation") else "none"
        print(f"| {method} | {n:,} | {k} | {fit_s:.1f} | {sig_s:.1f} | {sig_s / fit_s:.2f} "
              f"| {peak / 1024**3:.2f} | {approx} |", flush=True)
        print(f"  verdict: {res.significance.get('verdict')}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="n in {1000, 2000} only")
    ap.add_argument("--exact-max", type=int, default=5000, help="largest n for the exact route")
    ap.add_argument("--sizes", type=int, nargs="*", default=None)
    ap.add_argument("--features", type=int, nargs="*", default=[1000, 2000, 3000])
    ap.add_argument("--million", action="store_true", help="also run n = m = 1,000,000 from .npy files")
    ap.add_argument("--million-n", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--precision", default="auto", choices=["auto", "float32", "float64"],
                    help="precision of the rff fits (auto = float32)")
    ap.add_argument("--significance", action="store_true", help="only the permutation test's cost")
    ap.add_argument("--sig-exact-n", type=int, default=5000)
    ap.add_argument("--sig-rff-n", type=int, default=100_000)
    args = ap.parse_args()
    if args.significance:
        significance_costs(args.sig_exact_n, args.sig_rff_n, args.seed)
        return 0
    sizes = args.sizes or ([1000, 2000] if args.quick else [1000, 2000, 5000, 10000, 20000, 30000])
    print(f"# PromptSplit runtime (seconds) on {os.cpu_count()} cores; n = m; {DIM}+{DIM}-d embeddings; "
          f"gaussian kernel, median bandwidth, 10 modes per sign (20 in all); seed {args.seed}")
    header = ["n", "exact"] + [f"rff r={r}" for r in args.features]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for n in sizes:
        test, ref = make_sets(n, args.seed)
        row = [f"{n:,}"]
        if n <= args.exact_max:
            secs, heap, _ = measure(PromptSplit(method="exact", n_modes=10, seed=args.seed, permutations=0),
                                    test, ref)
            row.append(f"{secs:.2f} ({heap:.2f} GB)")
        else:
            row.append("-")
        for r in args.features:
            secs, heap, _ = measure(PromptSplit(method="rff", n_features=r, n_modes=10, seed=args.seed,
                                                permutations=0, precision=args.precision), test, ref)
            row.append(f"{secs:.2f} ({heap:.2f} GB)")
        print("| " + " | ".join(row) + " |", flush=True)
    print("(in brackets: Python heap peak during the fit)")
    if args.million:
        n = args.million_n
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            write_npy(Path(tmp) / "test", n, args.seed + 1, shifted=False)
            write_npy(Path(tmp) / "reference", n, args.seed + 2, shifted=True)
            print(f"\n# n = m = {n:,}: wrote the .npy inputs in {time.perf_counter() - t0:.0f} s "
                  f"({4 * DIM * n * 4 / 1024**3:.1f} GB on disk)")
            test, ref = load_paired(Path(tmp) / "test"), load_paired(Path(tmp) / "reference")
            est = PromptSplit(method="rff", n_features=2000, n_modes=10, seed=args.seed, chunk_size=16384,
                              permutations=0)
            secs, heap, rss = measure(est, test, ref)
            print(f"rff r=2000: {secs:.0f} s ({secs / 60:.1f} min), Python heap peak {heap:.2f} GB, "
                  f"peak resident set {rss:.2f} GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
