"""The values Scendi's options take, without the estimator (the command line lists them in ``--help``), and
which of them a fit used."""

from __future__ import annotations

import dataclasses
from typing import Any

#: Gamma* estimators: 'auto' = 'debiased' while G > rank(C_TT), else in-sample if 2 rank < n, else cross-fit
GAMMA_ESTIMATORS = ("auto", "in-sample", "debiased", "cross-fit")
INTERVAL_METHODS = ("auto", "jackknife", "basic")

#: options that only some fits use: (options, the fits that use them, in words)
_ONLY_SOME = ((("sigma_prompt", "sigma_output", "n_features", "shared_frequencies"), "the gaussian kernel"),
              (("n_folds", "ridge"), "the cross-fitted Gamma*"),
              (("confidence", "interval"), "the intervals (bootstrap > 0)"))


def unused_options(options: Any, *, kernel: str, gamma_estimator: str, intervals: bool) -> list[str]:
    """One note per group of ``options`` (a dataclass of Scendi's options) set away from its default that
    this fit does not use: the gaussian kernel's with ``kernel='cosine'``, the cross-fitted estimator's
    with another estimator, the intervals' without intervals (they were dropped without a word), and
    sigma_prompt with shared frequencies (one bandwidth, sigma_output, serves both)."""
    defaults = {f.name: f.default for f in dataclasses.fields(options)}
    given = {name for name, default in defaults.items()  # (a parsed bandwidth reads as its rule: str)
             if getattr(options, name) != default and str(getattr(options, name)) != str(default)}
    used = {"the gaussian kernel": kernel == "gaussian",
            "the cross-fitted Gamma*": gamma_estimator.startswith("cross-fit"),
            "the intervals (bootstrap > 0)": intervals}
    here = {"the gaussian kernel": f"kernel is {kernel!r}",
            "the cross-fitted Gamma*": f"Gamma* is {gamma_estimator.split(' (')[0]}",
            "the intervals (bootstrap > 0)": "no interval was computed"}
    notes = []
    if kernel == "gaussian" and getattr(options, "shared_frequencies", False) and "sigma_prompt" in given:
        notes.append(f"sigma_prompt: {options.sigma_prompt} not used: with shared frequencies one bandwidth, "
                     f"sigma_output ({options.sigma_output}), serves prompts and outputs")
    for names, what in _ONLY_SOME:
        set_here = [n for n in names if n in given]
        if set_here and not used[what]:
            notes.append(f"{', '.join(set_here)}: used by {what} only; {here[what]} here, so "
                         f"{'it was' if len(set_here) == 1 else 'they were'} not used")
    return notes
