"""Reference-set metrics benchmark: promptprism against the reference implementations, in one run.

    python benchmarks/metrics.py                          # n = 50,000 x 2, 2048-d (the issue's size)
    python benchmarks/metrics.py --n 5000 --prdc-n 2000   # a quick run

Synthetic float32 features (n x 2048, two sets that differ a little, as Inception pool features of two
generators would). Each row times one implementation from the same features to its number, and gives the
larger of the peak resident set it rose to over its start and tracemalloc's peak (both printed:
``memory.py``), the wall time and the process
CPU time (with 2 BLAS threads up to twice the wall time; less sensitive to other processes on a shared
machine), then the relative difference of the numbers:

* FD: promptprism's ``frechet_distance`` (row-blocked float64 moments, symmetric eigenvalues) against
  clean-fid's formula (``np.cov`` + ``scipy.linalg.sqrtm`` of the product; restated: clean-fid imports
  torchvision) and torchmetrics' ``_compute_fid`` (eigenvalues of the non-symmetric product, float64).
* KID, ``--subsets`` subsets of ``--subset-size``: promptprism's ``kernel_inception_distance`` against
  torchmetrics' ``KernelInceptionDistance`` (identity feature extractor) and clean-fid's ``kernel_distance``
  formula. Each draws its own random subsets, so the numbers agree to the subsets' spread, not to 1e-6
  (tests/test_metrics_reference.py checks one whole-set subset to 1e-6).
* PRDC, k = 5: promptprism's row-blocked ``prdc`` at ``--n`` (bounded memory: one block of distances) and
  at ``--prdc-n``, where the ``prdc`` package (three full n x n distance matrices) also runs: at n = 50,000
  its matrices alone are 3 x 10 GB in float32, more than this machine has. ``--prdc-big-n`` sets the n of
  promptprism's own large row (default ``--n``).

The machine's BLAS rate (``machine.py``) and the load average are printed before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import describe, measure  # noqa: E402
from memory import larger, mib_text, resident_peak, traced_peak  # noqa: E402


def features(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two float32 sets: correlated Gaussian features, the second shifted and rescaled a little."""
    rng = np.random.default_rng(seed)
    mix = (rng.standard_normal((d, d), dtype=np.float32) / np.sqrt(d)).astype(np.float32)
    real = rng.standard_normal((n, d), dtype=np.float32) @ mix
    fake = (rng.standard_normal((n, d), dtype=np.float32) @ mix) * np.float32(1.05) + np.float32(0.02)
    return real, fake


def timed(label: str, fn, rows: list) -> float:
    cpu = time.process_time()
    value, wall, resident = resident_peak(fn)
    cpu = time.process_time() - cpu
    traced = traced_peak(fn)
    peak = larger(resident, traced)
    rows.append((label, wall, cpu, peak, value))
    print(f"  {label:<44} {wall:8.1f} s wall {cpu:8.1f} s cpu {mib_text(peak, 9)} MiB (resident "
          f"{mib_text(resident, 0)}, traced {traced:,.0f})   {value}", flush=True)
    return value


def fd_rows(real, fake, rows):
    import scipy.linalg
    import torch
    from torchmetrics.image.fid import _compute_fid

    from promptprism.methods.metrics import frechet_distance

    def cleanfid():
        mu1, s1 = np.mean(fake, axis=0), np.cov(fake, rowvar=False)
        mu2, s2 = np.mean(real, axis=0), np.cov(real, rowvar=False)
        diff = mu1 - mu2
        root = scipy.linalg.sqrtm(s1.dot(s2))
        return float(diff @ diff + np.trace(s1) + np.trace(s2) - 2 * np.trace(np.real(root)))

    def torchmetrics():
        f, r = torch.from_numpy(fake).double(), torch.from_numpy(real).double()
        return float(_compute_fid(f.mean(0), torch.cov(f.T), r.mean(0), torch.cov(r.T)))

    ours = timed("FD promptprism", lambda: frechet_distance(fake, real), rows)
    for label, fn in (("FD clean-fid formula (sqrtm)", cleanfid),
                      ("FD torchmetrics _compute_fid", torchmetrics)):
        value = timed(label, fn, rows)
        print(f"    relative difference to promptprism: {abs(value - ours) / abs(ours):.2e}")


