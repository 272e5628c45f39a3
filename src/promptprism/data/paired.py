"""The paired set: prompts t_i and a model's outputs z_i, as embeddings (plus optional display strings)."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_matrix, check_nonzero_rows, check_strings
from ..errors import InputError, OptionError


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


def as_paired_set(data: PairedSet | tuple, name: str = "set") -> PairedSet:
    """``data`` itself, or a PairedSet named ``name`` from a ``(prompt_embeddings, output_embeddings[,
    prompts[, outputs]])`` tuple; anything else is an OptionError naming ``name``."""
    if isinstance(data, PairedSet):
        return data
    if isinstance(data, tuple) and len(data) in (2, 3, 4):
        return PairedSet(*data, name=name)
    raise OptionError(f"{name} must be a PairedSet or a (prompt_embeddings, output_embeddings) tuple, "
                      f"got {type(data).__name__}", parameter=name)


def check_compatible(test: PairedSet, reference: PairedSet) -> None:
    """Two sets compared by one kernel must live in the same embedding spaces."""
    for what, a, b in (("prompt", test.dim_prompt, reference.dim_prompt),
                       ("output", test.dim_output, reference.dim_output)):
        if a != b:
            raise InputError(f"{what} embeddings have {a} dimensions in {test.where} but {b} in "
                             f"{reference.where}; both sets must be embedded with the same model")


def _row_digests(arr: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """A 128-bit key per row, equal for equal rows: two multiply-add hashes (mod 2^64) of its float64 bits,
    as an (n, 2) uint64 array. Vectorised; two different rows collide with probability ~2^-64."""
    d = arr.shape[1]
    words = np.frombuffer(hashlib.blake2b(b"promptprism-rows", digest_size=64).digest(), dtype=np.uint64)
    mult = np.random.default_rng(int(words[0] % np.uint64(2**63))).integers(
        0, 2**63, size=(2, d), dtype=np.uint64) * np.uint64(2) + np.uint64(1)  # odd multipliers
    keys = np.empty((arr.shape[0], 2), dtype=np.uint64)
    for start in range(0, arr.shape[0], chunk):
        bits = np.ascontiguousarray(arr[start : start + chunk], dtype=np.float64).view(np.uint64)
        with np.errstate(over="ignore"):
            keys[start : start + chunk, 0] = (bits * mult[0]).sum(axis=1, dtype=np.uint64)
            keys[start : start + chunk, 1] = ((bits ^ np.uint64(0x9E3779B97F4A7C15)) * mult[1]).sum(
                axis=1, dtype=np.uint64)
    return keys


#: rows above which the sets' row digests are computed side by side on threads (numpy's products and sums
#: release the GIL: two sets of 30,000 x 384 take 0.06 s instead of 0.10 s on two cores)
DIGEST_THREADS_ROWS = 10_000


def _digests_of(arrays: Iterator[Any]) -> list[np.ndarray]:
    """:func:`_row_digests` of each array, on one thread per array when they are large."""
    arrays = list(arrays)
    if len(arrays) < 2 or sum(a.shape[0] for a in arrays) < DIGEST_THREADS_ROWS:
        return [_row_digests(a) for a in arrays]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(arrays)) as pool:
        return list(pool.map(_row_digests, arrays))


def prompt_groups(*sets: PairedSet) -> tuple[list[np.ndarray], list[str]]:
    """Integer prompt labels shared across ``sets``, and a display name per label.

    Rows are grouped by prompt string when every set has strings, otherwise by identical prompt embedding
    (then named by the string of their first occurrence, if any, or ``prompt #k``). Labels are numbered in
    order of first occurrence (set by set, row by row).
    """
    if all(s.prompts is not None for s in sets):
        index: dict[str, int] = {}
        first_list: list[int] = []
        inverse = np.empty(sum(len(s) for s in sets), dtype=np.int64)
        for i, key in enumerate(itertools.chain.from_iterable(s.prompts for s in sets)):
            g = index.get(key)
            if g is None:
                g = index[key] = len(first_list)
                first_list.append(i)
            inverse[i] = g
        first = np.asarray(first_list, dtype=np.int64)
    else:
        first, inverse = _first_and_inverse(np.concatenate(_digests_of(s.prompt_embeddings for s in sets)))
    order = np.argsort(first, kind="stable")  # groups by first occurrence
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    flat = rank[inverse.reshape(-1)]
    bounds = np.cumsum([0] + [len(s) for s in sets])
    labels = [flat[a:b].astype(np.int64) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    owner = np.searchsorted(bounds, first[order], side="right") - 1
    if all(s.prompts is None for s in sets):
        return labels, [f"prompt #{g}" for g in range(order.size)]
    names = []
    for g, (i, k) in enumerate(zip(first[order].tolist(), owner.tolist(), strict=True)):
        prompts = sets[k].prompts
        names.append(prompts[i - bounds[k]] if prompts is not None else f"prompt #{g}")
    return labels, names


def _first_and_inverse(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, axis=0, return_index=True, return_inverse=True)[1:]`` for an (n, 2) key array, by
    one stable lexsort (np.unique's row mode sorts a structured view, ~10x slower)."""
    order = np.lexsort((keys[:, 1], keys[:, 0]))
    ordered = keys[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    group = np.cumsum(new) - 1
    inverse = np.empty(order.size, dtype=np.int64)
    inverse[order] = group
    return order[new], inverse
