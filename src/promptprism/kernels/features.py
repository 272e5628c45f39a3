"""Finite feature maps: exact (cosine) and random (Fourier features, tensor-product projection).

A feature map turns embeddings into vectors whose inner products are (unbiased estimates of) kernel values,
so that kernel covariances become ordinary r x r covariance matrices that can be summed sample by sample.
Every random map is fully determined by its ``seed`` and its input dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from array_api_compat import device

from .._validation import check_memory, check_positive_number, check_precision, check_seed
from ..array_ops import row_norms
from ..backend import (
    array_namespace,
    as_float,
    backend_of,
    dtype_name,
    float_dtype,
    into,
    is_numpy,
    populated_empty,
    to_numpy,
)
from ..errors import InputError, OptionError


def cosine_features(a: Any, dtype: type = np.float64) -> Any:
    """phi(a) = a / |a|: the exact (finite) feature map of the cosine kernel (in ``dtype``; numpy or torch,
    as the input)."""
    xp = array_namespace(a)
    a = as_float(xp, a, float_dtype(xp, np.dtype(dtype).name))
    norms = row_norms(a)
    if bool(xp.any(norms == 0)):
        row = int(np.flatnonzero(to_numpy(norms[:, 0]) == 0)[0])
        raise InputError(f"row {row} (0-based) is all zeros: the cosine kernel is undefined for a zero "
                         "vector")
    return a / norms


def _check_input(x: Any, dim: int, what: str) -> Any:
    x = np.asarray(x) if is_numpy(x) else x
    if x.ndim != 2 or x.shape[1] != dim:
        raise InputError(f"{what}: expected shape (n, {dim}), got {x.shape}")
    return x


@dataclass(frozen=True)
class RandomFourierFeatures:
    """phi(a) = sqrt(1/D) [cos(w_l . a), sin(w_l . a)]_{l=1..D}, w_l ~ N(0, sigma^-2 I), output dim 2D.

    E[phi(a) . phi(b)] = exp(-|a - b|^2 / (2 sigma^2)).
    """

    dim_in: int
    n_features: int  #: output dimension r = 2D
    sigma: float
    seed: int = 0
    frequencies: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_positive_number(self.dim_in, "dim_in", integer=True)
        check_positive_number(self.n_features, "n_features", integer=True, even=True)
        check_positive_number(self.sigma, "sigma")
        check_seed(self.seed)
        check_memory(8.0 * self.dim_in * self.n_features // 2, what=f"n_features {self.n_features}")
        w = np.random.default_rng(self.seed).standard_normal((self.dim_in, self.n_features // 2))
        object.__setattr__(self, "frequencies", w / self.sigma)

    @property
    def dim(self) -> int:
        """The output dimension r = 2D."""
        return self.n_features

    def transform(self, x: np.ndarray) -> np.ndarray:
        """phi(a) for each row of ``x``: (n, 2D) float64."""
        x = _check_input(x, self.dim_in, "RandomFourierFeatures input")
        out = populated_empty((x.shape[0], self.n_features), np.float64)
        # the phases in the first half of the features, overwritten in place by their cosines
        half = out[:, : self.n_features // 2]
        proj = np.matmul(np.asarray(x, dtype=np.float64), self.frequencies, out=half)
        return _cos_sin(proj, out=out)


#: largest absolute error (radians) of a random-feature phase that is still accepted
PHASE_TOLERANCE = 1e-3
TWO_PI = 2.0 * np.pi


def _check_phase_range(top: float, dtype: str) -> None:
    """Refuse phases whose magnitude ``top`` keeps no precision in ``dtype`` (or that are not finite)."""
    if not np.isfinite(top) or top * float(np.finfo(dtype).eps) > PHASE_TOLERANCE:
        size = f"up to {top:.3g}" if np.isfinite(top) else "beyond its range"
        raise OptionError(
            f"a bandwidth (sigma_prompt or sigma_output) is too small for the embeddings' magnitude "
            f"(random-feature phases {size} keep no precision in {dtype}); centre the embeddings or choose a "
            "larger bandwidth")


def _check_frequencies(w: np.ndarray, name: str, sigma: float, dtype: str) -> None:
    """Refuse a bandwidth whose frequencies (standard normals / sigma) overflow ``dtype``, naming it."""
    if not np.all(np.isfinite(w)):
        raise OptionError(f"{name}: {sigma:g} is too small: its random-feature frequencies (standard "
                          f"normals over it) overflow {np.dtype(dtype).name}; choose a larger bandwidth (or "
                          "the median rule)", parameter=name)


def _phase_extreme(xp: Any, phases: Any) -> Any:
    """max |phase| as a 0-d array of the phases' backend, without an |phases| temporary."""
    return xp.max(xp.stack([xp.max(phases), -xp.min(phases)]))


