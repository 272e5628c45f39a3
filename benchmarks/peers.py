"""promptprism against the peers users run today, on the same data, in one run: times, ratios, agreement.

    python benchmarks/peers.py                                # both sections at the issue's sizes (long)
    python benchmarks/peers.py --only split --sizes 2500      # the exact command against KEN
    python benchmarks/peers.py --only rff --rff-sizes 2000 30000   # the rff command against FINC
    python benchmarks/peers.py --only metrics --metrics-n 10000 --dims 512
    python benchmarks/peers.py --only metrics --metrics-n 50000 --dims 512 --prdc-fit 10000 15000 20000
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/peers.py ...   # one thread on both sides

Install the peers first: ``pip install -e '.[bench]'`` (``prdc``, ``clean-fid``, ``torchmetrics``, ``torch``).

**split** (n = m, 32-d prompts, 64-d outputs, 20 prompt topics; the reference answers topics 0-2
differently, the planted difference). promptprism: the whole default exact command as a process,
``promptprism split TEST REF --method exact --out DIR`` (significance test with its defaults, report.html
written), from compiled bytecode after an untimed small run; also with ``--no-report``. Its parts come from
result.json's ``timings``. KEN (Zhang et al., "An interpretable evaluation of entropy-based novelty of
generative models", ICML 2024): **reimplemented** here from its published code (github.com/buyeah1109/KEN,
``KEN/metric/algorithm_utils.py``: ``normalized_gaussian_kernel`` in row batches of 128, ``build_matrix``,
``KEN_by_eigendecomposition``), not vendored: the (n+m) x (n+m) block matrix [[K_XX / n, sqrt(eta) K_XY /
sqrt(nm)], [-sqrt(eta) K_YX / sqrt(nm), -eta K_YY / m]] in float32 torch and every eigenvalue by
``torch.linalg.eigvals``. Its kernel is the gaussian (sigma 1) on [t / sigma_t ; z / sigma_z] with
promptprism's bandwidths from result.json: PromptSplit's product kernel (SPEC), so both compute the spectrum
of D G (eq. 3) and the top 10 eigenvalues of each sign must agree (KEN computes in float32). Above
``--ken-max`` samples per set KEN's kernel is timed in full and its eigvals at ``--ken-max`` and scaled by
the cube of the size ratio (said on the row). Each row also gives both sides' CPU seconds (all threads; the
CLI's from its process's rusage, KEN's from ``time.process_time``, its eigvals part scaled as its wall time
is): on a loaded machine the wall times depend on what share of the CPUs each side happened to get.

**rff** (the split data, n = m, r random features). promptprism: the default rff command as a process,
``promptprism split TEST REF --method rff --features R --out DIR`` (test and report with their defaults),
also with ``--no-report``. FINC (Zhang, Jalali, Li & Farnia, "Identification of novel modes in generative
models via Fourier-based differential clustering", 2024: the random-Fourier-feature version of KEN):
**reimplemented** here from its published code (github.com/buyeah1109/FINC,
``src/metric/algorithm_utils.py``: ``cov_rff2`` with batches of 128 outer products by ``torch.bmm``,
``cov_diff_rff``, then ``torch.linalg.eigh`` of C_x - eta C_y), not vendored, fed promptprism's seeded
frequencies and bandwidths on w = [t / sigma_t ; z / sigma_z], so the top eigenvalues of each sign must agree
to float32 round-off. Above ``--finc-max`` rows per set FINC's covariance pass (linear in n; each batch
holds 128 r x r outer products) is timed on that many rows and scaled by n / finc-max (said on the row), and
no agreement is printed.

**metrics** (n per set, d dims, float32, two correlated Gaussian sets that differ a little). Peers:
``prdc.compute_prdc`` (k = 5), clean-fid's ``frechet_distance`` after ``np.mean``/``np.cov`` as its
``fid_from_feats`` does (the function is taken from the installed package's source: ``cleanfid.fid`` imports
torchvision at import time), torchmetrics' ``KernelInceptionDistance`` (100 subsets of 1,000, identity
feature extractor, the features' own float32). promptprism: ``ReferenceMetrics(bootstrap=0)`` (PRDC, FD, KID
and the gaussian MMD, no intervals) and the parts alone (``--no-parts``: not). Agreement: PRDC and FD to the
peers' values; KID against torchmetrics' in units of the standard error of a mean over the subsets (each
draws its own subsets). Wall seconds and the process's CPU seconds (all threads, spinning ones included), of
the fastest of ``--repeat`` runs, each side after one untimed small call of its own (imports, start-up);
promptprism runs first (before torch starts its threads). Peak memory: the
larger of the peak resident set above the one at the call's start (every page the call touched: numpy,
memory-mapped arrays, torch and the BLAS alike) and tracemalloc's peak (which also counts reused heap memory
but sees neither promptprism's memory-mapped arrays nor torch's allocator), both printed (``memory.py``).
``prdc`` is not run when
its three n x n float32 matrices do not fit in the free memory (n = 50,000: 28 GiB); the sum is then over the
other peers and says so, or with ``--prdc-fit 10000 15000 20000`` prdc is timed at those sizes and its time
at n **extrapolated** from a fit t = c n^2 (c the median of the points' t / n^2, robust to one point slowed by
load; each point's c, their spread, the log-log slope and prdc's agreement with our PRDC at the largest size
are printed; its memory is then its matrices' size, not measured).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from busy_machine import cpu_model  # noqa: E402
from compare import CLI, _installed_like  # noqa: E402
from memory import larger, mib_text, resident_peak, traced_peak  # noqa: E402

TOPICS, DIM_PROMPT, DIM_OUTPUT, N_MODES = 20, 32, 64, 10
KEN_BATCH = 128  # KEN_Evaluator's default batchsize
FINC_BATCH = 128  # FINC_Evaluator's default batchsize


def split_sets(n: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """[(prompts, outputs, prompt texts) of the test set, of the reference set], n rows each."""
    rng = np.random.default_rng(seed)
    ct, cz = rng.standard_normal((TOPICS, DIM_PROMPT)), rng.standard_normal((TOPICS, DIM_OUTPUT))
    out = []
    for shifted in (False, True):
        c = rng.integers(0, TOPICS, n)
        oc = cz[c].copy()
        if shifted:
            oc[c < 3] = cz[(c[c < 3] + 7) % TOPICS]
        t = (ct[c] + 0.5 * rng.standard_normal((n, DIM_PROMPT))).astype(np.float32)
        z = (oc + 0.7 * rng.standard_normal((n, DIM_OUTPUT))).astype(np.float32)
        out.append((t, z, np.array([f"prompt about topic {k}" for k in c])))
    return out


def write_split_inputs(folder: Path, n: int) -> list[Path]:
    paths = []
    for name, (t, z, p) in zip(("test", "ref"), split_sets(n), strict=True):
        paths.append(folder / f"{name}-{n}.npz")
        np.savez(paths[-1], prompt_embeddings=t, output_embeddings=z, prompts=p)
    return paths


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def run_cli(args: list[str], env: dict, cpu: list | None = None) -> float:
    """Wall seconds of ``promptprism ARGS`` as a process; its CPU seconds (all threads) go to ``cpu``."""
    t0, c0 = time.perf_counter(), children_cpu()
    proc = subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, check=False)
    secs = time.perf_counter() - t0
    if cpu is not None:
        cpu.append(children_cpu() - c0)
    if proc.returncode:
        raise RuntimeError(f"promptprism {' '.join(args[:3])} failed: {proc.stderr.strip()[-800:]}")
    return secs


# --- KEN, reimplemented from buyeah1109/KEN (KEN/metric/algorithm_utils.py) -------------------------------
def ken_kernel(x, y, sigma: float, batchsize: int = KEN_BATCH):
    """KEN's ``normalized_gaussian_kernel``: exp(-|x - y|^2 / (2 sigma^2)) / sqrt(n m), columns in batches."""
    import torch

    blocks = []
    for start in range(0, y.shape[0], batchsize):
        res = torch.norm(x.unsqueeze(1) - y[start:start + batchsize], dim=2, p=2).pow(2)
        blocks.append(torch.exp((-1 / (2 * sigma * sigma)) * res))
    return torch.hstack(blocks) / np.sqrt(x.shape[0] * y.shape[0])


