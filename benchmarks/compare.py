"""promptprism against the papers' straightforward baselines and against the machine's own limit, in one run.

    python benchmarks/compare.py                      # the full table (the baselines take most of the time)
    python benchmarks/compare.py --quick              # small sizes (a smoke run: ~25 s on 2 busy cores)
    python benchmarks/compare.py --sizes 2500 5000    # n = m for the PromptSplit rows
    python benchmarks/compare.py --tasks exact rff    # a subset of: exact rff pixel-cka scendi
    python benchmarks/compare.py --device cuda        # the PromptSplit rows on a GPU (default auto)

One row per (task, size). Each row gives promptprism's time, the time of the straightforward baseline from
``baselines.py`` on the same data in the same run (ratio = baseline / promptprism), the job's essential flop
count and the *floor*: the seconds this machine needs for those flops at the BLAS rates ``machine.py``
measures at the start and at the end of the run (the faster of the two; ``--rates`` adds a measurement
from a quiet moment), in float32 and in float64. "% of peak" = floor / promptprism's time, so
100 % would be the hardware's limit.

Rows (data are synthetic mixtures whose two sets differ, so the modes are real):

* ``exact`` - PromptSplit(method='exact', permutations=0), top 10 modes per sign (20 in all), n = m,
  384-d prompts and 384-d outputs, gaussian kernels at the median bandwidth (no permutation test in any
  PromptSplit row: the baselines compute the spectrum only). Baseline: eq. 3's block kernel matrix and a dense
  ``numpy.linalg.eig`` of it. Above ``--eig-max`` samples the eig is timed on eq. 3's matrix of the first
  ``--eig-max`` / 2 samples of each set and scaled by (N / N0)^3 (the building of the full matrix is always
  timed in full). Flops: the Gram matrix as a SYRK over the 768 concatenated coordinates, N (N + 1) 768.
* ``rff`` - PromptSplit(method='rff', n_features=r), same data. Baseline: Lambda_r summed one outer
  product per sample (``--rff-batch`` 1) in a Python loop, timed on ``--rff-probe`` samples and scaled to
  N = n + m; then a dense ``numpy.linalg.eigh`` of the r x r matrix, timed in full. Flops: the covariance
  SYRK N r (r + 1) plus the projection onto the frequencies, 2 N 768 (r / 2).
* ``rff-cli`` - the same job as the whole command-line process (``promptprism split --method rff
  --permutations 0 --no-report --quiet``: start-up, reading the .npz files, writing result.json), against
  the same baseline; the median of ``--cli-repeat`` runs (3) after one not counted, run as an installed
  package runs (from compiled bytecode).
* ``pixel-cka`` - the 784 x 784 pixel CKA matrix of n 28 x 28 digit images (scikit-learn digits upscaled)
  in mini-batches of ``--cka-block``. Baseline: the nested loop over pixel pairs, timed on ``--cka-pairs``
  random pairs and scaled to all d^2 pairs. Flops: per block, the symmetric product of the d centred Gram
  matrices' upper triangles, d (d + 1) b (b + 1) / 2.
* ``scendi`` - Scendi(kernel='gaussian'), one shared set of 2 x ``--scendi-freq`` random Fourier features
  for prompts and outputs (the reference implementation's CLIP set-up), 512-d embeddings, 100 prompts x
  n / 100 outputs. Baseline: dense covariance, dense pseudo-inverse of C_TT and dense eigen-decompositions
  of Lambda_I, Lambda_T and C_II. Flops: the joint covariance SYRK n (2r) (2r + 1) plus the projections.

"CPU s" is the CPU time promptprism used (all its threads; for the CLI row, the child process): on a busy
machine, where wall times stretch with the load, CPU s / cores is a rough estimate of the quiet wall time
(rough: BLAS threads that spin while waiting for a core add CPU time).

"agreement" is the largest absolute difference between the two's numbers where the baseline ran in full on
the same problem (top eigenvalues; CKA entries on the timed pairs; the Scendi, Scendi_T and Vendi scores). For
the random-feature rows the two draw their frequencies independently, so they agree up to the random-feature
error, not to round-off. The ``target`` column checks the goals set for a quiet 2-core machine; on a loaded
machine the times (and the measured peak) move, so the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# promptprism's public API: every name this benchmark uses from the library is imported here, in one place
from promptprism import PairedSet, PromptSplit, Scendi, __version__, pixel_cka_matrix

#: the command-line entry point (the ``promptprism`` console script runs this)
CLI = [sys.executable, "-c", "from promptprism.cli import run; run()"]
#: PromptSplit options every row sets: no permutation test (the baselines compute the spectrum only)
PROMPTSPLIT_OPTIONS = {"permutations": 0}
CLI_OPTIONS = ["--permutations", "0", "--no-report", "--quiet"]

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baselines  # noqa: E402
import machine  # noqa: E402

DIM = 384  # PromptSplit rows: prompt and output embedding dimension (a sentence model's)
SCENDI_DIM = 512  # Scendi rows: CLIP ViT-B/32's dimension
N_MODES = 10  # per sign


# ------------------------------------------------------------------------------------------------- data


def promptsplit_sets(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(t_x, x, t_y, y), n rows each: 20 prompt clusters; the reference answers clusters 0-2 differently."""
    rng = np.random.default_rng(seed)
    centres, out_centres = rng.standard_normal((20, DIM)), rng.standard_normal((20, DIM))
    sets = []
    for shifted in (False, True):
        c = rng.integers(0, 20, n)
        t = centres[c] + 0.5 * rng.standard_normal((n, DIM))
        oc = out_centres[c].copy()
        if shifted:
            moved = c < 3
            oc[moved] = out_centres[(c[moved] + 7) % 20]
        sets += [t.astype(np.float32), (oc + 0.7 * rng.standard_normal((n, DIM))).astype(np.float32)]
    return tuple(sets)


