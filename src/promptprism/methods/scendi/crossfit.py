"""The cross-fitted route of Scendi: folds checked, the ridge chosen, the out-of-fold spectra assembled.

SPEC (Uncertainty, out-of-sample Gamma*): Gamma*_f = C_IT^S (C_TT^S + ridge I)^+ is fitted on every fold but
f, Lambda_I is the covariance of the pooled held-out residuals phi_I(x) - Gamma*_f phi_T(t), and
Lambda_T = C_II - Lambda_I (:func:`.dual.sample_space_spectra` with ``in_sample=False``). The shares are
fractions of Tr C_II = 1: when no ridge of the grid predicts the held-out outputs better than predicting
nothing (Gamma* = 0, out-of-fold error Tr C_II), ``ridge='cv'`` takes Gamma* = 0 (model share 1, said in the
result); a fixed ridge whose out-of-fold error exceeds Tr C_II is refused with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...array_ops import grid
from ...errors import OptionError
from .dual import DualSpectra, assign_folds, choose_ridge, cross_fit_hats, sample_space_spectra

#: ridges tried by cross-validation (units of Tr C_TT = 1; 0 = the paper's pseudo-inverse); predicting
#: nothing (ridge -> infinity, Gamma* = 0) is always a further candidate
RIDGE_GRID = (0.0, 1e-4, 1e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0, 10.0)
#: relative slack on the out-of-fold error before a fixed ridge is refused (round-off of Tr C_II = 1)
SHARE_SLACK = 1e-9


def check_folds(n_folds: int, distinct_prompts: int) -> int:
    """The fold count for a set with ``distinct_prompts`` prompts: folds hold whole prompts, so there can be
    at most one fold per distinct prompt (leave-one-prompt-out); more is refused with the reason."""
    if n_folds > distinct_prompts:
        raise OptionError(f"n_folds = {n_folds} is more than the {distinct_prompts} distinct "
                          f"prompts: a fold holds whole prompts, so at most {distinct_prompts} folds "
                          "(leave-one-prompt-out) are possible")
    return int(n_folds)


@dataclass(frozen=True)
class CrossFit:
    """The cross-fitted estimate: spectra, the ridge used (``math.inf``: Gamma* = 0), folds, a description."""

    spectra: DualSpectra
    ridge: float
    n_folds: int
    described: str

    @property
    def ridge_recorded(self) -> float | None:
        """The ridge as written to result.json (None when no prompt predictor beat predicting nothing)."""
        return None if math.isinf(self.ridge) else self.ridge


def cross_fit(output_gram, group_gram, groups: np.ndarray, weights: np.ndarray, *, n_folds: int, ridge,
              seed: int, dim: int, n_top: int, rcond: float) -> CrossFit:
    """The cross-fitted spectra (SPEC's out-of-sample Gamma*) of the set whose output Gram matrix is
    ``output_gram`` (n x n) and distinct prompts' Gram matrix ``group_gram`` (G x G, rows labelled by
    ``groups``); ``ridge`` 'cv' or a number >= 0 (0: the pseudo-inverse C_TT^+)."""
    folds = assign_folds(groups, n_folds, seed)
    k_t = group_gram[grid(groups, groups, group_gram)]
    if ridge == "cv":
        lam, _ = choose_ridge(output_gram, k_t, weights, folds, ridges=RIDGE_GRID, rcond=rcond,
                              allow_none=True)
    else:
        lam = float(ridge)
    hat = cross_fit_hats(k_t, weights, folds, [lam], rcond=rcond)[0]
    s = sample_space_spectra(output_gram, weights, dim=dim, hat=hat, n_top=n_top, in_sample=False)
    total = s.model_share + s.prompt_share  # Tr C_II
    if ridge != "cv" and s.model_share > total * (1.0 + SHARE_SLACK):
        raise OptionError(
            f"ridge {lam:g}: the cross-fitted Gamma* predicts the held-out outputs worse than predicting "
            f"nothing (out-of-fold error {s.model_share / total:.4f} of Tr C_II, so the model share would "
            "exceed 1 and the prompt share fall below 0); with ridge 0 the pseudo-inverse interpolates the "
            "training folds. Use ridge='cv' or a larger ridge")
    n_f = len(np.unique(folds))
    if math.isinf(lam):
        how = "none: no ridge predicted held-out outputs better than Gamma* = 0"
    else:
        how = f"{lam:g}{' chosen by cross-validation' if ridge == 'cv' else ''}"
    return CrossFit(spectra=s, ridge=lam, n_folds=n_f, described=f"cross-fit ({n_f} folds, ridge {how})")


__all__ = ["RIDGE_GRID", "CrossFit", "check_folds", "cross_fit"]
