"""The result of the regions method and its files (result.json, curves.csv, cka_matrix.npy)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._version import __version__
from ...results import Result

#: two regions' CMS closer than this are reported as tied
TIE = 1e-3

#: result.json carries the CKA matrix inline up to this many pixels (d x d numbers); above, only the file
INLINE_CKA_MAX_PIXELS = 1024


@dataclass(frozen=True)
class RegionsResult(Result):
    """Disentangled CMS of one or more generated sets against real images.

    ``cms``, ``product_cms``, ``mmd2``: one value per generated set (in ``names`` order); ``region_cms``: one
    row per set, one column per region; ``regions``: the region of each pixel, row-major over (H, W);
    ``cka_matrix``: the d x d pixel CKA matrix (None in result.json above ``INLINE_CKA_MAX_PIXELS`` pixels;
    ``cka_matrix.npy`` beside it always holds it); ``cross_region_cka``: C x C CKA of the region kernels.
    ``intervals`` (one entry per set) and ``bootstrap``: percentile bootstrap intervals for the population
    CMS, each with the U-form estimate it is built around (``debiased``), and how they were drawn (empty
    when off); ``cms`` and the rest stay eq. 4 with or without them. ``block_bias``: what the block
    estimator does about its bias (None without blocks). Every CMS-type value and bound lies in [-1, 1]
    (clipped; ``notes`` names what exceeded 1 before clipping).
    """

    kind = "regions"

    names: list
    cms: list
    product_cms: list
    region_cms: list
    mmd2: list
    regions: list
    image_shape: list
    n_regions: int
    region_sizes: list
    suggested_n_regions: int
    cross_region_cka: list
    cka_matrix: Any
    constant_pixels: list
    gamma: float
    n_real: int
    n_generated: list
    config: dict
    seed: int
    timings: dict = field(default_factory=dict)
    version: str = __version__
    #: per set: {"cms": {"low", "high", "debiased"}, "product_cms": {...}, "region_cms": [{...} per region]};
    #: "debiased" is the U-form estimate the interval is built around, not the headline ``cms`` (eq. 4)
    intervals: list = field(default_factory=list)
    #: {"replicates": B, "level": 0.95, "seed": s, "resample": ...}; empty when the bootstrap was off
    bootstrap: dict = field(default_factory=dict)
    #: a sentence when a block estimator was used (corrected, or the paper's form and its bias), else None
    block_bias: str | None = None
    #: the sets ranked by CMS, tied where their intervals overlap (``methods.rankings.regions_ranking``)
    ranking: dict = field(default_factory=dict)
    #: sentences, each naming a set whose CMS-type values exceeded 1 before clipping to [-1, 1]
    #: (:mod:`.bounds`)
    notes: list[str] = field(default_factory=list)

    def region_map(self) -> np.ndarray:
        """The region labels as an (H, W) array."""
        return np.asarray(self.regions, dtype=np.int64).reshape(self.image_shape[:2])

    def headline(self) -> dict:
        """The CMS values a result is summed up by: eq. 4 (``cms``, ``product_cms``, ``region_cms``), the same
        estimate with or without bootstrap intervals (asking for intervals never changes it). Returns
        ``{"estimate", "cms", "product_cms", "region_cms"}`` with one value (or one row) per generated set;
        the U-form estimates the intervals are built around are :meth:`u_form`."""
        return {"estimate": "eq. 4", "cms": list(self.cms), "product_cms": list(self.product_cms),
                "region_cms": [list(r) for r in self.region_cms]}

    def u_form(self) -> dict | None:
        """The U-form estimates M_xy / sqrt(U_xx U_yy) on all images (``debiased`` in ``intervals``, clipped
        to [-1, 1]) that each bootstrap interval is built around: ``{"cms", "product_cms", "region_cms"}``
        like :meth:`headline`; None without intervals for every set."""
        ivs = [self.intervals[k] if k < len(self.intervals) else {} for k in range(len(self.names))]
        if not self.names or not all(iv and "debiased" in iv.get("cms", {}) for iv in ivs):
            return None
        return {"cms": [iv["cms"]["debiased"] for iv in ivs],
                "product_cms": [iv["product_cms"]["debiased"] for iv in ivs],
                "region_cms": [[b["debiased"] for b in iv["region_cms"]] for iv in ivs]}

    def table(self) -> list[dict]:
        """One row per generated set: name, eq. 4's cms, product and each region's CMS (:meth:`headline`,
        the curves), MMD^2, and when the bootstrap ran each U-form estimate with its interval
        (``cms_uform``, ``cms_uform_low``, ``cms_uform_high``; likewise ``product_cms_uform*`` and
        ``region_r_uform*``)."""
        head = self.headline()
        rows = []
        for k, name in enumerate(self.names):
            row = {"set": name, "cms": head["cms"][k], "product_cms": head["product_cms"][k],
                   "mmd2": self.mmd2[k]}
            row.update({f"region_{r}": v for r, v in enumerate(head["region_cms"][k])})
            iv = self.intervals[k] if k < len(self.intervals) else {}
            if iv:
                entries = [("cms", iv["cms"]), ("product_cms", iv["product_cms"]),
                           *((f"region_{r}", b) for r, b in enumerate(iv["region_cms"]))]
                for what, b in entries:  # (results written before 'debiased' existed: the bounds only)
                    row.update({f"{what}_uform": b["debiased"]} if "debiased" in b else {})
                    row.update({f"{what}_uform_low": b["low"], f"{what}_uform_high": b["high"]})
            rows.append(row)
        return rows

    def region_ties(self, k: int = 0) -> list[tuple[int, int]]:
        """Pairs of regions (r, s), r < s, whose bootstrap intervals for set ``k`` overlap: their CMS cannot
        be ordered at the interval's level. Empty without intervals."""
        iv = self.intervals[k]["region_cms"] if k < len(self.intervals) and self.intervals[k] else []
        return [(r, s) for r in range(len(iv)) for s in range(r + 1, len(iv))
                if iv[r]["low"] <= iv[s]["high"] and iv[s]["low"] <= iv[r]["high"]]

    def to_dict(self) -> dict:
        """Plain JSON types; the CKA matrix is left out (None) above ``INLINE_CKA_MAX_PIXELS`` pixels."""
        import dataclasses

        from ...results import SCHEMA_VERSION, to_jsonable

        big = len(self.regions) > INLINE_CKA_MAX_PIXELS
        data = {"kind": self.kind, "schema_version": SCHEMA_VERSION}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            data[f.name] = None if (f.name == "cka_matrix" and big) else to_jsonable(value)
        return data

    def files(self) -> dict[str, str | bytes]:
        """cka_matrix.npy, curves.csv and result.json (written last by the writers)."""
        import io

        files: dict[str, bytes | str] = {}
        if self.cka_matrix is not None:
            buf = io.BytesIO()
            np.save(buf, np.asarray(self.cka_matrix, dtype=np.float64))
            files["cka_matrix.npy"] = buf.getvalue()
        rows = self.table()
        header = list(rows[0]) if rows else ["set"]
        lines = [",".join(header)] + [",".join(_csv(r[h]) for h in header) for r in rows]
        files["curves.csv"] = "\n".join(lines) + "\n"
        files["result.json"] = self.to_json()
        return files


