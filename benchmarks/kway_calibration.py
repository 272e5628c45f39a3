"""K-way PromptSplit's permutation test: family-wise false-positive rate under the null and power, measured.

    python benchmarks/kway_calibration.py                     # K = 3 and 4, 200 null data sets each, power
    python benchmarks/kway_calibration.py --datasets 400 --permutations 99
    python benchmarks/kway_calibration.py --ks 3 --prompts 100 --per 4    # 1,200 rows: the principal subspace
    python benchmarks/kway_calibration.py --ks 3 --prompts 100 --per 4 --whole   # ... over the whole operand

Null: K sets drawn from one distribution on the same prompts (the data of tests/test_promptsplit_kway.py:
outputs = tanh(prompt @ 1) + 0.5 noise, 6 prompts x 3 samples per set, 3-d), exact route, 2 modes per sign
and comparison; a data set counts as a false positive when any mode of any of the K(K-1)/2 + K comparisons
has family-wise p <= alpha. Power: one set's outputs shifted on two of the prompts. Prints one row per
setting with the rate and its binomial standard error. Above ``kway.WHOLE_OPERAND_MAX_ROWS`` rows in all the
test's statistic lives in the pooled samples' principal subspace; ``--whole`` keeps it over the whole operand
(the statistic used on every size before), for a side-by-side of the two.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from promptprism.methods.promptsplit import kway  # noqa: E402
from promptprism.methods.promptsplit.kway import KWaySplit  # noqa: E402
from test_promptsplit_kway import _rejects, model_sets  # noqa: E402


def rate(k: int, shift: float, datasets: int, permutations: int, alpha: float, first_seed: int, *,
         prompts: int = 6, per: int = 3) -> float:
    est = KWaySplit(method="exact", permutations=permutations, n_modes=2, alpha=alpha)
    hits = [_rejects(est.fit(model_sets(first_seed + s, k, prompts=prompts, per=per, shift=shift, planted=1)),
                     alpha) for s in range(datasets)]
    return float(np.mean(hits))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", type=int, default=200)
    ap.add_argument("--permutations", type=int, default=59)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--ks", type=int, nargs="+", default=[3, 4])
    ap.add_argument("--shifts", type=float, nargs="+", default=[0.0, 1.5, 2.5])
    ap.add_argument("--first-seed", type=int, default=1000, help="seed of the first null data set (power "
                                                                  "data sets start 1000 later)")
    ap.add_argument("--prompts", type=int, default=6, help="prompts per set")
    ap.add_argument("--per", type=int, default=3, help="outputs per prompt and set")
    ap.add_argument("--whole", action="store_true", help="the statistic over the whole operand at any size")
    args = ap.parse_args()
    if args.whole:
        kway.WHOLE_OPERAND_MAX_ROWS = 10**12
    print(f"# {args.prompts} prompts x {args.per} outputs per set; statistic: "
          f"{'whole operand' if args.whole else 'principal subspace above'} "
          f"{'' if args.whole else f'{kway.WHOLE_OPERAND_MAX_ROWS:,} rows'}")
    print(f"{'K':>2} {'shift':>5} {'datasets':>8} {'rate':>6} {'s.e.':>6} {'seconds':>8}")
    with threadpool_limits(1):
        for k in args.ks:
            for shift in args.shifts:
                n = args.datasets if shift == 0 else max(30, args.datasets // 4)
                t0 = time.perf_counter()
                r = rate(k, shift, n, args.permutations, args.alpha,
                         args.first_seed + (0 if shift == 0 else 1000), prompts=args.prompts, per=args.per)
                se = np.sqrt(r * (1 - r) / n)
                print(f"{k:>2} {shift:>5.1f} {n:>8} {r:>6.3f} {se:>6.3f} {time.perf_counter() - t0:>8.1f}",
                      flush=True)


if __name__ == "__main__":
    main()
