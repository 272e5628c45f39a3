"""The reference-set metrics' intervals judged on known truth: coverage, bias and width per cell and metric.

A cell is a pair of generative models whose population values are known: prompts t ~ N(0, I_d) (a fresh
draw per distinct prompt), outputs x = mu + A t + s e in the same d dimensions (so CLIPScore is defined;
d = 8, 64 in the ``hi-d64`` cells), marginally Gaussian N(mu, A^T A + s^2 I). The generated model and the
reference differ in mu, A and s.
A simulated set draws ``n_prompts`` prompts and ``per_prompt`` outputs of each, for both models (or, in the
``rows`` cells, outputs only: the row bootstrap), and runs :class:`ReferenceMetrics` with its defaults
(but ``alignment="on"`` in the paired cells: prompts and outputs share one space by construction; the
``rows`` cells have no prompts, so no CLIPScore).

The truth each interval is judged against is the one its construction targets (docs/metrics.md,
"Intervals"):

- FD: the population Fréchet distance of the two Gaussians (analytic);
- KID, MMD^2 (gaussian, a fixed bandwidth): the population MMD^2 (analytic: Gaussian moments);
- CLIPScore, cosine: the population means (``POPULATION_ROWS`` fresh pairs);
- precision, density (resampled over generated prompts, the reference's k-NN radii held fixed): their value
  against THIS reference set for an infinite generated set (``POPULATION_ROWS`` fresh generated rows);
- recall (resampled over reference prompts, the generated radii fixed): its value against THIS generated
  set for an infinite reference set;
- coverage (resampled over reference prompts): its mean over fresh reference sets of the same size against
  THIS generated set (``COVERAGE_SETS`` of them).

The k-NN metrics' conditional truths differ from set to set; the table also gives each interval's coverage
of the unconditional mean E[metric] at these sizes (estimated by the mean over the simulated sets), which
the k-NN intervals do not claim.

    python benchmarks/metrics_coverage.py --sets 200                # the grid
    python benchmarks/metrics_coverage.py --sets 20 --cells prompts-40x5
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread per worker process
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402
from scendi_coverage import _Serial, print_rows  # noqa: E402  (the in-process pool stand-in, shared)

METRICS = ("precision", "recall", "density", "coverage", "fd", "kid", "mmd2", "clip_score", "cosine")
#: fresh rows behind the Monte Carlo truths (precision, density, recall, CLIPScore)
POPULATION_ROWS = 50_000
#: fresh reference sets behind each set's coverage truth
COVERAGE_SETS = 20
DIM = 8
MMD_SIGMA = 4.0  # fixed, so the population MMD^2 is one number (the default 'median' varies per set)
#: KID's and MMD's random subsets (the default is 100; their cost dominates a simulated set, and the
#: interval, the 2.5 % and 97.5 % quantiles of the subset values, is the same spread with fewer)
SUBSETS = 20


@dataclass(frozen=True)
class Cell:
    """Distinct prompts and outputs per prompt of the generated set and of the reference (``clustered``:
    paired sets, else arrays of ``n_prompts x per_prompt`` rows)."""

    name: str
    n_prompts: int
    per_prompt: int
    ref_prompts: int
    ref_per_prompt: int
    clustered: bool = True
    dim: int = 8

    @property
    def n(self) -> int:
        return self.n_prompts * self.per_prompt


GRID = (
    Cell("prompts-40x5", 40, 5, 80, 5),
    Cell("prompts-100x5", 100, 5, 100, 10),
    Cell("rows-300", 300, 1, 600, 1, clustered=False),
    Cell("hi-d64-prompts-40x5", 40, 5, 80, 5, dim=64),
    Cell("hi-d64-rows-300", 300, 1, 600, 1, clustered=False, dim=64),
)


@functools.lru_cache(maxsize=4)
def _models(dim: int = DIM) -> dict[str, tuple[np.ndarray, np.ndarray, float]]:
    """(mu, A, noise s) in ``dim`` dimensions of the generated model and of the reference (fixed seeds)."""
    rng = np.random.default_rng(4242)
    a_ref = rng.standard_normal((dim, dim)) / np.sqrt(dim)
    a_gen = a_ref @ np.diag(np.r_[np.full(3, 1.5), np.full(dim - 3, 0.4)])  # wider in 3, narrower in the rest
    mu_ref = np.zeros(dim)
    mu_gen = 0.5 * rng.standard_normal(dim)
    return {"generated": (mu_gen, a_gen, 0.6), "reference": (mu_ref, a_ref, 0.8)}


def draw(model: str, n_prompts: int, per_prompt: int, rng: np.random.Generator, dim: int = DIM
         ) -> tuple[np.ndarray, np.ndarray]:
    """(prompt rows, outputs) of ``n_prompts`` fresh prompts with ``per_prompt`` outputs each."""
    mu, a, s = _models(dim)[model]
    t = np.repeat(rng.standard_normal((n_prompts, dim)), per_prompt, axis=0)
    return t, mu + t @ a + s * rng.standard_normal(t.shape)


def moments(model: str, dim: int = DIM) -> tuple[np.ndarray, np.ndarray]:
    """The model's marginal mean and covariance (A^T A + s^2 I)."""
    mu, a, s = _models(dim)[model]
    return mu, a.T @ a + s * s * np.eye(dim)


