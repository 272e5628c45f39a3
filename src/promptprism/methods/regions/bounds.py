"""CMS values kept inside their definition: a cosine of mean embeddings lies in [-1, 1].

CMS(X, Y) = <mu_X, mu_Y> / (|mu_X| |mu_Y|) with mu the kernel mean embeddings (eq. 4; SPEC, "Cosine mean
similarity"): a cosine, so the population CMS of the whole image, of each region and their product lie in
[-1, 1] (in [0, 1] for the RBF kernel). Eq. 4 on samples is itself a cosine (of the empirical embeddings),
inside [-1, 1] up to rounding. The U form M_xy / sqrt(U_xx U_yy) (the estimate the bootstrap intervals are
built around) and the corrected block estimator put pair means from different pairs into one ratio, and can
exceed 1 in finite samples: most when generated images repeat real ones (a copied image pairs with its
original at k = 1 across the sets, while the within-set means leave every image's pair with itself out).

Every reported CMS-type value is clipped to [-1, 1] (the projection onto the parameter space: never further
from the population value than the unclipped one), and every percentile interval is intersected with
[-1, 1]: the population value lies there, so the intersection covers it whenever the interval did. An
interval entirely above 1 has no point in common with [-1, 1]; it becomes [1, 1], the nearest point, and is
no confidence interval (the sets are not independent samples of two distributions). A value beyond
[-1, 1] by more than rounding (:data:`ROUNDING`) is named in a note, with its unclipped value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: a CMS beyond [-1, 1] by at most this much is rounding (eq. 4 in log space), clipped without a note
ROUNDING = 1e-9

#: what a U form above 1 says about the data
U_ABOVE_ONE = ("pairs of a generated and a real image are more alike than pairs of distinct images within "
               "either set: generated images that repeat (copy) real ones, or too few images for the "
               "estimate to settle")


def clip_cms(value: Any) -> Any:
    """A CMS-type value (or array of them) clipped to [-1, 1], the range of a cosine (eq. 4)."""
    out = np.clip(np.asarray(value, dtype=np.float64), -1.0, 1.0)
    return float(out) if out.ndim == 0 else out


def outside(value: float) -> bool:
    """Whether a CMS-type value lies beyond [-1, 1] by more than rounding (:data:`ROUNDING`)."""
    return abs(float(value)) > 1.0 + ROUNDING


def _bounded_interval(label: str, iv: dict) -> tuple[dict, str | None, bool, bool]:
    """One interval entry {'low', 'high', 'debiased'} with each number clipped to [-1, 1] (the interval
    intersected with it); the unclipped estimate and interval in words when the estimate was beyond it
    (None when only a bound was: an interval reaching past 1 is cut there quietly); whether the whole
    interval lay beyond; whether it lay beyond by more than its own width."""
    said = None
    if outside(iv["debiased"]) or (outside(iv["low"]) and outside(iv["high"])):
        said = f"{label} {iv['debiased']:.4f} [{iv['low']:.4f}, {iv['high']:.4f}]"
    disjoint = iv["low"] > 1.0 + ROUNDING or iv["high"] < -1.0 - ROUNDING
    far = disjoint and abs(iv["low"] if iv["low"] > 1.0 else iv["high"]) - 1.0 > iv["high"] - iv["low"]
    return {**iv, **{k: clip_cms(iv[k]) for k in ("low", "high", "debiased")}}, said, disjoint, far


#: the fewest bootstrap replicates from which an interval wholly above 1 is read as more than sampling noise
#: (independent draws of one distribution, n = 250: 5 of 60 pairs had one at 20 replicates, 3 of 60 at 40,
#: none of 100 at 100); from fewer, only one above 1 by more than its own width (copied images: 1.33-1.60)
SETTLED_REPLICATES = 100


def bounded_row(row: dict[str, Any], *, replicates: int = SETTLED_REPLICATES, blocks: bool = False
                ) -> dict[str, Any]:
    """One set's comparison (``cms``, ``product_cms``, ``region_cms``, ``intervals``) with every CMS-type
    value and interval bound clipped to [-1, 1], and ``notes``: a sentence naming the unclipped values that
    were beyond it and what that suggests (none when nothing was; ``replicates`` and ``blocks``: how the
    intervals were drawn, which decides what an interval wholly above 1 can say)."""
    per = np.asarray(row["region_cms"], dtype=np.float64)
    plug = [f"{w} {v:.4f}" for w, v in [("whole image", row["cms"]), ("product", row["product_cms"]),
                                         *((f"region {r}", v) for r, v in enumerate(per))] if outside(v)]
    out = dict(row, cms=clip_cms(row["cms"]), region_cms=clip_cms(per),
               product_cms=clip_cms(float(np.prod(clip_cms(per)))))
    notes = []
    if plug:
        notes.append(f"the point estimate exceeded 1 before clipping ({', '.join(plug)}); a cosine cannot, "
                     f"so it is reported clipped to [-1, 1]; {U_ABOVE_ONE}")
    iv = row.get("intervals") or {}
    if iv:
        entries = [("whole image", iv["cms"]), ("product", iv["product_cms"]),
                   *((f"region {r}", b) for r, b in enumerate(iv["region_cms"]))]
        done = [_bounded_interval(label, b) for label, b in entries]
        out["intervals"] = {"cms": done[0][0], "product_cms": done[1][0],
                            "region_cms": [d[0] for d in done[2:]]}
        said = [d[1] for d in done if d[1]]
        if said:
            settled = (replicates >= SETTLED_REPLICATES and not blocks) or any(d[3] for d in done)
            notes.append(_interval_note(said, any(d[2] for d in done), settled, replicates))
    out["notes"] = notes
    return out


def _interval_note(said: list[str], disjoint: bool, settled: bool, replicates: int) -> str:
    """The sentence of U-form estimates that exceeded 1 before clipping, and what that suggests: beyond
    sampling noise when a whole interval lay above 1 and its ends are settled (``settled``), else within
    it (or not known to be beyond it)."""
    text = (f"the U-form CMS exceeded 1 before clipping ({'; '.join(said)}); a cosine cannot, so the U-form "
            "values are reported clipped to [-1, 1] and their intervals intersected with it (which keeps "
            "their coverage); ")
    if disjoint and not settled:
        return text + (f"an interval lay wholly above 1, but from {replicates} bootstrap replicates (or the "
                       "block estimator's few blocks) its ends are noisy themselves: independent draws of "
                       "one distribution gave such an interval in 5 of 60 pairs at 20 replicates, none of "
                       f"100 at {SETTLED_REPLICATES}; rerun with --bootstrap {SETTLED_REPLICATES} or more "
                       "(without --block-size) before reading it as generated images that repeat real ones")
    if disjoint:
        return text + (f"an interval entirely above 1 is more than sampling noise: {U_ABOVE_ONE}; it is "
                       "shown as [1, 1] and is not a confidence interval here (the sets are not independent "
                       "samples)")
    return text + ("each interval reaches 1, so the excess is within sampling noise of CMS = 1 (the sets "
                   "agree there), unless generated images repeat some real ones")


__all__ = ["ROUNDING", "SETTLED_REPLICATES", "U_ABOVE_ONE", "bounded_row", "clip_cms", "outside"]
