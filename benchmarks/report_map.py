"""The report map's embedding: kernel PCA (the default), t-SNE (``--map-projection t-sne``) and linear
PCA, on the map's own samples.

    python benchmarks/report_map.py [--points 600] [--per-prompt 40]
    python benchmarks/report_map.py --layout 600 5000 20000 [--per-prompt 500]

Data: the demo's coloured digits (``colored_digits``), the joint (prompt, output) features the map embeds
(``report.map.joint_features``), a seeded subsample of ``--points`` samples. Per method: wall time and how
well the 2-D map keeps each point's neighbours: scikit-learn's trustworthiness (k = 10; 1 = every 2-D
neighbour is a true neighbour) and the fraction of each point's 10 nearest neighbours in the features that
stay among its 10 nearest on the map. UMAP is not a dependency of the project and is not measured.

``--layout N ...``: the whole stored layout (``layout.sample_map``: landmarks' t-SNE and exact mode
scores, the k-NN placement of the others) for N drawn samples each, its seconds (wall and this process's CPU,
``time.process_time``, per stage too), and the ratio to N = 600 (t-SNE of every point) measured in the same
run; beside it, the 10-NN kept in the features by the map.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def neighbour_recall(x: np.ndarray, y: np.ndarray, k: int = 10) -> float:
    """Mean fraction of each row's k nearest neighbours in ``x`` that are among its k nearest in ``y``."""
    from sklearn.neighbors import NearestNeighbors

    a = NearestNeighbors(n_neighbors=k + 1).fit(x).kneighbors(return_distance=False)[:, :k]
    b = NearestNeighbors(n_neighbors=k + 1).fit(y).kneighbors(return_distance=False)[:, :k]
    return float(np.mean([len(set(p) & set(q)) / k for p, q in zip(a, b, strict=True)]))


def _stage_clock(stages: list):
    """``step(name)`` for ``sample_map``: appends (name, wall, CPU) to ``stages``."""
    def step(name: str) -> None:
        stages.append((name, time.perf_counter(), time.process_time()))
    return step


def layout_times(sizes: list[int], per_prompt: int) -> None:
    """Seconds of ``sample_map`` for each number of drawn samples (the result fitted on a 600-sample
    subset supplies the bandwidths and seed; the map draws from the full sets)."""
    import dataclasses

    from promptprism import PairedSet, PromptSplit
    from promptprism.datasets import colored_digits
    from promptprism.methods.promptsplit.layout import joint_features, sample_map

    data = colored_digits(per_prompt=per_prompt, seed=0)
    pick = np.random.default_rng(0).choice(len(data.test.prompt_embeddings), 300, replace=False)
    small = {s: PairedSet(getattr(data, s).prompt_embeddings[pick], getattr(data, s).output_embeddings[pick])
             for s in ("test", "reference")}
    result = PromptSplit(seed=0, permutations=0, progress=False).fit(small["test"], small["reference"])
    sets = {"test": data.test, "reference": data.reference}
    result = dataclasses.replace(result, n_test=len(data.test.prompt_embeddings),
                                 n_reference=len(data.reference.prompt_embeddings))
    print(f"load average {', '.join(f'{v:.1f}' for v in os.getloadavg())}; {result.n_test:,} + "
          f"{result.n_reference:,} samples")
    base = None
    for n in sizes:
        stages: list[tuple[str, float, float]] = []
        step = _stage_clock(stages)
        t0, c0 = time.perf_counter(), time.process_time()
        step("start")
        m = sample_map(result, sets, n, step=step)
        took, cpu = time.perf_counter() - t0, time.process_time() - c0
        step("end")
        base = base or took
        parts = " · ".join(f"{a[0].removeprefix('map: ')[:18]} {b[1] - a[1]:.2f}/{b[2] - a[2]:.2f}"
                           for a, b in zip(stages[:-1], stages[1:], strict=True))
        rows = {s: [i for t, i in m["points"] if t == s] for s in ("test", "reference")}
        feats = joint_features(np.vstack([sets[s].prompt_embeddings[rows[s]] for s in rows]),
                               np.vstack([sets[s].output_embeddings[rows[s]] for s in rows]), result.config)
        kept = neighbour_recall(feats, np.column_stack([m["x"], m["y"]]))
        print(f"{m['shown']:7,d} points ({m['landmarks']} landmarks) {took:6.2f} s wall, {cpu:6.2f} s CPU · "
              f"{took / base:5.2f}x the first · 10-NN kept {kept:.3f}\n    stages (wall/CPU s): {parts}",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=600)
    ap.add_argument("--per-prompt", type=int, default=40)
    ap.add_argument("--layout", type=int, nargs="+", default=None)
    args = ap.parse_args()
    if args.layout:
        layout_times(args.layout, args.per_prompt)
        return
    from sklearn.decomposition import PCA
    from sklearn.manifold import trustworthiness

    from promptprism import PromptSplit
    from promptprism.datasets import colored_digits
    from promptprism.report.map import embed_2d, joint_features

    data = colored_digits(per_prompt=args.per_prompt, seed=0)
    result = PromptSplit(seed=0, permutations=0).fit(data.test, data.reference)
    t = np.vstack([data.test.prompt_embeddings, data.reference.prompt_embeddings])
    z = np.vstack([data.test.output_embeddings, data.reference.output_embeddings])
    idx = np.sort(np.random.default_rng(0).choice(len(t), min(args.points, len(t)), replace=False))
    feats = joint_features(t[idx], z[idx], result.config)
    print(f"load average {', '.join(f'{v:.1f}' for v in os.getloadavg())}; {len(idx)} points, "
          f"{feats.shape[1]} features")
    for name, fn in (("kernel PCA (default)", lambda x: embed_2d(x, 0)),
                     ("t-SNE", lambda x: embed_2d(x, 0, "t-sne")),
                     ("PCA", lambda x: PCA(2, random_state=0).fit_transform(x - x.mean(axis=0)))):
        t0 = time.perf_counter()
        xy = fn(feats)
        took = time.perf_counter() - t0
        print(f"{name:20s} {took:6.2f} s · trustworthiness {trustworthiness(feats, xy, n_neighbors=10):.3f}"
              f" · 10-NN kept {neighbour_recall(feats, xy):.3f}")


if __name__ == "__main__":
    main()
