"""The kernel family of the aggregated test: which kernels (resolved bandwidths), and the test run over them.

:mod:`.aggregate` holds the pure statistics (min-p over kernels); this module resolves a family for a fit
(the modality's kernels at multiples of the fitted gaussian's bandwidths, or for the cosine kernel of the
bandwidths given, else the median ones, less the fitted kernel itself), builds each
kernel's Gram matrix on the test's rows (the gaussians from one shared distance matrix) and its principal
subspace, runs every kernel on the same relabellings and assembles the record
``significance['aggregation']``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...backend import NUMPY, Backend, inplace
from ...kernels.bandwidth import MEDIAN_SAMPLES, Bandwidth, pooled_rows
from ...kernels.gram import squared_distances, unit_rows
from ...stats.permutation import adjust_pvalues, labelling_statistic, min_p_aggregate, step_down_pvalues
from ...stats.subspaces import column_shares, landmark_factor, leading_rank
from . import aggregate as agg
from . import comparisons as kc
from . import core
from . import significance as sig
from .relabel import canonical_positions


@dataclass
class Family:
    """The other kernels of the aggregate: dicts (name, kernel, sigma_prompt, sigma_output); ``fitted``:
    the fitted kernel's name; ``modality``: the family's ('text' or 'image'); where the Grams run."""

    kernels: list[dict] = field(default_factory=list)
    fitted: str = ""
    modality: str = ""
    names: Any = None
    backend: Backend = NUMPY
    max_samples: int = agg.AGGREGATE_SAMPLES
    centre: str = ""  #: what the gaussians' bandwidths are multiples of (:func:`resolve_family`)
    set_names: list = field(default_factory=lambda: ["test", "reference"])  #: the sets' names (K-way)
    #: the gaussians on unit rows (with the cosine kernel: a test that ignores norms, as the kernel does)
    unit_rows: bool = False


def resolve_family(name: str, sets: dict | list, *, kernel: str, sigmas: tuple, seed: int,
                   given: tuple = (None, None)) -> tuple[str, str, list[dict], str]:
    """(modality, fitted kernel's name, the family's other kernels, how their bandwidths were centred) for
    the option ``aggregate=name`` ('auto': the outputs' modality, :func:`.aggregate.modality`).

    The gaussians of the family sit at multiples c of a centre pair (s_prompt, s_output): with the gaussian
    kernel, the fitted kernel's own resolved bandwidths ``sigmas`` (whatever set them: a number passed, a
    median rule, 'stable'), so the fitted kernel is the member c = 1 and is left out; with the cosine kernel,
    each bandwidth ``given`` as a number, else the median of the pooled embeddings (:func:`centre_bandwidth`).
    Nothing is asked of the data that the user already gave. ``sets``: two-way's {'test', 'reference'}, or
    the K sets (the modality of the first; the medians of all pooled)."""
    sets = list(sets.values()) if isinstance(sets, dict) else list(sets)
    modality = agg.modality(sets[0].output_embeddings) if name == "auto" else name
    if kernel == "cosine":
        centre, how = {}, []
        for (key, attr), value in zip((("prompt", "prompt_embeddings"), ("output", "output_embeddings")),
                                      given, strict=True):
            pooled = [getattr(s, attr) for s in sets]
            centre[key], said = centre_bandwidth(value, pooled, name=f"sigma_{key}", seed=seed, unit=True)
            how.append(f"sigma_{key} {said}")
        fitted, centred = "cosine", "; ".join(how)
    else:
        centre = {"prompt": float(sigmas[0]), "output": float(sigmas[1])}
        fitted, centred = "gaussian x1", "the fitted kernel's bandwidths"
    others = []
    for member, kern, factor in agg.FAMILIES[modality]:
        if member == fitted:
            continue
        others.append({"name": member, "kernel": kern,
                       "sigma_prompt": None if factor is None else factor * centre["prompt"],
                       "sigma_output": None if factor is None else factor * centre["output"]})
    return modality, fitted, others, centred


def centre_bandwidth(value: Any, pooled: list, *, name: str, seed: int, unit: bool = False
                     ) -> tuple[float, str]:
    """(the centre of one side's gaussians in the cosine kernel's family, how it was set): ``value`` when
    it is a number (a fixed :class:`Bandwidth`, a float or a number written as a string), else its rule on
    the pooled rows (``unit``: each scaled to norm 1, as the family's gaussians see them); rows that are all
    one point (one prompt shared by every row) give 1.0, since a gaussian of any bandwidth is 1 between
    equal rows, so the bandwidth cannot change that side's kernel."""
    rule = value if isinstance(value, Bandwidth) else Bandwidth.parse("median" if value is None else value,
                                                                        name)
    if rule.fixed:  # (a number, or a number written as a string: '1.0')
        return float(rule.value), f"{float(rule.value):.4g} (given)"
    rows = pooled_rows(pooled, MEDIAN_SAMPLES, seed)
    if unit:
        rows = unit_rows(rows)
    if not np.any(np.abs(rows - rows[:1]) > 0):
        return 1.0, "1 (every row the same point: any bandwidth gives the same kernel)"
    return rule.resolve(rows, name=name, seed=seed).value, (f"{rule} of the pooled embeddings" +
                                                            (" scaled to norm 1" if unit else ""))


def family_for(aggregate: str, sets: dict | list, *, kernel: str, sigmas: tuple, seed: int, rules: tuple,
               names, backend: Backend, set_names: list | None = None) -> Family | None:
    """The family of a fit's aggregated test (None when ``aggregate='none'``); ``sets``: two-way's
    {'test', 'reference'} or the K sets (named ``set_names``)."""
    if aggregate == "none":
        return None
    sets = list(sets.values()) if isinstance(sets, dict) else list(sets)
    modality, fitted, others, centred = resolve_family(aggregate, sets, kernel=kernel, sigmas=sigmas,
                                                       seed=seed, given=rules)
    if any(k["kernel"] == "cosine" for k in others) and any(
            not np.all(np.linalg.norm(getattr(s, a), axis=1) > 0) for s in sets
            for a in ("prompt_embeddings", "output_embeddings")):  # (cosine is undefined at zero)
        others = [k for k in others if k["kernel"] != "cosine"]
    return Family(kernels=others, fitted=fitted, modality=modality, names=names, backend=backend,
                  centre=centred, set_names=list(set_names or ["test", "reference"]),
                  unit_rows=fitted == "cosine")


@dataclass
class Member:
    """One other kernel of the family on the test's rows: its record entry, the test's operand on the rows
    ``keep`` (of the test's rows: the principal subspace of its Gram matrix there, the matrix itself not
    kept) and the labellings' weights on those rows, one matrix per comparison tested."""

    entry: dict
    operand: tuple
    keep: np.ndarray
    weights: list
    seconds: float = 0.0  #: building the Gram matrix and the principal subspace
    shared: Any = None  #: what a subspace operand's blocks share (:func:`.significance.operand_shared`)

    def spectra(self, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The extremes of every comparison's Lambda under the labellings ``cols``
        (:func:`.significance.permuted_spectra`), side by side."""
        parts = [sig.permuted_spectra(self.operand, w[:, cols], agg.OTHER_MODES, seed=int(cols[0]),
                                      shared=self.shared, observed=int(cols[0]) == 0) for w in self.weights]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate([p for p, _ in parts], axis=1), np.concatenate([q for _, q in parts], axis=1)


def _bandwidth_multiple(kernel: dict, base: dict | None) -> float | None:
    """c when ``kernel``'s two bandwidths are c times ``base``'s (a family's gaussians: multiples of the
    medians), else None."""
    if base is None or kernel["kernel"] != "gaussian" or base["kernel"] != "gaussian":
        return None
    c_prompt = kernel["sigma_prompt"] / base["sigma_prompt"]
    c_output = kernel["sigma_output"] / base["sigma_output"]
    return c_prompt if abs(c_prompt - c_output) <= 1e-12 * c_prompt else None


#: the precision of the family's Gram matrices: they only feed the test's principal subspace (a statistic
#: that has to be the same function for every labelling, not the fitted spectrum), so float32 (measured on
#: 4,000 768-d rows: half the time of float64 for the distances and the subspace's product)
GRAM_PRECISION = "float32"


def member_grams(emb: list, kernels: list[dict], backend: Backend, precision: str = GRAM_PRECISION,
                 columns: np.ndarray | None = None) -> Iterator[Any]:
    """Each kernel's joint Gram matrix (:func:`.core.joint_gram`, in ``precision``) on the stacked rows
    ``emb`` (test prompts, test outputs, reference prompts, reference outputs), in turn; with ``columns``
    (row indices), only its columns G[:, columns]. The gaussians whose bandwidths are multiples c of the
    first one's share one squared-distance matrix d = |w - w'|^2 of w = [t / s_t ; z / s_z] (s: the first
    one's bandwidths): their Gram matrix is exp(-d / (2 c^2)), the last of them computed in d's own memory.
    Each matrix is meant to be dropped before the next is asked."""
    base = next((k for k in kernels if k["kernel"] == "gaussian"), None)
    shared = [i for i, k in enumerate(kernels) if _bandwidth_multiple(k, base) is not None]
    dist = None
    for i, kernel in enumerate(kernels):
        if i not in shared:
            yield core.joint_gram(*emb, kernel=kernel["kernel"], sigma_prompt=kernel["sigma_prompt"],
                                  sigma_output=kernel["sigma_output"], precision=precision, backend=backend,
                                  columns=columns)
            continue
        if dist is None:
            w = _scaled_joint_rows(emb, base, backend)
            dist = squared_distances(w, None if columns is None else w[backend.asarray(columns), ...],
                                     dtype=np.dtype(precision).type)
        c = _bandwidth_multiple(kernel, base)
        gram = dist if i == shared[-1] else backend.xp.asarray(dist, copy=True)
        gram *= -1.0 / (2.0 * c * c)
        yield inplace("exp", gram)
        gram = None  # (dropped before the next one is built)


def _scaled_joint_rows(emb: list, kernel: dict, backend: Backend) -> Any:
    """w = [t / s_t ; z / s_z] of the stacked rows ``emb`` (test prompts, test outputs, reference prompts,
    reference outputs), float64, written into one array (no intermediate stacks: fresh memory costs page
    faults)."""
    (t_test, z_test, t_ref, z_ref), n_test = emb, emb[0].shape[0]
    d_t = t_test.shape[1]
    w = backend.empty((n_test + t_ref.shape[0], d_t + z_test.shape[1]), "float64")
    for rows, (t, z) in ((slice(0, n_test), (t_test, z_test)), (slice(n_test, None), (t_ref, z_ref))):
        w[rows, :d_t] = backend.asarray(t, "float64") / kernel["sigma_prompt"]
        w[rows, d_t:] = backend.asarray(z, "float64") / kernel["sigma_output"]
    return w


def family_members(sets: list, rows: list, labels: Any, comparisons: list, family: Family, *, eta: float,
                   seed: int) -> tuple[list[Member], tuple[int, ...]]:
    """The family's other kernels on the test's ``rows`` of each of the ``sets`` (or a seeded subsample of at
    most ``family.max_samples`` of them), under the test's labellings ``labels`` (a
    :class:`.labellings.Labellings`: column 0 observed), for each of ``comparisons``: ([one
    :class:`Member` per kernel], each set's rows of that subsample).

    Each kernel's operand: at most ``significance.FULL_MAX_ROWS`` rows, the uncompressed statistic of its
    Gram matrix (:func:`.significance.principal_operand`); above, a principal factor from the columns at
    seeded landmark rows (:func:`~promptprism.stats.subspaces.landmark_factor`: N (rank + 10) kernel values,
    no N x N matrix; the landmarks never depend on a label, so the test on the factor is exact), cut to
    the least rank in NULL_RANK, 2 NULL_RANK, ... (at most NULL_MAX_RANK; :func:`_landmark_operand`) whose
    leading directions hold ``significance.NULL_ENERGY`` of tr G. The entry records the rank and the
    energy (``subspace``)."""
    counts = [r.size for r in rows]
    subs = kc.null_rows_in_order(counts, labels.order, family.max_samples, seed + 1)
    at = canonical_positions([sub.size for sub in subs], labels.order)  # (the draws below follow the rows)
    offsets = np.r_[0, np.cumsum(counts)]
    keep = np.concatenate([offsets[k] + sub for k, sub in enumerate(subs)])
    picked = [[getattr(s, a)[r[sub]] for a in ("prompt_embeddings", "output_embeddings")]
              for s, r, sub in zip(sets, rows, subs, strict=True)]
    emb = picked[0] + (picked[1] if len(picked) == 2 else
                       [np.concatenate([p[i] for p in picked[1:]]) for i in (0, 1)])
    if family.unit_rows:  # (the cosine kernel's family: its gaussians on unit rows, blind to norms)
        emb = [unit_rows(e) for e in emb]
    weights = [labels.subset_weights(c, keep, eta) for c in comparisons]
    members, t0 = [], time.perf_counter()
    landmarks = None
    if keep.size > max(sig.FULL_MAX_ROWS, sig.NULL_RANK):  # (a seeded order: each rank's landmarks a prefix)
        landmarks = np.argsort(at)[np.random.default_rng(seed + 2).permutation(keep.size)]
    first = None if landmarks is None else landmarks[:sig.NULL_MAX_RANK + 10]
    for member, gram in zip(family.kernels, member_grams(emb, family.kernels, family.backend, columns=first),
                            strict=True):
        info: dict = {}
        if landmarks is None:
            operand = sig.principal_operand(("gram", gram), seed=seed, record=info, positions=at)
        else:
            operand = _landmark_operand(gram, landmarks, info)
        del gram
        entry = {**member, "subspace": {k: info.get(k) for k in ("rank", "energy", "full")}}
        members.append(Member(entry=entry, operand=operand, keep=keep, weights=weights,
                              shared=sig.operand_shared(operand), seconds=time.perf_counter() - t0))
        t0 = time.perf_counter()
    return members, tuple(sub.size for sub in subs)


def _landmark_operand(columns: Any, landmarks: np.ndarray, info: dict) -> tuple[str, Any]:
    """``("subspace", P)``: the landmark factor of one kernel from ``columns`` (its Gram matrix at the first
    NULL_MAX_RANK + 10 of the ordered ``landmarks``), built once at NULL_MAX_RANK and cut to its leading
    directions of the least rank in NULL_RANK, 2 NULL_RANK, ... holding NULL_ENERGY of tr G = N (every
    kernel of a family has k(a, a) = 1; :func:`~promptprism.stats.subspaces.leading_rank`). ``info``
    receives the rank, the energy and full=False."""
    size = landmarks.size
    cap = min(sig.NULL_MAX_RANK, size)
    width = min(cap + 10, size)
    factor = landmark_factor(columns[:, :width], landmarks[:width], cap, precision=GRAM_PRECISION)
    kept, energy = leading_rank(column_shares(factor, float(size))[::-1], start=sig.NULL_RANK, cap=cap,
                                target=sig.NULL_ENERGY)
    info.update(rank=int(kept), energy=float(energy), full=False)
    return "subspace", factor[:, factor.shape[1] - kept:]


def aggregation_record(members: list[Member], spectra: list[tuple[np.ndarray, np.ndarray]], family: Family, *,
                       group_labels: np.ndarray, sizes: tuple[int, ...], fitted_samples: int, eta: float,
                       alpha: float, cost: dict[str, float], widths: tuple | None = None,
                       names: list | None = None) -> dict:
    """``significance['aggregation']`` from every kernel's spectra over the labellings drawn (the fitted
    kernel's first, then one per member; row 0 observed), combined by
    :func:`~promptprism.stats.permutation.min_p_aggregate` (each kernel's statistic over every
    (comparison, sign) key, :func:`~promptprism.stats.permutation.labelling_statistic`). Several
    comparisons (``names``, stacked side by side in ``widths`` = (the fitted kernel's columns per
    comparison, a member's)): a member's significant modes name their comparison.

    Returns the record plus '_null_min_p', the relabellings' min-p values, for
    :func:`~promptprism.stats.permutation.adjust_pvalues`."""
    names = names or [kc.TEST_VS_REFERENCE]
    widths = widths or ([1], [agg.OTHER_MODES])
    stats = [labelling_statistic(*kc.key_columns(sp, widths[0] if i == 0 else widths[1]))
             for i, sp in enumerate(spectra)]
    p_agg, p_own, null_min = min_p_aggregate(np.stack(stats))
    p_adjusted = adjust_pvalues(p_own, null_min)
    entries = [{"name": family.fitted, "fitted": True, "p": float(p_own[0]),
                "p_adjusted": float(p_adjusted[0]), "samples": int(fitted_samples)}]
    for member, (pos, neg), p, p_adj in zip(members, spectra[1:], p_own[1:], p_adjusted[1:], strict=True):
        t0 = time.perf_counter()
        entry = {**member.entry, "fitted": False, "p": float(p), "p_adjusted": float(p_adj),
                 "samples": int(member.keep.size), "modes": []}
        if len(names) > 1 or len(sizes) > 2:  # (K-way: modes named by their comparison)
            entry["modes"] = _comparison_modes(pos, neg, names, family.set_names, null_min, alpha)
        else:
            p = step_down_pvalues({"+": pos[0], "-": neg[0]}, {"+": pos[1:, 0], "-": neg[1:, 0]})
            p_pos, p_neg = p["+"], p["-"]
            if min(p_pos.min(), p_neg.min()) <= alpha:  # a mode significant for this kernel alone
                found = agg.mode_findings(member.operand, group_labels[member.keep], *sizes, eta=eta,
                                          p_pos=p_pos, p_neg=p_neg, names=family.names)
                for f in found:
                    f["p"] = float(adjust_pvalues(np.array([f["p_kernel"]]), null_min)[0])
                entry["modes"] = [f for f in found if f["p"] <= alpha]  # (family-adjusted: significant)
        entry["n_significant"] = sum(f["p"] <= alpha for f in entry["modes"])
        entries.append(entry)
        cost[member.entry["name"]] = cost.get(member.entry["name"], 0.0) + time.perf_counter() - t0
    return {"rule": agg.RULE, "modality": family.modality, "bandwidth_centre": family.centre, "p": p_agg,
            "kernels": entries,
            "found_by": [e["name"] for e in entries if e["p_adjusted"] <= alpha],
            "cost_s": {k: round(v, 4) for k, v in cost.items()}, "_null_min_p": null_min}


def _comparison_modes(pos: np.ndarray, neg: np.ndarray, comparisons: list, set_names: list,
                      null_min: np.ndarray, alpha: float) -> list[dict]:
    """A member kernel's significant modes over several comparisons (its own step-down over every key,
    :func:`~promptprism.stats.permutation.step_down_pvalues`): comparison, side, eigenvalue, its p and the
    family-adjusted p."""
    w = agg.OTHER_MODES
    observed, null = {}, {}
    for i, c in enumerate(comparisons):
        for sign, arr in (("+", pos), ("-", neg)):
            observed[(c, sign)], null[(c, sign)] = arr[0, i * w:(i + 1) * w], arr[1:, i * w]
    p = step_down_pvalues(observed, null)
    out = []
    for (c, sign), ps in p.items():
        for j, p_kernel in enumerate(ps):
            p_adjusted = float(adjust_pvalues(np.array([p_kernel]), null_min)[0])
            if p_adjusted <= alpha:  # (significant after the family's adjustment, as n_significant counts)
                value = float(observed[(c, sign)][j])
                out.append({"comparison": kc.comparison_name(c, set_names),
                            "side": "test" if sign == "+" else "reference",
                            "eigenvalue": value if sign == "+" else -value, "p_kernel": float(p_kernel),
                            "p": p_adjusted})
    return out