def lowest_regions(values: Any, intervals: Any = None, tol: float = TIE) -> list[int]:
    """The region(s) with the lowest CMS: the minimum and every region tied with it, i.e. within ``tol``
    of it or whose interval overlaps the minimum's (``intervals``: one ``{'low', 'high'}`` per region). The
    one rule the terminal table, the report and the verdict sentence follow."""
    vals = [float(v) if isinstance(v, (int, float)) and v == v else float("inf") for v in values or []]
    if not vals:
        return []
    k = min(range(len(vals)), key=vals.__getitem__)
    iv = intervals if isinstance(intervals, list) and len(intervals) == len(vals) else None

    def overlap(r: int) -> bool:
        if iv is None or not isinstance(iv[r], dict) or not isinstance(iv[k], dict):
            return False
        try:
            return float(iv[r]["low"]) <= float(iv[k]["high"]) and float(iv[k]["low"]) <= float(iv[r]["high"])
        except (KeyError, TypeError, ValueError):
            return False

    tied = [r for r in range(len(vals)) if r != k and (abs(vals[r] - vals[k]) <= tol or overlap(r))]
    return [k, *sorted(tied, key=vals.__getitem__)]


def _csv(v: Any) -> str:
    """One CSV cell: strings quoted when needed, numbers as repr(float)."""
    if isinstance(v, str):
        return '"' + v.replace('"', '""') + '"' if any(ch in v for ch in ',"\n') else v
    return repr(float(v))
