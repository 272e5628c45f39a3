"""Power and calibration of PromptSplit's permutation statistic: uncompressed or adaptive rank, or rank 128.

The set-up where a fixed rank-128 subspace loses power (issue 42, item 4): prompts t ~ N(0, I_24), outputs
x = t A + 0.5 e (reference) and x = t (A + eps B) + 0.5 e (test), one output per prompt, cosine kernel,
``aggregate='none'`` (the cosine kernel's own test): under the cosine kernel the difference is spread over the
576-d product feature space, whose top 128 directions hold ~75 % of tr G at n = m = 240. Also the hedged-text
set-up of ``text_hedges.py`` (MiniLM, one topic hedged), where 128 directions hold ~99 %.

A run counts as a rejection when any mode is significant at alpha = 0.05. ``--compressed`` runs the previous
statistic (rank 128 above 128 samples: ``FULL_MAX_ROWS = 0``, ``NULL_MAX_RANK = 128``, no fallback) on the
same data and seeds.

    python benchmarks/promptsplit_rank.py                    # 20 data sets, eps 0.3, n = m = 240; 100 nulls
    python benchmarks/promptsplit_rank.py --compressed       # the same, rank 128
    python benchmarks/promptsplit_rank.py --n 600 --eps 0.2 --nulls 0
    python benchmarks/promptsplit_rank.py --text --nulls 0   # the hedged-text set-up, seeds 200-219
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from promptprism import PairedSet, PromptSplit  # noqa: E402
from promptprism.methods.promptsplit import significance as sig  # noqa: E402


def subtle(seed: int, eps: float, n: int, dim: int = 24) -> tuple[PairedSet, PairedSet]:
    """The synthetic set-up (module doc); A and B fixed, the rows drawn from ``seed``."""
    a = np.random.default_rng(7).standard_normal((dim, dim)) / np.sqrt(dim)
    b = np.random.default_rng(8).standard_normal((dim, dim)) / np.sqrt(dim)
    rng = np.random.default_rng(seed)
    out = []
    for s, name in enumerate(("test", "reference")):
        t = rng.standard_normal((n, dim))
        x = t @ (a + (eps * b if s == 0 else 0.0)) + 0.5 * rng.standard_normal((n, dim))
        out.append(PairedSet(t, x, prompts=[f"{name} {i}" for i in range(n)], name=name))
    return out[0], out[1]


def hedged(seed: int, n: int) -> tuple[PairedSet, PairedSet]:
    """The hedged-text set-up (``text_hedges.draw_sets``, one topic fully hedged)."""
    from text_hedges import draw_sets, load_bank

    bank = load_bank()
    test, ref = draw_sets(bank, n, n, planted=seed % 10, hedged=1.0, rng=np.random.default_rng(seed))
    return tuple(PairedSet(p, o, prompts=[f"q{i:03d}" for i in ids], name=name)
                 for (p, o, ids), name in ((test, "test"), (ref, "reference")))


def count(draw, seeds: range) -> tuple[int, float, dict]:
    """(rejections, seconds per fit, the last fit's ``significance.subspace``)."""
    hits, t0, sub = 0, time.perf_counter(), {}
    for i, r in enumerate(seeds):  # (data from seed r, the permutations from seed i, as the tests)
        res = PromptSplit(kernel="cosine", aggregate="none", seed=i).fit(*draw(r))
        hits += res.significance["n_significant"] > 0
        sub = res.significance.get("subspace", {})
    return hits, (time.perf_counter() - t0) / max(len(seeds), 1), sub


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--nulls", type=int, default=100)
    ap.add_argument("--n", type=int, default=240, help="samples per set")
    ap.add_argument("--eps", type=float, default=0.3, help="the test set's extra map (0: a null pair)")
    ap.add_argument("--text", action="store_true", help="the hedged-text set-up instead")
    ap.add_argument("--compressed", action="store_true", help="the previous rank-128 statistic")
    args = ap.parse_args()
    if args.compressed:
        sig.FULL_MAX_ROWS, sig.NULL_MAX_RANK, sig.FALLBACK_MAX_ROWS = 0, 128, 0
    label = "rank 128 (before)" if args.compressed else "default (after)"
    if args.text:
        hits, secs, sub = count(lambda r: hedged(r, args.n), range(200, 200 + args.runs))
        print(f"{label}: hedged text, n = m = {args.n}: rejected in {hits}/{args.runs} ({secs:.2f} s a fit; "
              f"subspace {sub})")
        return
    if args.runs:
        hits, secs, sub = count(lambda r: subtle(r, args.eps, args.n), range(1000, 1000 + args.runs))
        print(f"{label}: eps {args.eps}, n = m = {args.n}: rejected in {hits}/{args.runs} ({secs:.2f} s a "
              f"fit; subspace {sub})")
    if args.nulls:
        hits, secs, _ = count(lambda r: subtle(r, 0.0, args.n), range(5000, 5000 + args.nulls))
        print(f"{label}: null, n = m = {args.n}: rejected in {hits}/{args.nulls} = {hits / args.nulls:.3f} "
              f"at alpha 0.05 ({secs:.2f} s a fit)")


if __name__ == "__main__":
    main()
