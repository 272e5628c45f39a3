"""A content-addressed embedding cache on disk: a re-run, or a run sharing items, skips the model.

Layout (one folder per encoder identity, so different encoders never collide)::

    CACHE_DIR/<identity-slug>-<sha256(identity)[:12]>/
        identity.txt              the full identity string
        shards/<uuid>.npz         keys (k x 32 uint8: sha256 of each item's content), vectors (k x d float32),
                                  check (sha256 of keys and vectors)

An item's key is the sha256 of its content (a text's UTF-8 bytes, an image file's bytes, an array's dtype,
shape and bytes), prefixed by its kind, so renaming a file or reordering a manifest still hits. Each shard is
written to a hidden temporary file (named with the writer's host and process id) and renamed into place
(atomic): a killed run leaves complete shards and at most a hidden temporary file, which readers ignore and
the next run removes (at once when its writer, on this host, is gone; after ``STALE_TMP_SECONDS`` otherwise);
the next run embeds only what is missing.

Entries are verified on read, never served unchecked: a shard whose checksum does not match its keys and
vectors (damaged, altered, or written by promptprism 0.1), whose vectors are not a 2-D float32 array with
one row per key, or whose dimension differs from the encoder's (the dimension of a vector the encoder made
in this run, or the dimension most verified shards share), is skipped; so is any row that is not finite.
Skipped entries are embedded again, and a :class:`CacheNote` warning says which shard was skipped and why.

The default folder is ``$PROMPTPRISM_CACHE``, else ``$XDG_CACHE_HOME/promptprism``, else
``~/.cache/promptprism``.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import socket
import time
import uuid
import warnings
import zipfile
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ..io import atomic_write_text, flush_to_disk, replace_on_success

KEY_BYTES = 32
#: hidden temporary files older than this are left-overs of killed runs and are removed when a folder opens
STALE_TMP_SECONDS = 3600.0


class CacheNote(UserWarning):
    """A cache entry was found bad (damaged, altered, non-finite) and is embedded again."""


def default_cache_dir() -> Path:
    """``$PROMPTPRISM_CACHE``, else ``$XDG_CACHE_HOME/promptprism``, else ``~/.cache/promptprism``."""
    env = os.environ.get("PROMPTPRISM_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "promptprism"


def text_key(text: str) -> bytes:
    """The cache key of a text: sha256 of ``b"text\\0"`` + its UTF-8 bytes."""
    return hashlib.sha256(b"text\0" + text.encode("utf-8")).digest()


def array_key(arr: np.ndarray) -> bytes:
    """The cache key of an array: sha256 of its dtype, shape and bytes."""
    a = np.ascontiguousarray(arr)
    return hashlib.sha256(f"array\0{a.dtype.str}\0{a.shape}\0".encode() + a.tobytes()).digest()


def file_key(path: str | os.PathLike, kind: str = "image") -> bytes:
    """The cache key of a file's content (an image file): sha256 of its kind, ``b"\\0"`` and its bytes,
    read in blocks."""
    h = hashlib.sha256(kind.encode() + b"\0")
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.digest()


class MemoryStore:
    """The per-identity store without a disk: deduplicates within one process (``--no-cache``)."""

    def __init__(self) -> None:
        self._data: dict[bytes, np.ndarray] = {}

    def get(self, keys: Iterable[bytes]) -> dict[bytes, np.ndarray]:
        """The stored vectors of those ``keys`` that are present."""
        return {k: self._data[k] for k in keys if k in self._data}

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Store one vector per key."""
        for k, v in zip(keys, np.asarray(vectors, dtype=np.float32), strict=True):
            self._data[k] = v

    def __len__(self) -> int:
        return len(self._data)


