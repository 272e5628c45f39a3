"""The options PromptSplit and K-way PromptSplit share, validated once, and the rules that resolve them.

:class:`SplitOptions` is the base of both estimators (as scikit-learn's estimators share a base): the shared
fields, one clearly-named check per option (run once, when the estimator is made: the estimators are frozen),
the route rule (``method='auto'``), the precision and permutation defaults, and the options as recorded in a
result's ``config``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..._params import Check, Estimator, between, one_of, positive
from ..._validation import check_memory, check_positive_number, check_seed
from ...backend import resolve_backend
from ...errors import OptionError
from ...kernels.bandwidth import BANDWIDTH_RULES, SPECTRAL_RULES, Bandwidth
from ...kernels.gram import KERNELS
from . import significance as sig
from .aggregate import AGGREGATES
from .verdicts import unreachable_alpha_note

METHODS = ("auto", "exact", "rff", "sketch")
PRECISIONS = ("auto", "float32", "float64")
#: ``precision='auto'`` per route (the exact route: float32 instead when every input embedding is)
AUTO_PRECISION = {"exact": "float64", "rff": "float32", "sketch": "float32"}
RANKINGS = ("contribution", "mean_score")
SOLVERS = ("auto", "dense", "lanczos")
#: ``method='auto'`` uses the exact kernel route up to this many samples (n + m), random features above:
#: at 10,000 samples the exact route needs ~2.4 GB and ~15 s here; its cost grows as (n + m)^2 in memory.
EXACT_MAX_SAMPLES = 10_000
#: the largest ``eta``: beyond it C_test is below float32's rounding of eta C_ref (the modes are those of
#: -C_ref alone), and far beyond it eta C_ref overflows float64 (eta 1e308)
MAX_ETA = 1e6


def _kernel(value: Any, name: str) -> None:
    if value not in KERNELS:
        raise OptionError(f"unknown kernel {value!r}; choose one of {', '.join(KERNELS)}", parameter=name)


def _method(value: Any, name: str) -> None:
    if value not in METHODS:
        raise OptionError(f"unknown method {value!r}; choose one of {', '.join(METHODS)}", parameter=name)


def _solver(value: Any, name: str) -> None:
    if value not in SOLVERS:
        raise OptionError(f"{name} must be 'auto', 'dense' or 'lanczos', got {value!r}", parameter=name)


def _permutations(value: Any, name: str) -> None:
    if value is not None:  # (None: the route's default; 0: no test)
        check_positive_number(value, name, integer=True, allow_zero=True)


def _null_samples(value: Any, name: str) -> None:
    if check_positive_number(value, name, integer=True) and value < 4:
        raise OptionError(f"{name} must be at least 4 (2 per set), got {value}", parameter=name)


def _split_bandwidth(value: Any, name: str) -> None:
    Bandwidth.parse(value, name, rules=BANDWIDTH_RULES + SPECTRAL_RULES)


def _device(value: Any, name: str) -> None:
    resolve_backend(value)


#: a bandwidth of PromptSplit: a number, a median rule, or 'stable' (checked whatever the kernel)
SPLIT_BANDWIDTH = Check(_split_bandwidth,
                        "a number > 0, a bandwidth rule ('median', '0.5*median') or 'stable'")


#: what a K-way pair's modes list (``KWaySplit.pair_details``)
PAIR_DETAILS = ("leading", "all")


@dataclass(frozen=True)
class SplitOptions(Estimator):
    """The options of :class:`.PromptSplit` that :class:`.KWaySplit` shares (documented on PromptSplit), in
    the one estimator shape (:class:`promptprism._params.Estimator`): declared with their constraints,
    checked once when the estimator is made, never changed after (the bandwidths are parsed on use,
    :meth:`bandwidth`)."""

    kernel: str = "gaussian"
    method: str = "auto"
    eta: float = 1.0
    sigma_prompt: Any = "median"
    sigma_output: Any = "median"
    n_modes: int = 10
    n_features: int = 2000
    seed: int = 0
    chunk_size: int = 8192
    top_k: int = 10
    top_prompts: int = 10
    rank_prompts_by: str = "contribution"
    solver: str = "auto"
    permutations: int | None = None
    alpha: float = 0.05
    null_samples: int = sig.NULL_MAX_SAMPLES
    precision: str = "auto"
    partition_rows: int = 262_144
    progress: bool | None = False
    device: str = "auto"
    aggregate: str = "auto"

    #: fields a result's ``config`` leaves out (recorded elsewhere in the result, or not part of the answer)
    NOT_IN_CONFIG: ClassVar[tuple[str, ...]] = ()

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "kernel": [Check(_kernel, "one of " + ", ".join(KERNELS))],
        "method": [Check(_method, "one of " + ", ".join(METHODS))],
        "eta": [between(0.0, MAX_ETA, closed="right")],
        "sigma_prompt": [SPLIT_BANDWIDTH],
        "sigma_output": [SPLIT_BANDWIDTH],
        "n_modes": [positive()],
        "n_features": [positive()],
        "seed": [Check(lambda value, name: check_seed(value), "a non-negative integer (a seed)")],
        "chunk_size": [positive()],
        "top_k": [positive()],
        "top_prompts": [positive()],
        "rank_prompts_by": [one_of(RANKINGS)],
        "solver": [Check(_solver, "one of " + ", ".join(SOLVERS))],
        "permutations": [Check(_permutations, "None or an integer >= 0 (0: no test)")],
        "alpha": [between(0.0, 1.0)],
        "null_samples": [Check(_null_samples, "an integer >= 4")],
        "precision": [one_of(PRECISIONS)],
        "partition_rows": [positive()],
        "progress": [None, "boolean"],
        "device": [Check(_device, "'auto', 'cpu', 'torch', 'cuda', 'cuda:N' or 'mps'")],
        "aggregate": [one_of(AGGREGATES)],
    }

    def _check_together(self) -> None:
        """The route needs its kernel; the gaussian random features come in cos/sin pairs."""
        if self.method == "rff" and self.kernel != "gaussian":
            raise OptionError("method 'rff' (random Fourier features) needs the gaussian kernel; "
                              "for the cosine kernel use method 'sketch'", parameter="method")
        if self.method == "sketch" and self.kernel != "cosine":
            raise OptionError("method 'sketch' (tensor-sketch random projection) needs the cosine kernel; "
                              "for the gaussian kernel use method 'rff'", parameter="method")
        if self.kernel == "gaussian":
            check_positive_number(self.n_features, "n_features", integer=True, even=True)

    def bandwidth(self, key: str) -> Bandwidth:
        """``sigma_<key>`` ('prompt' or 'output') parsed: a number, a median rule or 'stable'."""
        name = f"sigma_{key}"
        return Bandwidth.parse(getattr(self, name), name, rules=BANDWIDTH_RULES + SPECTRAL_RULES)

    # the rules that resolve 'auto' and None
    def route_name(self, n_samples: int) -> str:
        """The route ``method`` names; ``'auto'``: exact up to ``EXACT_MAX_SAMPLES`` samples in all."""
        if self.method != "auto":
            return self.method
        return ("exact" if n_samples <= EXACT_MAX_SAMPLES
                else "rff" if self.kernel == "gaussian" else "sketch")

    def resolved_precision(self, route: str, sets: Sequence[Any] = ()) -> str:
        """``precision``, with 'auto' resolved for the route: float32 for random features; for the exact
        route the precision of the inputs ``sets`` (float32 when every embedding is float32, else
        float64)."""
        if self.precision != "auto":
            return self.precision
        float32 = bool(sets) and all(getattr(getattr(s, a, None), "dtype", None) == np.float32
                                     for s in sets for a in ("prompt_embeddings", "output_embeddings"))
        return "float32" if route == "exact" and float32 else AUTO_PRECISION[route]

    def resolved_permutations(self, route: str) -> int:
        """``permutations``, with None resolved for the route (200 exact, 100 random features)."""
        return sig.DEFAULT_PERMUTATIONS[route] if self.permutations is None else int(self.permutations)

    def check_test(self, n_samples: int, route: str) -> str | None:
        """Before anything is computed: refuse a permutation test whose relabellings cannot fit in memory
        (N x (K + 1) labellings of about 18 bytes each: their random keys, the keys' order and the labels;
        N = min(n_samples, null_samples) rows, K = the resolved permutations); the note of one that cannot
        reject at ``alpha`` (:func:`.significance.unreachable_alpha_note`), or None."""
        k = self.resolved_permutations(route)
        note = unreachable_alpha_note(k, float(self.alpha))
        if k:
            rows = min(int(n_samples), int(self.null_samples))
            check_memory(18.0 * rows * (k + 1), what=f"permutations {k} ({k + 1:,} labellings of {rows:,} "
                                                      "samples)", parameter="permutations")
        return note

    def recorded_options(self, **resolved: Any) -> dict:
        """A result's ``config``: every field (but ``NOT_IN_CONFIG``) as given, then the ``resolved``
        values (bandwidths as numbers, the route's precision, ...) and the bandwidth rules."""
        config = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                  if f.name not in self.NOT_IN_CONFIG}
        config.update(resolved)
        gaussian = self.kernel == "gaussian"
        config.update(sigma_prompt_rule=str(self.bandwidth("prompt")) if gaussian else None,
                      sigma_output_rule=str(self.bandwidth("output")) if gaussian else None)
        return config