def _cubic_cross(m1, s1, m2, s2) -> float:
    """E (<x, y>/d + 1)^3 for independent x ~ N(m1, s1), y ~ N(m2, s2) (raw moments up to order 3)."""
    def third(m, s):
        return (np.einsum("i,j,k->ijk", m, m, m) + np.einsum("i,jk->ijk", m, s)
                + np.einsum("j,ik->ijk", m, s) + np.einsum("k,ij->ijk", m, s))

    d = len(m1)
    e1 = m1 @ m2 / d
    e2 = np.trace((s1 + np.outer(m1, m1)) @ (s2 + np.outer(m2, m2))) / d**2
    e3 = float(np.sum(third(m1, s1) * third(m2, s2))) / d**3
    return e3 + 3 * e2 + 3 * e1 + 1


def _gauss_cross(m1, s1, m2, s2, sigma: float) -> float:
    """E exp(-|x - y|^2 / (2 sigma^2)) for independent Gaussians x, y."""
    m, s = m1 - m2, s1 + s2
    eye = np.eye(len(m))
    _, logdet = np.linalg.slogdet(eye + s / sigma**2)
    return float(np.exp(-0.5 * logdet - 0.5 * m @ np.linalg.solve(s + sigma**2 * eye, m)))


@functools.lru_cache(maxsize=4)
def population(dim: int = DIM) -> dict[str, float]:
    """FD, KID and MMD^2 (analytic), CLIPScore and cosine (``POPULATION_ROWS`` fresh pairs), ``dim``-d."""
    from promptprism.methods.metrics import frechet_distance_from_moments
    from promptprism.methods.metrics.alignment import clip_scores

    g, r = moments("generated", dim), moments("reference", dim)
    out = {"fd": float(frechet_distance_from_moments(*g, *r))}
    for name, cross in (("kid", _cubic_cross), ("mmd2", lambda *a: _gauss_cross(*a, MMD_SIGMA))):
        out[name] = cross(*g, *g) + cross(*r, *r) - 2 * cross(*g, *r)
    t, x = draw("generated", POPULATION_ROWS, 1, np.random.default_rng(999), dim)
    score, cos = clip_scores(t, x)
    out.update(clip_score=float(score.mean()), cosine=float(cos.mean()))
    return out


def _sq_dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum((a**2).sum(1)[:, None] - 2 * a @ b.T + (b**2).sum(1)[None, :], 0.0)


def _knn_radii(x: np.ndarray, k: int) -> np.ndarray:
    """Each row's distance to its k-th nearest other row."""
    return np.sqrt(np.partition(_sq_dist(x, x), k, axis=1)[:, k])  # entry 0 is the row itself


def _ball_counts(points: np.ndarray, centres: np.ndarray, radii: np.ndarray, block: int = 5000) -> np.ndarray:
    """For each point, the number of balls (centres, radii) holding it."""
    out = np.empty(len(points))
    for b in range(0, len(points), block):
        out[b:b + block] = (_sq_dist(points[b:b + block], centres) < radii[None, :] ** 2).sum(1)
    return out