def shard_checksum(keys: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """sha256 over a shard's keys and float32 vectors (with their shape), as 32 uint8."""
    v = np.ascontiguousarray(vectors, dtype=np.float32)
    h = hashlib.sha256(f"promptprism-shard-v2\0{v.shape}\0".encode())
    h.update(np.ascontiguousarray(keys, dtype=np.uint8).tobytes())
    h.update(v.tobytes())
    return np.frombuffer(h.digest(), dtype=np.uint8)


def _pid_gone(name: str) -> bool:
    """Whether a temporary file ``.<shard>.<host>-<pid>.tmp`` was left by a process of this host that no
    longer runs."""
    m = re.search(r"\.([^.]+)-(\d+)\.tmp$", name)
    if m is None or m.group(1) != _host():
        return False
    try:
        os.kill(int(m.group(2)), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, OSError):
        return False
    return False


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", socket.gethostname()) or "host"


class DiskStore:
    """The shards of one encoder identity. Reads every shard's keys once, then serves lookups from memory;
    each shard's vectors are verified (see the module docstring) the first time they are needed."""

    def __init__(self, folder: Path, identity: str) -> None:
        self.folder = folder
        self.identity = identity
        self.shards = folder / "shards"
        self._index: dict[bytes, tuple[Path, int]] | None = None
        self._loaded: dict[Path, np.ndarray | None] = {}
        self._dims: dict[Path, int] = {}
        self._more: dict[bytes, list[tuple[Path, int]]] = {}
        self.dim: int | None = None  #: the encoder's dimension, once known (a vector made in this run)
        self.skipped: list[str] = []  #: shards or rows not served, with the reason

    def _skip(self, what: str) -> None:
        self.skipped.append(what)
        warnings.warn(f"embedding cache: {what}; embedded again", CacheNote, stacklevel=4)

    def _cleanup(self, entry: os.DirEntry, now: float) -> None:
        try:
            if _pid_gone(entry.name) or now - entry.stat().st_mtime > STALE_TMP_SECONDS:
                os.unlink(entry.path)
        except OSError:
            pass

    def _ensure(self) -> dict[bytes, tuple[Path, int]]:
        if self._index is not None:
            return self._index
        self.shards.mkdir(parents=True, exist_ok=True)
        ident = self.folder / "identity.txt"
        if not ident.exists():
            atomic_write_text(ident, self.identity + "\n")
        index: dict[bytes, tuple[Path, int]] = {}
        now = time.time()
        for entry in sorted(os.scandir(self.shards), key=lambda e: e.name):
            if entry.name.startswith("."):
                if entry.name.endswith(".tmp"):
                    self._cleanup(entry, now)
                continue
            if not entry.name.endswith(".npz"):
                continue
            path = Path(entry.path)
            try:
                with np.load(path, allow_pickle=False) as z:
                    keys = z["keys"]
                    shape = z["vectors"].shape
                if (keys.ndim != 2 or keys.shape[1] != KEY_BYTES or len(shape) != 2
                        or keys.shape[0] != shape[0]):
                    raise ValueError("keys and vectors do not match")
            except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
                self.skipped.append(f"{path}: {exc}")
                continue
            self._dims[path] = int(shape[1])
            for row, k in enumerate(keys):
                kb = k.tobytes()
                if kb in index:  # the same item in several shards: a fallback if the first is bad
                    self._more.setdefault(kb, []).append((path, row))
                else:
                    index[kb] = (path, row)
        self._index = index
        return index

    def _expected_dim(self) -> int | None:
        if self.dim is not None:
            return self.dim
        counts = Counter(self._dims.values())
        return counts.most_common(1)[0][0] if counts else None

    def _verify(self, path: Path) -> np.ndarray | None:
        """The shard's vectors (non-finite rows as NaN), or None when the shard must not be served."""
        try:
            with np.load(path, allow_pickle=False) as z:
                keys, vectors = z["keys"], z["vectors"]
                check = z["check"] if "check" in z.files else None
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
            self._skip(f"shard {path.name} cannot be read ({exc})")
            return None
        if vectors.ndim != 2 or vectors.dtype != np.float32 or vectors.shape[0] != keys.shape[0]:
            self._skip(f"shard {path.name} holds {vectors.dtype} vectors of shape {vectors.shape} for "
                       f"{keys.shape[0]} keys (expected float32, one row per key)")
            return None
        if check is None or not np.array_equal(check, shard_checksum(keys, vectors)):
            self._skip(f"shard {path.name} fails its checksum (damaged, altered, or from an older version)")
            return None
        dim = self._expected_dim()
        if dim is not None and vectors.shape[1] != dim:
            self._skip(f"shard {path.name} holds {vectors.shape[1]}-d vectors, the encoder makes "
                       f"{dim}-d ones")
            return None
        return vectors

    def _vectors(self, path: Path) -> np.ndarray | None:
        if path not in self._loaded:
            self._loaded[path] = self._verify(path)
        return self._loaded[path]

    def get(self, keys: Iterable[bytes]) -> dict[bytes, np.ndarray]:
        """The verified vectors of those ``keys`` that are present (bad entries are left out, with a note)."""
        index = self._ensure()
        out: dict[bytes, np.ndarray] = {}
        bad_rows: dict[Path, int] = {}
        for k in keys:
            hit = index.get(k)
            if hit is None:
                continue
            for path, i in (hit, *self._more.get(k, ())):
                vec = self._vectors(path)
                if vec is None:
                    continue
                if not np.isfinite(vec[i]).all():
                    bad_rows[path] = bad_rows.get(path, 0) + 1
                    continue
                out[k] = vec[i]
                break
        for path, n_bad in bad_rows.items():
            self._skip(f"shard {path.name} holds {n_bad} non-finite vector(s)")
        return out

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> Path:
        """Write ``vectors`` (one row per key) as a new shard and serve them from memory."""
        index = self._ensure()
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim == 2 and self.dim is None:
            self.dim = int(vectors.shape[1])
        path = self.append(keys, vectors)
        self._loaded[path] = vectors
        self._dims[path] = int(vectors.shape[1])
        for row, k in enumerate(keys):
            index[k] = (path, row)  # just made: preferred over an older (possibly bad) entry
        return path

    def append(self, keys: Sequence[bytes], vectors: np.ndarray) -> Path:
        """Write one shard without reading the others (what a cluster worker does); atomic, uniquely named,
        so any number of processes can append to the same cache folder at once."""
        self.shards.mkdir(parents=True, exist_ok=True)
        ident = self.folder / "identity.txt"
        if not ident.exists():
            atomic_write_text(ident, self.identity + "\n")
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        karr = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), KEY_BYTES)
        buf = io.BytesIO()
        np.savez(buf, keys=karr, vectors=vectors, check=shard_checksum(karr, vectors))
        name = f"{uuid.uuid4().hex}.npz"
        path = self.shards / name
        tmp = self.shards / f".{name}.{_host()}-{os.getpid()}.tmp"
        with replace_on_success(tmp, path), open(tmp, "wb") as fh:
            fh.write(buf.getvalue())
            flush_to_disk(fh)
        return path

    def __len__(self) -> int:
        return len(self._ensure())


def _slug(identity: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", identity)[:60]


class EmbeddingCache:
    """Embeddings by (encoder identity, item content). ``root=None`` keeps them in memory only."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else None
        self._stores: dict[str, MemoryStore | DiskStore] = {}

    @classmethod
    def default(cls) -> EmbeddingCache:
        """The cache in :func:`default_cache_dir`."""
        return cls(default_cache_dir())

    def folder(self, identity: str) -> Path | None:
        """The folder of one encoder identity (None for a memory-only cache)."""
        if self.root is None:
            return None
        return self.root / f"{_slug(identity)}-{hashlib.sha256(identity.encode()).hexdigest()[:12]}"

    def store(self, identity: str) -> MemoryStore | DiskStore:
        """The store of one encoder identity (made on first use)."""
        s = self._stores.get(identity)
        if s is None:
            folder = self.folder(identity)
            s = self._stores[identity] = MemoryStore() if folder is None else DiskStore(folder, identity)
        return s

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.root) if self.root else 'memory'})"
