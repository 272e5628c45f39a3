"""K-way PromptSplit: K >= 2 sets on the same prompts, every pair and each set against the pooled rest.

One fit for all comparisons (:mod:`.kway_core`), by a route chosen once (:mod:`.kway_routes`): the exact
route computes the joint Gram matrix of all K sets once and takes each comparison's spectrum from it; the
random-feature routes accumulate the K r x r second moments in one pass and diagonalise K(K-1)/2 + K
differences of them. The permutation test exchanges
model labels among all K sets within each prompt and controls the family-wise error over every mode of
every comparison (:func:`.kway_core.family_step_down`). With K = 2 (exact route) everything reproduces
:class:`.PromptSplit` to the bit.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ...backend import NUMPY
from ...data.paired import PairedSet, as_paired_set, check_compatible, prompt_groups
from ...errors import InputError, OptionError
from . import core
from . import kway_core as kc
from .estimator import PromptSplit
from .kway_result import KWayResult, assemble
from .kway_routes import choose_kway_route
from .options import SplitOptions


@dataclass(frozen=True)
class KWaySplit(SplitOptions):
    """K-way PromptSplit: ``fit([set_1, ..., set_K], names)`` -> :class:`KWayResult`.

    Options as :class:`.PromptSplit` (the fields of :class:`.SplitOptions`: same names, same defaults;
    bandwidth rules are evaluated on all K sets pooled; the 'stable' rule and devices other than the CPU are
    not offered here). ``method='auto'`` is exact up to ``EXACT_MAX_SAMPLES`` samples over all sets.
    ``permutations``: None = 200 (exact) / 100 (random features); the test's cost is about that of one
    pairwise test on the pooled sets per comparison.
    """

    STABLE_BANDWIDTH: ClassVar[bool] = False

    def pairwise(self) -> PromptSplit:
        """The :class:`.PromptSplit` estimator with the same options (what one pair's ``split`` would run)."""
        return PromptSplit(**{f.name: getattr(self, f.name) for f in dataclasses.fields(SplitOptions)},
                           device="cpu")

    def test_seconds(self, counts: Sequence[int]) -> float:
        """A rough estimate of the permutation test's seconds on sets of ``counts`` rows
        (:func:`.kway_core.test_cost_seconds`); 0 without a test."""
        total = int(sum(counts))
        method = self.route_name(total)
        permutations = self.resolved_permutations(method)
        rows = min(total, int(self.null_samples))
        width = rows if method == "exact" else min(rows, int(self.n_features))
        return kc.test_cost_seconds(len(counts), rows, width, permutations) if permutations else 0.0

    def fit(self, sets: Sequence[PairedSet | tuple], names: Sequence[str] | None = None) -> KWayResult:
        """Compare K >= 2 sets (PairedSets or (prompt_emb, output_emb) tuples) sharing their prompts."""
        t0 = time.perf_counter()
        sets, names = self._check_sets(sets, names)
        labels, prompt_names = prompt_groups(*sets)
        _check_shared_prompts(labels, prompt_names, names)
        counts = np.array([len(s) for s in sets])
        method = self.route_name(int(counts.sum()))
        self.check_test_memory(int(counts.sum()), method)
        sigmas = self._bandwidths(sets)
        pairs, rest = kc.comparisons(len(sets))
        family = pairs + rest
        fit = choose_kway_route(method, self, sets, labels, len(prompt_names), counts,
                                self.resolved_precision(method))
        timings = {"setup_s": time.perf_counter() - t0}
        t1 = time.perf_counter()
        fit.run(sigmas, family)
        timings["fit_s"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        permutations = self.resolved_permutations(method)
        tests = fit.significance(family, permutations) if permutations else {}
        timings["significance_s"] = time.perf_counter() - t2
        config = self.recorded_options(
            sigma_prompt=sigmas[0], sigma_output=sigmas[1], permutations=permutations,
            precision=fit.precision, n_features=None if method == "exact" else self.n_features,
            sets=[s.where for s in sets], device=NUMPY.label)
        result = assemble(fit=fit, names=names, prompt_names=prompt_names, family=family, n_pairs=len(pairs),
                          tests=tests, method=method, config=config, timings=timings)
        return dataclasses.replace(result, timings={**timings, "total_s": time.perf_counter() - t0})

    def _check_sets(self, sets: Sequence, names: Sequence[str] | None) -> tuple[list[PairedSet], list[str]]:
        sets = list(sets)
        if len(sets) < 2:
            raise InputError(f"K-way PromptSplit needs at least 2 sets, got {len(sets)}")
        if names is not None and len(names) != len(sets):
            raise OptionError(f"names must give one name per set: {len(names)} names for {len(sets)} sets")
        paired = [as_paired_set(s, names[i] if names else f"set {i + 1}") for i, s in enumerate(sets)]
        names = list(names) if names else [s.name if s.name != "set" else f"set {i + 1}"
                                           for i, s in enumerate(paired)]
        for s in paired[1:]:
            check_compatible(paired[0], s)
        for a in range(len(paired)):
            for b in range(a + 1, len(paired)):
                if core.same_pairs(paired[a], paired[b]):
                    raise InputError(f"{paired[a].where} and {paired[b].where} hold the same pairs (a "
                                     "duplicated input?); give each set once")
        if len(set(names)) != len(names):
            raise OptionError(f"names must be distinct, got {names}")
        if self.kernel == "cosine":
            for s in paired:
                s.check_nonzero("the cosine kernel is undefined for a zero vector")
        return paired, names

    def _bandwidths(self, sets: list[PairedSet]) -> tuple[float | None, float | None]:
        """Both bandwidths as numbers; rules evaluated on a seeded subsample of all K sets pooled (with
        K = 2 the subsample of :class:`.PromptSplit`)."""
        if self.kernel != "gaussian":
            return None, None
        out = []
        for key, spec in (("prompt", self.sigma_prompt), ("output", self.sigma_output)):
            attr = f"{key}_embeddings"
            out.append(spec.resolve_pooled([getattr(s, attr) for s in sets], name=f"sigma_{key}",
                                           seed=self.seed).value)
        return out[0], out[1]


def _check_shared_prompts(labels: list[np.ndarray], prompt_names: list[str], names: list[str]) -> None:
    missing = kc.missing_prompts(labels, prompt_names)
    if any(missing):
        said = "; ".join(f"{name} lacks {', '.join(repr(p) for p in miss[:3])}"
                         + (f" and {len(miss) - 3} more" if len(miss) > 3 else "")
                         for name, miss in zip(names, missing, strict=True) if miss)
        raise InputError("K-way PromptSplit needs every set on the same prompts (labels are exchanged "
                         f"within each prompt): {said}")
