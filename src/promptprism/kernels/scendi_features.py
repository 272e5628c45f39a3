"""Scendi's pair of feature maps: phi_I for outputs and phi_T for prompts.

``cosine`` uses the exact map a / |a| on each side (any two embedding spaces); ``gaussian`` uses random
Fourier features, with separate frequencies and bandwidths per modality (the default) or one shared set
(prompts and outputs in one space, as the Scendi reference implementation does with CLIP).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .._params import BOOLEAN, Estimator, Options, positive
from ..array_ops import row_norms
from ..backend import NUMPY, Backend, array_namespace
from ..errors import InputError, OptionError
from .bandwidth import BANDWIDTH
from .features import RandomFourierFeatures, cosine_features
from .gram import KERNELS, check_kernel


@dataclass(frozen=True)
class ScendiKernelOptions(Estimator):
    """The joint kernel the Scendi estimators are configured with (:class:`ScendiFeatureMaps` resolves it
    on data): ``kernel`` ('cosine' or 'gaussian'), the bandwidth rules ``sigma_prompt`` / ``sigma_output``,
    ``n_features`` random Fourier features per modality and ``shared_frequencies``. The parameters of the
    estimators built on it (:class:`~promptprism._params.Estimator`): checked when made, never changed."""

    kernel: str = "cosine"
    sigma_prompt: Any = "median"
    sigma_output: Any = "median"
    n_features: int = 2000
    shared_frequencies: bool = False

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "kernel": [Options(KERNELS)], "sigma_prompt": [BANDWIDTH], "sigma_output": [BANDWIDTH],
        "n_features": [positive(even=True)], "shared_frequencies": [BOOLEAN]}


@dataclass(frozen=True)
class ScendiFeatureMaps:
    """phi_I for outputs, phi_T for prompts: cosine, or gaussian RFF with separate or shared frequencies."""

    kernel: str
    dim_output_in: int
    dim_prompt_in: int
    sigma_output: float | None = None
    sigma_prompt: float | None = None
    n_features: int | None = None
    shared_frequencies: bool = False
    seed: int = 0
    _output_rff: RandomFourierFeatures | None = field(default=None, init=False, repr=False, compare=False)
    _prompt_rff: RandomFourierFeatures | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_kernel(self.kernel)
        if self.kernel == "gaussian":
            if self.shared_frequencies:
                if self.dim_output_in != self.dim_prompt_in:
                    raise InputError(
                        f"shared RFF frequencies need prompts and outputs in one embedding space, but the "
                        f"prompt embeddings have {self.dim_prompt_in} dimensions and the output embeddings "
                        f"{self.dim_output_in}; use separate frequencies")
                if self.sigma_prompt != self.sigma_output:
                    raise OptionError("shared RFF frequencies use one bandwidth: sigma_prompt must equal "
                                      f"sigma_output, got {self.sigma_prompt} and {self.sigma_output}")
                rff = RandomFourierFeatures(self.dim_output_in, self.n_features, self.sigma_output, self.seed)
                object.__setattr__(self, "_output_rff", rff)
                object.__setattr__(self, "_prompt_rff", rff)
            else:
                object.__setattr__(self, "_output_rff", RandomFourierFeatures(
                    self.dim_output_in, self.n_features, self.sigma_output, self.seed))
                object.__setattr__(self, "_prompt_rff", RandomFourierFeatures(
                    self.dim_prompt_in, self.n_features, self.sigma_prompt, self.prompt_seed))

    @property
    def prompt_seed(self) -> int:
        """Seed of the prompt frequencies: ``seed`` when shared, ``seed + 1`` when separate."""
        return self.seed if self.shared_frequencies else self.seed + 1

    @property
    def dim_output(self) -> int:
        """Dimension of phi_I (the input dimension for cosine, the RFF size for gaussian)."""
        return self.dim_output_in if self.kernel == "cosine" else int(self.n_features)

    @property
    def dim_prompt(self) -> int:
        """Dimension of phi_T."""
        return self.dim_prompt_in if self.kernel == "cosine" else int(self.n_features)

    def outputs(self, x: np.ndarray, backend: Backend = NUMPY) -> Any:
        """phi_I(x), one row per output embedding (float64, an array of ``backend``)."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.dim_output_in:
            raise InputError(f"output embeddings: expected shape (n, {self.dim_output_in}), got {x.shape}")
        if backend.name != "numpy":
            return _features_on(backend, x, self._output_rff if self.kernel == "gaussian" else None)
        return cosine_features(x) if self.kernel == "cosine" else self._output_rff.transform(x)

    def prompts(self, t: np.ndarray, backend: Backend = NUMPY) -> Any:
        """phi_T(t), one row per prompt embedding (float64, an array of ``backend``)."""
        t = np.asarray(t, dtype=np.float64)
        if t.ndim != 2 or t.shape[1] != self.dim_prompt_in:
            raise InputError(f"prompt embeddings: expected shape (n, {self.dim_prompt_in}), got {t.shape}")
        if backend.name != "numpy":
            return _features_on(backend, t, self._prompt_rff if self.kernel == "gaussian" else None)
        return cosine_features(t) if self.kernel == "cosine" else self._prompt_rff.transform(t)

    def describe(self) -> dict:
        """The map's parameters, as written into result.json's ``config``."""
        if self.kernel == "cosine":
            return {"map": "cosine", "dim_output": self.dim_output, "dim_prompt": self.dim_prompt}
        return {"map": "rff_shared" if self.shared_frequencies else "rff_separate",
                "n_features": self.n_features, "sigma_output": self.sigma_output,
                "sigma_prompt": self.sigma_prompt, "seed_output": self.seed, "seed_prompt": self.prompt_seed}


def _features_on(backend: Backend, x: np.ndarray, rff: RandomFourierFeatures | None) -> Any:
    """a / |a| (``rff`` None) or sqrt(1/D) [cos(a W), sin(a W)] with ``rff``'s (numpy-seeded) frequencies W,
    computed by ``backend`` in float64: the same maps as the numpy reference, on the device."""
    if not x.flags.writeable:  # read-only (memory-mapped) rows: torch only wraps writable arrays
        x = x.copy()
    if rff is None:
        if not np.all(np.any(x != 0, axis=1)):
            cosine_features(x)  # raises the reference's error, naming the row
        a = backend.asarray(x, "float64")
        return a / row_norms(a)
    proj = backend.asarray(x, "float64") @ backend.asarray(rff.frequencies, "float64")
    xp = array_namespace(proj)
    top = float(xp.max(xp.abs(proj))) if proj.shape[0] else 0.0
    if not np.isfinite(top) or top * np.finfo(np.float64).eps > 1e-3:
        rff.transform(x)  # the reference's phase check raises its error
    return xp.concat([xp.cos(proj), xp.sin(proj)], axis=1) * float(np.sqrt(1.0 / proj.shape[1]))
