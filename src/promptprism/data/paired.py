"""The paired set: prompts t_i and a model's outputs z_i, as embeddings (plus optional display strings)."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Sequence
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
        prompts = check_strings(self.prompts, "prompts", pe.shape[0], source=where)
        _check_no_empty_prompt(prompts, where)
        object.__setattr__(self, "prompts", prompts)
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


def set_names(sets: Sequence[Any], names: Sequence[str] | None = None, *, default: str = "set") -> list[str]:
    """One distinct name per set: ``names`` as given (one per set, distinct, else an OptionError), else each
    set's own name (a :class:`PairedSet`'s ``name``), numbered where it is the default or repeats: two
    Python-built sets are 'set 1' and 'set 2', never two rows called 'set'."""
    if names is not None:
        names = [str(n) for n in names]
        if len(names) != len(sets):
            raise OptionError(f"names must give one name per set: {len(names)} names for {len(sets)} sets",
                              parameter="names")
        if len(set(names)) != len(names):
            raise OptionError(f"names must be distinct, got {names}", parameter="names")
        return names
    own = [getattr(s, "name", None) or default for s in sets]
    made = [f"{n} {i + 1}" if n == default or own.count(n) > 1 else n for i, n in enumerate(own)]
    # (a numbered name can meet a set's own: 'set' and 'set 1' -> 'set 1' twice; the position settles it)
    return [f"{n} (#{i + 1})" if made.count(n) > 1 else n for i, n in enumerate(made)]


def reference_name(reference: Any, names: Sequence[str], given: str | None = None) -> str:
    """The reference's name: ``given``, else its own (a :class:`PairedSet`'s), else 'reference'; named apart
    from the generated sets' ``names`` ('reference' where they would meet)."""
    label = given or getattr(reference, "name", None) or "reference"
    if label in names or label == "set":
        label = "reference" if "reference" not in names else f"reference ({label})"
    return label


def _check_no_empty_prompt(prompts: list[str] | None, where: str) -> None:
    """Every prompt string names a prompt: an empty one (or only spaces) is refused, as manifests refuse it
    (rows grouped by the string '' would all count as one prompt, whatever their embeddings)."""
    if prompts is None:
        return
    empty = next((i for i, p in enumerate(prompts) if not p.strip()), None)
    if empty is not None:
        raise InputError(f"{where}: prompts: row {empty} (0-based) is empty; every row needs one (or leave "
                         "'prompts' out: rows are then grouped by their prompt embeddings)")


def _set_names(*sets: PairedSet) -> list[str]:
    """Each set's :attr:`PairedSet.where`, with its position added where two sets share one (``set`` and
    ``set``: 'set (1st set)', 'set (2nd set)')."""
    names = [s.where for s in sets]
    ordinal = ("1st", "2nd", "3rd")
    return [f"{n} ({ordinal[k] if k < 3 else f'{k + 1}th'} set)" if names.count(n) > 1 else n
            for k, n in enumerate(names)]


def check_compatible(test: PairedSet, reference: PairedSet) -> None:
    """Two sets compared by one kernel must live in the same embedding spaces."""
    where_test, where_ref = _set_names(test, reference)
    for what, a, b in (("prompt", test.dim_prompt, reference.dim_prompt),
                       ("output", test.dim_output, reference.dim_output)):
        if a != b:
            raise InputError(f"{what} embeddings have {a} dimensions in {where_test} but {b} in "
                             f"{where_ref}; both sets must be embedded with the same model")


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


