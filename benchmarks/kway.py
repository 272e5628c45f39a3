"""K-way PromptSplit (one joint fit) against K(K-1)/2 separate pairwise PromptSplit fits.

    python benchmarks/kway.py                                  # the table of the closing note (long)
    python benchmarks/kway.py --quick                          # small sizes, a smoke run
    python benchmarks/kway.py --routes rff --ks 2 4 8 --n-rff 30000 --pairs-timed 2
    python benchmarks/kway.py --small-sweep                    # K = 2, 4, 8, 20, 50 sets of 20 rows, tested
    python benchmarks/kway.py --large                          # K = 8 x 5,000 exact against two-way on 10,000

``--small-sweep``: K sets of ``--rows`` rows (default 20) through the code path of the CLI's ``compare``
(its cost check, then ``KWaySplit`` with the command's defaults: exact, 200 permutations), 32-d prompts and
outputs; per K the seconds (fit, test, total; the process's CPU seconds, all threads), the process's peak
resident memory so far (ru_maxrss: K ascending) and the test's estimated seconds
(``KWaySplit.test_seconds``, what ``compare`` says or refuses on).

``--large``: K = 8 sets of 5,000 rows (exact, the command's defaults) against one two-way exact fit on
10,000 rows, in one run: time, CPU time, their ratio and each fit's peak memory (the larger of the peak
resident set above the one at its start and tracemalloc's peak, ``memory.py``: the joint Gram matrix and the
factors are memory maps that tracemalloc alone, used before, did not see). Above
20,000 rows the K-way fit runs on per-set moments in a shared subspace (memory linear in K, docs/kway.md);
a joint-Gram K-way fit is skipped above ``--max-gram-gb``.

Data: K synthetic models on 50 shared prompts (384-d prompts, 384-d outputs, a mixture whose components
shift a little from model to model), n samples each. Both sides run with ``permutations=0`` (the spectra,
distances and scores; the permutation test is timed separately by ``--permutations``) and 10 modes per sign.

* K-way: ``KWaySplit(...).fit(sets)``: every pair and (K >= 3) each model against the pooled rest.
* separate: ``PromptSplit(...).fit(a, b)`` for ``--pairs-timed`` pairs (default 2), the mean time multiplied
  by K(K-1)/2 (said in the table: 'extrapolated from N pairs'); K(K-1)/2 separate runs give no one-vs-rest
  comparison at all.

Prints the machine's BLAS rate measured at the start (``machine.py``), the load average, and one row per
(route, K): seconds of both and their ratio (separate / K-way). Run it under ``nice``: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import time

import machine  # type: ignore[import-not-found]
import numpy as np
from memory import larger, mib_text, resident_peak, traced_peak  # type: ignore[import-not-found]

from promptprism import KWaySplit, PairedSet, PromptSplit


def models(k: int, n: int, *, prompts: int = 50, dim: int = 384, seed: int = 0) -> list[PairedSet]:
    """K sets on the same prompts: prompt embeddings fixed per prompt; outputs = a prompt-dependent centre,
    one of 4 components with model-specific weights, plus noise."""
    rng = np.random.default_rng(seed)
    t = rng.normal(size=(prompts, dim)).astype(np.float32)
    centres = rng.normal(size=(4, dim)).astype(np.float32)
    lab = np.arange(n) % prompts
    out = []
    for i in range(k):
        w = np.roll([0.4, 0.3, 0.2, 0.1], i % 4)
        comp = rng.choice(4, size=n, p=w)
        o = 0.5 * t[lab] + centres[comp] + rng.normal(size=(n, dim)).astype(np.float32)
        out.append(PairedSet(t[lab], o, prompts=[f"prompt {g}" for g in lab], name=f"model {i}"))
    return out


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def row(route: str, k: int, n: int, pairs_timed: int, permutations: int, features: int) -> tuple:
    sets = models(k, n)
    opts = dict(method=route, n_modes=10, permutations=permutations, seed=0)
    if route == "rff":
        opts["n_features"] = features
    kway = timed(lambda: KWaySplit(**opts).fit(sets))
    n_pairs = k * (k - 1) // 2
    todo = [(a, b) for a in range(k) for b in range(a + 1, k)][: max(1, min(pairs_timed, n_pairs))]
    each = [timed(lambda a=a, b=b: PromptSplit(**opts, device="cpu").fit(sets[a], sets[b]))
            for a, b in todo]
    separate = float(np.mean(each)) * n_pairs
    how = "measured" if len(todo) == n_pairs else f"extrapolated from {len(todo)} pairs"
    return route, k, n, kway, separate, how


def small_sweep(ks: list[int], rows: int) -> None:
    """K sets of ``rows`` rows each, as ``promptprism compare`` runs them (cost check + default fit)."""
    import resource

    from promptprism.cli.compare import check_cost

    print(f"{'K':>3} {'rows':>5} {'fit s':>6} {'test s':>7} {'total s':>8} {'cpu s':>7} {'peak MB':>8} "
          f"{'estimate s':>10}")
    for k in ks:
        sets = models(k, rows, prompts=10, dim=32)
        est = KWaySplit(seed=0)
        t0, c0 = time.perf_counter(), time.process_time()
        check_cost(est, [len(s) for s in sets], force=True)
        res = est.fit(sets)
        total, cpu = time.perf_counter() - t0, time.process_time() - c0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # (Linux: kB; the process so far)
        t = res.timings
        guess = est.test_seconds([len(s) for s in sets])
        print(f"{k:>3} {k * rows:>5} {t['fit_s']:>6.2f} {t['significance_s']:>7.2f} {total:>8.2f} "
              f"{cpu:>7.2f} {peak:>8.1f} {guess:>10.1f}  (load {os.getloadavg()[0]:.1f})", flush=True)


def measured(fn) -> tuple[float, float, float | None]:
    """(wall s, process CPU s, peak MiB: the larger of the resident set's rise during ``fn`` and
    tracemalloc's peak in one more run, :mod:`memory`)."""
    c0 = time.process_time()
    _, wall, resident = resident_peak(fn)
    cpu = time.process_time() - c0
    return wall, cpu, larger(resident, traced_peak(fn))


def large(k: int, n: int, max_gram_gb: float) -> None:
    """K sets of n rows (exact, the command's defaults, 200 permutations) against one two-way exact fit on
    2n rows (n per side, 200 permutations), 32-d prompts and outputs, in one run: seconds, CPU seconds,
    their ratio, and each fit's peak memory (:func:`measured`). Above ``kway_subspace.SUBSPACE_MIN_ROWS``
    rows the K-way fit runs on the shared subspace (no joint Gram matrix); below, on the joint Gram matrix,
    skipped when that (8 (K n)^2 bytes) is over ``max_gram_gb``."""
    import resource

    from promptprism.methods.promptsplit import kway_subspace

    sets = models(k, n, prompts=50, dim=32)
    opts = dict(method="exact", seed=0)
    fits: dict = {}
    two, two_cpu, two_mb = measured(lambda: fits.update(two=PromptSplit(**opts, device="cpu").fit(*sets[:2])))
    print(f"two-way exact, {2 * n:,} rows: {two:.1f} s ({two_cpu:.1f} s cpu), "
          f"peak {mib_text(two_mb, 0)} MiB  "
          f"(load {os.getloadavg()[0]:.1f}); {_steps(fits['two'].timings)}", flush=True)
    shared = kway_subspace.wanted(k, k * n, "exact", True)
    need = 8 * (k * n) ** 2 / 1e9
    if not shared and need > max_gram_gb:
        print(f"K = {k} x {n:,} exact: skipped, its joint Gram matrix of {k * n:,} samples needs "
              f"{need:.1f} GB (--max-gram-gb {max_gram_gb:g})")
        return
    kway, kway_cpu, kway_mb = measured(lambda: fits.update(kway=KWaySplit(**opts).fit(sets)))
    how = (f"shared subspace of rank <= {kway_subspace.SUBSPACE_RANK}" if shared else "joint Gram matrix")
    print(f"K = {k} x {n:,} exact ({how}): {kway:.1f} s ({kway_cpu:.1f} s cpu), "
          f"peak {mib_text(kway_mb, 0)} MiB "
          f"(joint Gram would be {need:.1f} GB) = {kway / two:.2f}x the two-way fit wall, "
          f"{kway_cpu / two_cpu:.2f}x cpu  (load {os.getloadavg()[0]:.1f}; process max RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:,.0f} MB); "
          f"{_steps(fits['kway'].timings)}", flush=True)


def _steps(timings: dict) -> str:
    """The fit's wall seconds per step (Gram or factor, eigen-solve, test)."""
    keys = ("gram_s", "eigen_s", "significance_s")
    return ", ".join(f"{k[:-2]} {timings[k]:.1f} s" for k in keys if k in timings)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--routes", nargs="+", default=["exact", "rff"], choices=["exact", "rff"])
    ap.add_argument("--ks", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--n-exact", type=int, default=5000)
    ap.add_argument("--n-rff", type=int, default=30000)
    ap.add_argument("--features", type=int, default=2000)
    ap.add_argument("--pairs-timed", type=int, default=2)
    ap.add_argument("--permutations", type=int, default=0)
    ap.add_argument("--max-exact-samples", type=int, default=20000,
                    help="skip exact rows whose joint Gram matrix would hold more samples (8 N^2 bytes)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--small-sweep", action="store_true",
                    help="K sets of --rows rows, as `compare` runs them")
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--large", action="store_true",
                    help="K = --large-k sets of --large-n rows (exact) against two-way exact on 2n rows")
    ap.add_argument("--large-k", type=int, default=8)
    ap.add_argument("--large-n", type=int, default=5000)
    ap.add_argument("--max-gram-gb", type=float, default=4.0)
    args = ap.parse_args()
    if args.large:
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        large(args.large_k, args.large_n, args.max_gram_gb)
        return
    if args.small_sweep:
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        small_sweep(args.ks if args.ks != [2, 4, 8] else [2, 4, 8, 20, 50], args.rows)
        return
    if args.quick:
        args.n_exact, args.n_rff, args.features, args.ks = 500, 2000, 400, [2, 3]
    rates = machine.measure(quick=args.quick)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"{machine.describe(rates)}")
    print(f"{'route':>5} {'K':>2} {'n each':>7} {'K-way s':>8} {'separate s':>10} {'ratio':>6}  "
          "separate runs")
    for route in args.routes:
        for k in args.ks:
            n = args.n_exact if route == "exact" else args.n_rff
            if route == "exact" and k * n > args.max_exact_samples:
                print(f"{route:>5} {k:>2} {n:>7} {'skipped':>8}: joint Gram of {k * n:,} samples needs "
                      f"{8 * (k * n) ** 2 / 1e9:.1f} GB", flush=True)
                continue
            r = row(route, k, n, args.pairs_timed, args.permutations, args.features)
            print(f"{r[0]:>5} {r[1]:>2} {r[2]:>7} {r[3]:>8.1f} {r[4]:>10.1f} {r[4] / r[3]:>6.2f}  {r[5]}",
                  flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