def digit_images(n: int, size: int, seed: int = 0) -> np.ndarray:
    """n scikit-learn digits (8 x 8, values in [0, 1]) upscaled to size x size."""
    from scipy import ndimage
    from sklearn.datasets import load_digits

    x = load_digits().images / 16.0
    x = x[np.random.default_rng(seed).choice(len(x), size=n, replace=len(x) < n)]
    return x if size == 8 else np.clip(ndimage.zoom(x, (1, size / 8, size / 8), order=1), 0, 1)


def scendi_set(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(prompts, outputs), 512-d: 100 prompts, each output = its prompt + one of 10 styles + noise."""
    rng = np.random.default_rng(seed)
    bank, styles = rng.standard_normal((100, SCENDI_DIM)), rng.standard_normal((10, SCENDI_DIM))
    which = np.arange(n) % 100
    outputs = bank[which] + 0.8 * styles[rng.integers(0, 10, n)] + 0.5 * rng.standard_normal((n, SCENDI_DIM))
    return bank[which].astype(np.float32), outputs.astype(np.float32)


def median_distance(a: np.ndarray, max_rows: int = 1000, seed: int = 0) -> float:
    """Median pairwise Euclidean distance of (a seeded subsample of) the rows."""
    from scipy.spatial.distance import pdist

    idx = np.random.default_rng(seed).permutation(len(a))[:max_rows]
    return float(np.median(pdist(np.asarray(a[idx], dtype=np.float64))))


# ------------------------------------------------------------------------------------------------- rows


@dataclass
class Row:
    """One line of the table."""

    task: str
    size: str
    promptprism_s: float
    baseline_s: float
    flops: list[tuple[float, str]]  #: (flops, BLAS kind) parts of the essential work
    how: str = ""  #: how the baseline time was obtained (footnote)
    agreement: float | None = None
    target: str = ""
    cpu_s: float | None = None  #: CPU seconds promptprism used (all threads; the CLI process: its children)
    #: the goal "within this many times the float32 floor", judged with the floor the table prints
    max_floor_ratio: float | None = None


def _cpu_seconds() -> float:
    """CPU time of this process (all threads) and of its finished child processes."""
    own = time.process_time()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own + kids.ru_utime + kids.ru_stime


def _cpu_timed(fn, *args, **kwargs):
    """(result, wall seconds, CPU seconds) of one call."""
    c0 = _cpu_seconds()
    out, wall = _timed(fn, *args, **kwargs)
    return out, wall, _cpu_seconds() - c0


def _timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def _signed_top(vals: np.ndarray, k: int) -> np.ndarray:
    vals = np.asarray(vals)
    return np.r_[np.sort(vals[vals > 0])[::-1][:k], np.sort(vals[vals < 0])[:k]]


def _top_diff(lib: np.ndarray, base: np.ndarray, k: int) -> float | None:
    a, b = _signed_top(lib, k), _signed_top(base, k)
    return float(np.abs(a - b).max()) if a.shape == b.shape and a.size else None


_EIG_CACHE: dict[int, float] = {}


def row_exact(n: int, args) -> Row:
    """PromptSplit exact route against eq. 3's block matrix + dense eig."""
    t_x, x, t_y, y = promptsplit_sets(n, args.seed)
    est = PromptSplit(method="exact", n_modes=N_MODES, seed=args.seed, device=args.device,
                      **PROMPTSPLIT_OPTIONS)
    res, pp, cpu = _cpu_timed(est.fit, PairedSet(t_x, x, name="test"), PairedSet(t_y, y, name="reference"))
    sig = {"sigma_prompt": res.config["sigma_prompt"], "sigma_output": res.config["sigma_output"]}
    big_n = 2 * n
    agreement = None
    k, build = _timed(baselines.block_kernel_matrix, t_x, x, t_y, y, **sig)
    if big_n <= args.eig_max:
        vals, eig = _timed(baselines.block_eig_spectrum, k)
        _EIG_CACHE[big_n] = eig
        base = build + eig
        how = f"measured in full (block matrix {build:.1f} s, eig {eig:.1f} s)"
        agreement = _top_diff(np.asarray(res.eigenvalues), vals, N_MODES)
    else:
        del k
        n0 = args.eig_max // 2
        if 2 * n0 not in _EIG_CACHE:
            k0 = baselines.block_kernel_matrix(t_x[:n0], x[:n0], t_y[:n0], y[:n0], **sig)
            _EIG_CACHE[2 * n0] = _timed(baselines.block_eig_spectrum, k0)[1]
            del k0
        eig0 = _EIG_CACHE[2 * n0]
        base = build + eig0 * (big_n / (2 * n0)) ** 3
        how = (f"block matrix built in full ({build:.1f} s); eig timed at N0 = {2 * n0} ({eig0:.1f} s) and "
               f"scaled by (N/N0)^3")
    ratio = base / pp
    target = f">= 20x baseline: {'met' if ratio >= 20 else 'NOT met'}" if n == 5000 else ""
    return Row("exact top-20", f"n=m={n:,}", pp, base, [(machine.syrk_flops(big_n, 2 * DIM), "syrk")],
               how=how, agreement=agreement, target=target, cpu_s=cpu)


def _rff_parts(n: int, r: int) -> list[tuple[float, str]]:
    big_n = 2 * n
    return [(machine.syrk_flops(r, big_n), "syrk"), (machine.gemm_flops(big_n, r // 2, 2 * DIM), "gemm")]


def _rff_baseline(t_x, x, t_y, y, sig: dict, r: int, args) -> tuple[float, str, np.ndarray | None]:
    w = baselines.product_rff_frequencies(DIM, DIM, r // 2, seed=args.seed, **sig)
    big_n = len(x) + len(y)
    probe = None if args.rff_probe >= big_n else args.rff_probe
    (lam, done), loop = _timed(baselines.rff_outer_loop, t_x, x, t_y, y, frequencies=w,
                               batch=args.rff_batch, max_samples=probe)
    vals, eig = _timed(baselines.rff_spectrum, lam)
    per = "one outer product per sample" if args.rff_batch == 1 else f"batches of {args.rff_batch} samples"
    if done == big_n:
        return loop + eig, f"{per}, measured in full; eigh {eig:.1f} s", vals
    loop_all = loop * big_n / done
    return (loop_all + eig, f"{per}: {loop:.1f} s for {done} samples, scaled to {big_n:,}; eigh of the "
            f"{r} x {r} matrix measured ({eig:.1f} s)", None)


def row_rff(n: int, r: int, args) -> list[Row]:
    """PromptSplit rff route (library call and, unless --no-cli, the CLI process) against the outer loop."""
    t_x, x, t_y, y = promptsplit_sets(n, args.seed)
    est = PromptSplit(method="rff", n_features=r, n_modes=N_MODES, seed=args.seed, device=args.device,
                      **PROMPTSPLIT_OPTIONS)
    res, pp, cpu = _cpu_timed(est.fit, PairedSet(t_x, x, name="test"), PairedSet(t_y, y, name="reference"))
    sig = {"sigma_prompt": res.config["sigma_prompt"], "sigma_output": res.config["sigma_output"]}
    base, how, vals = _rff_baseline(t_x, x, t_y, y, sig, r, args)
    agreement = _top_diff(np.asarray(res.eigenvalues), vals, N_MODES) if vals is not None else None
    parts = _rff_parts(n, r)
    rows = [Row("rff", f"n=m={n:,} r={r}", pp, base, parts, how=how, agreement=agreement, cpu_s=cpu)]
    if args.cli:
        with tempfile.TemporaryDirectory() as tmp:
            for name, (t, z) in (("test", (t_x, x)), ("ref", (t_y, y))):
                np.savez(Path(tmp) / f"{name}.npz", prompt_embeddings=t, output_embeddings=z)
            cmd = CLI + ["split", str(Path(tmp) / "test.npz"), str(Path(tmp) / "ref.npz"), "--out",
                         str(Path(tmp) / "out"), "--method", "rff", "--features", str(r), "--seed",
                         str(args.seed), "--device", args.device] + CLI_OPTIONS
            env = _installed_like(Path(tmp) / "pycache")
            runs = []
            for i in range(args.cli_repeat + 1):  # (the first, not counted, writes the bytecode cache)
                proc, secs, cpu = _cpu_timed(subprocess.run, cmd, capture_output=True, text=True, check=False,
                                             env=env)
                if proc.returncode != 0:
                    raise RuntimeError(f"the CLI failed: {proc.stderr.strip()[-500:]}")
                if i:
                    runs.append((secs, cpu))
        runs.sort()
        # the median (a virtual machine's page faults vary run to run)
        secs, cpu = statistics.median(s for s, _ in runs), statistics.median(c for _, c in runs)
        spread = ", ".join(f"{s:.2f}" for s, _ in runs)
        rows.append(Row("rff-cli", f"n=m={n:,} r={r}", secs, base, parts,
                        how=f"the same baseline as 'rff'; promptprism: the median of {len(runs)} runs "
                            f"({spread} s)",
                        cpu_s=cpu, max_floor_ratio=1.5 if (n, r) == (30_000, 3000) else None))
    return rows


def _installed_like(cache: Path) -> dict[str, str]:
    """The environment of the timed CLI processes: Python as it runs an installed package, from compiled
    bytecode (pip compiles a package at install), the cache kept under ``cache`` rather than in the source
    tree, even where PYTHONDONTWRITEBYTECODE is set (compiling every module again costs ~0.15 s a run)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def row_pixel_cka(n: int, size: int, args) -> Row:
    """pixel_cka_matrix against the nested loop over pixel pairs."""
    images = digit_images(n, size, args.seed)
    d, b = size * size, args.cka_block
    gamma = 1.0 / median_distance(images.reshape(n, -1), seed=args.seed)
    m, pp, cpu = _cpu_timed(pixel_cka_matrix, images, gamma=gamma, block_size=b, max_images=None,
                            seed=args.seed)
    rng = np.random.default_rng(args.seed)
    if args.cka_pairs >= d * d:
        pairs = [(i, j) for i in range(d) for j in range(d)]
    else:
        pairs = [tuple(map(int, p)) for p in rng.integers(0, d, (args.cka_pairs, 2))]
    loop, t_sub = _timed(baselines.pixel_cka_nested_loop, images, gamma=gamma, block_size=b, seed=args.seed,
                         pairs=pairs)
    base = t_sub * d * d / len(pairs)
    agreement = max(abs(loop[i, j] - m[i, j]) for i, j in pairs)
    how = ("all pairs, measured in full" if len(pairs) == d * d else
           f"{t_sub:.1f} s for {len(pairs)} random pairs, scaled to d^2 = {d * d:,}")
    n_blocks = n // b
    flops = n_blocks * machine.syrk_flops(d, b * (b + 1) // 2)
    return Row("pixel-cka", f"n={n:,} {size}x{size} b={b}", pp, base, [(flops, "syrk")], how=how,
               agreement=agreement, cpu_s=cpu)


def row_scendi(n: int, n_freq: int, args) -> Row:
    """Scendi (gaussian, shared frequencies) against dense feature-space linear algebra."""
    prompts, outputs = scendi_set(n, args.seed)
    sigma = median_distance(np.concatenate([prompts, outputs]), seed=args.seed)
    est = Scendi(kernel="gaussian", n_features=2 * n_freq, shared_frequencies=True, sigma_prompt=sigma,
                 sigma_output=sigma, seed=args.seed, gamma_estimator="in-sample")  # the baseline's estimator
    res, pp, cpu = _cpu_timed(est.fit, PairedSet(prompts, outputs, name="set"))
    w = np.random.default_rng(args.seed).standard_normal((SCENDI_DIM, n_freq)) / sigma
    scores, base = _timed(baselines.scendi_dense, prompts, outputs, kernel="gaussian", frequencies=w)
    agreement = max(abs(getattr(res, k) - v) for k, v in scores.items())
    r = 2 * n_freq
    flops = [(machine.syrk_flops(2 * r, n), "syrk"), (2 * machine.gemm_flops(n, n_freq, SCENDI_DIM), "gemm")]
    target = ""
    limit = {1000: 5.0, 10_000: 20.0}.get(n) if n_freq == 2500 else None
    if limit is not None:
        target = f"< {limit:.0f} s: {'met' if pp < limit else 'NOT met'}"
    return Row("scendi gaussian", f"n={n:,} 2x{n_freq}", pp, base, flops, how="measured in full",
               agreement=agreement, target=target, cpu_s=cpu)


# ------------------------------------------------------------------------------------------------ table


HEADER = ("| task | size | promptprism s | CPU s | baseline s | ratio | GFLOP | floor f32 s | % f32 peak | "
          "floor f64 s | % f64 peak | agreement | target |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")


def format_row(k: int, row: Row, rates: machine.Rates) -> str:
    """Row ``k`` of the table (its footnote is [k])."""
    floor = {dt: sum(machine.floor_seconds(f, dt, kind=kind, rates=rates) for f, kind in row.flops)
             for dt in machine.DTYPES}
    gflop = sum(f for f, _ in row.flops) / 1e9
    agree = "-" if row.agreement is None else f"{row.agreement:.1e}"
    target = row.target
    if row.max_floor_ratio is not None:  # (the floor of this table: the rates may have grown since the row)
        ratio = row.promptprism_s / floor["float32"]
        target = (f"<= {row.max_floor_ratio}x f32 floor: {ratio:.2f}x, "
                  f"{'met' if ratio <= row.max_floor_ratio else 'NOT met'}")
    cpu = "-" if row.cpu_s is None else f"{row.cpu_s:.2f}"
    return (f"| {row.task} | {row.size} | {row.promptprism_s:.2f} | {cpu} | {row.baseline_s:.3g} [{k}] | "
            f"{row.baseline_s / row.promptprism_s:.1f}x | {gflop:.3g} | {floor['float32']:.2f} | "
            f"{100 * floor['float32'] / row.promptprism_s:.1f}% | {floor['float64']:.2f} | "
            f"{100 * floor['float64'] / row.promptprism_s:.1f}% | {agree} | {target} |")


def plan(args) -> list[tuple]:
    """(task, arguments) in the order they run."""
    q = args.quick
    sizes = args.sizes or ([300] if q else [2500, 5000, 30_000])
    jobs: list[tuple] = []
    if "exact" in args.tasks:
        jobs += [("exact", n) for n in sizes if n <= args.exact_max]
    if "rff" in args.tasks:
        jobs += [("rff", n, args.features or (400 if q else 3000)) for n in sizes if n > args.exact_max or q
                 or args.sizes]
    if "pixel-cka" in args.tasks:
        jobs += [("pixel-cka", 200 if q else 1000, 8 if q else 28)]
    if "scendi" in args.tasks:
        jobs += [("scendi", n, args.scendi_freq or (200 if q else 2500))
                 for n in (args.scendi_sizes or ([300] if q else [1000, 10_000]))]
    return jobs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    ap.add_argument("--sizes", type=int, nargs="+", help="n = m for the PromptSplit rows (exact up to "
                    "--exact-max, rff at every size given)")
    ap.add_argument("--tasks", nargs="+", default=["exact", "rff", "pixel-cka", "scendi"],
                    choices=["exact", "rff", "pixel-cka", "scendi"])
    ap.add_argument("--exact-max", type=int, default=5000, help="largest n for the exact rows")
    ap.add_argument("--eig-max", type=int, default=5000,
                    help="largest N = n + m whose dense eig the baseline runs in full (above: timed at "
                         "this N and scaled by N^3)")
    ap.add_argument("--features", type=int, help="r for the rff rows (default 3000; --quick 400)")
    ap.add_argument("--rff-probe", type=int, default=400, help="samples the per-sample loop is timed on")
    ap.add_argument("--rff-batch", type=int, default=1, help="samples per outer-product step of the baseline")
    ap.add_argument("--cli", action=argparse.BooleanOptionalAction, default=None,
                    help="also time the whole CLI process for rff (default: on, off with --quick)")
    ap.add_argument("--cli-repeat", type=int, default=3, help="CLI runs per rff-cli row (the median shown)")
    ap.add_argument("--cka-block", type=int, help="images per CKA mini-batch (default 100; --quick 50)")
    ap.add_argument("--cka-pairs", type=int, default=300, help="pixel pairs the nested loop is timed on")
    ap.add_argument("--scendi-sizes", type=int, nargs="+", help="n for the Scendi rows (default 1000 10000)")
    ap.add_argument("--scendi-freq", type=int, help="RFF frequencies D (2D features per modality; 2500)")
    ap.add_argument("--rates", help="GFLOP/s 'GEMM32,GEMM64,SYRK32,SYRK64' measured by machine.py on a quiet "
                    "machine; the floor uses the best of these and this run's measurements")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="auto", help="PromptSplit's device (auto, cpu, torch, cuda, ...; "
                                                     "docs/devices.md): where the exact and rff rows run")
    args = ap.parse_args(argv)
    args.cli = (not args.quick) if args.cli is None else args.cli
    if args.cli_repeat < 1:
        ap.error(f"--cli-repeat must be at least 1, got {args.cli_repeat}")
    args.cka_block = args.cka_block or (50 if args.quick else 100)
    if args.quick and args.rff_probe > 200:
        args.rff_probe = 10**9  # small problems: the loop runs in full
    print(f"# promptprism {__version__} against the papers' baselines; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"{platform.processor() or platform.machine()}, {len(os.sched_getaffinity(0))} CPUs, "
          f"numpy {np.__version__}")
    print(f"# command: python benchmarks/compare.py {' '.join(sys.argv[1:] if argv is None else argv)}")
    print(f"# load average before: {os.getloadavg()[0]:.2f}", flush=True)
    rates = machine.measure(quick=args.quick)
    print(f"# measured at the start: {machine.describe(rates)}", flush=True)
    if args.rates:
        given = machine.parse_rates(args.rates)
        print(f"# given with --rates:     {machine.describe(given)}")
        rates = machine.best(rates, given)
    args.rates = rates
    print("# rows as they are measured (floors from the rates so far; the final table follows):",
          file=sys.stderr)
    print(HEADER, file=sys.stderr, flush=True)
    rows: list[Row] = []
    for job in plan(args):
        t0 = time.perf_counter()
        if job[0] == "exact":
            new = [row_exact(job[1], args)]
        elif job[0] == "rff":
            new = row_rff(job[1], job[2], args)
        elif job[0] == "pixel-cka":
            new = [row_pixel_cka(job[1], job[2], args)]
        else:
            new = [row_scendi(job[1], job[2], args)]
        for row in new:  # each row as soon as it is measured: a long run that is stopped keeps its rows
            rows.append(row)
            print(format_row(len(rows), row, rates), file=sys.stderr, flush=True)
        print(f"# done {job} in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    end = machine.measure(quick=args.quick, fresh=True)
    print(f"# measured at the end:   {machine.describe(end)}")
    rates = machine.best(rates, end)
    print(f"# floors below use the best of these: {machine.describe(rates)}")
    print(HEADER)
    for k, row in enumerate(rows, 1):
        print(format_row(k, row, rates))
    print()
    for k, row in enumerate(rows, 1):
        print(f"[{k}] {row.task} {row.size}: baseline {row.how}")
    print(f"# load average after: {os.getloadavg()[0]:.2f}; ratio = baseline s / promptprism s; "
          f"% peak = floor / promptprism s")
    return 0 if all(math.isfinite(r.promptprism_s) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