def conditional_truth(x: np.ndarray, r: np.ndarray, cell: Cell, k: int, seed: int) -> dict[str, float]:
    """Precision and density against this reference, recall and coverage against this generated set."""
    rng = np.random.default_rng(seed + 10**6)
    rho_r, rho_x = _knn_radii(r, k), _knn_radii(x, k)
    _, fresh_x = draw("generated", POPULATION_ROWS, 1, rng, cell.dim)
    _, fresh_r = draw("reference", POPULATION_ROWS, 1, rng, cell.dim)
    held = _ball_counts(fresh_x, r, rho_r)
    cov = []
    for _ in range(COVERAGE_SETS):
        _, ref = draw("reference", cell.ref_prompts, cell.ref_per_prompt, rng, cell.dim)
        nearest = np.sqrt(_sq_dist(ref, x).min(axis=1))
        cov.append(np.mean(nearest < _knn_radii(ref, k)))
    return {"precision": float(np.mean(held > 0)), "density": float(held.mean() / k),
            "recall": float(np.mean(_ball_counts(fresh_r, x, rho_x) > 0)), "coverage": float(np.mean(cov))}


def estimator_seed(seed: int) -> int:
    """The estimator's seed for simulated set ``seed``: not the data's own (numpy's generator seeded alike
    would resample prompts with the very bits that drew them, coupling the bootstrap to the data)."""
    return seed + 2 * 10**6


def one_set(cell: Cell, seed: int, bootstrap: int) -> dict:
    """One simulated pair of sets: {metric: (estimate, low, high, conditional truth or None)}."""
    from promptprism import PairedSet
    from promptprism.methods.metrics import ReferenceMetrics

    rng = np.random.default_rng(seed)
    tx, x = draw("generated", cell.n_prompts, cell.per_prompt, rng, cell.dim)
    tr, r = draw("reference", cell.ref_prompts, cell.ref_per_prompt, rng, cell.dim)
    if cell.clustered:
        gen = PairedSet(tx, x, name="generated", prompts=[
            f"g{i}" for i in np.repeat(np.arange(cell.n_prompts), cell.per_prompt)])
        ref = PairedSet(tr, r, name="reference", prompts=[
            f"r{i}" for i in np.repeat(np.arange(cell.ref_prompts), cell.ref_per_prompt)])
    else:
        gen, ref = x, r
    est = ReferenceMetrics(bootstrap=bootstrap, mmd_sigma=MMD_SIGMA, subsets=SUBSETS,
                           alignment="on" if cell.clustered else "off",
                           seed=estimator_seed(seed))  # (prompts and outputs share one space by construction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = est.compare(gen, ref).models[0]
    truth = conditional_truth(x, r, cell, est.nearest_k, seed)
    out = {}
    for name in METRICS:
        iv = m.intervals.get(name, {})
        value = getattr(m, name)
        out[name] = (np.nan if value is None else float(value), iv.get("low", np.nan), iv.get("high", np.nan),
                     truth.get(name))
    out["validity"] = getattr(m, "interval_validity", None)
    return out


def _task(args: tuple) -> dict:
    return one_set(*args)


def summarise(cell: Cell, truth: dict, sets: list[dict]) -> list[dict]:
    """One row per metric: truth (population, or the mean conditional truth), mean, bias, sd, coverage of
    the targeted truth, coverage of the unconditional mean, mean width, and the validity flag's verdict."""
    rows = []
    for name in METRICS:
        est, low, high, cond = (np.array([np.nan if v is None else v for v in col], dtype=float)
                                for col in zip(*(s[name] for s in sets), strict=True))
        if np.isnan(est).all():
            continue
        target = cond if np.isfinite(cond).all() else np.full(len(est), truth[name])
        has_iv = bool(np.isfinite(low).all())
        mean = float(est.mean())
        sd = float(est.std(ddof=1))
        flags = [s["validity"] for s in sets if s.get("validity")]
        held = None if not flags else float(np.mean([name not in f.get("not_calibrated", []) for f in flags]))
        rows.append({"cell": cell.name, "metric": name, "truth": float(target.mean()), "mean": mean,
                     "bias": mean - float(target.mean()), "sd": sd,
                     "bias_over_se": (mean - float(target.mean())) / sd if sd > 0 else float("nan"),
                     "coverage": float(np.mean((low <= target) & (target <= high))) if has_iv else None,
                     "coverage_of_mean": float(np.mean((low <= mean) & (mean <= high))) if has_iv else None,
                     "width": float(np.mean(high - low)) if has_iv else None, "flag_holds": held,
                     "sets": len(sets)})
    return rows


