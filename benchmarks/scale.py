"""Cluster benchmark: PromptSplit's random-feature route on dask.distributed versus one process.

    python benchmarks/scale.py                  # n = m = 100,000 (one process, LocalCluster of 1 and 2)
    python benchmarks/scale.py --sizes 100000 1000000

For each size the inputs are written as .npy folders (the workers read their own partitions), then the same
``PromptSplit(method='rff', n_features=r)`` runs (a) in this process, (b) on a LocalCluster of 1 worker
process, (c) on a LocalCluster of 2 worker processes (one thread each). It prints samples/s (2n samples,
both passes) and the cluster overhead relative to the single-process run, and checks the eigenvalues agree.
Cluster start-up is not counted (a LocalCluster is started before timing); shipping results is.

Regions (``--regions-n``, 0 skips): scikit-learn digits upscaled to 28x28, written as .npy files that the
workers read; ``RegionCMS(n_regions=4)`` is fitted on n real images (pixel CKA on 1,000 of them in blocks
of 100) and compares two generated sets of n/2 images each with the exact CMS (pairs of 512-image chunks).
samples/s counts the 2n images (real and generated) per fit + compare; the results are checked to agree.
A small untimed run first lets the workers import their modules.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from promptsplit import write_npy  # noqa: E402

from promptprism import PromptSplit, load_paired  # noqa: E402
from promptprism.scale import execution  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[100_000])
    ap.add_argument("--features", type=int, default=2000)
    ap.add_argument("--workers", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--regions-n", type=int, default=2000, help="real images of the regions rows (0: skip)")
    ap.add_argument("--skip-promptsplit", action="store_true")
    args = ap.parse_args()
    if not args.skip_promptsplit:
        promptsplit_rows(args)
    if args.regions_n:
        regions_rows(args)
    return 0


def promptsplit_rows(args: argparse.Namespace) -> None:
    from distributed import Client, LocalCluster

    print(f"# PromptSplit rff r={args.features}, n = m, 384+384-d, seed {args.seed}; samples/s counts 2n "
          "samples through both passes")
    print("| n | route | seconds | samples/s | overhead vs one process |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            write_npy(Path(tmp) / "test", n, args.seed + 1, shifted=False)
            write_npy(Path(tmp) / "reference", n, args.seed + 2, shifted=True)
            test, ref = load_paired(Path(tmp) / "test"), load_paired(Path(tmp) / "reference")
            est = PromptSplit(method="rff", n_features=args.features, n_modes=10, seed=args.seed,
                              chunk_size=16384, partition_rows=131072)
            t0 = time.perf_counter()
            base = est.fit(test, ref)
            single = time.perf_counter() - t0
            print(f"| {n:,} | one process | {single:.1f} | {2 * n / single:,.0f} | - |", flush=True)
            for w in args.workers:
                with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, Client(cluster) as client:
                    t0 = time.perf_counter()
                    with execution(client):
                        res = est.fit(test, ref)
                    secs = time.perf_counter() - t0
                same = np.allclose(res.eigenvalues, base.eigenvalues, rtol=1e-9, atol=1e-14)
                flag = "" if same else " (RESULT DIFFERS)"
                print(f"| {n:,} | LocalCluster, {w} worker{'s' if w > 1 else ''} | {secs:.1f} | "
                      f"{2 * n / secs:,.0f} | {secs / single - 1:+.0%}{flag} |", flush=True)


def regions_rows(args: argparse.Namespace) -> None:
    from distributed import Client, LocalCluster
    from regions import digits

    from promptprism import RegionCMS, execution

    n = args.regions_n
    print(f"\n# RegionCMS, 28x28 digits, {n} real + 2 x {n // 2} generated images, C = 4, exact CMS, "
          f"seed {args.seed}; samples/s counts the {2 * n} images of one fit + compare")
    print("| n real | route | seconds | samples/s | overhead vs one process |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        x = digits(2 * n, 28, args.seed)
        np.save(root / "real.npy", x[:n])
        np.save(root / "gen_a.npy", x[n:n + n // 2])
        gen_b = x[n + n // 2:].copy()
        noise = np.random.default_rng(args.seed).normal(0, 0.2, gen_b[:, :10].shape)
        gen_b[:, :10] = np.clip(gen_b[:, :10] + noise, 0, 1)  # the top 10 rows of the second set
        np.save(root / "gen_b.npy", gen_b)
        est = RegionCMS(n_regions=4, seed=args.seed)
        paths = [root / "gen_a.npy", root / "gen_b.npy"]
        t0 = time.perf_counter()
        base = est.fit(root / "real.npy").compare(paths)
        single = time.perf_counter() - t0
        print(f"| {n:,} | one process | {single:.1f} | {2 * n / single:,.0f} | - |", flush=True)
        for w in args.workers:
            with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                              dashboard_address=":0") as cluster, Client(cluster) as client, \
                    execution(client):
                # not timed: the workers import promptprism, scipy and friends on a small run first
                RegionCMS(n_regions=2, cka_max_images=200, seed=args.seed).fit(x[:200]).compare(x[200:300])
                t0 = time.perf_counter()
                res = est.fit(root / "real.npy").compare(paths)
                secs = time.perf_counter() - t0
            same = (res.regions == base.regions and np.allclose(res.cms, base.cms, rtol=1e-9, atol=0)
                    and np.allclose(res.region_cms, base.region_cms, rtol=1e-9, atol=0))
            flag = "" if same else " (RESULT DIFFERS)"
            print(f"| {n:,} | LocalCluster, {w} worker{'s' if w > 1 else ''} | {secs:.1f} | "
                  f"{2 * n / secs:,.0f} | {secs / single - 1:+.0%}{flag} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