def kid_rows(real, fake, subsets, size, rows):
    import torch
    from torchmetrics.image.kid import KernelInceptionDistance

    from promptprism.methods.metrics import kernel_inception_distance

    def cleanfid():
        rng = np.random.default_rng(1)
        n, m, t = fake.shape[1], min(len(real), len(fake), size), 0.0
        for _ in range(subsets):
            x = real[rng.choice(len(real), m, replace=False)].astype(np.float64)
            y = fake[rng.choice(len(fake), m, replace=False)].astype(np.float64)
            a = (x @ x.T / n + 1) ** 3 + (y @ y.T / n + 1) ** 3
            b = (x @ y.T / n + 1) ** 3
            t += (a.sum() - np.diag(a).sum()) / (m - 1) - b.sum() * 2 / m
        return float(t / subsets / m)

    def torchmetrics():
        class Identity(torch.nn.Module):
            def forward(self, z):
                return z

        torch.manual_seed(0)
        metric = KernelInceptionDistance(feature=Identity(), subsets=subsets, subset_size=size)
        metric.set_dtype(torch.float64)
        metric.update(torch.from_numpy(real).double(), real=True)
        metric.update(torch.from_numpy(fake).double(), real=False)
        return float(metric.compute()[0])

    kid = timed("KID promptprism", lambda: float(kernel_inception_distance(
        fake, real, n_subsets=subsets, subset_size=size, seed=0).mean()), rows)
    for label, fn in (("KID torchmetrics", torchmetrics), ("KID clean-fid formula", cleanfid)):
        value = timed(label, fn, rows)
        print(f"    difference to promptprism: {value - kid:+.3e} (KID {kid:.4e}; own subsets)")


def prdc_rows(real, fake, n_small, n_big, rows, dtype):
    import prdc as reference

    from promptprism.methods.metrics import prdc

    if n_small < len(real):
        small = timed(f"PRDC promptprism n={n_small}", lambda: prdc(real[:n_small], fake[:n_small], 5), rows)
        ref = timed(f"PRDC prdc package n={n_small}", lambda: {
            k: float(v) for k, v in reference.compute_prdc(real[:n_small], fake[:n_small], 5).items()}, rows)
        print(f"    largest difference: {max(abs(small[k] - ref[k]) for k in small):.2e}")
    timed(f"PRDC promptprism n={n_big} ({dtype} distances)",
          lambda: prdc(real[:n_big], fake[:n_big], 5, dtype=dtype), rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--subsets", type=int, default=100)
    parser.add_argument("--subset-size", type=int, default=1000)
    parser.add_argument("--prdc-n", type=int, default=10_000, help="n where the prdc package also runs")
    parser.add_argument("--prdc-big-n", type=int, default=None, help="n of promptprism's own PRDC row "
                        "(default --n; its time grows as n^2: 3 n^2 d multiply-adds)")
    parser.add_argument("--prdc-dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--skip", default="", help="comma-separated: fd, kid, prdc")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}; {os.cpu_count()} CPUs; "
          f"BLAS: {describe(measure(quick=True))}", flush=True)
    real, fake = features(args.n, args.dim, seed=0)
    print(f"n = {args.n} x 2, d = {args.dim}, float32 ({real.nbytes / 2**20:.0f} MiB per set)", flush=True)
    rows: list = []
    skip = set(filter(None, args.skip.split(",")))
    if "fd" not in skip:
        fd_rows(real, fake, rows)
    if "kid" not in skip:
        kid_rows(real, fake, args.subsets, args.subset_size, rows)
    if "prdc" not in skip:
        prdc_rows(real, fake, args.prdc_n, args.prdc_big_n or args.n, rows, args.prdc_dtype)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
