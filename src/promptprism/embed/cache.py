"""A content-addressed embedding cache on disk: a re-run, or a run sharing items, skips the model.

Layout (one folder per encoder identity, so different encoders never collide)::

    CACHE_DIR/<identity-slug>-<sha256(identity)[:12]>/
        identity.txt              the full identity string
        shards/<uuid>.npz         keys (k x 32 uint8: sha256 of each item's content), vectors (k x d float32)

An item's key is the sha256 of its content (a text's UTF-8 bytes, an image file's bytes, an array's dtype,
shape and bytes), prefixed by its kind, so renaming a file or reordering a manifest still hits. Each shard is
written to a hidden temporary file and renamed into place (atomic): a killed run leaves complete shards and
at most a hidden temporary file, which readers ignore; the next run embeds only what is missing.

The default folder is ``$PROMPTPRISM_CACHE``, else ``$XDG_CACHE_HOME/promptprism``, else
``~/.cache/promptprism``.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import time
import uuid
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ..io import atomic_write_bytes, atomic_write_text

KEY_BYTES = 32
#: hidden temporary files older than this are left-overs of killed runs and are removed when a folder opens
STALE_TMP_SECONDS = 3600.0


def default_cache_dir() -> Path:
    env = os.environ.get("PROMPTPRISM_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "promptprism"


def text_key(text: str) -> bytes:
    return hashlib.sha256(b"text\0" + text.encode("utf-8")).digest()


def bytes_key(data: bytes, kind: str = "image") -> bytes:
    return hashlib.sha256(kind.encode() + b"\0" + data).digest()


def array_key(arr: np.ndarray) -> bytes:
    a = np.ascontiguousarray(arr)
    return hashlib.sha256(f"array\0{a.dtype.str}\0{a.shape}\0".encode() + a.tobytes()).digest()


def file_key(path: str | os.PathLike, kind: str = "image") -> bytes:
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
        return {k: self._data[k] for k in keys if k in self._data}

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        for k, v in zip(keys, np.asarray(vectors, dtype=np.float32), strict=True):
            self._data[k] = v

    def __len__(self) -> int:
        return len(self._data)


class DiskStore:
    """The shards of one encoder identity. Reads every shard's keys once, then serves lookups from memory."""

    def __init__(self, folder: Path, identity: str) -> None:
        self.folder = folder
        self.identity = identity
        self.shards = folder / "shards"
        self._index: dict[bytes, tuple[Path, int]] | None = None
        self._loaded: dict[Path, np.ndarray] = {}
        self.skipped: list[str] = []  #: unreadable shards ignored (not written by promptprism, or damaged)

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
                    try:
                        if now - entry.stat().st_mtime > STALE_TMP_SECONDS:
                            os.unlink(entry.path)
                    except OSError:
                        pass
                continue
            if not entry.name.endswith(".npz"):
                continue
            path = Path(entry.path)
            try:
                with np.load(path, allow_pickle=False) as z:
                    keys = z["keys"]
                    n_vec = z["vectors"].shape[0]
                if keys.ndim != 2 or keys.shape[1] != KEY_BYTES or keys.shape[0] != n_vec:
                    raise ValueError("keys and vectors do not match")
            except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
                self.skipped.append(f"{path}: {exc}")
                continue
            for row, k in enumerate(keys):
                index.setdefault(k.tobytes(), (path, row))
        self._index = index
        return index

    def _vectors(self, path: Path) -> np.ndarray:
        v = self._loaded.get(path)
        if v is None:
            with np.load(path, allow_pickle=False) as z:
                v = self._loaded[path] = np.asarray(z["vectors"], dtype=np.float32)
        return v

    def get(self, keys: Iterable[bytes]) -> dict[bytes, np.ndarray]:
        index = self._ensure()
        out: dict[bytes, np.ndarray] = {}
        for k in keys:
            hit = index.get(k)
            if hit is not None:
                out[k] = self._vectors(hit[0])[hit[1]]
        return out

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> Path:
        index = self._ensure()
        path = self.append(keys, vectors)
        self._loaded[path] = np.ascontiguousarray(vectors, dtype=np.float32)
        for row, k in enumerate(keys):
            index.setdefault(k, (path, row))
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
        np.savez(buf, keys=karr, vectors=vectors)
        path = self.shards / f"{uuid.uuid4().hex}.npz"
        atomic_write_bytes(path, buf.getvalue())
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
        return cls(default_cache_dir())

    def folder(self, identity: str) -> Path | None:
        if self.root is None:
            return None
        return self.root / f"{_slug(identity)}-{hashlib.sha256(identity.encode()).hexdigest()[:12]}"

    def store(self, identity: str) -> MemoryStore | DiskStore:
        s = self._stores.get(identity)
        if s is None:
            folder = self.folder(identity)
            s = self._stores[identity] = MemoryStore() if folder is None else DiskStore(folder, identity)
        return s

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.root) if self.root else 'memory'})"
