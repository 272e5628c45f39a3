"""Pixel-by-pixel CKA matrix: the paper's nested loop versus promptprism's matrix-product method.

    python benchmarks/regions.py [--n 1000] [--block 100] [--pairs 300] [--full-loop-size 8]
                                 [--part cka|bias|all]

For each image size (8x8 in full, 28x28 and 64x64) and n real images, the CKA matrix M (d x d, d = H*W) is
computed as in the paper's Algorithm 1 with mini-batch CKA (appendix C: blocks of ``--block`` images,
averaged):

* ``loop``: the paper's nested loop over all d^2 pixel pairs (i, j); per pair and block the two b x b RBF
  Gram matrices are built and CKA (eq. 13) is evaluated with tr(K H L H) products. For 28x28 and 64x64 the
  full loop is infeasible here, so a random subset of ``--pairs`` pairs is timed and the time is
  **extrapolated** linearly to d^2 pairs (a pair's cost does not depend on d). At ``--full-loop-size`` the
  loop runs in full as a check of the extrapolation.
* ``promptprism``: :func:`promptprism.pixel_cka_matrix` (centred Gram matrices of all pixels stacked as rows,
  one symmetric rank-k product per group of blocks, memory bounded by ~2 GB).

The ratio is loop time / promptprism time measured in the same run; entries of both are compared on the
timed pairs. Images: scikit-learn digits upscaled to 28x28 and crops of scikit-image's pictures for 64x64
(random images when scikit-image is missing).

``--part bias`` prints the block CMS estimators against eq. 4 on all images (same-distribution digits, 900
vs 897 images, two regions; mean and sd over 10 block seeds) and the cost of the bootstrap.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy import ndimage

from promptprism import pixel_cka_matrix
from promptprism.kernels.bandwidth import gamma_from_median

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from regions_oracle import pixel_cka_loop  # noqa: E402  (the test oracle: the paper's nested loop)


def digits(n: int, size: int, seed: int) -> np.ndarray:
    from sklearn.datasets import load_digits

    x = load_digits().images / 16.0
    x = x[np.random.default_rng(seed).choice(len(x), size=n, replace=len(x) < n)]
    if size == 8:
        return x
    return np.clip(ndimage.zoom(x, (1, size / 8, size / 8), order=1), 0, 1)


def crops(n: int, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    try:
        import skimage.data as sd

        pics = [sd.camera(), sd.moon(), sd.coins(), sd.grass(), sd.gravel(), sd.brick(), sd.clock()]
    except ImportError:
        return rng.random((n, size, size))
    out = []
    for k in range(n):
        img = pics[k % len(pics)] / 255.0
        r, c = rng.integers(0, img.shape[0] - size), rng.integers(0, img.shape[1] - size)
        out.append(img[r:r + size, c:c + size])
    return np.stack(out)


def bench(name: str, images: np.ndarray, block: int, n_pairs: int | None, seed: int) -> dict:
    n, h, w = images.shape[:3]
    d = h * w
    gamma = gamma_from_median(images.reshape(n, d, -1), seed=seed)
    t0 = time.perf_counter()
    m = pixel_cka_matrix(images, gamma=gamma, block_size=block, max_images=None, seed=seed)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    m32 = pixel_cka_matrix(images, gamma=gamma, block_size=block, max_images=None, seed=seed, dtype="float32")
    t_32 = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    if n_pairs is None or n_pairs >= d * d:
        pairs = [(i, j) for i in range(d) for j in range(d)]
        extrapolated = False
    else:
        pairs = [tuple(map(int, p)) for p in rng.integers(0, d, (n_pairs, 2))]
        extrapolated = True
    t0 = time.perf_counter()
    loop = pixel_cka_loop(images, gamma=gamma, block_size=block, seed=seed, pairs=pairs)
    t_sub = time.perf_counter() - t0
    t_loop = t_sub * (d * d) / len(pairs)
    err = max(abs(loop[i, j] - m[i, j]) for i, j in pairs)
    return {"images": name, "d": d, "n": n, "t_fast": t_fast, "t_32": t_32, "err_32": np.abs(m32 - m).max(),
            "t_loop": t_loop, "extrapolated": extrapolated,
            "pairs": len(pairs), "t_sub": t_sub, "ratio": t_loop / t_fast, "err": err}


def block_bias(seeds: int = 10) -> None:
    """Same-distribution digits: eq. 4 on all images vs the paper's block average and the corrected one."""
    from sklearn.datasets import load_digits

    from promptprism.methods.regions.comparison import compare_sources
    from promptprism.methods.regions.sources import as_pixels

    x = load_digits().images / 16.0
    perm = np.random.default_rng(0).permutation(len(x))
    real, gen = as_pixels(x[perm[:900]]), as_pixels(x[perm[900:]])
    gamma = gamma_from_median(real)
    labels = np.repeat([0, 1], 32)
    t0 = time.perf_counter()
    full = compare_sources(real, [gen], labels, gamma)[0]
    t_full = time.perf_counter() - t0
    t0 = time.perf_counter()
    boot = compare_sources(real, [gen], labels, gamma, bootstrap=200, seed=0)[0]
    t_boot = time.perf_counter() - t0
    iv = boot["intervals"]["cms"]
    print("# block CMS bias, same-distribution digits 8x8 (900 real, 897 generated), gamma = median rule")
    print(f"eq. 4 on all images: {full['cms']:.4f} ({t_full:.2f} s); with --bootstrap 200: {t_boot:.2f} s, "
          f"95% interval [{iv['low']:.4f}, {iv['high']:.4f}], debiased {iv['debiased']:.4f}")
    print("| b | paper's block average | corrected block estimate |")
    print("|---:|---:|---:|")
    for b in (50, 100, 150):
        vals = {est: [compare_sources(real, [gen], labels, gamma, block_size=b, seed=s,
                                      block_estimator=est)[0]["cms"] for s in range(seeds)]
                for est in ("paper", "corrected")}
        print(f"| {b} | {np.mean(vals['paper']):.4f} ± {np.std(vals['paper']):.4f} | "
              f"{np.mean(vals['corrected']):.4f} ± {np.std(vals['corrected']):.4f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--block", type=int, default=100)
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--full-loop-size", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--part", choices=("cka", "bias", "all"), default="all")
    a = ap.parse_args()
    if a.part in ("bias", "all"):
        block_bias()
        if a.part == "bias":
            return
    print(f"# pixel CKA matrix, n = {a.n} images, mini-batches of {a.block} (paper's appendix C), "
          f"seed {a.seed}")
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, numpy {np.__version__}")
    rows = [
        bench(f"digits {a.full_loop_size}x{a.full_loop_size}", digits(a.n, a.full_loop_size, a.seed), a.block,
              None, a.seed),
        bench("digits 28x28", digits(a.n, 28, a.seed), a.block, a.pairs, a.seed),
        bench("crops 64x64", crops(a.n, 64, a.seed), a.block, a.pairs, a.seed),
    ]
    print("| images | pixels d | n | paper's loop | promptprism (float64) | ratio | max abs diff vs loop | "
          "promptprism (float32) | max abs diff float32 vs float64 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        how = f"extrapolated from {r['pairs']} timed pairs" if r["extrapolated"] else "measured, all pairs"
        print(f"| {r['images']} | {r['d']} | {r['n']} | {r['t_loop']:.1f} s ({how}) | {r['t_fast']:.2f} s | "
              f"{r['ratio']:.0f}x | {r['err']:.1e} | {r['t_32']:.2f} s | {r['err_32']:.1e} |")


if __name__ == "__main__":
    main()
