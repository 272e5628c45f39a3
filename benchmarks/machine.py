"""The machine's own limit: BLAS GEMM and SYRK rates in float32 and float64, and the floor they imply.

    python benchmarks/machine.py            # prints the four rates (GFLOP/s)
    python benchmarks/machine.py --quick    # smaller matrices, one repeat

Every promptprism benchmark ends in dense linear algebra (Gram matrices, covariance accumulation, eigen
solvers), so the fastest this machine can possibly do a job is its flop count divided by the rate of the
BLAS routine that job is made of. Two routines are measured through ``scipy.linalg.blas`` (the optimised
BLAS scipy links: OpenBLAS in the PyPI wheels, as for numpy):

* GEMM  C = A B, A (m x k), B (k x n): 2 m n k flops.
* SYRK  C = A^T A, A (k x n), upper triangle only: n (n + 1) k flops (a multiply and an add per entry of
  the triangle and term of the sum). This is the covariance update sum_i f_i f_i^T of a chunk of k samples
  with n features, the operation that dominates PromptSplit's random-feature route and Scendi.

Each rate is the best of a few repeats (a floor must use the fastest the hardware showed, not an average
that includes interruptions by other processes). On a shared machine the rates, and every timing, depend on
the load at the time: print the load average beside them, as ``compare.py`` does, and take the floor
from the best measurement seen (``best``; ``compare.py --rates`` accepts the last line printed here from a
run on a quiet machine).

:func:`floor_seconds` turns a flop count into the seconds the measured rate needs for it.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

import numpy as np
from scipy.linalg import blas

DTYPES = ("float32", "float64")
KINDS = ("gemm", "syrk")


@dataclass(frozen=True)
class Rates:
    """Measured GFLOP/s per (kind, dtype), e.g. ``rates.gflops[("syrk", "float32")]``."""

    gflops: dict[tuple[str, str], float]
    threads: int  #: CPUs the process may use (the BLAS runs on these)

    def rate(self, kind: str, dtype: str) -> float:
        """GFLOP/s of ``kind`` ('gemm' or 'syrk') in ``dtype`` ('float32' or 'float64')."""
        if kind not in KINDS or dtype not in DTYPES:
            raise ValueError(f"kind must be one of {KINDS} and dtype one of {DTYPES}, "
                             f"got {kind!r}, {dtype!r}")
        return self.gflops[(kind, dtype)]


def gemm_flops(m: int, n: int, k: int) -> float:
    """Flops of C = A B with A (m x k) and B (k x n): 2 m n k."""
    return 2.0 * m * n * k


def syrk_flops(n: int, k: int) -> float:
    """Flops of the upper triangle of C = A^T A with A (k x n): n (n + 1) k."""
    return float(n) * (n + 1) * k


def best_seconds(fn, repeats: int, *, clock=time.perf_counter, warmup: bool = True) -> float:
    """Least seconds of ``clock`` (wall by default; ``time.thread_time`` for this thread's CPU) over
    ``repeats`` calls of ``fn``, after one uncounted call that pages in the operands and starts the BLAS
    threads (``warmup``)."""
    if warmup:
        fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def measure_gemm(dtype: str, *, size: int = 2048, repeats: int = 3, seed: int = 0) -> float:
    """GFLOP/s of a (size x size) @ (size x size) GEMM in ``dtype``, best of ``repeats``."""
    rng = np.random.default_rng(seed)
    a = np.asfortranarray(rng.standard_normal((size, size)).astype(dtype))
    b = np.asfortranarray(rng.standard_normal((size, size)).astype(dtype))
    gemm = blas.sgemm if dtype == "float32" else blas.dgemm
    secs = best_seconds(lambda: gemm(1.0, a, b), repeats)
    return gemm_flops(size, size, size) / secs / 1e9


def measure_syrk(dtype: str, *, n: int = 2048, k: int = 8192, repeats: int = 3, seed: int = 0) -> float:
    """GFLOP/s of the SYRK C = A^T A, A (k x n), in ``dtype`` (a covariance of k samples), best of repeats."""
    rng = np.random.default_rng(seed)
    a_t = np.asfortranarray(rng.standard_normal((n, k)).astype(dtype))  # A^T, column-major: no copy
    syrk = blas.ssyrk if dtype == "float32" else blas.dsyrk
    secs = best_seconds(lambda: syrk(1.0, a_t), repeats)  # trans=0: a_t a_t^T = A^T A
    return syrk_flops(n, k) / secs / 1e9


_CACHE: dict[bool, Rates] = {}


def measure(*, quick: bool = False, fresh: bool = False) -> Rates:
    """All four rates (measured once per process and ``quick`` setting, then cached; ``fresh``: again)."""
    if fresh or quick not in _CACHE:
        size, n, k, repeats = (1024, 1024, 4096, 2) if quick else (2048, 2048, 8192, 3)
        gflops = {}
        for dtype in DTYPES:
            gflops[("gemm", dtype)] = measure_gemm(dtype, size=size, repeats=repeats)
            gflops[("syrk", dtype)] = measure_syrk(dtype, n=n, k=k, repeats=repeats)
        _CACHE[quick] = Rates(gflops=gflops, threads=len(os.sched_getaffinity(0)))
    return _CACHE[quick]


def best(*rates: Rates) -> Rates:
    """The fastest rate of each (kind, dtype) among several measurements (the hardware did at least that)."""
    keys = rates[0].gflops.keys()
    return Rates(gflops={k: max(r.gflops[k] for r in rates) for k in keys}, threads=rates[0].threads)


def parse_rates(text: str) -> Rates:
    """Rates from 'GEMM32,GEMM64,SYRK32,SYRK64' (GFLOP/s), the form ``machine.py`` prints last."""
    vals = [float(v) for v in text.split(",")]
    if len(vals) != 4 or min(vals) <= 0:
        raise ValueError(f"expected four positive GFLOP/s 'GEMM32,GEMM64,SYRK32,SYRK64', got {text!r}")
    keys = [("gemm", "float32"), ("gemm", "float64"), ("syrk", "float32"), ("syrk", "float64")]
    return Rates(gflops=dict(zip(keys, vals, strict=True)), threads=len(os.sched_getaffinity(0)))


def floor_seconds(flops: float, dtype: str, *, kind: str = "syrk", rates: Rates | None = None) -> float:
    """Least seconds this machine needs for ``flops`` flops of BLAS ``kind`` in ``dtype`` (measured rate)."""
    rates = rates if rates is not None else measure()
    return flops / (rates.rate(kind, dtype) * 1e9)


def describe(rates: Rates) -> str:
    """One line: the four rates."""
    parts = [f"{kind.upper()} {dtype} {rates.rate(kind, dtype):.0f}" for kind in KINDS for dtype in DTYPES]
    return f"BLAS GFLOP/s on {rates.threads} CPUs: " + ", ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller matrices, fewer repeats")
    args = ap.parse_args()
    print(f"# load average {os.getloadavg()[0]:.2f}; numpy {np.__version__}")
    rates = measure(quick=args.quick)
    print(describe(rates))
    print("--rates " + ",".join(f"{rates.rate(k, d):.0f}" for k in KINDS for d in DTYPES)
          + "   (to pass to compare.py: the floor from a measurement on a quiet machine)")


if __name__ == "__main__":
    main()
