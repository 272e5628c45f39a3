"""Where the region CMS bootstrap intervals keep their nominal coverage: the rule written to result.json
(``bootstrap['validity']``), printed by the CLI and the report when it does not hold.

The rule restates what the simulation grid measured (benchmarks/cms_coverage.py; the table is in
docs/regions.md, "Intervals: where they hold"): a statement about the interval used on sets of this size, not
a test of the sets themselves.
"""

from __future__ import annotations

#: fewer images than this in the smaller set: the exact intervals covered 0.915-0.925 (80 images)
MIN_IMAGES_EXACT = 200


def interval_validity(block_size: int | None, n_real: int, n_generated: list[int]) -> dict:
    """{'holds': bool, 'reason': str}: whether the intervals of a comparison with this ``block_size`` (None:
    exact) and these set sizes lie where the grid measured 0.92-0.98 coverage of the population CMS."""
    smallest = min([n_real, *n_generated])
    if block_size is not None:
        return {"holds": False,
                "reason": "the block bootstrap resamples whole blocks, which misses the variation within "
                          "them: its intervals covered 0.83-0.835 on the simulation grid with 5 blocks of 80 "
                          "images (0.885-0.89 with 20 blocks); use the exact estimator (no block_size) for "
                          "intervals that cover (docs/regions.md)"}
    if smallest < MIN_IMAGES_EXACT:
        return {"holds": False,
                "reason": f"{smallest} images in the smaller set: below {MIN_IMAGES_EXACT} the percentile "
                          "intervals covered 0.915-0.925 on the simulation grid (80 images), a little "
                          "below 95 % (docs/regions.md)"}
    return {"holds": True,
            "reason": f"exact estimator, at least {MIN_IMAGES_EXACT} images: 0.95-0.965 measured "
                      "(docs/regions.md); regions where the sets agree (CMS = 1) are covered more often "
                      "(conservative)"}


__all__ = ["MIN_IMAGES_EXACT", "interval_validity"]
