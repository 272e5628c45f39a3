"""The options PromptSplit and K-way PromptSplit share, validated once, and the rules that resolve them.

:class:`SplitOptions` is the base of both estimators (as scikit-learn's estimators share a base): the shared
fields, one clearly-named check per option (run once, when the estimator is made: the estimators are frozen),
the route rule (``method='auto'``), the precision and permutation defaults, and the options as recorded in a
result's ``config``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from ..._validation import check_choice, check_interval, check_memory, check_positive_number, check_seed
from ...backend import resolve_backend
from ...errors import OptionError
from ...kernels.bandwidth import BANDWIDTH_RULES, SPECTRAL_RULES, Bandwidth
from ...kernels.gram import KERNELS
from . import significance as sig
from .aggregate import AGGREGATES

METHODS = ("auto", "exact", "rff", "sketch")
PRECISIONS = ("auto", "float32", "float64")
AUTO_PRECISION = {"exact": "float64", "rff": "float32", "sketch": "float32"}
RANKINGS = ("contribution", "mean_score")
SOLVERS = ("auto", "dense", "lanczos")
#: ``method='auto'`` uses the exact kernel route up to this many samples (n + m), random features above:
#: at 10,000 samples the exact route needs ~2.4 GB and ~15 s here; its cost grows as (n + m)^2 in memory.
EXACT_MAX_SAMPLES = 10_000
#: the largest ``eta``: beyond it C_test is below float32's rounding of eta C_ref (the modes are those of
#: -C_ref alone), and far beyond it eta C_ref overflows float64 (eta 1e308)
MAX_ETA = 1e6


@dataclass(frozen=True)
class SplitOptions:
    """The options of :class:`.PromptSplit` that :class:`.KWaySplit` shares (documented on PromptSplit)."""

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

    def __post_init__(self) -> None:
        self._validate()

    def _validate(self) -> None:
        self._check_kernel_and_method()
        self._check_choices()
        self._check_sizes()
        self._check_test()
        check_seed(self.seed)
        self._check_bandwidths()
        self._check_execution()
        check_choice(self.aggregate, AGGREGATES, parameter="aggregate")

    def _check_execution(self) -> None:
        resolve_backend(self.device)
        check_positive_number(self.partition_rows, "partition_rows", integer=True)

    # one check per option (or per pair of options that constrain each other)
    def _check_kernel_and_method(self) -> None:
        if self.kernel not in KERNELS:
            raise OptionError(f"unknown kernel {self.kernel!r}; choose one of {', '.join(KERNELS)}")
        if self.method not in METHODS:
            raise OptionError(f"unknown method {self.method!r}; choose one of {', '.join(METHODS)}")
        if self.method == "rff" and self.kernel != "gaussian":
            raise OptionError("method 'rff' (random Fourier features) needs the gaussian kernel; "
                              "for the cosine kernel use method 'sketch'")
        if self.method == "sketch" and self.kernel != "cosine":
            raise OptionError("method 'sketch' (tensor-sketch random projection) needs the cosine kernel; "
                              "for the gaussian kernel use method 'rff'")

    def _check_choices(self) -> None:
        check_choice(self.rank_prompts_by, RANKINGS, parameter="rank_prompts_by")
        check_choice(self.precision, PRECISIONS, parameter="precision")
        if self.solver not in SOLVERS:
            raise OptionError(f"solver must be 'auto', 'dense' or 'lanczos', got {self.solver!r}")

    def _check_sizes(self) -> None:
        check_interval(self.eta, 0.0, MAX_ETA, parameter="eta", closed="right")
        check_positive_number(self.n_modes, "number of modes", integer=True)
        check_positive_number(self.n_features, "number of features", integer=True,
                              even=self.kernel == "gaussian")
        check_positive_number(self.chunk_size, "chunk size", integer=True)
        check_positive_number(self.top_k, "top_k", integer=True)
        check_positive_number(self.top_prompts, "top_prompts", integer=True)

    def _check_test(self) -> None:
        """The permutation test's options: permutations, alpha, null_samples."""
        if self.permutations is not None:  # (0 = no test)
            check_positive_number(self.permutations, "permutations", integer=True, allow_zero=True)
        check_interval(self.alpha, 0.0, 1.0, parameter="alpha")
        if check_positive_number(self.null_samples, "null_samples", integer=True) and self.null_samples < 4:
            raise OptionError(f"null_samples must be at least 4 (2 per set), got {self.null_samples}")

    def _check_bandwidths(self) -> None:
        if self.kernel == "gaussian":  # parsed once: a Bandwidth stays as it is (frozen: set through object)
            rules = BANDWIDTH_RULES + SPECTRAL_RULES
            for name in ("sigma_prompt", "sigma_output"):
                object.__setattr__(self, name, Bandwidth.parse(getattr(self, name), name, rules=rules))

    # the rules that resolve 'auto' and None
    def route_name(self, n_samples: int) -> str:
        """The route ``method`` names; ``'auto'``: exact up to ``EXACT_MAX_SAMPLES`` samples in all."""
        if self.method != "auto":
            return self.method
        return ("exact" if n_samples <= EXACT_MAX_SAMPLES
                else "rff" if self.kernel == "gaussian" else "sketch")

    def resolved_precision(self, route: str) -> str:
        """``precision``, with 'auto' resolved for the route (float64 exact, float32 random features)."""
        return AUTO_PRECISION[route] if self.precision == "auto" else self.precision

    def resolved_permutations(self, route: str) -> int:
        """``permutations``, with None resolved for the route (200 exact, 100 random features)."""
        return sig.DEFAULT_PERMUTATIONS[route] if self.permutations is None else int(self.permutations)

    def check_test_memory(self, n_samples: int, route: str) -> None:
        """Refuse, before anything is computed, a permutation test whose relabellings cannot fit in memory:
        N x (K + 1) labellings of about 18 bytes each (their random keys, the keys' order and the labels),
        N = min(n_samples, null_samples) rows, K = the resolved permutations."""
        k = self.resolved_permutations(route)
        if k:
            rows = min(int(n_samples), int(self.null_samples))
            check_memory(18.0 * rows * (k + 1), what=f"permutations {k} ({k + 1:,} labellings of {rows:,} "
                                                      "samples)", parameter="permutations")

    def recorded_options(self, **resolved: Any) -> dict:
        """A result's ``config``: every field (but ``NOT_IN_CONFIG``) as given, then the ``resolved``
        values (bandwidths as numbers, the route's precision, ...) and the bandwidth rules."""
        config = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                  if f.name not in self.NOT_IN_CONFIG}
        config.update(resolved)
        gaussian = self.kernel == "gaussian"
        config.update(sigma_prompt_rule=str(self.sigma_prompt) if gaussian else None,
                      sigma_output_rule=str(self.sigma_output) if gaussian else None)
        return config

