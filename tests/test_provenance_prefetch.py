"""Input fingerprints computed ahead (``provenance.prefetch_fingerprint``): the record is the file's own
hash, never a stale one."""

from __future__ import annotations

import hashlib
import os

from promptprism import provenance


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_prefetched_fingerprint_is_the_files_hash(tmp_path, monkeypatch):
    path = tmp_path / "set.npz"
    path.write_bytes(os.urandom(3 << 20))
    provenance.prefetch_fingerprint(path)
    hashed = []
    monkeypatch.setattr(provenance, "_file_fingerprint", lambda p: hashed.append(p) or {})
    # the record picks up the hash computed ahead (no second read of the file)
    assert provenance.fingerprint(path) == {"bytes": 3 << 20, "sha256": _sha(path)}
    assert hashed == []


def test_a_file_changed_after_the_prefetch_is_hashed_again(tmp_path):
    path = tmp_path / "set.npz"
    path.write_bytes(b"a" * 1000)
    provenance.prefetch_fingerprint(path)
    provenance.fingerprint(path)  # (the prefetch has finished)
    path.write_bytes(b"b" * 2000)
    os.utime(path, ns=(1, 1))  # (a new stamp even on a coarse clock)
    assert provenance.fingerprint(path) == {"bytes": 2000, "sha256": _sha(path)}


def test_a_folder_or_a_missing_path_is_not_prefetched(tmp_path):
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "a.png").write_bytes(b"x")
    provenance.prefetch_fingerprint(tmp_path / "images")
    provenance.prefetch_fingerprint(tmp_path / "missing.npz")
    assert (tmp_path / "images").resolve() not in provenance._AHEAD
    assert provenance.fingerprint(tmp_path / "images")["bytes"] == 1
