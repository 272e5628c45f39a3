"""Power and calibration of PromptSplit's permutation test, per kernel, bandwidth rule and route.

A set-up draws a test and a reference set with a planted difference on one topic (or none: a null pair);
each data set is fitted once with the aggregated test (``aggregate='auto'``), which also yields, on the same
permutations, each kernel's own test (the fitted gaussian at the median, cosine, gaussian at 2x the median);
then with ``sigma='stable'`` and on the random-feature routes (``rff`` gaussian, ``sketch`` cosine). A run
counts as a *hit* when a significant mode's strongest prompt (by contribution) lies in the planted topic;
on a null pair, as a *false positive* when any mode is significant.

    python benchmarks/promptsplit_power.py                       # the full table (>= 200 null sets)
    python benchmarks/promptsplit_power.py --runs 20 --nulls 40  # a quick look

The text set-up (``text_hedges.py``): ten topics of real questions and answers, MiniLM embeddings, one
topic's answers hedged in the test set. Printed: one row per (set-up, test) with the share of hits (or of
false positives), over ``runs`` (``nulls``) data sets, and the mean time per fit.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from text_hedges import draw_sets, load_bank  # noqa: E402

from promptprism import PairedSet, PromptSplit  # noqa: E402

#: the separate fits: name -> PromptSplit options (each with the fitted kernel alone)
SEPARATE = {
    "gaussian stable": {"sigma_prompt": "stable", "sigma_output": "stable", "aggregate": "none"},
    "rff route (gaussian)": {"method": "rff", "aggregate": "none"},
    "sketch route (cosine)": {"kernel": "cosine", "method": "sketch", "aggregate": "none"},
}
#: the single kernels read off the aggregated fit (each on its own, unadjusted p-values)
SINGLE = ("gaussian x1", "cosine", "gaussian x2")


def paired(arrays: tuple, name: str) -> PairedSet:
    prompts, outputs, ids = arrays
    return PairedSet(prompts, outputs, prompts=[f"q{i:03d}" for i in ids], name=name)


def aggregate_outcomes(res, on_topic: Callable[[str], bool], alpha: float) -> dict[str, tuple[bool, bool]]:
    """(any significant mode, a significant mode on the planted topic) for each single kernel and the
    aggregate, from one fit with ``aggregate='auto'``."""
    agg = res.significance["aggregation"]
    fitted = next(k["name"] for k in agg["kernels"] if k["fitted"])
    raw = agg["p_modes_fitted_kernel"]
    pairs = list(zip(res.modes, raw, strict=True))
    out = {fitted: (any(p <= alpha for p in raw),
                    any(p <= alpha and on_topic(md.top_prompts[0].prompt) for md, p in pairs))}
    agg_any = any(md.significant for md in res.modes)
    agg_hit = any(md.significant and on_topic(md.top_prompts[0].prompt) for md in res.modes)
    for k in agg["kernels"]:
        if k["fitted"]:
            continue
        modes = k["modes"]
        out[k["name"]] = (bool(modes), any(on_topic(md["top_prompts"][0]) for md in modes))
        agg_any |= any(md["p"] <= alpha for md in modes)
        agg_hit |= any(md["p"] <= alpha and on_topic(md["top_prompts"][0]) for md in modes)
    out["aggregate (default)"] = (agg_any, agg_hit)
    return out


def separate_outcome(res, on_topic: Callable[[str], bool]) -> tuple[bool, bool]:
    sig = [md for md in res.modes if md.significant]
    return bool(sig), any(on_topic(md.top_prompts[0].prompt) for md in sig)


def run_setup(bank: dict, *, n: int, hedged: float, runs: int, seed: int, separate: int = 0,
              alpha: float = 0.05) -> dict[str, dict]:
    """Per test: {'rate': share of runs with a hit (hedged > 0) or a false positive (hedged == 0),
    'runs', 'seconds' per fit}; the separate fits (:data:`SEPARATE`) on the first ``separate`` runs."""
    counts: dict[str, list] = {}
    for r in range(runs):
        rng = np.random.default_rng(seed + r)
        planted = r % len(bank["topics"])
        test, ref = draw_sets(bank, n, n, planted=planted, hedged=hedged, rng=rng)
        sets = (paired(test, "test"), paired(ref, "reference"))

        def on_topic(label: str, planted: int = planted, topic_of: np.ndarray = bank["topic"]) -> bool:
            return int(topic_of[int(label[1:])]) == planted
        t0 = time.perf_counter()
        res = PromptSplit(seed=seed + r, alpha=alpha).fit(*sets)
        spent = time.perf_counter() - t0
        outcomes = {k: (v, spent) for k, v in aggregate_outcomes(res, on_topic, alpha).items()}
        for name, options in (SEPARATE.items() if r < separate else ()):
            t0 = time.perf_counter()
            res = PromptSplit(seed=seed + r, alpha=alpha, **options).fit(*sets)
            outcomes[name] = (separate_outcome(res, on_topic), time.perf_counter() - t0)
        for name, ((found, hit), secs) in outcomes.items():
            row = counts.setdefault(name, [0, 0, 0.0])
            row[0] += 1
            row[1] += (found if hedged == 0 else hit)
            row[2] += secs
    return {k: {"rate": c[1] / c[0], "runs": c[0], "seconds": c[2] / c[0]} for k, c in counts.items()}


def power_table(setups: list[dict], *, seed: int = 0) -> list[dict]:
    """One row per (set-up, test): set-up name, n, hedged share, test, rate, runs, seconds per fit.
    ``setups``: dicts with 'name', 'n', 'hedged' (0 = null pairs), 'runs', optional 'separate' (runs
    with the separate fits too)."""
    bank = load_bank()
    rows = []
    for s in setups:
        table = run_setup(bank, n=s["n"], hedged=s["hedged"], runs=s["runs"], seed=seed,
                          separate=s.get("separate", 0))
        rows += [{"setup": s["name"], "n": s["n"], "hedged": s["hedged"], "test": k, **v}
                 for k, v in table.items()]
    return rows


def aggregation_cost(n: int, method: str, *, seed: int = 0, dim: int = 64) -> dict:
    """One default fit on unit-norm (text-like) random embeddings, n = m: the seconds of the fitted
    kernel's test, of each other kernel of the family, and of the whole fit."""
    rng = np.random.default_rng(seed)

    def unit(x: np.ndarray) -> np.ndarray:
        return x / np.linalg.norm(x, axis=1, keepdims=True)
    sets = [(unit(rng.standard_normal((n, dim))), unit(rng.standard_normal((n, dim)))) for _ in range(2)]
    res = PromptSplit(method=method, seed=seed).fit(*sets)
    agg = res.significance["aggregation"]
    return {"n": n, "method": res.method, "total_s": res.timings["total_s"],
            "significance_s": res.timings["significance_s"], "cost_s": agg["cost_s"],
            "samples": [k["samples"] for k in agg["kernels"]]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=100, help="data sets per power cell")
    ap.add_argument("--nulls", type=int, default=200, help="null data sets")
    ap.add_argument("--separate", type=int, default=40, help="power runs with the stable / route fits")
    ap.add_argument("--big-runs", type=int, default=20, help="data sets at n = m = 960 (half hedged)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cost", action="store_true", help="only the aggregation's cost at n = m = 5,000 "
                    "(exact) and 15,000 (rff)")
    args = ap.parse_args()
    if args.cost:
        for n, method in ((5000, "exact"), (15000, "rff")):
            print(aggregation_cost(n, method, seed=args.seed), flush=True)
        return
    setups = [{"name": "null, n = m = 240", "n": 240, "hedged": 0.0, "runs": args.nulls},
              {"name": "one topic hedged, n = m = 240", "n": 240, "hedged": 1.0, "runs": args.runs,
               "separate": args.separate},
              {"name": "half of one topic hedged, n = m = 960", "n": 960, "hedged": 0.5,
               "runs": args.big_runs}]
    print(f"{'set-up':40} {'test':24} {'rate':>6} {'runs':>5} {'s/fit':>6}")
    for s in setups:
        if s["runs"] <= 0:
            continue
        for row in power_table([s], seed=args.seed):
            print(f"{row['setup']:40} {row['test']:24} {row['rate']:6.3f} {row['runs']:5d} "
                  f"{row['seconds']:6.2f}", flush=True)


if __name__ == "__main__":
    main()
