"""Scendi's estimators judged on known truth: coverage, bias and bias / standard error per cell and route.

Each cell of the grid is a generative model of paired sets whose population values are computable to high
precision: prompts t ~ N(0, I_{d_T}) (a fresh draw per distinct prompt), outputs x = mu + A t_{1:k} + s e with
a fixed offset mu (sentence embeddings share a mean direction), a fixed map A and noise e ~ N(0, I). The
truth is SPEC's population split (Lambda_T = C_IT C_TT^+ C_TI, Lambda_I = C_II - Lambda_T, the scores of
their spectra) of the joint covariance of ``POPULATION_ROWS`` fresh pairs, with the same feature maps the
estimator uses (cosine: exact; gaussian: the same seeded random Fourier features). A simulated set draws
``n_prompts`` prompts and ``per_prompt`` outputs of each; the estimator (``in-sample``, ``cross-fit``,
``debiased`` or the default ``auto``) with a ``--bootstrap B`` prompt bootstrap gives an estimate and a
95 % interval per score.

Per (cell, route, metric) the table gives: the population value, the mean estimate, bias, the standard
deviation of the estimate over sets (its standard error), bias / standard error, the coverage of the 95 %
interval (its Monte Carlo error is about 0.015 at 200 sets) and the mean interval width.

    python benchmarks/scendi_coverage.py --sets 200 --bootstrap 200          # the full grid
    python benchmarks/scendi_coverage.py --sets 20 --bootstrap 50 --cells text-lo-40x5

:func:`coverage_table` returns the rows, so a future change to an estimator is judged on the same grid
(tests/test_scendi_coverage.py runs a small slice of it).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread per worker process
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402

import numpy as np  # noqa: E402
from scendi_interval_methods import METHODS as INTERVAL_METHODS  # noqa: E402

METRICS = ("model_share", "prompt_share", "scendi", "scendi_prompt", "vendi", "rke")
#: fresh pairs behind each population value (shares to about 1e-3)
POPULATION_ROWS = 400_000


@dataclass(frozen=True)
class Cell:
    """One generative model: prompt dimension, distinct prompts, outputs per prompt, output dimension."""

    name: str
    kernel: str  # 'cosine' (text-like: normalised embeddings) or 'gaussian' (image-like features)
    d_prompt: int
    n_prompts: int
    per_prompt: int
    d_output: int = 16
    signal_dims: int = 3  # outputs depend on the first k prompt coordinates
    noise: float = 1.0
    n_features: int = 128  # gaussian: random Fourier features per modality
    sigma: float = 4.0  # gaussian bandwidth (outputs and prompts)

    @property
    def n(self) -> int:
        return self.n_prompts * self.per_prompt


GRID = (
    Cell("text-lo-40x5", "cosine", 3, 40, 5),
    Cell("text-lo-120x1", "cosine", 3, 120, 1),
    Cell("text-lo-200x5", "cosine", 3, 200, 5),
    Cell("text-hi-40x5", "cosine", 30, 40, 5),
    Cell("text-hi-120x1", "cosine", 30, 120, 1),
    Cell("text-hi-200x5", "cosine", 30, 200, 5),
    Cell("image-lo-40x5", "gaussian", 3, 40, 5),
    Cell("image-hi-120x1", "gaussian", 30, 120, 1),
    # 40-d outputs (``-o40``); ``rich``: the outputs depend on every prompt coordinate (a large prompt share)
    Cell("text-lo-40x5-o40", "cosine", 3, 40, 5, d_output=40),
    Cell("text-lo-120x1-o40", "cosine", 3, 120, 1, d_output=40),
    Cell("text-hi-40x5-o40", "cosine", 30, 40, 5, d_output=40),
    Cell("text-hi-120x1-o40", "cosine", 30, 120, 1, d_output=40),
    Cell("text-rich-40x5-o40", "cosine", 30, 40, 5, d_output=40, signal_dims=30),
    Cell("text-rich-120x1-o40", "cosine", 30, 120, 1, d_output=40, signal_dims=30),
    Cell("text-rich-200x5-o40", "cosine", 30, 200, 5, d_output=40, signal_dims=30),
    Cell("image-lo-120x1", "gaussian", 3, 120, 1),
    Cell("image-lo-40x5-o40", "gaussian", 3, 40, 5, d_output=40),
    Cell("image-lo-300x1", "gaussian", 3, 300, 1),
)


def _model(cell: Cell) -> tuple[np.ndarray, np.ndarray]:
    """The cell's fixed offset mu and map A (seeded by the cell's shape, not by the simulated set)."""
    rng = np.random.default_rng(12345 + cell.d_prompt)
    mu = rng.standard_normal(cell.d_output)
    a = rng.standard_normal((cell.signal_dims, cell.d_output))
    if cell.signal_dims > 3:  # every prompt coordinate matters, with the prompt variance of 3 coordinates
        a *= np.sqrt(3.0 / cell.signal_dims)
    return mu, a


def draw(cell: Cell, n_prompts: int, per_prompt: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(prompt embeddings, output embeddings): ``n_prompts`` fresh prompts, ``per_prompt`` outputs each."""
    rng = np.random.default_rng(seed)
    mu, a = _model(cell)
    bank = rng.standard_normal((n_prompts, cell.d_prompt))
    t = np.repeat(bank, per_prompt, axis=0)
    x = mu + t[:, : cell.signal_dims] @ a + cell.noise * rng.standard_normal((len(t), cell.d_output))
    return t, x


