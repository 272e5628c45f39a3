"""The rff covariance pass taken apart: where its time goes against the float32 SYRK floor, in one run.

    python benchmarks/covariance_pass.py               # n = m = 30,000, r = 3,000 (the default command's)
    python benchmarks/covariance_pass.py --n 10000     # smaller sets

The pass (``FeatureRoute.covariance``: the random features of every row, kept for scoring and the test, and
the test's and the reference's sums of psi psi^T accumulated chunk by chunk on the local runner's threads,
then Lambda_r = S_test / n - eta S_ref / m) is timed whole, as wall seconds and as the CPU seconds of the
process (user and system). Its parts are timed one at a time on one thread with one BLAS thread
(``time.thread_time``, so other processes on a shared machine inflate them little) on one chunk of
``--chunk`` rows and scaled to all 2n rows:

* projection: the joined rows times the joint frequencies (a float32 GEMM, 2 N (d_t + d_z) (r / 2) flops);
* cos/sin: numpy's float32 sin and cos of the N x r/2 phases;
* rest of the feature map: centring and joining the rows, the phase-range check, the 1/sqrt(D) scale;
* SYRK: the chunk's f^T f (numpy's matmul, which calls the BLAS's ssyrk and mirrors the triangle);
* accumulate: the chunk product added to its side's float64 running sum;
* allocation: the kept N x r float32 features' pages, mapped as the workers write them (two threads writing
  halves of a fresh array: wall and system seconds, whole).

"ideal" is the parts' CPU seconds over the usable cores (the allocation counted as it ran): what
the pass would take with both cores busy the whole time. The SYRK floor is scipy's float32 ssyrk of the
whole N x r feature matrix on every core, best of two, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine  # noqa: E402
from compare import promptsplit_sets  # noqa: E402
from default_command import blas_info, syrk_seconds  # noqa: E402


def cpu_seconds() -> tuple[float, float]:
    """(user, system) CPU seconds of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


def thread_best(fn, repeats: int = 3) -> float:
    """Least CPU seconds of this thread over ``repeats`` calls of ``fn``."""
    return machine.best_seconds(fn, repeats, clock=time.thread_time, warmup=False)


def route_for(n: int, features: int):
    """(route, timings) of PromptSplit's rff route on the benchmark sets, set up as a fit sets it up."""
    from promptprism import PromptSplit
    from promptprism.backend import NUMPY
    from promptprism.data.paired import PairedSet
    from promptprism.methods.promptsplit.routes import choose_route
    from promptprism.scale.runner import current_runner

    t_x, x, t_y, y = promptsplit_sets(n, 0)
    est = PromptSplit(method="rff", n_features=features, permutations=0, seed=0, progress=False)
    sets = {"test": PairedSet(t_x, x), "reference": PairedSet(t_y, y)}
    sigmas, _ = est._resolve_bandwidths(sets)
    return choose_route(est, sets, sigmas, backend=NUMPY, runner=current_runner()), est


def parts(route, chunk: int) -> dict[str, float]:
    """CPU seconds of each part of the pass for one chunk of ``chunk`` rows, one thread, one BLAS thread."""
    from threadpoolctl import threadpool_limits

    from promptprism.backend import populated_empty
    from promptprism.stats.accumulators import KeyedCovarianceAccumulator

    fmap, test = route.fmap, route.sets[0]
    prompts, outputs = np.asarray(test.prompt_embeddings[:chunk]), np.asarray(test.output_embeddings[:chunk])
    out = populated_empty((chunk, fmap.dim), fmap.precision)
    half = fmap.dim // 2
    with threadpool_limits(limits=1, user_api="blas"):
        transform = thread_best(lambda: fmap.transform(prompts, outputs, out=out))
        joined = np.concatenate([prompts - fmap.center[0], outputs - fmap.center[1]], axis=1).astype(
            fmap.precision) if fmap.center is not None else np.concatenate([prompts, outputs], axis=1)
        phases = np.matmul(joined, fmap._w_joint)
        gemm = thread_best(lambda: np.matmul(joined, fmap._w_joint, out=out[:, :half]))
        trig = thread_best(lambda: (np.sin(phases, out=out[:, half:]), np.cos(phases, out=out[:, :half])))
        acc = KeyedCovarianceAccumulator(fmap.dim, precision=fmap.precision)
        acc.update("test", out)  # (the scratch and the sum allocated once, as in a task)
        update = thread_best(lambda: acc.update("test", out))
        syrk = thread_best(lambda: np.matmul(out.T, out, out=acc.sums["test"]._scratch.T))
    return {"projection (GEMM)": gemm, "cos/sin": trig, "rest of the feature map": transform - gemm - trig,
            "SYRK": syrk, "accumulate (float64 add)": update - syrk}


