"""Cluster benchmark: PromptSplit's random-feature route on dask.distributed versus one process.

    python benchmarks/scale.py                  # n = m = 100,000 (one process, LocalCluster of 1 and 2)
    python benchmarks/scale.py --sizes 100000 1000000

For each size the inputs are written as .npy folders (the workers read their own partitions), then the same
``PromptSplit(method='rff', n_features=r)`` runs (a) in this process, (b) on a LocalCluster of 1 worker
process, (c) on a LocalCluster of 2 worker processes (one thread each). It prints samples/s (2n samples,
both passes) and the cluster overhead relative to the single-process run, and checks the eigenvalues agree.
Cluster start-up is not counted (a LocalCluster is started before timing); shipping results is.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from promptsplit import write_memmapped  # noqa: E402

from promptprism import PromptSplit, load_paired  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[100_000])
    ap.add_argument("--features", type=int, default=2000)
    ap.add_argument("--workers", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from distributed import Client, LocalCluster

    print(f"# PromptSplit rff r={args.features}, n = m, 384+384-d, seed {args.seed}; samples/s counts 2n "
          "samples through both passes")
    print("| n | route | seconds | samples/s | overhead vs one process |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            write_memmapped(Path(tmp) / "test", n, args.seed + 1, shifted=False)
            write_memmapped(Path(tmp) / "reference", n, args.seed + 2, shifted=True)
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
                    res = est.fit(test, ref, client=client)
                    secs = time.perf_counter() - t0
                same = np.allclose(res.eigenvalues, base.eigenvalues, rtol=1e-9, atol=1e-14)
                flag = "" if same else " (RESULT DIFFERS)"
                print(f"| {n:,} | LocalCluster, {w} worker{'s' if w > 1 else ''} | {secs:.1f} | "
                      f"{2 * n / secs:,.0f} | {secs / single - 1:+.0%}{flag} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