def ken_matrix(x, y, sigma: float, eta: float = 1.0):
    """KEN's ``build_matrix``: the block matrix whose eigenvalues are those of D G."""
    import torch

    kxx, kyy, kxy = ken_kernel(x, x, sigma), ken_kernel(y, y, sigma), ken_kernel(x, y, sigma)
    first = torch.hstack([kxx, kxy * np.sqrt(eta)])
    second = torch.hstack([-kxy.T * np.sqrt(eta), -kyy * eta])
    return torch.vstack([first, second])


def ken_row(sets, sigmas: tuple[float, float], ken_max: int) -> tuple[float, np.ndarray, str]:
    """(seconds, eigenvalues, how timed) of KEN_by_eigendecomposition on the rescaled concatenations."""
    import torch

    w = [torch.from_numpy(np.hstack([t / sigmas[0], z / sigmas[1]]).astype(np.float32)) for t, z, _ in sets]
    n = w[0].shape[0]
    t0, c0 = time.perf_counter(), time.process_time()
    matrix = ken_matrix(w[0], w[1], 1.0)
    build, build_cpu = time.perf_counter() - t0, time.process_time() - c0
    if n <= ken_max:
        t0, c0 = time.perf_counter(), time.process_time()
        vals = torch.linalg.eigvals(matrix).real.numpy().astype(np.float64)
        KEN_CPU[:] = [build_cpu + time.process_time() - c0]
        return build + time.perf_counter() - t0, vals, "in full"
    small = ken_matrix(w[0][:ken_max], w[1][:ken_max], 1.0)
    t0, c0 = time.perf_counter(), time.process_time()
    torch.linalg.eigvals(small)
    scale = (n / ken_max) ** 3
    KEN_CPU[:] = [build_cpu + (time.process_time() - c0) * scale]
    eig = (time.perf_counter() - t0) * scale
    return build + eig, np.array([]), f"kernel in full, eigvals timed at n = {ken_max:,} x (N/N0)^3"