def prompt_groups(*sets: PairedSet, by: str = "string", numbered: str = "first"
                  ) -> tuple[list[np.ndarray], list[str]]:
    """Integer prompt labels shared across ``sets``, and a display name per label.

    Rows are grouped by prompt string when every set has strings (a string may label rows of different
    prompt embeddings: a category; :func:`strings_disagree` says whether it does); when only some sets have
    strings, the rows of the others join the string of a row with their identical prompt embedding, else
    stand by their embedding (:func:`missing_strings_note`); without strings, or with ``by='embedding'``,
    by identical prompt embedding (then named by the string of their first occurrence, if any, or
    ``prompt #k``). Labels are numbered in order of first occurrence (set by set, row by row),
    or with ``numbered='content'`` in the order of the strings (or of the embeddings' digests): the same
    pairs in any row or set order get the same labels, so seeded draws over the labels repeat.
    """
    some = any(s.prompts is not None for s in sets)
    if by == "string" and some:
        index: dict = {}
        first_list: list[int] = []
        inverse = np.empty(sum(len(s) for s in sets), dtype=np.int64)
        for i, key in enumerate(_string_keys(sets)):
            g = index.get(key)
            if g is None:
                g = index[key] = len(first_list)
                first_list.append(i)
            inverse[i] = g
        first = np.asarray(first_list, dtype=np.int64)
        keys = list(index)  # (strings, and digests of rows no string names: strings first in content order)
        by_content = sorted(range(first.size), key=lambda g: (0, keys[g], ()) if isinstance(keys[g], str)
                            else (1, "", keys[g]))
    else:
        keys = None
        first, inverse = _first_and_inverse(np.concatenate(_digests_of(s.prompt_embeddings for s in sets)))
        by_content = range(first.size)  # (groups numbered in the digests' sorted order)
    # groups by first occurrence, or by their strings (digests)
    order = (np.argsort(first, kind="stable") if numbered == "first"
             else np.asarray(by_content, dtype=np.int64).reshape(-1))
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    flat = rank[inverse.reshape(-1)]
    bounds = np.cumsum([0] + [len(s) for s in sets])
    labels = [flat[a:b].astype(np.int64) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    owner = np.searchsorted(bounds, first[order], side="right") - 1
    if all(s.prompts is None for s in sets):
        return labels, [f"prompt #{g}" for g in range(order.size)]
    if keys is not None:
        return labels, [keys[j] if isinstance(keys[j], str) else f"prompt #{g}"
                        for g, j in enumerate(order.tolist())]
    names = []
    for g, (i, k) in enumerate(zip(first[order].tolist(), owner.tolist(), strict=True)):
        prompts = sets[k].prompts
        names.append(prompts[i - bounds[k]] if prompts is not None else f"prompt #{g}")
    return labels, names


def _string_keys(sets: Sequence[PairedSet]) -> Iterator:
    """Each row's grouping key: its prompt string; for a row of a set without strings, the string of a row
    with its identical prompt embedding, else its embedding's digest."""
    if all(s.prompts is not None for s in sets):
        yield from itertools.chain.from_iterable(s.prompts for s in sets)
        return
    digests = _digests_of(s.prompt_embeddings for s in sets)
    named: dict[tuple, str] = {}
    for s, d in zip(sets, digests, strict=True):
        if s.prompts is not None:
            for key, text in zip(map(tuple, d.tolist()), s.prompts, strict=True):
                named.setdefault(key, text)
    for s, d in zip(sets, digests, strict=True):
        if s.prompts is not None:
            yield from s.prompts
        else:
            yield from (named.get(key, key) for key in map(tuple, d.tolist()))


def missing_strings_note(sets: Sequence[PairedSet], names: Sequence[str]) -> str | None:
    """A note when some of ``sets`` (named ``names``) hold prompt strings and others none (None else)."""
    bare = [n for s, n in zip(sets, names, strict=True) if s.prompts is None]
    if not bare or len(bare) == len(sets):
        return None
    return (f"{', '.join(bare)} {'has' if len(bare) == 1 else 'have'} no prompt strings ('prompts'): "
            f"{'its' if len(bare) == 1 else 'their'} rows join the prompt of a row of another set with the "
            "same prompt embedding, and otherwise count as prompts of their own (by embedding); give every "
            "set its prompt strings to compare prompt by prompt")


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


#: rows that share a prompt string may differ in their prompt embeddings by this much of the norm of the
#: string's first embedding (re-embedding the same text in another batch moves it by ~1e-6 in float32)
PROMPT_EMBEDDING_RTOL = 1e-4
#: rows compared per block
_CHECK_ROWS = 8192


def strings_disagree(*sets: PairedSet) -> str | None:
    """Whether some prompt string labels rows of different prompt embeddings (None when every string
    carries one embedding, or the sets have no strings): the first such pair of rows, in words.

    Each row's embedding e_i is compared with that of its string's first row e_f,
    |e_i - e_f| <= :data:`PROMPT_EMBEDDING_RTOL` |e_f| (re-embedding noise passes), in one pass over the rows;
    across sets of the same prompt dimension too; sets of other dimensions only within themselves."""
    if not sets or any(s.prompts is None for s in sets):
        return None
    index: dict[str, int] = {}
    inverse = np.fromiter((index.setdefault(p, len(index)) for s in sets for p in s.prompts), dtype=np.int64,
                          count=sum(len(s) for s in sets))
    bounds = np.cumsum([0] + [len(s) for s in sets])
    by_dim: dict[int, list[int]] = {}
    for k, s in enumerate(sets):
        by_dim.setdefault(s.dim_prompt, []).append(k)
    for members in by_dim.values():
        rows = np.concatenate([np.arange(bounds[k], bounds[k + 1]) for k in members])
        labels = inverse[rows]
        groups, first_pos, counts = np.unique(labels, return_index=True, return_counts=True)
        shared = counts > 1  # strings on a single row need no check
        if not shared.any():
            continue
        slot = np.full(int(inverse.max()) + 1, -1, dtype=np.int64)
        slot[groups[shared]] = np.arange(int(shared.sum()))
        firsts = rows[first_pos[shared]]  # flat row of each shared string's first occurrence
        reference = _rows_at(sets, bounds, firsts)
        for k in members:
            said = _compare_block_rows(sets, bounds, k, inverse, slot, firsts, reference)
            if said is not None:
                return said
    return None


def _rows_at(sets: tuple[PairedSet, ...], bounds: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """The prompt embeddings (float64) of the rows at flat positions ``flat`` (not empty; any order), read
    set by set in ascending row order (row-streamed arrays read them so)."""
    owner = np.searchsorted(bounds, flat, side="right") - 1
    parts = []
    for k in np.unique(owner).tolist():
        where = np.flatnonzero(owner == k)
        local = flat[where] - bounds[k]
        order = np.argsort(local, kind="stable")
        block = np.asarray(sets[k].prompt_embeddings[local[order]], dtype=np.float64)
        parts.append((where[order], block))
    out = np.empty((flat.size, parts[0][1].shape[1]), dtype=np.float64)
    for where, block in parts:
        out[where] = block
    return out


def _compare_block_rows(sets: tuple[PairedSet, ...], bounds: np.ndarray, k: int, inverse: np.ndarray,
                        slot: np.ndarray, firsts: np.ndarray, reference: np.ndarray) -> str | None:
    """Set ``k``'s rows against their string's first embedding, block by block: the first row that differs
    by more than the tolerance, in words (:func:`strings_disagree`), or None."""
    emb, n = sets[k].prompt_embeddings, len(sets[k])
    for a in range(0, n, _CHECK_ROWS):
        b = min(n, a + _CHECK_ROWS)
        idx = slot[inverse[bounds[k] + a : bounds[k] + b]]
        keep = np.flatnonzero(idx >= 0)
        if keep.size == 0:
            continue
        ref = reference[idx[keep]]
        diff = np.asarray(emb[a:b], dtype=np.float64)[keep] - ref
        dist2, norm2 = np.einsum("ij,ij->i", diff, diff), np.einsum("ij,ij->i", ref, ref)
        bad = np.flatnonzero(dist2 > PROMPT_EMBEDDING_RTOL**2 * norm2)
        if bad.size:
            row = a + int(keep[bad[0]])
            first = int(firsts[idx[keep[bad[0]]]])
            return _disagreement(sets, bounds, first, bounds[k] + row,
                                 float(np.sqrt(dist2[bad[0]] / max(norm2[bad[0]], 1e-300))))
    return None


def _disagreement(sets: tuple[PairedSet, ...], bounds: np.ndarray, first: int, row: int, relative: float
                  ) -> str:
    """Two rows (flat positions) with one prompt string and two embeddings, in words."""
    names = _set_names(*sets)
    (ka, ia), (kb, ib) = ((int(np.searchsorted(bounds, r, side="right") - 1), r) for r in (first, row))
    ia, ib = ia - int(bounds[ka]), ib - int(bounds[kb])
    prompts = sets[kb].prompts
    text = prompts[ib] if prompts is not None else ""
    shown = text if len(text) <= 60 else text[:57] + "..."
    rows = (f"{names[ka]}: rows {ia} and {ib} (0-based)" if ka == kb
            else f"{names[ka]} row {ia} and {names[kb]} row {ib} (0-based)")
    return (f"{rows} have the same prompt {shown!r} but different prompt embeddings (apart by "
            f"{relative:.3g} of its norm, beyond {PROMPT_EMBEDDING_RTOL:g})")
