"""The per-prompt breakdown of the reference-set metrics, where each prompt has enough samples.

Precision, density and alignment are means over a set's generated samples, so a prompt's value is the mean
over its own samples (against the whole reference). Recall, coverage and KID compare a prompt's generated
samples with the reference samples of the same prompt: they need both sets to hold that prompt, with more
than ``k`` samples each (k-NN radii). FD needs more samples than dimensions in both. Prompts below
``min_group_size`` generated samples are left out, and a note says how many.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .frechet import frechet_distance
from .kid import kernel_inception_distance
from .prdc import NeighbourIndicators, neighbour_indicators


@dataclass(frozen=True)
class PromptGroups:
    """Shared prompt labels of the generated rows and of the reference rows (None: no reference prompts)."""

    generated: np.ndarray
    reference: np.ndarray | None
    names: list[str]


def _group_row(g: int, rows: np.ndarray, groups: PromptGroups, ind: NeighbourIndicators,
               alignment: dict[str, np.ndarray]) -> dict[str, Any]:
    row: dict[str, Any] = {"prompt": groups.names[g], "n": int(rows.size),
                           "precision": float(ind.in_real_manifold[rows].mean()),
                           "density": float(ind.real_balls[rows].mean() / ind.k)}
    for key, values in alignment.items():
        row[key] = float(values[rows].mean()) if values.dtype.kind == "f" else int(values[rows].sum())
    return row


def prompt_breakdown(x: Any, reference: Any, groups: PromptGroups, ind: NeighbourIndicators, *,
                     alignment: dict[str, np.ndarray], min_group_size: int, subsets: int, seed: int,
                     distance_dtype: Any = np.float64) -> tuple[list[dict], list[str]]:
    """One dict per prompt with at least ``min_group_size`` generated samples, and the notes on what was
    left out (module docstring)."""
    k, d = ind.k, x.shape[1]
    rows_out: list[dict] = []
    small = short_ref = fd_short = 0
    for g in np.unique(groups.generated):
        rows = np.flatnonzero(groups.generated == g)
        if rows.size < min_group_size:
            small += 1
            continue
        row = _group_row(int(g), rows, groups, ind, alignment)
        if groups.reference is not None:
            ref_rows = np.flatnonzero(groups.reference == g)
            row["n_reference"] = int(ref_rows.size)
            if min(rows.size, ref_rows.size) >= k + 1:
                xg, rg = np.asarray(x[rows]), np.asarray(reference[ref_rows])
                row.update({m: v for m, v in neighbour_indicators(rg, xg, k, dtype=distance_dtype)
                            .metrics().items() if m in ("recall", "coverage")})
                equal = rows.size == ref_rows.size
                row["kid"] = float(kernel_inception_distance(
                    xg, rg, n_subsets=1 if equal else subsets, subset_size=min(rows.size, ref_rows.size),
                    seed=seed).mean())
                if min(rows.size, ref_rows.size) > d:
                    row["fd"] = frechet_distance(xg, rg)
                else:
                    fd_short += 1
            else:
                short_ref += 1
        rows_out.append(row)
    notes = []
    if small:
        notes.append(f"{small} prompt(s) have fewer than {min_group_size} generated samples "
                     "(min_group_size) and are not broken down")
    if groups.reference is None:
        notes.append("per prompt: precision, density and alignment only; recall, coverage, KID and FD per "
                     "prompt need reference samples labelled with the same prompts")
    elif short_ref:
        notes.append(f"{short_ref} prompt(s) have {k} or fewer generated or reference samples: no recall, "
                     f"coverage or KID for them (k-NN radii need at least k + 1 = {k + 1} of each)")
    if fd_short:
        notes.append(f"FD per prompt needs more than d = {d} samples of the prompt in both sets (the "
                     f"covariances are singular below); left out for {fd_short} prompt(s)")
    return rows_out, notes