#: CPU seconds (all threads) of the last :func:`ken_row`, scaled as its wall time is
KEN_CPU = [float("nan")]


def signed_top(vals: np.ndarray, k: int) -> np.ndarray:
    vals = np.sort(vals)[::-1]
    return np.r_[vals[:k], vals[::-1][:k]]


def split_rows(sizes: list[int], ken_max: int, folder: Path) -> None:
    env = _installed_like(folder / "pycache")
    warm = write_split_inputs(folder, 300)
    run_cli(["split", *map(str, warm), "--method", "exact", "--out", str(folder / "warm"), "--quiet"], env)
    for n in sizes:
        paths = write_split_inputs(folder, n)
        out = folder / f"out-{n}"
        base = ["split", *map(str, paths), "--method", "exact", "--quiet", "--seed", "0"]
        load = os.getloadavg()[0]
        cpu: list[float] = []
        wall = run_cli([*base, "--out", str(out)], env, cpu)
        bare = run_cli([*base, "--out", str(folder / f"bare-{n}"), "--no-report"], env, cpu)
        result = json.loads((out / "result.json").read_text())
        cfg = result["config"]
        ken_s, ken_vals, how = ken_row(split_sets(n), (cfg["sigma_prompt"], cfg["sigma_output"]), ken_max)
        ours = np.array([m["eigenvalue"] for m in result["modes"]])
        print(f"split n = m = {n:,} (load {load:.2f}): promptprism default exact command {wall:.2f} s "
              f"(report included; --no-report {bare:.2f} s, report {wall - bare:+.2f} s); "
              f"KEN {ken_s:.2f} s ({how}); ratio KEN / promptprism = {ken_s / wall:.1f}x", flush=True)
        print(f"    CPU seconds (all threads): promptprism {cpu[0]:.2f} (--no-report {cpu[1]:.2f}), KEN "
              f"{KEN_CPU[0]:.2f}; ratio {KEN_CPU[0] / cpu[0]:.1f}x (the number to read on a loaded machine)",
              flush=True)
        parts = {k: round(float(v), 3) for k, v in result.get("timings", {}).items()}
        print(f"    promptprism's parts (result.json): {parts}")
        if ken_vals.size:
            ref = signed_top(ken_vals, N_MODES)
            mine = np.r_[np.sort(ours[ours > 0])[::-1], np.sort(ours[ours < 0])]
            if mine.size == ref.size:
                diff = float(np.max(np.abs(mine - ref)))
                print(f"    top {N_MODES} of each sign vs KEN: max |diff| {diff:.2e} "
                      f"({diff / np.max(np.abs(ref)):.1e} of the largest |eigenvalue|)")
            else:
                print(f"    promptprism reports {mine.size} modes, KEN's top {ref.size} not compared")