def feature_maps(cell: Cell):
    """The feature maps every estimate of this cell uses (and the truth): seed 0, fixed bandwidths."""
    from promptprism.kernels.scendi_features import ScendiFeatureMaps

    if cell.kernel == "cosine":
        return ScendiFeatureMaps("cosine", cell.d_output, cell.d_prompt)
    return ScendiFeatureMaps("gaussian", cell.d_output, cell.d_prompt, sigma_output=cell.sigma,
                             sigma_prompt=cell.sigma, n_features=cell.n_features, seed=0)


def population(cell: Cell, rows: int = POPULATION_ROWS, seed: int = 999) -> dict[str, float]:
    """SPEC's scores of the population joint covariance (``rows`` fresh pairs, every prompt distinct)."""
    from promptprism.methods.scendi import schur_split
    from promptprism.methods.scendi.core import scendi_score_table
    from promptprism.stats import CovarianceAccumulator

    maps = feature_maps(cell)
    acc = CovarianceAccumulator(maps.dim_output + maps.dim_prompt)
    for b in range(0, rows, 50_000):
        t, x = draw(cell, min(50_000, rows - b), 1, seed + b)
        acc.update(np.concatenate([maps.outputs(x), maps.prompts(t)], axis=1))
    split = schur_split(acc.compute(), maps.dim_output)
    model = np.linalg.eigvalsh(split.lambda_i)[::-1]
    output = np.linalg.eigvalsh(split.c_ii)[::-1]
    table = scendi_score_table(model, split.lambda_t_eigenvalues, output,
                               model_share=float(np.trace(split.lambda_i)),
                               prompt_share=float(np.trace(split.lambda_t)))
    return {m: table[m] for m in METRICS}


def one_set(cell: Cell, route: str, seed: int, bootstrap: int, methods: tuple[str, ...] = ("default",)
            ) -> dict:
    """One simulated set's estimates and intervals: {'route': taken, 'estimates': {metric: e},
    'intervals': {method: {metric: (low, high)}}}. ``route`` is a gamma_estimator, optionally with
    '/jackknife' or '/basic' for the library's interval method ('default'); the other ``methods``
    (:mod:`scendi_interval_methods`) come from the same fit's jackknife and bootstrap replicates."""
    route, _, interval = route.partition("/")
    options = {"interval": interval} if interval else {}
    from scendi_interval_methods import candidates

    from promptprism import PairedSet, Scendi

    t, x = draw(cell, cell.n_prompts, cell.per_prompt, seed)
    groups = np.repeat(np.arange(cell.n_prompts), cell.per_prompt)
    data = PairedSet(t, x, prompts=[f"p{g}" for g in groups], name=f"{cell.name}-{seed}")

    # the gaussian kernel's random Fourier features come from the seed: the truth's (seed 0) in every set
    fit_seed = seed if cell.kernel == "cosine" else 0

    def fit(**extra):
        est = Scendi(kernel=cell.kernel, gamma_estimator=route, bootstrap=bootstrap, seed=fit_seed,
                     n_clusters=1, top_k=1, n_features=cell.n_features, sigma_output=cell.sigma,
                     sigma_prompt=cell.sigma, **(options | extra))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return est.fit_with_draws(data, name=None, groups=groups)

    r, _ = fit()
    out = {"route": r.gamma_estimator.split(" (")[0]
           + ("/jackknife" if r.bootstrap.get("interval", "").startswith("jackknife") else ""),
           "estimates": {m: getattr(r, m) for m in METRICS},
           "flagged": list(r.bootstrap.get("validity", {}).get("not_calibrated", [])),
           "intervals": {"default": {m: (r.intervals.get(m, {}).get("low", np.nan),
                                         r.intervals.get(m, {}).get("high", np.nan)) for m in METRICS}}}
    if set(methods) - {"default"}:
        jack, boot = fit(interval="jackknife")[1], fit(interval="basic")[1]
        per = {m: candidates(out["estimates"][m], jack[m], boot[m], r.bootstrap["level"]) for m in METRICS}
        for method in methods:
            if method != "default":
                out["intervals"][method] = {m: per[m][method] for m in METRICS}
    return out


def _task(args: tuple) -> dict:
    return one_set(*args)


