"""Disentangled regions on real Fashion-MNIST images: regions fitted on training images, then a "generator"
that gives held-out real images, and one whose images are corrupted (Gaussian noise) inside one region only.
Prints the time of each step and, per corrupted region, whether its CMS drops most.

    python benchmarks/fashion_regions.py [--n-train 5000] [--n-test 2000] [--regions 4]

Needs Debian's dataset-fashion-mnist.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from promptprism import RegionCMS
from promptprism.datasets import fashion_mnist


def run(n_train: int, n_test: int, regions: int = 4, seed: int = 0) -> dict:
    """Fit regions on real training images, compare held-out images and one noisy-region set per region."""
    x, _ = fashion_mnist("train")
    x_te, _ = fashion_mnist("test")
    rng = np.random.default_rng(seed)
    train = x[rng.choice(len(x), n_train, replace=False)] / 255.0
    test = x_te[rng.choice(len(x_te), n_test, replace=False)] / 255.0
    t0 = time.perf_counter()
    est = RegionCMS(n_regions=regions, seed=seed).fit(train)
    t1 = time.perf_counter()
    labels = est.regions_.reshape(28, 28)
    sets, names = [test], ["held-out real"]
    for r in range(regions):
        noisy = np.clip(test + np.random.default_rng(r).normal(0, 0.3, test.shape), 0, 1)
        bad = test.copy()
        bad[:, labels == r] = noisy[:, labels == r]
        sets.append(bad)
        names.append(f"noise in region {r}")
    res = est.compare(sets, names)
    t2 = time.perf_counter()
    base = np.array(res.region_cms[0])
    drops_most = [int(np.argmax(np.log(base) - np.log(np.array(res.region_cms[k]))))
                  for k in range(1, len(sets))]
    return {"fit_s": t1 - t0, "compare_s": t2 - t1, "sizes": np.bincount(labels.ravel()).tolist(),
            "names": names, "cms": list(res.cms), "region_cms": [list(r) for r in res.region_cms],
            "drops_most": drops_most}


def main() -> None:
    """Fit, corrupt each region in turn, compare; print the numbers."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-train", type=int, default=5000)
    ap.add_argument("--n-test", type=int, default=2000)
    ap.add_argument("--regions", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    r = run(args.n_train, args.n_test, args.regions, args.seed)
    print(f"fit {args.n_train} images: {r['fit_s']:.1f} s; compare {len(r['names'])} sets of {args.n_test}: "
          f"{r['compare_s']:.1f} s; region sizes {r['sizes']}")
    for name, cms, rc in zip(r["names"], r["cms"], r["region_cms"], strict=True):
        print(f"{name}: CMS {cms:.3f}, per region {np.round(rc, 3).tolist()}")
    hits = sum(w == k for k, w in enumerate(r["drops_most"]))
    print(f"corrupted region found (its CMS drops most): {hits}/{args.regions}")


if __name__ == "__main__":
    main()
