"""Row-chunked reading of large ``.npy`` files (single or sharded) without mapping them into memory.

A memory map of a multi-GB input leaves every page it has touched in the process's resident set; reading
row blocks with ordinary file reads keeps the resident memory at the size of one block, whatever the file
size. :class:`NpyRows` looks like a read-only 2-D array to the code that streams over it: ``shape``,
``dtype``, ``len()``, slicing by rows (``a[i:j]``) and by sorted or unsorted row indices (``a[idx]``).
It holds only the path, so it pickles cheaply (for workers that read their own partitions).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import InputError


class RowSource:
    """Base of the read-only, row-addressable sources: subclasses set ``shape``/``dtype`` and ``_read``.

    Supports ``len()``, row slices (``a[i:j]``, steps too), single rows, integer or boolean row indices
    (``a[idx]``) and ``np.asarray(a)``.
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    #: read by rows, never loaded whole (``_validation.check_matrix`` streams what says so)
    row_streamed = True

    @property
    def ndim(self) -> int:
        """The number of dimensions (2 for embeddings)."""
        return len(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def _read(self, start: int, stop: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def __getitem__(self, key) -> np.ndarray:
        n = self.shape[0]
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step == 1:
                return self._read(start, stop)
            lo, hi = (start, stop) if step > 0 else (stop + 1, start + 1)
            block = self._read(lo, max(lo, hi))
            return block[:: step] if step > 0 else block[::-1][:: -step]
        if isinstance(key, (int, np.integer)):
            i = int(key) + (n if key < 0 else 0)
            if not 0 <= i < n:
                raise IndexError(f"row {key} out of range for {n} rows")
            return self._read(i, i + 1)[0]
        idx = np.asarray(key)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        idx = idx.astype(np.int64)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise IndexError(f"row index out of range for {n} rows")
        idx = np.where(idx < 0, idx + n, idx)
        out = np.empty((idx.size,) + tuple(self.shape[1:]), dtype=self.dtype)
        for j, i in enumerate(idx):
            out[j] = self._read(int(i), int(i) + 1)[0]
        return out

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        arr = self._read(0, self.shape[0])
        return arr if dtype is None else arr.astype(dtype)


class NpyRows(RowSource):
    """A read-only, row-addressable view of a 2-D C-ordered ``.npy`` file."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        try:
            with open(self.path, "rb") as fh:
                version = np.lib.format.read_magic(fh)
                read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                               else np.lib.format.read_array_header_2_0)
                shape, fortran, dtype = read_header(fh)
                self._offset = fh.tell()
        except (OSError, ValueError) as exc:
            raise InputError(f"{self.path}: not a readable .npy file ({exc})") from None
        if fortran and len(shape) > 1:
            raise InputError(f"{self.path}: Fortran-ordered arrays are not supported for streaming; "
                             "save it C-ordered (np.ascontiguousarray)")
        if dtype.hasobject:
            raise InputError(f"{self.path}: holds Python objects, expected numbers")
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self._row_items = int(np.prod(self.shape[1:])) if self.ndim > 1 else 1
        self._row_bytes = self._row_items * dtype.itemsize

    def __repr__(self) -> str:
        return f"NpyRows({str(self.path)!r}, shape={self.shape}, dtype={self.dtype})"

    def _read(self, start: int, stop: int) -> np.ndarray:
        count = max(0, stop - start)
        with open(self.path, "rb") as fh:
            data = np.fromfile(fh, dtype=self.dtype, count=count * self._row_items,
                               offset=self._offset + start * self._row_bytes)
        if data.size != count * self._row_items:
            raise InputError(f"{self.path}: file is truncated (expected {self.shape[0]} rows)")
        return data.reshape((count,) + self.shape[1:])


class ShardedRows(RowSource):
    """Several ``.npy`` shards (same columns and dtype) seen as one row-addressable array, in order.

    Each shard is a :class:`NpyRows`, so nothing is loaded whole; a row block that spans shards is read from
    each in turn. Like :class:`NpyRows` it holds only paths (cheap to send to cluster workers).
    """

    def __init__(self, paths: list[str | os.PathLike]) -> None:
        if not paths:
            raise InputError("no shards given")
        self.shards = [NpyRows(p) for p in paths]
        first = self.shards[0]
        for sh in self.shards[1:]:
            if sh.shape[1:] != first.shape[1:] or sh.dtype != first.dtype:
                raise InputError(f"{sh.path}: shape {sh.shape} / dtype {sh.dtype} does not match the first "
                                 f"shard {first.path} ({first.shape}, {first.dtype})")
        self.offsets = np.cumsum([0] + [len(sh) for sh in self.shards])
        self.shape = (int(self.offsets[-1]),) + first.shape[1:]
        self.dtype = first.dtype
        self.path = first.path.parent

    def __repr__(self) -> str:
        return f"ShardedRows({len(self.shards)} shards, shape={self.shape}, dtype={self.dtype})"

    def _read(self, start: int, stop: int) -> np.ndarray:
        parts = []
        for k, sh in enumerate(self.shards):
            lo, hi = max(start, self.offsets[k]), min(stop, self.offsets[k + 1])
            if lo < hi:
                parts.append(sh._read(int(lo - self.offsets[k]), int(hi - self.offsets[k])))
        if not parts:
            return np.empty((0,) + self.shape[1:], dtype=self.dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


class ParquetRows(RowSource):
    """One list-of-numbers column of a Parquet file or dataset (a folder of ``.parquet`` files, read in
    natural name order) as a 2-D array, read row group by row group: a row block reads only the row
    groups that hold it, so workers can read their own partitions."""

    def __init__(self, paths: list[str | os.PathLike], column: str) -> None:
        try:
            import pyarrow.parquet as pq
        except ImportError:  # pragma: no cover - depends on the installation
            raise InputError("reading Parquet needs pyarrow (pip install pyarrow)") from None
        self.paths = [Path(p) for p in paths]
        self.column = column
        groups = []  # (path, row group, first global row)
        total = 0
        for path in self.paths:
            try:
                meta = pq.ParquetFile(path).metadata
            except Exception as exc:  # pyarrow raises several types for unreadable files
                raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
            for g in range(meta.num_row_groups):
                groups.append((path, g, total))
                total += meta.row_group(g).num_rows
        self._groups = groups
        self._starts = np.array([g[2] for g in groups] + [total], dtype=np.int64)
        first = self._group_rows(0) if groups else np.zeros((0, 0))
        self.dtype = first.dtype if first.size else np.dtype(np.float64)
        self.shape = (total, first.shape[1] if first.ndim == 2 else 0)
        self.path = self.paths[0]

    def __repr__(self) -> str:
        return f"ParquetRows({len(self.paths)} files, {self.column!r}, shape={self.shape})"

    def _group_rows(self, k: int) -> np.ndarray:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        path, g, _ = self._groups[k]
        col = pq.ParquetFile(path).read_row_group(g, columns=[self.column]).column(0).combine_chunks()
        if not (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)
                or pa.types.is_fixed_size_list(col.type)):
            raise InputError(f"{path}: column {self.column!r} must hold a list of numbers in each row (an "
                             f"embedding), got {col.type}")
        lengths = np.asarray(pc.list_value_length(col).fill_null(-1))
        if lengths.size and (lengths.min() < 0 or lengths.min() != lengths.max()):
            bad = int(np.flatnonzero((lengths != lengths.max()) | (lengths < 0))[0])
            raise InputError(f"{path}: column {self.column!r}, row {self._groups[k][2] + bad} (0-based): "
                             f"expected a list of {int(lengths.max())} numbers like the other rows")
        values = np.asarray(pc.list_flatten(col))
        if not np.issubdtype(values.dtype, np.number):
            raise InputError(f"{path}: column {self.column!r} must hold lists of numbers, got {values.dtype}")
        return values.reshape(lengths.size, int(lengths.max()) if lengths.size else 0)

    def _read(self, start: int, stop: int) -> np.ndarray:
        if stop <= start:
            return np.empty((0, self.shape[1]), dtype=self.dtype)
        first = int(np.searchsorted(self._starts, start, side="right") - 1)
        last = int(np.searchsorted(self._starts, stop, side="left"))
        parts = []
        for k in range(first, last):
            lo = max(start, self._starts[k]) - self._starts[k]
            hi = min(stop, self._starts[k + 1]) - self._starts[k]
            if lo < hi:
                parts.append(self._group_rows(k)[lo:hi])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
