"""Shared helpers of the embedding tests: the CLI run in-process, encoders that count their calls.

A test module imports the fixtures it needs from here (this is not a conftest, to stay out of the way).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from promptprism.cli import main
from promptprism.embed.base import to_rgb
from promptprism.embed.registry import register_encoder


class HashEncoder:
    """Texts/images -> deterministic pseudo-random unit vectors derived from their content; counts calls."""

    modalities = frozenset({"text", "image"})

    def __init__(self, identity: str = "hash-test-v1", dim: int = 8):
        self.identity = identity
        self.dim = dim
        self.calls = 0
        self.items = 0

    def _vec(self, data: bytes) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(self.identity.encode() + data).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def encode_texts(self, texts):
        self.calls += 1
        self.items += len(texts)
        return np.stack([self._vec(t.encode()) for t in texts])

    def encode_images(self, images):
        self.calls += 1
        self.items += len(images)
        return np.stack([self._vec(np.asarray(to_rgb(im)).tobytes()) for im in images])


#: one instance per process, so tests can read its counters after a CLI run
HASH = HashEncoder()
register_encoder("hash", lambda **_: HASH)


def run_cli(capsys, args: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, " ".join(err.split())


@pytest.fixture(name="hash_encoder")
def hash_encoder_fixture() -> HashEncoder:
    HASH.calls = 0
    HASH.items = 0
    return HASH


@pytest.fixture(autouse=True, name="_isolated_cache")
def isolated_cache_fixture(tmp_path, monkeypatch):
    """Never touch the user's cache from a test."""
    monkeypatch.setenv("PROMPTPRISM_CACHE", str(tmp_path / "default-cache"))


@pytest.fixture(autouse=True, name="_fresh_memory_cache")
def fresh_memory_cache_fixture(monkeypatch):
    import promptprism.data.inputs as inputs

    monkeypatch.setattr(inputs, "_memory", None)