def coverage_table(cells=GRID, *, n_sets: int = 200, bootstrap: int = 200, jobs: int = 2, seed: int = 0,
                   progress: bool = False) -> list[dict]:
    """Rows of :func:`summarise` per cell; set s is simulated with seed ``seed + s``."""
    rows = []
    with ProcessPoolExecutor(max_workers=jobs) if jobs > 1 else _Serial() as pool:
        for cell in cells:
            sets = list(pool.map(_task, [(cell, seed + s, bootstrap) for s in range(n_sets)], chunksize=4))
            new = summarise(cell, population(cell.dim), sets)
            rows.extend(new)
            if progress:
                print(format_table(new), flush=True)
    return rows


def fd_set(cell: Cell, seed: int, bootstrap: int) -> tuple[float, float, float]:
    """FD alone (estimate, low, high) of one simulated pair: the estimator's own functions, the same draws
    as :func:`one_set` (cheap: no k-NN truths, no KID)."""
    from promptprism.methods.metrics import frechet_distance
    from promptprism.methods.metrics.intervals import frechet_bootstrap

    rng = np.random.default_rng(seed)
    _, x = draw("generated", cell.n_prompts, cell.per_prompt, rng, cell.dim)
    _, r = draw("reference", cell.ref_prompts, cell.ref_per_prompt, rng, cell.dim)
    groups = (None, None)
    if cell.clustered:
        groups = (np.repeat(np.arange(cell.n_prompts), cell.per_prompt),
                  np.repeat(np.arange(cell.ref_prompts), cell.ref_per_prompt))
    fd = frechet_distance(x, r)
    iv = frechet_bootstrap(x, r, estimate=fd, replicates=bootstrap, level=0.95, seed=estimator_seed(seed),
                           groups=groups)
    return fd, iv["low"], iv["high"]


def fd_table(cells=GRID, *, n_sets: int = 200, bootstrap: int = 200, seed: int = 0) -> list[dict]:
    """The FD rows of :func:`summarise` alone (``--fd-only``)."""
    rows = []
    for cell in cells:
        truth = population(cell.dim)["fd"]
        sets = [fd_set(cell, seed + s, bootstrap) for s in range(n_sets)]
        est, low, high = (np.array(c) for c in zip(*sets, strict=True))
        sd = float(est.std(ddof=1))
        rows.append({"cell": cell.name, "metric": "fd", "truth": truth, "mean": float(est.mean()),
                     "bias": float(est.mean()) - truth, "sd": sd, "bias_over_se": (est.mean() - truth) / sd,
                     "coverage": float(np.mean((low <= truth) & (truth <= high))),
                     "coverage_of_mean": float(np.mean((low <= est.mean()) & (est.mean() <= high))),
                     "width": float(np.mean(high - low)), "flag_holds": None, "sets": n_sets})
    return rows


def format_table(rows: list[dict]) -> str:
    """The rows as a markdown table."""
    def fmt(v, spec):
        return "-" if v is None else format(v, spec)

    lines = ["| cell | metric | truth | mean | bias/sd | coverage | coverage of E | width | flag: holds |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['cell']} | {r['metric']} | {r['truth']:.4g} | {r['mean']:.4g} | "
                     f"{r['bias_over_se']:+.2f} | {fmt(r['coverage'], '.3f')} | "
                     f"{fmt(r['coverage_of_mean'], '.3f')} | {fmt(r['width'], '.4g')} | "
                     f"{fmt(r['flag_holds'], '.2f')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=200, help="simulated sets per cell (default 200)")
    parser.add_argument("--bootstrap", type=int, default=200, help="bootstrap replicates (the default 200)")
    parser.add_argument("--cells", default="all", help="comma-separated cell names (default: the grid)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the rows to this JSON file")
    parser.add_argument("--fd-only", action="store_true", help="FD's interval alone (fast)")
    args = parser.parse_args(argv)
    cells = GRID if args.cells == "all" else [c for c in GRID if c.name in args.cells.split(",")]
    t0 = time.perf_counter()
    if args.fd_only:
        rows = fd_table(cells, n_sets=args.sets, bootstrap=args.bootstrap, seed=args.seed)
    else:
        rows = coverage_table(cells, n_sets=args.sets, bootstrap=args.bootstrap, jobs=args.jobs,
                              seed=args.seed, progress=True)
    print_rows(rows, format_table(rows), args, cells, t0)


if __name__ == "__main__":
    main()