class PhaseRange:
    """The largest |phase| over the chunks of a pass, kept where the phases live and read once.

    On an accelerator, reading each chunk's phase range back to the host (:func:`_cos_sin`'s check) waits
    for the device every chunk; a pass that gives its chunks one ``PhaseRange`` instead keeps a running
    maximum on the device and reads it with :meth:`check` at the end (one synchronisation per pass). The
    features of a pass whose phases are out of range are never used: :meth:`check` raises first.
    """

    def __init__(self) -> None:
        self.top: Any = None  #: the running max |phase| (a 0-d array), None before the first chunk
        self.dtype = "float64"  #: the phases' dtype name

    def record(self, phases: Any) -> None:
        """Fold one chunk's phases into the running maximum (no read to the host)."""
        xp = array_namespace(phases)
        top = _phase_extreme(xp, phases)
        self.top = top if self.top is None else xp.maximum(self.top, top)
        self.dtype = dtype_name(phases)

    def check(self) -> None:
        """Raise :class:`~promptprism.errors.OptionError` when any recorded phase keeps no precision."""
        if self.top is not None:
            _check_phase_range(float(to_numpy(self.top)), self.dtype)


def _cos_sin(proj: Any, fast_trig: bool = False, dtype: type = np.float64, out: Any = None,
             phases: PhaseRange | None = None) -> Any:
    """sqrt(1/D) [cos(proj), sin(proj)] in ``dtype``; ``fast_trig``: cos/sin in float32 (~10x faster).

    With float64 phases (results do not depend on how rows are chunked) and fast mode, cos/sin are evaluated
    in float32: errors of ~1e-7 per feature, far below the O(1/sqrt(D)) Monte-Carlo error of the random
    features themselves. Array API: numpy or torch phases, features of the same backend; ``out``: an
    (n, 2D) array of ``dtype`` to write them into (e.g. rows of a feature matrix kept for later). Torch
    phases that require gradients give differentiable features (guidance). The phases' range is checked
    here, or, for torch phases given a ``phases`` :class:`PhaseRange`, recorded there for its one check at
    the end of the pass.
    """
    xp = array_namespace(proj)
    d = proj.shape[1]
    grad = bool(getattr(proj, "requires_grad", False))  # torch autograd: no out= writes
    if out is None and not grad:
        out = xp.empty((proj.shape[0], 2 * d), dtype=float_dtype(xp, np.dtype(dtype).name),
                       device=device(proj))
    if proj.shape[0] and d:
        detached = proj.detach() if grad else proj
        if phases is not None and not is_numpy(proj):
            phases.record(detached)
        else:  # both ends in one copy to the host (on a device, one synchronisation per chunk, not two)
            _check_phase_range(float(to_numpy(_phase_extreme(xp, detached))), dtype_name(proj))
    if out is None:
        return xp.concat([xp.cos(proj), xp.sin(proj)], axis=1) * float(np.sqrt(1.0 / d))
    if fast_trig and proj.dtype != xp.float32:
        # reduce the phases to [-pi, pi] in float64 first: float32 keeps ~7 digits, so a phase of 1e12
        # (a tiny bandwidth) would otherwise lose every digit that distinguishes two rows
        proj = xp.astype(proj - TWO_PI * xp.round(proj / TWO_PI), xp.float32)
    into("sin", proj, out[:, d:])  # sin first: ``proj`` may be the view out[:, :d] (see transform)
    into("cos", proj, out[:, :d])
    out *= float(np.sqrt(1.0 / d))
    return out


@runtime_checkable
class JointFeatureMap(Protocol):
    """psi(t, z) in R^r with E[psi(t, z) . psi(t', z')] = k_T(t, t') k_Z(z, z')."""

    dim: int

    def transform(self, prompts: np.ndarray, outputs: np.ndarray, out: Any = None,
                  phases: PhaseRange | None = None) -> np.ndarray:
        """psi(t_i, z_i) for each (prompt, output) row pair: (n, dim), written into ``out`` when given;
        ``phases``: a pass's :class:`PhaseRange` (random Fourier maps on a device record their phases' range
        there instead of checking it chunk by chunk; other maps ignore it)."""

    def describe(self) -> dict:
        """The map's settings, as recorded in result.json."""