# --- FINC, reimplemented from buyeah1109/FINC (src/metric/algorithm_utils.py) -----------------------------
def finc_covariance(x, omegas, batchsize: int = FINC_BATCH):
    """FINC's ``cov_rff2`` with given frequencies: features [cos(x W), sin(x W)] / sqrt(D), their second
    moment summed as a batch of outer products (``torch.bmm``) per ``batchsize`` rows, divided by n."""
    import torch

    product = torch.matmul(x, omegas)
    feats = torch.cat([torch.cos(product), torch.sin(product)], dim=1) / np.sqrt(omegas.shape[1])
    feats = feats.unsqueeze(2)
    cov = torch.zeros((feats.shape[1], feats.shape[1]))
    for b in range(x.shape[0] // batchsize + 1):
        block = feats[b * batchsize:min((b + 1) * batchsize, feats.shape[0])]
        cov += torch.bmm(block, block.transpose(1, 2)).sum(dim=0)
    return cov / x.shape[0]


def finc_row(sets, cfg: dict, finc_max: int) -> tuple[float, np.ndarray, str]:
    """(seconds, eigenvalues, how timed) of FINC's ``cov_diff_rff`` then ``torch.linalg.eigh`` of
    C_x - eta C_y, on w = [t / sigma_t ; z / sigma_z] with promptprism's bandwidths and its seeded frequencies
    (``ProductRandomFourierFeatures``: ``default_rng(seed).standard_normal((d_t + d_z, D))``), so both sides
    diagonalise the same matrix: promptprism centres the float32 phases, which rotates each (cos, sin) pair
    and leaves the spectrum as it is. Above ``finc_max`` rows per set the covariance pass (linear in n) is
    timed on the first ``finc_max`` rows of each set and scaled by n / finc_max; the eigen-solve in full."""
    import torch

    w = [torch.from_numpy(np.hstack([t / cfg["sigma_prompt"], z / cfg["sigma_output"]]).astype(np.float32))
         for t, z, _ in sets]
    n, half = w[0].shape[0], cfg["n_features"] // 2
    omegas = torch.from_numpy(np.random.default_rng(cfg.get("seed") or 0).standard_normal(
        (w[0].shape[1], half)).astype(np.float32))
    rows = min(n, finc_max)
    t0, c0 = time.perf_counter(), time.process_time()
    covs = [finc_covariance(x[:rows], omegas) for x in w]
    scale = n / rows
    cov_s, cov_cpu = (time.perf_counter() - t0) * scale, (time.process_time() - c0) * scale
    t0, c0 = time.perf_counter(), time.process_time()
    vals = torch.linalg.eigh(covs[0] - cfg.get("eta", 1.0) * covs[1])[0].numpy().astype(np.float64)
    KEN_CPU[:] = [cov_cpu + time.process_time() - c0]
    how = ("in full" if rows == n else
           f"covariance timed on {rows:,} rows per set x n / {rows:,}, eigh in full")
    return cov_s + time.perf_counter() - t0, (vals if rows == n else np.array([])), how


def rff_rows(sizes: list[int], n_features: int, finc_max: int, folder: Path) -> None:
    """The default rff command (``--method rff --features R``, report included) against FINC per n."""
    env = _installed_like(folder / "pycache")
    warm = write_split_inputs(folder, 300)
    run_cli(["split", *map(str, warm), "--method", "rff", "--features", str(n_features), "--out",
             str(folder / "warm-rff"), "--quiet"], env)
    for n in sizes:
        paths = write_split_inputs(folder, n)
        out = folder / f"rff-{n}"
        base = ["split", *map(str, paths), "--method", "rff", "--features", str(n_features), "--quiet",
                "--seed", "0"]
        load = os.getloadavg()[0]
        cpu: list[float] = []
        wall = run_cli([*base, "--out", str(out)], env, cpu)
        bare = run_cli([*base, "--out", str(folder / f"rff-bare-{n}"), "--no-report"], env, cpu)
        result = json.loads((out / "result.json").read_text())
        cfg = {**result["config"], "seed": 0}
        finc_s, finc_vals, how = finc_row(split_sets(n), cfg, finc_max)
        ours = np.array([m["eigenvalue"] for m in result["modes"]])
        print(f"rff n = m = {n:,}, r = {n_features:,} (load {load:.2f}): promptprism default rff command "
              f"{wall:.2f} s (report included; --no-report {bare:.2f} s); FINC {finc_s:.2f} s ({how}); ratio "
              f"FINC / promptprism = {finc_s / wall:.1f}x", flush=True)
        print(f"    CPU seconds (all threads): promptprism {cpu[0]:.2f} (--no-report {cpu[1]:.2f}), FINC "
              f"{KEN_CPU[0]:.2f}; ratio {KEN_CPU[0] / cpu[0]:.1f}x", flush=True)
        parts = {k: round(float(v), 3) for k, v in result.get("timings", {}).items()}
        print(f"    promptprism's parts (result.json): {parts}")
        if finc_vals.size:
            mine = np.r_[np.sort(ours[ours > 0])[::-1], np.sort(ours[ours < 0])]
            ref = signed_top(finc_vals, mine.size // 2)
            diff = float(np.max(np.abs(mine - ref)))
            print(f"    top {mine.size // 2} of each sign vs FINC (the same frequencies): max |diff| "
                  f"{diff:.2e} "
                  f"({diff / np.max(np.abs(ref)):.1e} of the largest |eigenvalue|)")


# --- metrics ---------------------------------------------------------------------------------------------
def metric_sets(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(real, fake) float32: correlated Gaussian features, the fake set shifted and rescaled a little."""
    rng = np.random.default_rng(seed)
    mix = (rng.standard_normal((d, d), dtype=np.float32) / np.sqrt(d)).astype(np.float32)
    real = rng.standard_normal((n, d), dtype=np.float32) @ mix
    fake = (rng.standard_normal((n, d), dtype=np.float32) @ mix) * np.float32(1.05) + np.float32(0.02)
    return real, fake


def cleanfid_frechet():
    """clean-fid's own ``frechet_distance``, executed from the installed package's source (its module imports
    torchvision, which this benchmark does not need)."""
    spec = importlib.util.find_spec("cleanfid")
    if spec is None or not spec.submodule_search_locations:
        # (clean-fid needs torchvision: unpinned, pip takes the newest, which pulls a CUDA build of torch)
        raise ImportError('clean-fid is not installed: pip install "torch==2.13.0" "torchvision==0.28.0" '
                          'clean-fid (torch and torchvision pinned together, or pip replaces the CPU torch)')
    source = Path(next(iter(spec.submodule_search_locations)), "fid.py").read_text()
    tree = ast.parse(source)
    keep = [node for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name == "frechet_distance"]
    import scipy.linalg

    scope = {"np": np, "linalg": scipy.linalg}
    exec(compile(ast.Module(body=keep, type_ignores=[]), "cleanfid/fid.py", "exec"), scope)  # noqa: S102
    return scope["frechet_distance"]


#: each timed call runs this many times; its row keeps the fastest (a shared machine's load comes and goes)
REPEAT = [1]


def timed(label: str, fn, rows: dict):
    """Seconds and CPU seconds of ``fn`` (the fastest of REPEAT runs), and its peak memory: the larger of the
    resident set it rose to over its start (the largest of the timed runs', :func:`memory.resident_peak`)
    and tracemalloc's peak in one more run (:func:`memory.traced_peak`), both printed."""
    best, resident = None, None
    for _ in range(REPEAT[0]):
        c0 = time.process_time()
        value, secs, mib = resident_peak(fn)
        cpu = time.process_time() - c0
        if best is None or secs < best[0]:
            best = (secs, value, cpu)
        resident = larger(resident, mib)
    traced = traced_peak(fn)
    secs, value, cpu = best
    peak = larger(resident, traced)
    rows[label] = (secs, peak, value, cpu)
    print(f"    {label:<46} {secs:8.2f} s {cpu:8.2f} CPU s {mib_text(peak)} MiB (resident "
          f"{mib_text(resident, 0)}, traced {traced:,.0f})", flush=True)
    return value


def prdc_bytes(n: int) -> int:
    """What ``prdc.compute_prdc`` holds at once: its three n x n float32 distance matrices (real-real,
    fake-fake, real-fake)."""
    return 3 * n * n * 4


def available_bytes() -> int:
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def peer_metrics(real: np.ndarray, fake: np.ndarray, rows: dict, kid_subset: int = 1000,
                 prdc_fit: list[int] | None = None) -> dict:
    import prdc as prdc_package
    import torch
    from torchmetrics.image.kid import KernelInceptionDistance

    frechet = cleanfid_frechet()

    def cleanfid_fd():
        mu1, s1 = np.mean(fake, axis=0), np.cov(fake, rowvar=False)
        mu2, s2 = np.mean(real, axis=0), np.cov(real, rowvar=False)
        return float(frechet(mu1, s1, mu2, s2))

    def torchmetrics_kid():
        torch.manual_seed(0)
        metric = KernelInceptionDistance(feature=torch.nn.Identity(), subsets=100, subset_size=kid_subset)
        metric.update(torch.from_numpy(real), real=True)
        metric.update(torch.from_numpy(fake), real=False)
        mean, std = metric.compute()
        return float(mean), float(std)

    out = {}
    need, have = prdc_bytes(real.shape[0]), available_bytes()
    if need < 0.8 * have:
        out["prdc"] = timed("prdc.compute_prdc (k = 5)", lambda: {
            k: float(v) for k, v in prdc_package.compute_prdc(real, fake, 5).items()}, rows)
    else:
        print(f"    prdc.compute_prdc (k = 5): not run, its three n x n float32 matrices need "
              f"{need / 2**30:.1f} GiB and {have / 2**30:.1f} GiB are free", flush=True)
        if prdc_fit:
            prdc_extrapolated(real.shape[0], real.shape[1], prdc_fit, rows)
    out["fd"] = timed("clean-fid FD (np.cov + its frechet_distance)", cleanfid_fd, rows)
    out["kid"] = timed("torchmetrics KID (100 x 1,000)", torchmetrics_kid, rows)
    return out


#: the row label of prdc's time extrapolated from smaller sizes
PRDC_EXTRAPOLATED = "prdc.compute_prdc (k = 5), EXTRAPOLATED"


def quadratic_fit(sizes: list[int], times: list[float]) -> tuple[float, float, float]:
    """(c, spread, slope) of t = c n^2 over the timed sizes: c the **median** of the points' t / n^2 (one
    point slowed by a burst of load does not move it, as it moves a least-squares fit), spread the largest
    relative distance of a point's t / n^2 from c, slope the log-log slope (2 for a quadratic cost)."""
    x = np.asarray(sizes, dtype=np.float64)
    per_point = np.asarray(times, dtype=np.float64) / x**2
    c = float(np.median(per_point))
    spread = float(np.max(np.abs(per_point / c - 1.0)))
    slope = float(np.polyfit(np.log(x), np.log(times), 1)[0]) if len(sizes) > 1 else float("nan")
    return c, spread, slope


def prdc_extrapolated(n: int, d: int, sizes: list[int], rows: dict) -> None:
    """prdc's time at ``n`` rows per set, **extrapolated** (it cannot allocate there): ``compute_prdc`` timed
    on sets of each of ``sizes`` rows (the same generator; the fastest of ``--repeat`` runs each), t = c n^2
    fitted (:func:`quadratic_fit`: its three n x n distance matrices and their partitions are quadratic;
    each point's c, the spread and the log-log slope are printed, for wall and CPU seconds) and taken at
    ``n``; its memory is its three n x n float32 matrices. At the largest size our PRDC is compared to it."""
    import prdc as prdc_package

    from promptprism.methods.metrics import prdc as our_prdc

    walls, cpus = [], []
    for m in sizes:
        real, fake = metric_sets(m, d)
        best = (np.inf, np.inf)
        for _ in range(REPEAT[0]):
            t0, c0 = time.perf_counter(), time.process_time()
            theirs = prdc_package.compute_prdc(real, fake, 5)
            best = min(best, (time.perf_counter() - t0, time.process_time() - c0))
        walls.append(best[0])
        cpus.append(best[1])
        print(f"      prdc fit point n = {m:,}: {walls[-1]:.2f} s ({cpus[-1]:.2f} CPU s); "
              f"t / n^2 = {walls[-1] / m**2:.3e} s ({cpus[-1] / m**2:.3e} CPU s)", flush=True)
    mine = our_prdc(real, fake, 5)
    diff = max(abs(float(theirs[k]) - mine[k]) for k in mine)
    (c_wall, spread_wall, slope_wall), (c_cpu, spread_cpu, slope_cpu) = (
        quadratic_fit(sizes, t) for t in (walls, cpus))
    wall, cpu = c_wall * n**2, c_cpu * n**2
    rows[PRDC_EXTRAPOLATED] = (wall, prdc_bytes(n) / 2**20, None, cpu)
    print(f"    {PRDC_EXTRAPOLATED:<46} {wall:8.2f} s {cpu:8.2f} CPU s {prdc_bytes(n) / 2**20:8.0f} MiB "
          f"(its matrices' size, not measured)\n"
          f"      fit t = c n^2 on n = {', '.join(f'{m:,}' for m in sizes)}: c = {c_wall:.3e} s "
          f"(points within {spread_wall:.0%}, log-log slope {slope_wall:.2f}), {c_cpu:.3e} CPU s "
          f"(within {spread_cpu:.0%}, slope {slope_cpu:.2f}); PRDC max |diff| to it at n = {sizes[-1]:,}: "
          f"{diff:.1e}", flush=True)


def our_metrics(real: np.ndarray, fake: np.ndarray, rows: dict, parts: bool = True) -> dict:
    from promptprism.methods.metrics import (
        ReferenceMetrics,
        frechet_distance,
        kernel_inception_distance,
        prdc,
    )
    from promptprism.methods.metrics.kid import gather_subsets, kid_and_mmd2
    from promptprism.methods.metrics.prdc import neighbour_indicators

    full = timed("promptprism ReferenceMetrics (no intervals)",
                 lambda: ReferenceMetrics(bootstrap=0).fit(fake, real), rows)
    result, sigma = full.models[0], float(full.config["mmd_sigma"])
    if parts:
        timed("  its PRDC alone (prdc)", lambda: prdc(real, fake, 5), rows)
        timed("  its FD alone (frechet_distance)", lambda: frechet_distance(fake, real), rows)
        timed("  its KID alone (kernel_inception_distance)", lambda: kernel_inception_distance(
            fake, real, n_subsets=100, subset_size=1000, seed=0), rows)
        timed("  its KID and gaussian MMD (kid_and_mmd2)", lambda: kid_and_mmd2(
            fake, real, kernel="gaussian", sigma=sigma, n_subsets=100, subset_size=1000, seed=0), rows)
        subsets = dict(kernel="gaussian", sigma=sigma, n_subsets=100, subset_size=1000, seed=0)

        def fused():  # what ReferenceMetrics runs on float32 features: KID's sums off PRDC's blocks
            gathered = gather_subsets(fake, real, **subsets)
            neighbour_indicators(real, fake, 5, gather=gathered)
            return kid_and_mmd2(fake, real, **subsets, gathered=gathered)

        timed("  its PRDC with KID and MMD off its blocks", fused, rows)
    return {"prdc": {k: float(getattr(result, k)) for k in ("precision", "recall", "density", "coverage")},
            "fd": float(result.fd), "kid": (float(result.kid), float(result.kid_std))}


def warm_up(real: np.ndarray, fake: np.ndarray, side: str, rows: int = 1500) -> None:
    """One untimed small call of a side's functions first (imports, BLAS and thread start-up), so that each
    timed row is the steady cost a user pays per call in a session (the split section times whole
    processes, start-up included)."""
    import contextlib
    import io

    if side == "promptprism":
        from promptprism.methods.metrics import ReferenceMetrics

        ReferenceMetrics(bootstrap=0).fit(fake[:rows], real[:rows])
        return
    with contextlib.redirect_stdout(io.StringIO()):
        peer_metrics(real[:rows], fake[:rows], {}, kid_subset=rows // 2)


def metrics_rows(n: int, d: int, parts: bool = True, prdc_fit: list[int] | None = None) -> None:
    real, fake = metric_sets(n, d)
    print(f"metrics n = {n:,} per set, d = {d:,} (load {os.getloadavg()[0]:.2f})", flush=True)
    rows: dict = {}
    warm_up(real, fake, "promptprism")
    ours = our_metrics(real, fake, rows, parts)  # first: torch's threads are not started yet
    warm_up(real, fake, "peers")
    peers = peer_metrics(real, fake, rows, prdc_fit=prdc_fit)
    peer_rows = [v for k, v in rows.items() if not k.startswith(("promptprism", "  "))]
    mine = rows["promptprism ReferenceMetrics (no intervals)"]
    what = ("peers' sum" if "prdc" in peers else "peers' sum with prdc EXTRAPOLATED" if PRDC_EXTRAPOLATED
            in rows else "peers' sum without prdc (not run)")
    wall, cpu = sum(v[0] for v in peer_rows), sum(v[3] for v in peer_rows)
    print(f"    {what} {wall:.2f} s ({cpu:.2f} CPU s); promptprism {mine[0]:.2f} s ({mine[3]:.2f} CPU s); "
          f"ratio peers / promptprism = {wall / mine[0]:.2f}x wall, {cpu / mine[3]:.2f}x CPU")
    fd_rel = abs(ours["fd"] - peers["fd"]) / abs(peers["fd"])
    kid_se = np.hypot(ours["kid"][1], peers["kid"][1]) / np.sqrt(100)
    prdc_diff = (f"PRDC max |diff| {max(abs(ours['prdc'][k] - peers['prdc'][k]) for k in ours['prdc']):.1e}; "
                 if "prdc" in peers else "")
    print(f"    agreement: {prdc_diff}FD relative diff {fd_rel:.1e}; KID "
          f"{ours['kid'][0]:.4e} vs torchmetrics {peers['kid'][0]:.4e} "
          f"({abs(ours['kid'][0] - peers['kid'][0]) / kid_se:.1f} standard errors; own subsets)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=("split", "rff", "metrics"),
                    default=["split", "rff", "metrics"])
    ap.add_argument("--sizes", nargs="+", type=int, default=[2500, 5000], help="split: n = m")
    ap.add_argument("--ken-max", type=int, default=2500, help="split: KEN's eigvals in full up to this n")
    ap.add_argument("--rff-sizes", nargs="+", type=int, default=[2000, 30_000], help="rff: n = m")
    ap.add_argument("--features", type=int, default=3000, help="rff: r (2 x frequencies)")
    ap.add_argument("--finc-max", type=int, default=2000,
                    help="rff: FINC's covariance pass in full up to this n (above: timed there, scaled by n)")
    ap.add_argument("--metrics-n", nargs="+", type=int, default=[10_000])
    ap.add_argument("--dims", nargs="+", type=int, default=[512])
    ap.add_argument("--no-parts", action="store_true", help="metrics: time ReferenceMetrics, not its parts")
    ap.add_argument("--prdc-fit", nargs="+", type=int, default=None, metavar="N",
                    help="metrics: where prdc cannot allocate, time it at these n (e.g. 10000 15000 20000) "
                         "and extrapolate its time as c n^2 (said so on its row)")
    ap.add_argument("--repeat", type=int, default=1, help="metrics: runs of each call, the fastest kept")
    args = ap.parse_args(argv)
    REPEAT[0] = max(1, args.repeat)
    import torch

    print(f"# {cpu_model()}; {len(os.sched_getaffinity(0))} CPUs usable; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, torch threads {torch.get_num_threads()}")
    if "split" in args.only:
        with tempfile.TemporaryDirectory() as tmp:
            split_rows(args.sizes, args.ken_max, Path(tmp))
    if "rff" in args.only:
        with tempfile.TemporaryDirectory() as tmp:
            rff_rows(args.rff_sizes, args.features, args.finc_max, Path(tmp))
    if "metrics" in args.only:
        for n in args.metrics_n:
            for d in args.dims:
                metrics_rows(n, d, parts=not args.no_parts, prdc_fit=args.prdc_fit)
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
