"""``ReferenceMetrics``: generated sets against a reference set (validate, resolve defaults, call the core).

Precision, recall, density, coverage, Fréchet distance, KID and MMD on the output embeddings; CLIPScore on
(prompt, output) pairs from one joint space; bootstrap intervals, a per-prompt breakdown and a note for each
thing left out.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..._params import BOOTSTRAP, SEED, Estimator, at_least, between, one_of, positive
from ..._validation import check_matrix, check_memory
from ...data.paired import PairedSet, prompt_groups, set_names
from ...data.paired import reference_name as named_apart
from ...errors import InputError
from ...kernels import KERNELS, resolve_bandwidth
from ...kernels.bandwidth import BANDWIDTH, Bandwidth
from ...stats.intervals import hold_estimate
from ...stats.resampling import MIN_BOOTSTRAP_CLUSTERS, check_bootstrap_memory
from .alignment import CLIPSCORE_WEIGHT, check_joint_space, clip_scores
from .breakdown import PromptGroups, prompt_breakdown
from .calibration import interval_validity
from .design import design_correction
from .frechet import frechet_distance
from .intervals import FD_BOOTSTRAP_MAX_DIM, bootstrap_means, frechet_bootstrap
from .kid import gather_subsets, kid_and_mmd2, mmd2_interval
from .options import ALIGNMENT_CHOICES
from .prdc import neighbour_indicators_each, shared_row_count
from .result import MetricsResult, SetMetrics

PRECISIONS = ("float64", "float32")


def _as_set(data: Any, name: str) -> PairedSet | np.ndarray:
    if isinstance(data, PairedSet):
        return data
    return check_matrix(data, name)


def _outputs(data: PairedSet | np.ndarray) -> np.ndarray:
    return data.output_embeddings if isinstance(data, PairedSet) else data


#: why CLIPScore is not computed by default on embeddings no joint text-image encoder is known to have made
UNDECLARED = ("the prompt and output embeddings are not declared to come from one joint text-image encoder "
              "(CLIP, SigLIP or open_clip embedding both, in promptprism or by 'promptprism embed')")



def _clusters(labels: np.ndarray | None, rows: int) -> int:
    """What the bootstrap resamples: distinct prompts when there are at least two, else rows."""
    distinct = 0 if labels is None else int(np.unique(labels).size)
    return distinct if distinct >= 2 else rows


@dataclass(frozen=True, kw_only=True)
class ReferenceMetrics(Estimator):
    """Fidelity, diversity, distances and alignment of generated sets against one reference set:
    ``fit(generated, reference)`` -> :class:`MetricsResult` (``compare`` is its deprecated name).

    ``nearest_k``: k of the k-NN radii (precision, recall, density, coverage). ``subsets`` x
    ``subset_size``: KID's and MMD's random subsets. ``mmd_kernel`` ('gaussian' or 'cosine') and
    ``mmd_sigma`` (a number or 'median', '0.5*median': resolved on the reference): MMD's kernel.
    ``bootstrap``: replicates for the intervals (0: off). ``min_group_size``: generated samples a prompt
    needs to be broken down. ``alignment``: 'auto' (CLIPScore when the prompts and outputs are declared to
    come from one joint text-image encoder: ``fit(joint=...)``, which the loader fills in), 'on' (the
    caller asserts a joint space: CLIPScore for every set whose dimensions agree, with a note saying so;
    refused when they differ or the encoders are known to differ), 'off'. ``distance_precision``: the k-NN
    distances' dtype.
    Generated sets given as arrays (output embeddings only) get every metric but CLIPScore and the
    per-prompt rows. Parameters are checked when it is made and never changed.
    """

    nearest_k: int = 5
    subsets: int = 100
    subset_size: int = 1000
    mmd_kernel: str = "gaussian"
    mmd_sigma: float | str = "median"
    bootstrap: int = 200
    confidence: float = 0.95
    min_group_size: int = 10
    alignment: str = "auto"
    clip_weight: float = CLIPSCORE_WEIGHT
    distance_precision: str = "float64"
    block_rows: int | None = None
    seed: int = 0

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "nearest_k": [positive()], "subsets": [positive()], "subset_size": [at_least(2)],
        "mmd_kernel": [one_of(KERNELS)], "mmd_sigma": [BANDWIDTH], "bootstrap": [BOOTSTRAP],
        "confidence": [between(0.0, 1.0)], "min_group_size": [positive()],
        "alignment": [one_of(ALIGNMENT_CHOICES)], "clip_weight": [positive(integer=False)],
        "distance_precision": [one_of(PRECISIONS)], "block_rows": [positive(), None], "seed": [SEED]}

    def config(self, sigma: float | None) -> dict:
        """The options as recorded in result.json (the bandwidth resolved)."""
        return {"nearest_k": int(self.nearest_k), "subsets": int(self.subsets),
                "subset_size": int(self.subset_size), "mmd_kernel": self.mmd_kernel, "mmd_sigma": sigma,
                "bootstrap": int(self.bootstrap), "confidence": float(self.confidence),
                "min_group_size": int(self.min_group_size), "alignment": self.alignment,
                "clip_weight": float(self.clip_weight), "distance_precision": self.distance_precision,
                "fd_bootstrap_max_dim": FD_BOOTSTRAP_MAX_DIM,
                "min_samples": {"prdc": int(self.nearest_k) + 1, "per_prompt": int(self.min_group_size),
                                "fd_full_rank": "d + 1"}}

    def fit(self, generated: Any, reference: Any, *, names: Sequence[str] | None = None,
            reference_name: str | None = None, spaces: dict[str, tuple[str, str]] | None = None,
            truncation: dict[str, dict] | None = None, joint: Collection[str] = ()) -> MetricsResult:
        """Each generated set (a :class:`PairedSet`, an (n, d) array, or a list of them) against
        ``reference``; ``spaces`` {name: (prompt encoder, output encoder)}, ``joint`` (the names of the
        sets whose prompts and outputs one joint text-image encoder embedded) and ``truncation`` {name:
        {'truncated': per-row bools, 'context_length': tokens}} come from the loader when it knows them."""
        sets = list(generated) if isinstance(generated, (list, tuple)) else [generated]
        if isinstance(generated, (list, tuple)) and sets and all(np.ndim(s) == 1 for s in sets):
            raise InputError("generated: a list is read as a list of sets, each an (n, d) array or a "
                             f"PairedSet; this one holds {len(sets)} rows of numbers: pass np.asarray(rows) "
                             "for one set", parameter="generated")
        if not sets:
            raise InputError("no generated set to compare")
        sets = [_as_set(s, f"generated[{i}]") for i, s in enumerate(sets)]
        ref = _as_set(reference, "reference")
        names = set_names(sets, names)
        ref_x = _outputs(ref)
        for s in sets:  # what the options cost, refused before anything is computed
            self._check_memory(int(_outputs(s).shape[0]), int(ref_x.shape[0]))
        if self.mmd_kernel == "gaussian" and not Bandwidth.parse(self.mmd_sigma, "mmd_sigma").fixed and \
                not np.any(np.asarray(ref_x[:2048]) != np.asarray(ref_x[:1])):
            raise InputError(f"reference ({getattr(ref, 'name', None) or 'unnamed'}): every output is the "
                             "same embedding, so the gaussian MMD's median bandwidth (mmd_sigma) is"
                             " undefined and there is no spread to compare a generated set's with")
        sigma = (resolve_bandwidth(self.mmd_sigma, ref_x, name="mmd_sigma", seed=self.seed)
                 if self.mmd_kernel == "gaussian" else None)
        subsets = dict(kernel=self.mmd_kernel, sigma=sigma, n_subsets=self.subsets,
                       subset_size=self.subset_size, seed=self.seed)
        k = int(self.nearest_k)
        for s, name in [*zip(sets, names, strict=True), (ref, f"reference ({getattr(ref, 'name', None)})")]:
            if _outputs(s).shape[0] < k + 1:  # (named here: the k-NN core knows 'generated' and 'reference')
                raise InputError(f"{name}: {_outputs(s).shape[0]} sample(s); nearest_k={k} needs at least "
                                 f"{k + 1} (a sample's k-NN radius is the distance to its {k}-th nearest "
                                 "other sample)", parameter="nearest_k")
        for s, name in zip(sets, names, strict=True):
            if _outputs(s).shape[1] != ref_x.shape[1]:
                raise InputError(f"{name}: outputs have {_outputs(s).shape[1]} dimensions but the "
                                 f"reference's have {ref_x.shape[1]}; embed both with the same encoder")
        # KID's and MMD's sums off the k-NN blocks; the reference's own pass made once for every set
        gathered = [gather_subsets(_outputs(s), ref_x, **subsets) for s in sets]
        indicators = neighbour_indicators_each(ref_x, [_outputs(s) for s in sets], self.nearest_k,
                                               dtype=self.distance_precision, block_rows=self.block_rows,
                                               gathers=gathered)
        models = [self._one(s, ref, name, subsets, (spaces or {}).get(name), (truncation or {}).get(name),
                            declared=name in set(joint), gathered=g, ind=ind)
                  for s, name, g, ind in zip(sets, names, gathered, indicators, strict=True)]
        ref_label = named_apart(ref, names, reference_name)
        return MetricsResult(models=models, reference=ref_label, n_reference=int(ref_x.shape[0]),
                             dim=int(ref_x.shape[1]), seed=int(self.seed), config=self.config(sigma))

    def compare(self, generated: Any, reference: Any, **options: Any) -> MetricsResult:
        """Deprecated name of :meth:`fit` (the same arguments, the same result)."""
        warnings.warn("ReferenceMetrics.compare is deprecated; use ReferenceMetrics.fit (the same "
                      "arguments and result)", DeprecationWarning, stacklevel=2)
        return self.fit(generated, reference, **options)

    def _check_memory(self, n: int, m: int) -> None:
        """The bootstrap's draws over n generated and m reference rows, and the subsets' row indices (KID
        and MMD: ``subsets`` pairs of at most ``subset_size`` rows), must fit in memory."""
        check_bootstrap_memory(self.bootstrap, rows=n + m, groups=n + m)
        size = min(self.subset_size, n, m)
        check_memory(float(self.subsets) * (16.0 * size + 24.0),
                     what=f"subsets {self.subsets} ({self.subsets:,} pairs of {size:,}-row subsets)",
                     parameter="subsets")

    def _alignment(self, data: Any, space: tuple[str, str] | None, trunc: dict | None, notes: list[str],
                   declared: bool = False) -> dict[str, np.ndarray]:
        if self.alignment == "off":
            return {}
        if not isinstance(data, PairedSet):
            if self.alignment == "on":
                raise InputError("alignment needs prompt embeddings; the generated set is outputs only")
            return {}
        try:
            check_joint_space(data.dim_prompt, data.dim_output, prompt_space=space and space[0],
                              output_space=space and space[1])
        except InputError as exc:
            if self.alignment == "on":
                raise
            notes.append(f"no CLIPScore: {exc}")
            return {}
        if not declared:
            if self.alignment == "auto":
                notes.append(f"no CLIPScore: {UNDECLARED}; pass alignment='on' (CLI --alignment on) to "
                             "assert that they are")
                return {}
            notes.append(f"CLIPScore computed because alignment='on' asserts a joint space: {UNDECLARED} "
                         "(it means nothing if they are not)")
        score, cos = clip_scores(data.prompt_embeddings, data.output_embeddings, weight=self.clip_weight)
        out = {"clip_score": score, "cosine": cos}
        if trunc is not None:
            out["truncated"] = np.asarray(trunc["truncated"], dtype=bool)
        else:
            notes.append("CLIPScore from prompt embeddings made elsewhere: whether their text encoder "
                         "truncated long prompts (CLIP: 77 tokens) is not known here; embed the prompts with "
                         "promptprism (a manifest and --text-model clip) to have them counted")
        return out

    def _groups(self, data: Any, ref: Any) -> PromptGroups | None:
        if not isinstance(data, PairedSet):
            return None
        if isinstance(ref, PairedSet) and ref.dim_prompt == data.dim_prompt:
            (gen, rlab), names = prompt_groups(data, ref)
            return PromptGroups(gen, rlab, names)
        (gen,), names = prompt_groups(data)
        return PromptGroups(gen, None, names)

    def _fd(self, x: np.ndarray, r: np.ndarray, notes: list[str]) -> float:
        n_min, d = min(x.shape[0], r.shape[0]), x.shape[1]
        if n_min < 2:
            raise InputError(f"FD needs at least 2 samples in each set, got {n_min}")
        if n_min <= d:
            notes.append(f"FD from {n_min} samples in {d} dimensions: the covariances are singular (rank "
                         f"<= n - 1 < d), so FD is biased upward and depends on n; compare sets of equal n "
                         f"only, or use more than {d} samples")
        return frechet_distance(x, r)

    def _one(self, data: Any, ref: Any, name: str, subsets: dict, space: tuple[str, str] | None,
             trunc: dict | None, *, declared: bool, gathered: Any, ind: Any) -> SetMetrics:
        """One set's metrics from its k-NN indicators ``ind`` and KID's and MMD's ``gathered`` sums (or
        None: :func:`.kid.kid_and_mmd2` makes its own products), ``subsets`` their options."""
        x, r = _outputs(data), _outputs(ref)
        notes: list[str] = []
        dup = ind.duplicates
        if dup["reference"] or dup["generated"]:
            notes.append(f"exact duplicate rows: {dup['generated']} generated, {dup['reference']} reference; "
                         "k-NN radii count distinct neighbours and density weights each reference ball by "
                         "1 / its multiplicity (docs/metrics.md)")
        shared = shared_row_count(x, r)
        if shared:
            notes.append(f"{shared} of the {x.shape[0]} generated rows also appear in the reference: KID and "
                         "MMD^2 assume two independent draws, and rows on both sides pull them below their "
                         "value (a set against itself reads below 0, its intervals too); compare sets that "
                         "share no rows")
        fd = self._fd(x, r, notes)
        groups = self._groups(data, ref)
        labels = (None, None) if groups is None else (groups.generated, groups.reference)
        fixed = _same_prompts(*labels)
        (kid, kid_parts), (mmd, mmd_parts) = kid_and_mmd2(x, r, **subsets, groups=labels, gathered=gathered,
                                                          conditional=fixed)
        if fixed:  # MMD^2 of the two sets' mixtures over these prompts, each weighted as its design
            mmd = mmd + sum(design_correction(v, g, kernel=subsets["kernel"], sigma=subsets["sigma"],
                                              cap=self.subset_size, seed=self.seed)
                            for v, g in zip((x, r), labels, strict=True))
        align = self._alignment(data, space, trunc, notes, declared)
        if not isinstance(data, PairedSet):
            notes.append("output embeddings only (no prompt embeddings): no CLIPScore and no per-prompt rows")
        intervals = {"kid": mmd2_interval(kid, kid_parts, (x.shape[0], r.shape[0]), self.confidence),
                     "mmd2": mmd2_interval(mmd, mmd_parts, (x.shape[0], r.shape[0]), self.confidence),
                     **self._intervals(x, r, ind, align, groups, fd, notes)}
        per_prompt: list[dict] = []
        if groups is not None:
            per_prompt, more = prompt_breakdown(x, r, groups, ind, alignment=align,
                                                min_group_size=self.min_group_size, subsets=self.subsets,
                                                seed=self.seed, distance_dtype=self.distance_precision)
            notes.extend(more)
        truncation = {}
        if "truncated" in align:
            truncation = {"prompts": int(align["truncated"].size), "truncated": int(align["truncated"].sum()),
                          "context_length": int(trunc["context_length"])}
        m = ind.metrics()
        validity = {} if not intervals else interval_validity(
            intervals, generated_clusters=_clusters(groups and groups.generated, x.shape[0]),
            reference_clusters=_clusters(groups and groups.reference, r.shape[0]), generated_rows=x.shape[0],
            reference_rows=r.shape[0], dim=int(x.shape[1]), same_prompts=fixed)
        return SetMetrics(
            name=name, n=int(x.shape[0]), fd=fd, kid=float(kid.mean()), kid_std=float(kid.std(ddof=1))
            if kid.size > 1 else 0.0, mmd2=float(mmd.mean()),
            clip_score=float(align["clip_score"].mean()) if align else None,
            cosine=float(align["cosine"].mean()) if align else None, intervals=intervals,
            interval_validity=validity,
            truncation=truncation, per_prompt=per_prompt, notes=notes, **m)

    def _intervals(self, x: np.ndarray, r: np.ndarray, ind: Any, align: dict, groups: PromptGroups | None,
                   fd: float, notes: list[str]) -> dict:
        out: dict = {}
        if not self.bootstrap:
            return out
        fewest = min(_clusters(groups and groups.generated, x.shape[0]),
                     _clusters(groups and groups.reference, r.shape[0]))
        if fewest < MIN_BOOTSTRAP_CLUSTERS:
            notes.append(f"no bootstrap intervals: a set has {fewest} prompts (or rows) to resample; below "
                         f"{MIN_BOOTSTRAP_CLUSTERS} its replicates take three values at most (an interval of "
                         "2 prompts is often one point)")
            return out
        opts = dict(replicates=self.bootstrap, level=self.confidence, seed=self.seed)
        gen_values = {"precision": ind.in_real_manifold, "density": ind.real_balls / ind.k}
        gen_values.update({k: v for k, v in align.items() if k in ("clip_score", "cosine")})
        out.update(bootstrap_means(gen_values, groups.generated if groups else None, **opts))
        out.update(bootstrap_means({"recall": ind.in_fake_manifold, "coverage": ind.covered},
                                   groups.reference if groups else None, **opts))
        if x.shape[1] <= FD_BOOTSTRAP_MAX_DIM:
            out["fd"] = iv = hold_estimate(frechet_bootstrap(x, r, estimate=fd, **opts, groups=(
                groups.generated, groups.reference) if groups else (None, None)), fd)
            lo, hi = iv.get("widened_from", (iv["low"], iv["high"]))
            if f"{iv['low']:.4g} {iv['high']:.4g}" != f"{lo:.4g} {hi:.4g}":  # (visible as printed)
                notes.append(f"FD's basic bootstrap interval [{lo:.4g}, {hi:.4g}] left out its estimate "
                             f"{fd:.4g} and was widened to [{iv['low']:.4g}, {iv['high']:.4g}]: the interval "
                             "corrects FD's small-sample (upward) bias, which is large here (few prompts or "
                             "rows; the lower end is what a larger set would give; docs/metrics.md)")
        else:
            notes.append(f"no FD interval: d = {x.shape[1]} > {FD_BOOTSTRAP_MAX_DIM} (each bootstrap "
                         "replicate costs two d x d covariances and eigen-solves)")
        return out


def _same_prompts(generated: Any, reference: Any) -> bool:
    """Whether both sets hold prompt labels, the same prompts, and at least two rows of each (then MMD^2 is
    taken with the prompts fixed, each set's within-set term weighted by its design: :mod:`.design`; a
    prompt of one row hides its own pairs, so a set of one row per prompt, as real data often is, keeps
    the U-statistic and its flag)."""
    if generated is None or reference is None:
        return False
    (g, g_counts), (r, r_counts) = (np.unique(v, return_counts=True) for v in (generated, reference))
    return bool(np.array_equal(g, r)) and min(g_counts.min(), r_counts.min()) >= 2