class _PairedRows:
    """What the joint maps share: their output dimension and the check of a (prompts, outputs) pair."""

    n_features: int
    dim_prompt: int
    dim_output: int

    @property
    def dim(self) -> int:
        """The output dimension r."""
        return self.n_features

    def _pair(self, prompts: np.ndarray, outputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (_check_input(prompts, self.dim_prompt, "prompt embeddings"),
                _check_input(outputs, self.dim_output, "output embeddings"))


#: rows of numpy input a product map turns into features at a time: the joined rows, their phases and their
#: cos/sin stay in the cache from one step to the next (measured on one thread, 8,192 rows of 768-d input to
#: r = 3000 float32 features: 0.20 s at once, 0.175 s in blocks of 1,024, 0.155 s for the product alone)
TRANSFORM_ROWS = 1024


@dataclass(frozen=True)
class ProductRandomFourierFeatures(_PairedRows):
    """RFF of the product of two gaussian kernels.

    k_T(t,t') k_Z(z,z') is one gaussian (sigma 1) on the concatenation [t / sigma_t ; z / sigma_z], so
    psi(t, z) = sqrt(1/D) [cos(w_l . t / sigma_t + u_l . z / sigma_z), sin(...)], w_l, u_l ~ N(0, I).
    """

    dim_prompt: int
    dim_output: int
    n_features: int  #: r = 2D
    sigma_prompt: float
    sigma_output: float
    seed: int = 0
    fast_trig: bool = False  #: cos/sin in float32 (see ``_cos_sin``)
    #: 'float64', or 'float32': phases, cos/sin and the features in float32 (half the memory and the
    #: covariance update at twice the BLAS rate; phase errors ~1e-6, see docs/precision.md)
    precision: str = "float64"
    #: optional (center_prompt, center_output) subtracted before projecting: phases stay O(1) in float32;
    #: it rotates each (cos, sin) pair by a fixed angle, so every kernel estimate psi . psi' is unchanged
    center: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)
    #: [w_l / sigma_t ; u_l / sigma_z] as columns: one (d_t + d_z, D) projection of the joined rows
    _w_joint: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_positive_number(self.dim_prompt, "dim_prompt", integer=True)
        check_positive_number(self.dim_output, "dim_output", integer=True)
        check_positive_number(self.n_features, "n_features", integer=True, even=True)
        check_positive_number(self.sigma_prompt, "sigma_prompt")
        check_positive_number(self.sigma_output, "sigma_output")
        check_seed(self.seed)
        dtype = check_precision(self.precision)
        check_memory(4.0 * (self.dim_prompt + self.dim_output) * self.n_features + 8.0 * self.n_features**2,
                     what=f"n_features {self.n_features} (frequencies and a {self.n_features} x "
                          f"{self.n_features} covariance)")
        w = np.random.default_rng(self.seed).standard_normal(
            (self.dim_prompt + self.dim_output, self.n_features // 2))
        with np.errstate(over="ignore"):  # (an overflow is refused just below, naming its bandwidth)
            w[: self.dim_prompt] /= self.sigma_prompt
            w[self.dim_prompt :] /= self.sigma_output
            w = w.astype(dtype)
        for name, part in (("sigma_prompt", w[: self.dim_prompt]), ("sigma_output", w[self.dim_prompt :])):
            _check_frequencies(part, name, getattr(self, name), dtype)
        object.__setattr__(self, "_w_joint", w)

    def transform(self, prompts: Any, outputs: Any, out: Any = None, phases: PhaseRange | None = None
                  ) -> Any:
        """psi(t, z) for each (prompt, output) row pair: (n, r = 2D), in the map's precision; numpy rows give
        numpy features, torch tensors give torch features on their device (the same values). ``out``: an
        (n, r) array of the map's precision to write them into. numpy rows are mapped
        :data:`TRANSFORM_ROWS` at a time (each row's features do not depend on the others). ``phases``:
        torch rows' phase range recorded there, checked once by the pass (:class:`PhaseRange`)."""
        prompts, outputs = self._pair(prompts, outputs)
        on = backend_of(prompts)
        size = prompts.shape[0]
        if on.name == "numpy" and size > TRANSFORM_ROWS and (out is None or out.dtype == self._w_joint.dtype):
            out = populated_empty((size, self.n_features), self._w_joint.dtype) if out is None else out
            for a in range(0, size, TRANSFORM_ROWS):
                b = min(size, a + TRANSFORM_ROWS)
                self.transform(prompts[a:b], outputs[a:b], out=out[a:b])
            return out
        # the rows joined, [t - c_t, z - c_z], so that one product with the joint frequencies gives the phases
        # (one GEMM over d_t + d_z, not two). The centre is rounded to the working precision first: then
        # t - c is the exact difference rounded once, as in float64, and rounding c itself only shifts every
        # row alike, which a shift-invariant kernel does not see.
        joined = on.empty((prompts.shape[0], self.dim_prompt + self.dim_output), self.precision)
        for a, b, rows, i in ((0, self.dim_prompt, prompts, 0), (self.dim_prompt, None, outputs, 1)):
            if self.center is None:
                joined[:, a:b] = rows
            elif on.name == "numpy":
                np.subtract(rows, self.center[i].astype(self.precision), out=joined[:, a:b])
            else:
                joined[:, a:b] = rows - on.asarray(self.center[i], self.precision)
        w = on.asarray(self._w_joint)
        if on.name == "numpy" and (out is None or out.dtype == w.dtype):
            # the phases go straight into the first half of the features (cos overwrites them in place):
            # a fresh (n, D) array per chunk would cost page faults (~50 ms per 8192 x 1500 chunk)
            out = populated_empty((joined.shape[0], self.n_features), w.dtype) if out is None else out
            try:
                return _cos_sin(np.matmul(joined, w, out=out[:, : w.shape[1]]), self.fast_trig, w.dtype,
                                out=out)
            except OptionError as exc:  # (which bandwidth: the part whose phases reach further)
                raise self._phase_error(joined, exc) from None
        return _cos_sin(joined @ w, self.fast_trig, self._w_joint.dtype, out=out, phases=phases)

    def _phase_error(self, joined: np.ndarray, exc: OptionError) -> OptionError:
        """The phase-range error naming the bandwidth whose part of the phases reaches further."""
        with np.errstate(over="ignore", invalid="ignore"):
            reach = [float(np.nan_to_num(np.abs(joined[:, part] @ self._w_joint[part]).max(), nan=np.inf))
                     for part in (slice(None, self.dim_prompt), slice(self.dim_prompt, None))]
        name = "sigma_prompt" if reach[0] >= reach[1] else "sigma_output"
        said = str(exc).replace("a bandwidth (sigma_prompt or sigma_output)",
                                f"{name} ({getattr(self, name):g})")
        return OptionError(said, parameter=name)

    def describe(self) -> dict:
        """The map's settings (features, bandwidths, seed), as recorded in result.json."""
        return {"map": "product_rff", "features": self.n_features, "sigma_prompt": self.sigma_prompt,
                "sigma_output": self.sigma_output, "seed": self.seed, "fast_trig": self.fast_trig,
                "precision": self.precision, "centred": self.center is not None}


@dataclass(frozen=True)
class ProductRandomProjection(_PairedRows):
    """Tensor-sketch random projection of the cosine product kernel (SPEC, unbiased scaling).

    psi(t, z) = (1/sqrt(r)) (R_T t/|t|) o (R_Z z/|z|), R_T in R^{r x d_t}, R_Z in R^{r x d_z}, iid N(0, 1),
    so E[psi(s) . psi(s')] = cos(t, t') cos(z, z').
    """

    dim_prompt: int
    dim_output: int
    n_features: int  #: r
    seed: int = 0
    precision: str = "float64"  #: 'float32' or 'float64': the dtype of the features
    _r_prompt: np.ndarray = field(init=False, repr=False, compare=False)
    _r_output: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_positive_number(self.dim_prompt, "dim_prompt", integer=True)
        check_positive_number(self.dim_output, "dim_output", integer=True)
        check_positive_number(self.n_features, "n_features", integer=True)
        check_seed(self.seed)
        dtype = check_precision(self.precision)
        check_memory(8.0 * (self.dim_prompt + self.dim_output) * self.n_features + 8.0 * self.n_features**2,
                     what=f"n_features {self.n_features} (projections and a {self.n_features} x "
                          f"{self.n_features} covariance)")
        rng = np.random.default_rng(self.seed)
        for name, dim in (("_r_prompt", self.dim_prompt), ("_r_output", self.dim_output)):
            object.__setattr__(self, name, rng.standard_normal((dim, self.n_features)).astype(dtype))

    def transform(self, prompts: Any, outputs: Any, out: Any = None, phases: PhaseRange | None = None
                  ) -> Any:
        """psi(t, z) for each (prompt, output) row pair: (n, r), in the map's precision (numpy or torch, as
        the input); ``out``: an (n, r) array to write them into (``phases``: unused, no phases here)."""
        prompts, outputs = self._pair(prompts, outputs)
        on = backend_of(prompts)
        dtype = self._r_prompt.dtype
        feats = cosine_features(prompts, dtype) @ on.asarray(self._r_prompt)
        feats *= cosine_features(outputs, dtype) @ on.asarray(self._r_output)
        feats *= float(1.0 / np.sqrt(self.n_features))
        if out is None:
            return feats
        out[...] = feats
        return out

    def describe(self) -> dict:
        """The map's settings (features, seed, precision), as recorded in result.json."""
        return {"map": "product_random_projection", "features": self.n_features, "seed": self.seed,
                "precision": self.precision}
