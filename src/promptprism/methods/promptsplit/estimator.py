"""The PromptSplit estimator: validate the options (once, when made), choose the route, assemble the result.

The routes (``exact``, ``rff``, ``sketch``) are objects of :mod:`.routes`, chosen once per fit by
:func:`~.routes.choose_route`; the options PromptSplit shares with K-way PromptSplit, their checks and the
rules that resolve ``'auto'`` live in :mod:`.options`.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

from ..._progress import progress_enabled, status
from ...backend import resolve_backend
from ...data.paired import PairedSet, as_paired_set, check_compatible, missing_strings_note, prompt_groups
from ...scale.runner import current_runner
from . import core, testing
from . import significance as sig
from .comparisons import TEST_VS_REFERENCE
from .family import Family, family_for
from .options import EXACT_MAX_SAMPLES, METHODS, RANKINGS, SplitOptions
from .result import PromptSplitResult
from .routes import Route, choose_route
from .summary import SIDES, SummaryOptions, summarise
from .verdicts import caveat, out_of_range_note, strings_note

__all__ = ["EXACT_MAX_SAMPLES", "METHODS", "RANKINGS", "PromptSplit", "replace_config"]

#: rows per set of the subsample on which the 'stable' bandwidth rule computes spectra
STABLE_SAMPLES = 500
#: eigenvalues of each sign the 'stable' rule watches
STABLE_TOP = 5


@dataclass(frozen=True)
class PromptSplit(SplitOptions):
    """PromptSplit estimator: configure here, then ``fit(test, reference)`` -> :class:`PromptSplitResult`.

    The options are checked once, when the estimator is made (it is frozen: :func:`replace_config` makes a
    checked copy with some options changed).

    Parameters
    ----------
    kernel : 'gaussian' or 'cosine', used for both prompts and outputs.
    method : 'auto', 'exact', 'rff' (gaussian only) or 'sketch' (cosine only).
    eta : weight of the reference covariance, Lambda = C_test - eta C_ref.
    sigma_prompt, sigma_output : gaussian bandwidths: a number, a rule ('median', '0.5*median', ...)
        evaluated on the pooled test + reference embeddings (see :mod:`promptprism.kernels.bandwidth`), or
        'stable': the smallest multiple of the median at which the top eigenvalues stop changing
        (:func:`~promptprism.kernels.bandwidth.stable_bandwidth`; the scan is in ``result.bandwidth_scan``).
    n_modes : modes reported per sign (the top ``n_modes`` positive and the top ``n_modes`` negative).
    n_features : r, the random-feature dimension of the 'rff' / 'sketch' routes (even for 'rff').
    seed : seeds every random draw (random features, bandwidth subsample, permutations); recorded.
    chunk_size : rows per streaming step.
    partition_rows : rows per task of the streaming passes (rounded up to whole chunks).
    top_k : samples listed per mode and side; top_prompts: prompts listed per mode.
    rank_prompts_by : 'contribution' (the prompt's exact share of the eigenvalue: default) or 'mean_score'
        (mean score of the prompt's samples in the favoured set, as in the paper's description).
    solver : 'auto', 'dense' (whole spectrum) or 'lanczos' (only the modes asked for); 'auto' is dense up
        to 800 samples (exact route; up to 3,000 when Lanczos has not converged within max(100, N / 20)
        vectors) or 1,000 features (random-feature routes).
    permutations : label permutations of the significance test (:mod:`.significance`); None = 200 on the
        exact route and 100 on the random-feature routes; 0 turns the test off.
    alpha : family-wise significance level of the test (0 < alpha < 1).
    null_samples : the test runs on at most this many samples (n + m; at least 4), a seeded subsample of
        both sets above, exact on it; the test's time grows linearly with it (docs/promptsplit.md).
    progress : show progress bars (None: only on a terminal).
    aggregate : the test over a kernel family (:mod:`.aggregate`): 'auto' (by the outputs' modality),
        'text', 'image', or 'none' (the fitted kernel alone); modes stay the fitted kernel's, p-values
        adjusted; ``significance['aggregation']``: each kernel's p, what it finds, the cost.
    device : where the array core runs (:func:`promptprism.backend.resolve_backend`): 'auto' (torch on CUDA
        when a GPU is present, else numpy), 'cpu' (numpy, the reference), 'cuda', 'cuda:N', 'mps', or
        'torch' (torch on the CPU). Everything runs there: the joint Gram matrix and its eigen-solve, random
        features, covariances, the scoring pass, the permutation test and the 'stable' bandwidth scan;
        random draws stay numpy's (the same numbers on every device) and the results are numpy. On a dask
        cluster the streaming passes run with numpy on the workers. Recorded as ``config['device']``
        ('numpy' or 'torch:<device>'); tolerances between backends: docs/devices.md.
    precision : 'auto' (float32 on the random-feature routes; on the exact route the inputs' own: float32
        when every embedding is float32, else float64), 'float32' or
        'float64': the arithmetic of the features / Gram matrix and of the covariance updates (running sums
        and the r x r spectrum stay float64). The resolved value is ``result.config['precision']``; the
        accuracy cost is measured in docs/precision.md.
    """

    NOT_IN_CONFIG: ClassVar[tuple[str, ...]] = ("seed", "progress")  # (seed: the result's own field)

    # -------------------------------------------------------------------------------------------- fit
    def fit(self, test: PairedSet | tuple, reference: PairedSet | tuple) -> PromptSplitResult:
        """Compare ``test`` against ``reference`` (PairedSets, or (prompt_emb, output_emb) tuples).

        The random-feature routes' streaming passes run on :func:`promptprism.scale.current_runner`: in this
        process by default, on a dask cluster inside ``with execution(client):`` (one task per block of
        ``partition_rows`` rows; inputs streamed from files are read by the workers themselves); the
        result is the same either way.
        """
        t0 = time.perf_counter()
        sets = _paired_sets(test, reference, cosine=self.kernel == "cosine")
        n_samples = len(sets["test"]) + len(sets["reference"])
        notes: list[str] = []
        caveat(notes, self.check_test(n_samples, self.route_name(n_samples)))
        sigmas, scan = self._resolve_bandwidths(sets)
        route = choose_route(self, sets, sigmas, backend=resolve_backend(self.device),
                             runner=current_runner())
        label_list, names = prompt_groups(sets["test"], sets["reference"])
        labels = dict(zip(SIDES, label_list, strict=True))
        pair = [sets[side] for side in SIDES]
        caveat(notes, missing_strings_note(pair, [s.where for s in pair]))
        caveat(notes, strings_note(*pair))
        caveat(notes, sig.unshared_prompts_note(labels["test"], labels["reference"],
                                                tested=bool(self.resolved_permutations(route.name))))
        timings = {"setup_s": time.perf_counter() - t0}
        identical = core.same_pairs(sets["test"], sets["reference"])
        test = (route, sets, labels, names, sigmas)
        spectra, distances, stats = route.fit(labels, len(names), timings, test_plan=lambda spectra: (
            self._test_plan(*test, spectra[TEST_VS_REFERENCE], identical=identical)))
        spec, distance = spectra[TEST_VS_REFERENCE], distances[TEST_VS_REFERENCE]
        stats = stats[TEST_VS_REFERENCE]
        caveat(notes, out_of_range_note(spec.eigenvalues, route.name, self.n_features, self.eta))
        t1 = time.perf_counter()
        significance, p_values = self._significance(*test, spec, identical=identical)
        route.release()  # (the test's seconds: its plan's too, made during the fit: Route.fit)
        timings["significance_s"] = time.perf_counter() - t1 + timings.pop("test_plan_s", 0.0)
        t2 = time.perf_counter()
        modes, ranking, basis, every = summarise(
            sets=sets, eigenvalues=spec.mode_eigenvalues, stats=stats, names=names,
            options=SummaryOptions(self.eta, self.top_prompts, self.rank_prompts_by), p_values=p_values,
            alpha=float(self.alpha) if p_values is not None else None)
        if significance and identical:
            basis = "none: the sets are identical"
        timings["modes_s"] = time.perf_counter() - t2
        timings["total_s"] = time.perf_counter() - t0
        return PromptSplitResult(
            eigenvalues=[float(v) for v in spec.eigenvalues], modes=modes,
            distance=0.0 if identical and float(self.eta) == 1.0 else float(distance),
            method=route.name, n_test=len(sets["test"]), n_reference=len(sets["reference"]), seed=self.seed,
            config=self._config(route, sets, sigmas), prompt_ranking=ranking,
            timings={k: round(v, 4) for k, v in timings.items()}, significance=significance,
            identical=identical, ranking_basis=basis, eigenvalues_scope=spec.scope, bandwidth_scan=scan,
            notes=notes, prompt_disagreement=every)

    def _config(self, route: Route, sets: dict[str, PairedSet], sigmas: tuple) -> dict:
        """The result's ``config``: the options (:meth:`.SplitOptions.recorded_options`) with what the fit
        resolved: bandwidths, route options, precision, device, permutations, and where the sets came from."""
        return self.recorded_options(
            eta=float(self.eta), alpha=float(self.alpha), null_samples=int(self.null_samples),
            sigma_prompt=sigmas[0], sigma_output=sigmas[1], **route.resolved(), precision=route.precision,
            device=route.backend.label, permutations=self.resolved_permutations(route.name),
            test=sets["test"].where, reference=sets["reference"].where)

    # ------------------------------------------------------------------------------------ bandwidths
    def _resolve_bandwidths(self, sets: dict[str, PairedSet]) -> tuple[tuple[Any, Any], dict]:
        """Both bandwidths as numbers, resolved once: fixed, a median rule or the 'stable' scan (recorded)."""
        if self.kernel != "gaussian":
            return (None, None), {}
        bws = core.pooled_bandwidths({key: self.bandwidth(key) for key in ("prompt", "output")},
                                     [sets[side] for side in SIDES], seed=self.seed)
        bws, scan = core.stable_bandwidths(bws, sets, seed=self.seed, eta=self.eta,
                                           stable_samples=STABLE_SAMPLES, stable_top=STABLE_TOP,
                                           backend=resolve_backend(self.device))
        for key, record in scan.items():
            if not record["plateau"]:
                warnings.warn(f"sigma_{key}='stable': {record['note']}", UserWarning, stacklevel=3)
        return (bws["prompt"].value, bws["output"].value), scan

    # ----------------------------------------------------------------------------------- significance
    def _family(self, route: Route, sets: dict, names: list, sigmas: tuple) -> Family:
        """The aggregated test's kernel family (:func:`.family.family_for`)."""
        return family_for(self.aggregate, sets, kernel=self.kernel, sigmas=sigmas, seed=self.seed,
                          rules=(self.bandwidth("prompt"), self.bandwidth("output")), names=names,
                          backend=route.backend)

    def _test_plan(self, route: Route, sets: dict, labels: dict, names: list, sigmas: tuple,
                   spec: core.Spectrum, *, identical: bool) -> testing.TestPlan | None:
        """The test's relabellings and family operands (:func:`.testing.plan_test`), made while the route
        computes its operand ahead; None when no test runs."""
        permutations = self.resolved_permutations(route.name)
        if not permutations or identical or not spec.selected.size:
            return None
        c, family = TEST_VS_REFERENCE, self._family(route, sets, names, sigmas)
        return testing.plan_test(list(sets.values()), [c], {c: spec}, list(labels.values()), eta=self.eta,
                                 permutations=permutations, seed=self.seed,
                                 max_samples=int(self.null_samples), family=family)

    def _significance(self, route: Route, sets: dict, labels: dict, names: list, sigmas: tuple,
                      spec: core.Spectrum, *, identical: bool) -> tuple[dict, list[float] | None]:
        """The permutation test of the reported modes on the route's replicates (:mod:`.testing`,
        :mod:`.significance`), aggregated over a kernel family (:mod:`.aggregate`): (record, p-values)."""
        permutations = self.resolved_permutations(route.name)
        if not permutations:
            return {}, None
        if identical or not spec.selected.size:
            return sig.empty_record(permutations=permutations, alpha=float(self.alpha), seed=self.seed,
                                    identical=identical), None
        plan = route.test_plan
        family = plan.family if plan is not None else self._family(route, sets, names, sigmas)
        with status(f"PromptSplit: permutation test ({permutations} permutations)",
                    enabled=progress_enabled(self.progress)):
            record, p_values = testing.mode_significance(
                sets, spec, labels, operand_of=route.replicates(), eta=self.eta,
                permutations=permutations, alpha=float(self.alpha), seed=self.seed,
                max_samples=int(self.null_samples), family=family, subspace=getattr(route, "subspace", None),
                plan=plan)
        record["route_note"] = route.test_note
        return record, p_values


def _paired_sets(test: PairedSet | tuple, reference: PairedSet | tuple, *, cosine: bool
                 ) -> dict[str, PairedSet]:
    """{'test': ..., 'reference': ...} as compatible PairedSets (no zero rows under the cosine kernel)."""
    sets = {"test": as_paired_set(test, "test"), "reference": as_paired_set(reference, "reference")}
    check_compatible(sets["test"], sets["reference"])
    if cosine:
        for s in sets.values():
            s.check_nonzero("the cosine kernel is undefined for a zero vector")
    return sets


def replace_config(est: PromptSplit, **changes: Any) -> PromptSplit:
    """A copy of ``est`` with some options changed (validated)."""
    return dataclasses.replace(est, **changes)
