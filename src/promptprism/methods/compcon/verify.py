"""CLIP verification and scoring: pure functions over embeddings (no model, no I/O).

Notation: ``S[i, k]`` is the cosine similarity of image i and attribute text k.

Calibration rule (``calibrate_thresholds``): the threshold of attribute k is the ``q``-quantile
of the similarities of attribute k over a **null set** of images, tau_k = quantile_q({S[j, k] : j in null}),
default q = 0.95. The default null set is every image model B made for the prompt bank (the model that, by
definition of a
diverging attribute, should lack it): an image "has" attribute k when it is more similar to k than 90% of
B's images are. So a hallucinated attribute, which A's images show no more than B's, passes for about
1 - q of A's images, and a prompt-level majority of them rarely (``min_fraction``); a real one passes for most
of A's images where A shows it. Other null sets: ``pooled`` (A and B together; use it when B also shows the
attribute on many prompts, which pushes B's quantile up), or any set of images given as embeddings. Raw CLIP
similarities differ in level between texts by more than within a text, so one global threshold (e.g. 0.25)
is not used.

An image has attribute k when S[i, k] > tau_k. Model M shows attribute k on prompt p when at least
``min_fraction`` (default 0.5) of M's images of p have it. Prompt p diverges on k when A shows k on p and B
does not. Attributes are ranked by the number of diverging prompts (ties: larger mean of
frac_A - frac_B over prompts, then the name). A description's score is the fraction of the prompts generated
from it that diverge.

Held-out check (:func:`sign_test`, ours, not the paper's): on prompts that neither chose the attribute nor
calibrated its threshold, count the prompts where only A shows it and those where only B does; under
H0 (A's and B's samples exchangeable on each prompt) each discordant prompt goes either way with probability
1/2, so the exact one-sided sign test is valid at any size. The same rules hold for text CompCon, where
``S[i, k]`` scores answer i (a text encoder's cosine, or a judge's 1/0; :mod:`.modality`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..._validation import check_interval
from ...errors import InputError, OptionError
from ...stats import preference

DEFAULT_QUANTILE = 0.95
DEFAULT_MIN_FRACTION = 0.5


def _as_matrix(x, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise InputError(f"{name}: expected a 2-D embedding matrix, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError(f"{name}: contains NaN or inf")
    return arr


def similarity_matrix(image_embeddings, text_embeddings) -> np.ndarray:
    """Cosine similarities (n_images x n_texts); all-zero rows are an error (no direction)."""
    a = _as_matrix(image_embeddings, "image embeddings")
    b = _as_matrix(text_embeddings, "text embeddings")
    if a.shape[1] != b.shape[1]:
        raise InputError(
            f"image embeddings have {a.shape[1]} dimensions but text embeddings {b.shape[1]}; "
            "they must come from the same CLIP model"
        )
    na = np.linalg.norm(a, axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    if (na == 0).any() or (nb == 0).any():
        raise InputError("an embedding is all zeros; its cosine similarity is undefined")
    return (a / na) @ (b / nb).T


def calibrate_thresholds(null_similarities, q: float = DEFAULT_QUANTILE) -> np.ndarray:
    """tau_k = the q-quantile (linear interpolation) of column k of ``null_similarities`` (n_null x K)."""
    check_interval(q, 0.0, 1.0, parameter="quantile")
    s = np.asarray(null_similarities, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] == 0:
        raise InputError(f"the null set for threshold calibration is empty (shape {s.shape})")
    return np.quantile(s, q, axis=0)


def has_attribute(similarities, thresholds) -> np.ndarray:
    """Boolean (n_images x K): S[i, k] > tau_k."""
    s = np.asarray(similarities, dtype=np.float64)
    t = np.asarray(thresholds, dtype=np.float64).reshape(1, -1)
    if s.ndim != 2 or s.shape[1] != t.shape[1]:
        raise InputError(f"similarities {s.shape} and thresholds {t.shape[1]} do not match")
    return s > t


def prompt_fractions(has, groups: Sequence[int], n_prompts: int) -> np.ndarray:
    """Per prompt and attribute, the fraction of that prompt's images having it (NaN: no images).

    ``groups[i]`` is the prompt index (0..n_prompts-1) of image i.
    """
    h = np.asarray(has, dtype=np.float64)
    g = np.asarray(groups, dtype=np.int64)
    if h.ndim != 2 or g.shape != (h.shape[0],):
        raise InputError(f"{g.shape[0]} prompt labels for {h.shape[0]} images")
    if g.size and (g.min() < 0 or g.max() >= n_prompts):
        raise InputError(f"prompt labels must lie in 0..{n_prompts - 1}")
    sums = np.zeros((n_prompts, h.shape[1]))
    np.add.at(sums, g, h)
    counts = np.bincount(g, minlength=n_prompts).astype(np.float64)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def diverging_matrix(frac_a, frac_b, min_fraction: float = DEFAULT_MIN_FRACTION) -> np.ndarray:
    """Boolean (n_prompts x K): A shows the attribute on the prompt (frac_A >= min_fraction) and B does not
    (frac_B < min_fraction). A prompt with no images on either side never diverges."""
    if not (0.0 < min_fraction <= 1.0):
        raise OptionError(f"min_fraction must be in (0, 1], got {min_fraction!r}")
    fa = np.asarray(frac_a, dtype=np.float64)
    fb = np.asarray(frac_b, dtype=np.float64)
    if fa.shape != fb.shape:
        raise InputError(f"fractions of A {fa.shape} and B {fb.shape} differ in shape")
    ok = np.isfinite(fa) & np.isfinite(fb)
    with np.errstate(invalid="ignore"):
        return ok & (np.nan_to_num(fa, nan=0.0) >= min_fraction) & (np.nan_to_num(fb, nan=1.0) < min_fraction)


def diverging_prompts(
    sim_a, groups_a, sim_b, groups_b, thresholds, n_prompts: int, min_fraction: float = DEFAULT_MIN_FRACTION
) -> np.ndarray:
    """Similarities of A's and B's images (with their prompt labels) -> boolean (n_prompts x K)."""
    fa = prompt_fractions(has_attribute(sim_a, thresholds), groups_a, n_prompts)
    fb = prompt_fractions(has_attribute(sim_b, thresholds), groups_b, n_prompts)
    return diverging_matrix(fa, fb, min_fraction)


def rank_attributes(diverging, names: Sequence[str], frac_a=None, frac_b=None) -> list[int]:
    """Attribute indices, best first: more diverging prompts, larger mean (frac_A - frac_B), then name."""
    d = np.asarray(diverging, dtype=bool)
    if d.ndim != 2 or d.shape[1] != len(names):
        raise InputError(f"diverging matrix {d.shape} does not match {len(names)} attribute names")
    counts = d.sum(axis=0)
    if frac_a is not None and frac_b is not None:
        gap = (
            np.nanmean(np.asarray(frac_a) - np.asarray(frac_b), axis=0)
            if d.shape[0]
            else np.zeros(len(names))
        )
        gap = np.nan_to_num(gap, nan=0.0)
    else:
        gap = np.zeros(len(names))
    return sorted(range(len(names)), key=lambda k: (-int(counts[k]), -float(gap[k]), str(names[k])))


def attribute_scores(diverging) -> np.ndarray:
    """Fraction of the evaluated prompts that diverge, per attribute (0 when there are no prompts)."""
    d = np.asarray(diverging, dtype=bool)
    return d.mean(axis=0) if d.shape[0] else np.zeros(d.shape[1])


def description_score(diverging_flags) -> float:
    """Fraction of the prompts generated from a description that diverge (0.0 for none)."""
    f = np.asarray(diverging_flags, dtype=bool).ravel()
    return float(f.mean()) if f.size else 0.0


def sign_test(a_only: int, b_only: int) -> float:
    """One-sided exact sign test (McNemar's, exact): P(Bin(a_only + b_only, 1/2) >= a_only).

    ``a_only``: held-out prompts where A shows the attribute and B does not; ``b_only``: the reverse. Under
    H0 (on each prompt A's and B's samples are exchangeable, and the attribute and its threshold come from
    other prompts) each discordant prompt is A-only or B-only with probability 1/2. 1.0 when none is
    discordant.
    """
    a, b = int(a_only), int(b_only)
    if a < 0 or b < 0:
        raise InputError(f"discordant prompt counts must be >= 0, got {a} and {b}")
    return preference.sign_test(a, b, alternative="greater")