def summarise(cell: Cell, route: str, truth: dict, sets: list[dict]) -> list[dict]:
    """One row per interval method and metric: truth, mean, bias, sd, bias / sd, coverage, the share of
    intervals that exclude their own estimate, mean width (and routes taken)."""
    taken = sorted({s["route"] for s in sets})
    rows = []
    for method in sets[0]["intervals"]:
        for m in METRICS:
            est = np.array([s["estimates"][m] for s in sets])
            low = np.array([s["intervals"][method][m][0] for s in sets])
            high = np.array([s["intervals"][method][m][1] for s in sets])
            sd = float(est.std(ddof=1)) if len(est) > 1 else float("nan")
            bias = float(est.mean() - truth[m])
            has_iv = bool(np.isfinite(low).all())
            rows.append({"cell": cell.name, "route": route, "taken": "+".join(taken), "metric": m,
                         "interval": method, "truth": truth[m], "mean": float(est.mean()), "bias": bias,
                         "sd": sd, "bias_over_se": bias / sd if sd > 0 else float("nan"),
                         "coverage": (float(np.mean((low <= truth[m]) & (truth[m] <= high)))
                                      if has_iv else None),
                         "excludes_estimate": float(np.mean((est < low) | (est > high))) if has_iv else None,
                         "width": float(np.mean(high - low)) if has_iv else None,
                         # the share of sets whose interval_validity flags this score (not calibrated)
                         "flagged": float(np.mean([m in s.get("flagged", ()) for s in sets])),
                         "sets": len(sets)})
    return rows


def coverage_table(cells=GRID, routes=("auto",), *, n_sets: int = 200, bootstrap: int = 200, jobs: int = 2,
                   seed: int = 0, progress: bool = False, methods: tuple[str, ...] = ("default",)
                   ) -> list[dict]:
    """Rows of :func:`summarise` for every cell x route (x interval method): set s of a cell is simulated
    with seed ``seed + s`` (the same sets for every route, so routes are compared on the same data)."""
    rows = []
    with ProcessPoolExecutor(max_workers=jobs) if jobs > 1 else _Serial() as pool:
        for cell in cells:
            truth = population(cell)
            for route in routes:
                tasks = [(cell, route, seed + s, bootstrap, methods) for s in range(n_sets)]
                new = summarise(cell, route, truth, list(pool.map(_task, tasks, chunksize=4)))
                rows.extend(new)
                if progress:
                    print(format_table(new), flush=True)
    return rows


class _Serial:
    """A stand-in for a process pool that maps in this process (jobs=1, tests)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @staticmethod
    def map(fn, tasks, chunksize=1):
        return [fn(t) for t in tasks]


def format_table(rows: list[dict]) -> str:
    """The rows as a markdown table."""
    head = ("| cell | route (taken) | metric | interval | truth | mean | bias | sd | bias/sd | coverage | "
            "excludes e | width | flagged |")
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cov = "-" if r["coverage"] is None else f"{r['coverage']:.3f}"
        excl = "-" if r["excludes_estimate"] is None else f"{r['excludes_estimate']:.3f}"
        width = "-" if r["width"] is None else f"{r['width']:.4g}"
        lines.append(f"| {r['cell']} | {r['route']} ({r['taken']}) | {r['metric']} | {r['interval']} | "
                     f"{r['truth']:.4g} | {r['mean']:.4g} | {r['bias']:+.4f} | {r['sd']:.4f} | "
                     f"{r['bias_over_se']:+.2f} | {cov} | {excl} | {width} | {r.get('flagged', 0):.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=200, help="simulated sets per cell (default 200)")
    parser.add_argument("--bootstrap", type=int, default=200, help="bootstrap replicates per set (0: none)")
    parser.add_argument("--routes", default="auto", help="comma-separated: auto, in-sample, cross-fit, ...")
    parser.add_argument("--cells", default="all", help="comma-separated cell names (default: the grid)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default="default",
                        help="comma-separated interval methods: default (the library's), " + ", ".join(
                            m for m in INTERVAL_METHODS if m != "default") + ", or all")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    cells = GRID if args.cells == "all" else [c for c in GRID if c.name in args.cells.split(",")]
    t0 = time.perf_counter()
    methods = INTERVAL_METHODS if args.methods == "all" else tuple(args.methods.split(","))
    rows = coverage_table(cells, tuple(args.routes.split(",")), n_sets=args.sets, bootstrap=args.bootstrap,
                          jobs=args.jobs, seed=args.seed, progress=True, methods=methods)
    print_rows(rows, format_table(rows), args, cells, t0)


def print_rows(rows: list[dict], table: str, args, cells, t0: float) -> None:
    """The table of every cell, the run's footer (sets, B, seed, wall time, load, cells), and --json."""
    print("\nAll cells:\n" + table)
    print(f"\n{args.sets} sets per cell, B = {args.bootstrap}, seed {args.seed}; "
          f"{time.perf_counter() - t0:.0f} s wall, load average {os.getloadavg()[0]:.1f}; cells: "
          + "; ".join(f"{c.name} = {asdict(c)}" for c in cells))
    if args.json:
        import json

        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