def allocation(rows: int, dim: int, precision: str) -> tuple[float, float]:
    """(wall, system) seconds to map the kept features' pages as the pass does: allocated unmapped
    (``threads_write``), each half first written by its own thread."""
    from concurrent.futures import ThreadPoolExecutor

    from promptprism.backend import NUMPY

    sys0 = cpu_seconds()[1]
    t0 = time.perf_counter()
    feats = NUMPY.empty((rows, dim), precision, threads_write=True)

    def first_write(half: slice) -> None:
        feats[half].fill(0)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(first_write, (slice(0, rows // 2), slice(rows // 2, rows))))
    wall = time.perf_counter() - t0
    return wall, cpu_seconds()[1] - sys0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=30_000, help="rows per set (n = m)")
    ap.add_argument("--features", type=int, default=3000, help="random features r")
    ap.add_argument("--chunk", type=int, default=8192, help="rows of the chunk the parts are timed on")
    ap.add_argument("--repeat", type=int, default=2, help="whole passes timed (the fastest is printed)")
    args = ap.parse_args(argv)
    from promptprism.scale.runner import usable_cores

    cores = usable_cores()
    print(f"# {os.cpu_count()} CPUs, {cores} usable; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}\n# BLAS: {blas_info()}")
    rows = 2 * args.n
    floor = syrk_seconds(rows, args.features)
    route, est = route_for(args.n, args.features)
    print(f"# float32 SYRK {rows:,} x {args.features:,} on {cores} cores: {floor:.2f} s; "
          f"chunk {est.chunk_size}, workers {getattr(route.runner, 'workers', 1)}, "
          f"features kept: {route.keep}")
    passes = []
    for _ in range(args.repeat):
        (user0, sys0), t0 = cpu_seconds(), time.perf_counter()
        route.covariance({})
        wall = time.perf_counter() - t0
        user1, sys1 = cpu_seconds()
        passes.append((wall, user1 - user0, sys1 - sys0))
        route.release()
    wall, user, system = min(passes)
    scale = rows / args.chunk
    cpu = {k: v * scale for k, v in parts(route, args.chunk).items()}
    alloc_wall, alloc_sys = allocation(rows, route.fmap.dim, route.fmap.precision)
    print(f"pass: wall {wall:.2f} s = {wall / floor:.2f}x SYRK floor (passes: "
          f"{', '.join(f'{p[0]:.2f}' for p in passes)}); CPU user {user:.2f} s + system {system:.2f} s")
    print(f"parts, CPU seconds for all {rows:,} rows (one thread, one BLAS thread), and as a share of the "
          f"SYRK floor when spread over {cores} cores:")
    for name, secs in cpu.items():
        print(f"  {name:34s} {secs:6.2f}  ({secs / cores / floor:.2f}x)")
    print(f"  {'allocation of the kept features':34s} {alloc_wall:6.2f}  wall ({alloc_sys:.2f} s system)")
    ideal = sum(cpu.values()) / cores + alloc_wall
    print(f"sum of the parts {sum(cpu.values()):.2f} CPU s; ideal on {cores} cores {ideal:.2f} s = "
          f"{ideal / floor:.2f}x SYRK floor; the pass / ideal = {wall / ideal:.2f}; "
          f"load now {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
