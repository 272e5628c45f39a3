"""The regions method's bootstrap intervals judged on known truth: coverage of the population CMS.

Images of s x s pixels (2 x 2: 2 pixels a region; 8 x 8: 32, the high-dimensional cells), two regions (the
top and the bottom half of the rows), every pixel an independent N(mu, 1); the generated images'
bottom-half pixels are shifted by ``shift`` (0: the same distribution). Under
k(a, b) = exp(-g |a - b|^2) the population CMS of pixels with mean difference D is exp(-g |D|^2 / (1 + 4 g))
(E k(x, y) = (1 + 4 g)^(-d/2) exp(-g |D|^2 / (1 + 4 g)), E k(x, x') = (1 + 4 g)^(-d/2); the bandwidth g
is the cell's, 1 / 64 at 8 x 8 so that the kernel stays away from 0), so the truth of
each region, of the whole image and of their product (Theorem 1: the kernel factorises) is analytic.
Per cell and interval: the truth, the mean U-form estimate (``debiased``), bias / sd and the coverage of
the 95 % percentile interval (``bootstrap`` B = 200).

    python benchmarks/cms_coverage.py --sets 200
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402

GAMMA = 0.25


@dataclass(frozen=True)
class Cell:
    name: str
    n: int
    shift: float
    block_size: int | None = None
    side: int = 2
    gamma: float = GAMMA

    @property
    def regions(self) -> np.ndarray:
        """Each pixel's region (row-major): 0 in the top half of the rows, 1 in the bottom half."""
        return np.repeat([0, 1], self.side * self.side // 2)


GRID = (Cell("shift-n80", 80, 0.7), Cell("shift-n200", 200, 0.7), Cell("same-n80", 80, 0.0),
        Cell("shift-n400-blocks80", 400, 0.7, block_size=80),
        Cell("shift-n2000-blocks100", 2000, 0.7, block_size=100),
        Cell("hi-shift-n80", 80, 0.5, side=8, gamma=1 / 64),
        Cell("hi-shift-n200", 200, 0.5, side=8, gamma=1 / 64),
        Cell("hi-same-n80", 80, 0.0, side=8, gamma=1 / 64))


def truths(cell: Cell) -> dict[str, float]:
    """Population CMS of each region, of the whole image and of the product of the regions."""
    shifted = cell.side * cell.side // 2
    g = cell.gamma
    region = [1.0, float(np.exp(-g * shifted * cell.shift**2 / (1 + 4 * g)))]
    return {"region 0": region[0], "region 1": region[1], "cms": region[0] * region[1],
            "product_cms": region[0] * region[1]}


def one_set(cell: Cell, seed: int, bootstrap: int) -> dict[str, tuple[float, float, float]]:
    """{interval: (U-form estimate, low, high)} of one simulated pair of image sets."""
    from promptprism.methods.regions import region_cms

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((cell.n, cell.side, cell.side))
    y = rng.standard_normal((cell.n, cell.side, cell.side))
    y[:, cell.side // 2:, :] += cell.shift
    iv = region_cms(x, y, cell.regions, cell.gamma, bootstrap=bootstrap, seed=seed,
                    block_size=cell.block_size)["intervals"]
    out = {f"region {i}": r for i, r in enumerate(iv["region_cms"])}
    out.update(cms=iv["cms"], product_cms=iv["product_cms"])
    return {k: (v["debiased"], v["low"], v["high"]) for k, v in out.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=200)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--cells", default="all")
    args = parser.parse_args(argv)
    cells = GRID if args.cells == "all" else [c for c in GRID if c.name in args.cells.split(",")]
    t0 = time.perf_counter()
    print("| cell | interval | truth | mean (U-form) | bias/sd | coverage | width |\n"
          "|---|---|---|---|---|---|---|")
    for cell in cells:
        sets = [one_set(cell, s, args.bootstrap) for s in range(args.sets)]
        for key, truth in truths(cell).items():
            est, low, high = (np.array(c) for c in zip(*(s[key] for s in sets), strict=True))
            sd = est.std(ddof=1)
            bias = (est.mean() - truth) / sd if sd > 0 else float("nan")
            print(f"| {cell.name} | {key} | {truth:.4f} | {est.mean():.4f} | {bias:+.2f} | "
                  f"{np.mean((low <= truth) & (truth <= high)):.3f} | {np.mean(high - low):.4f} |",
                  flush=True)
    print(f"\n{args.sets} sets per cell, B = {args.bootstrap}, gamma {GAMMA} (1/64 at 8 x 8); "
          f"{time.perf_counter() - t0:.0f} s "
          f"wall, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
