"""The paired set: prompts t_i and a model's outputs z_i, as embeddings (plus optional display strings)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_matrix, check_nonzero_rows, check_strings
from ..errors import InputError


@dataclass(frozen=True, repr=False)
class PairedSet:
    """n pairs (t_i, z_i): ``prompt_embeddings`` (n x d_t), ``output_embeddings`` (n x d_z).

    ``prompts`` / ``outputs`` are optional display strings (an output may be an image path); ``name`` and
    ``source`` appear in messages and results. Arrays are validated here, where they enter.
    """

    prompt_embeddings: np.ndarray
    output_embeddings: np.ndarray
    prompts: list[str] | None = None
    outputs: list[str] | None = None
    name: str = "set"
    source: str | None = None
    _checked: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = self.source or self.name
        pe = check_matrix(self.prompt_embeddings, "prompt_embeddings", source=where)
        oe = check_matrix(self.output_embeddings, "output_embeddings", source=where)
        if pe.shape[0] != oe.shape[0]:
            raise InputError(f"{where}: prompt_embeddings has {pe.shape[0]} rows but output_embeddings has "
                             f"{oe.shape[0]}; each row must be one (prompt, output) pair")
        object.__setattr__(self, "prompt_embeddings", pe)
        object.__setattr__(self, "output_embeddings", oe)
        object.__setattr__(self, "prompts", check_strings(self.prompts, "prompts", pe.shape[0], source=where))
        object.__setattr__(self, "outputs", check_strings(self.outputs, "outputs", pe.shape[0], source=where))

    def __len__(self) -> int:
        return int(self.prompt_embeddings.shape[0])

    def __repr__(self) -> str:
        """One line: name, size, dimensions and the number of distinct prompts (never the arrays)."""
        prompts = f"{len(set(self.prompts))} prompts" if self.prompts is not None else "no prompt strings"
        return (f"PairedSet({self.name!r}, n={len(self)}, prompt dims={self.dim_prompt}, "
                f"output dims={self.dim_output}, {prompts})")

    @property
    def n(self) -> int:
        """The number of pairs."""
        return len(self)

    @property
    def dim_prompt(self) -> int:
        """d_t, the prompt embeddings' dimension."""
        return int(self.prompt_embeddings.shape[1])

    @property
    def dim_output(self) -> int:
        """d_z, the output embeddings' dimension."""
        return int(self.output_embeddings.shape[1])

    @property
    def where(self) -> str:
        """The source (or the name), for messages."""
        return self.source or self.name

    def check_nonzero(self, why: str) -> None:
        """Fail on the first all-zero embedding (needed by the cosine kernel)."""
        check_nonzero_rows(self.prompt_embeddings, "prompt_embeddings", source=self.where, why=why)
        check_nonzero_rows(self.output_embeddings, "output_embeddings", source=self.where, why=why)

    def prompt_label(self, i: int) -> str:
        """The prompt string of row ``i`` (``prompt #i`` without strings)."""
        return self.prompts[i] if self.prompts is not None else f"prompt #{i}"

    def output_label(self, i: int) -> str | None:
        """The output string of row ``i`` (None without strings)."""
        return self.outputs[i] if self.outputs is not None else None


def check_compatible(test: PairedSet, reference: PairedSet) -> None:
    """Two sets compared by one kernel must live in the same embedding spaces."""
    for what, a, b in (("prompt", test.dim_prompt, reference.dim_prompt),
                       ("output", test.dim_output, reference.dim_output)):
        if a != b:
            raise InputError(f"{what} embeddings have {a} dimensions in {test.where} but {b} in "
                             f"{reference.where}; both sets must be embedded with the same model")


def _row_digests(arr: np.ndarray, chunk: int = 2048) -> list[tuple[int, int]]:
    """A 128-bit key per row, equal for equal rows: two multiply-add hashes (mod 2^64) of its float64 bits.

    Vectorised (no Python loop per row); two different rows collide with probability ~2^-64.
    """
    d = arr.shape[1]
    words = np.frombuffer(hashlib.blake2b(b"promptprism-rows", digest_size=64).digest(), dtype=np.uint64)
    mult = np.random.default_rng(int(words[0] % np.uint64(2**63))).integers(
        0, 2**63, size=(2, d), dtype=np.uint64) * np.uint64(2) + np.uint64(1)  # odd multipliers
    keys: list[tuple[int, int]] = []
    for start in range(0, arr.shape[0], chunk):
        bits = np.ascontiguousarray(arr[start : start + chunk], dtype=np.float64).view(np.uint64)
        with np.errstate(over="ignore"):
            h1 = (bits * mult[0]).sum(axis=1, dtype=np.uint64)
            h2 = ((bits ^ np.uint64(0x9E3779B97F4A7C15)) * mult[1]).sum(axis=1, dtype=np.uint64)
        keys.extend(zip(h1.tolist(), h2.tolist(), strict=True))
    return keys


def prompt_groups(*sets: PairedSet) -> tuple[list[np.ndarray], list[str]]:
    """Integer prompt labels shared across ``sets``, and a display name per label.

    Rows are grouped by prompt string when every set has strings, otherwise by identical prompt embedding
    (then named by the string of their first occurrence, if any, or ``prompt #k``).
    """
    labels: list[np.ndarray] = []
    names: list[str] = []
    index: dict = {}
    by_string = all(s.prompts is not None for s in sets)
    for s in sets:
        keys = s.prompts if by_string else _row_digests(s.prompt_embeddings)
        lab = np.empty(len(s), dtype=np.int64)
        for i, key in enumerate(keys):
            g = index.get(key)
            if g is None:
                g = index[key] = len(names)
                names.append(s.prompts[i] if s.prompts is not None else f"prompt #{g}")
            lab[i] = g
        labels.append(lab)
    return labels, names
