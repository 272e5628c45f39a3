"""Loaders for paired sets: ``.npz`` files and folders of ``.npy`` arrays (memory-mapped)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from ..errors import InputError
from .npy import NpyRows, ShardedRows
from .paired import PairedSet

REQUIRED = ("prompt_embeddings", "output_embeddings")
OPTIONAL = ("prompts", "outputs")


def _stored_member(path: Path, info: zipfile.ZipInfo) -> np.ndarray | None:
    """A member ``.npy`` of an uncompressed ``.npz`` (what ``np.savez`` writes), memory-mapped in place:
    no copy through the zip reader (at 30,000 x 768 floats that copy was a tenth of a whole rff run). None
    when the member is compressed, holds objects, or is not a plain ``.npy``."""
    if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy"):
        return None
    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            return None
        start = info.header_offset + 30 + int.from_bytes(local[26:28], "little") \
            + int.from_bytes(local[28:30], "little")
        fh.seek(start)
        version = np.lib.format.read_magic(fh)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = read_header(fh)
        offset = fh.tell()
    n_bytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if dtype.hasobject or offset - start + n_bytes != info.file_size or n_bytes == 0:
        return None
    return np.memmap(path, dtype=dtype, mode="r", shape=shape, order="F" if fortran else "C", offset=offset)


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        with zipfile.ZipFile(path) as zf:
            stored = {info.filename[:-4]: _stored_member(path, info) for info in zf.infolist()}
        if stored and all(a is not None for a in stored.values()):
            return stored
        with np.load(path, allow_pickle=False) as z:
            return {k: _member(path, z, k) for k in z.files}
    except InputError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise InputError(f"{path}: not a readable .npz file ({exc})") from None


def _member(path: Path, npz: np.lib.npyio.NpzFile, key: str) -> np.ndarray:
    """Array ``key`` of an open .npz; an object (pickled) array is refused by its name: unpickling could run
    code."""
    try:
        return npz[key]
    except ValueError as exc:
        if "allow_pickle" not in str(exc):
            raise
        raise InputError(f"{path}: array {key!r} is an object (pickled) array, which is not read (unpickling "
                         "can run code); save it as a string or number array, e.g. np.asarray(values, "
                         "dtype=str)") from None


def _decoded(path: Path, key: str, values: np.ndarray) -> np.ndarray:
    """A bytes array (h5py and many pipelines write strings so) as text, decoded as UTF-8; strings as
    they are."""
    if values.dtype.kind != "S":
        return values
    for row, raw in enumerate(values.reshape(-1)):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: array {key!r} row {row} (0-based) holds bytes that are not UTF-8 text "
                             f"({exc.reason} at byte {exc.start}); save the strings as text (dtype str)"
                             ) from None
    return np.char.decode(values, "utf-8")


def _read_npy_dir(path: Path) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for key in REQUIRED + OPTIONAL:
        f = path / f"{key}.npy"
        shards = _shards(path, key)
        if f.exists() and shards:
            raise InputError(f"{path}: holds both {f.name} and {len(shards)} shard(s) of it "
                             f"({shards[0].name}, "
                             "...); keep one of the two (the whole array or its shards)")
        if not f.exists():
            if shards and key in REQUIRED:
                arrays[key] = ShardedRows(shards)  # prompt_embeddings-00000.npy, -00001.npy, ... in order
            elif shards:
                try:
                    arrays[key] = np.concatenate([np.load(sh, allow_pickle=False) for sh in shards])
                except (OSError, ValueError, EOFError) as exc:
                    raise InputError(f"{path}: {key} shards cannot be read ({exc})") from None
            continue
        if key in REQUIRED:
            arrays[key] = NpyRows(f)  # streamed in row blocks, never loaded whole
            continue
        try:
            arrays[key] = np.load(f, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise InputError(f"{f}: not a readable .npy file ({exc})") from None
    return arrays


def _shards(path: Path, key: str) -> list[Path]:
    """``key``'s shards in ``path``, ``key-<number>.npy`` in the order of their numbers, which count the
    shards from 0 (``key-00000.npy``, ``key-00001.npy``, ...) or give each shard's first row (``key-0.npy``,
    ``key-5000.npy``, ...) with no gap; else an InputError (a missing shard is a lost part of the rows)."""
    numbered: dict[int, Path] = {}
    for p in path.glob(f"{key}-*.npy"):
        tail = p.name[len(key) + 1 : -len(".npy")]
        if not tail.isdigit():
            raise InputError(f"{p}: not a shard name ({key}-<number>.npy, e.g. {key}-00000.npy); rename or "
                             "move it")
        if int(tail) in numbered:
            raise InputError(f"{path}: {numbered[int(tail)].name} and {p.name} are the same shard number; "
                             "keep one")
        numbered[int(tail)] = p
    numbers = sorted(numbered)
    if not numbers or numbers == list(range(len(numbers))):
        return [numbered[i] for i in numbers]
    starts = np.cumsum([0] + [_npy_rows(numbered[i]) for i in numbers[:-1]]).tolist()
    if numbers == starts:
        return [numbered[i] for i in numbers]
    gap = next(i for i, n in enumerate(numbers) if n != i)
    raise InputError(f"{path}: {key} shards numbered {_listed(numbers)} are neither counted from 0 with no "
                     f"gap (shard {gap} is missing) nor each shard's first row ({_listed(starts)}); a shard "
                     "is missing or misnamed")


def _npy_rows(path: Path) -> int:
    """The rows of an ``.npy`` file, from its header."""
    try:
        shape = np.load(path, mmap_mode="r", allow_pickle=False).shape  # (the header only is read)
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(f"{path}: not a readable .npy file ({exc})") from None
    return int(shape[0]) if shape else 1


def _listed(numbers: list[int]) -> str:
    return ", ".join(map(str, numbers[:6])) + (", ..." if len(numbers) > 6 else "")


def load_output_embeddings(path: str | os.PathLike) -> np.ndarray | None:
    """The ``output_embeddings`` of an ``.npz`` file or a folder of ``.npy`` arrays that holds no
    ``prompt_embeddings`` (an outputs-only set: the reference-set metrics need no prompts); None for any
    other input (a paired set, a manifest, images)."""
    path = Path(path)
    if path.is_dir():
        if not any((path / f"{k}.npy").exists() or any(path.glob(f"{k}-*.npy")) for k in REQUIRED):
            return None
        arrays = _read_npy_dir(path)
    elif path.suffix.lower() == ".npz" and path.is_file():
        arrays = _read_npz(path)
    else:
        return None
    if "prompt_embeddings" in arrays or "output_embeddings" not in arrays:
        return None
    return arrays["output_embeddings"]


def load_paired(path: str | os.PathLike, name: str | None = None) -> PairedSet:
    """Read a paired set from ``path``.

    * ``.npz`` with arrays ``prompt_embeddings`` (n x d_t), ``output_embeddings`` (n x d_z) and optional
      string arrays ``prompts``, ``outputs``;
    * a folder holding ``prompt_embeddings.npy`` and ``output_embeddings.npy`` (streamed from disk in row
      blocks, so sets larger than memory work) and optional ``prompts.npy`` / ``outputs.npy``; or the same
      arrays sharded as ``prompt_embeddings-00000.npy``, ``prompt_embeddings-00001.npy``, ... (read in
      natural order of their names, as one array).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_dir():
        arrays = _read_npy_dir(path)
        kind = "folder"
    elif path.suffix.lower() == ".npz":
        arrays = _read_npz(path)
        kind = ".npz file"
    else:
        raise InputError(f"{path}: unsupported input; expected a .npz file or a folder of .npy arrays "
                         f"({', '.join(k + '.npy' for k in REQUIRED)})")
    missing = [k for k in REQUIRED if k not in arrays]
    if missing:
        found = ", ".join(sorted(arrays)) or "nothing"
        raise InputError(f"{path}: the {kind} has no array {' or '.join(repr(m) for m in missing)} "
                         f"(found: {found}); expected {', '.join(REQUIRED)} and optionally "
                         f"{', '.join(OPTIONAL)}")
    for key in OPTIONAL:
        if key in arrays and arrays[key].dtype.kind not in "US":
            raise InputError(f"{path}: array {key!r} must hold strings, got dtype {arrays[key].dtype}")
        if key in arrays:
            arrays[key] = _decoded(path, key, arrays[key])
    return PairedSet(
        prompt_embeddings=arrays["prompt_embeddings"],
        output_embeddings=arrays["output_embeddings"],
        prompts=arrays.get("prompts"),
        outputs=arrays.get("outputs"),
        name=name or path.stem,
        source=str(path),
    )
