"""The embedding cache: no second encoding, safe against kills, one namespace per encoder identity."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from _embed_helpers import (  # noqa: F401 - fixtures
    HashEncoder,
    fresh_memory_cache_fixture,
    hash_encoder_fixture,
    isolated_cache_fixture,
    run_cli,
)
from promptprism.embed import EmbeddingCache, embed_items
from promptprism.embed.cache import DiskStore, default_cache_dir

SRC = Path(__file__).resolve().parents[1] / "src"
TEXTS = [f"prompt number {i}" for i in range(40)]


def write_manifest(path: Path, prompts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"prompt": p, "output": f"answer to {p}"}) + "\n" for p in prompts))
    return path


def test_second_identical_run_never_calls_the_encoder(tmp_path, capsys, hash_encoder):
    m = write_manifest(tmp_path / "m.jsonl", TEXTS[:10])
    args = ["embed", m, "--out", tmp_path / "o.npz", "--text-model", "hash", "--cache", tmp_path / "c", "-q"]
    assert run_cli(capsys, args)[0] == 0
    assert hash_encoder.calls > 0 and hash_encoder.items == 20
    with np.load(tmp_path / "o.npz") as z:
        first = z["prompt_embeddings"].copy()
    hash_encoder.calls = hash_encoder.items = 0
    from promptprism.data import inputs

    inputs._memory = None
    assert run_cli(capsys, args)[0] == 0
    assert hash_encoder.calls == 0  # everything came from the disk cache
    with np.load(tmp_path / "o.npz") as z:
        np.testing.assert_array_equal(z["prompt_embeddings"], first)
    # a run sharing prompts with the first one embeds only what is new
    m2 = write_manifest(tmp_path / "m2.jsonl", TEXTS[5:15])
    assert run_cli(capsys, ["embed", m2, "--out", tmp_path / "o2.npz", "--text-model", "hash", "--cache",
                            tmp_path / "c", "-q"])[0] == 0
    assert hash_encoder.items == 10  # 5 new prompts + 5 new answers


def test_no_cache_writes_nothing_but_still_embeds_each_item_once(tmp_path, capsys, hash_encoder):
    m = write_manifest(tmp_path / "m.jsonl", TEXTS[:3] * 2)
    rc, _, err = run_cli(capsys, ["split", m, m, "--out", tmp_path / "r", "--text-model", "hash",
                                  "--no-cache", "-q"])
    assert rc == 0, err
    assert hash_encoder.items == 6  # 3 prompts + 3 answers, shared by the two inputs
    assert not default_cache_dir().exists()


def test_encoder_identities_do_not_collide(tmp_path):
    cache = EmbeddingCache(tmp_path / "c")
    a, b = HashEncoder("enc-a", dim=4), HashEncoder("enc-b", dim=6)
    ea = embed_items(TEXTS[:5], "text", a, cache)
    eb = embed_items(TEXTS[:5], "text", b, cache)
    assert ea.shape == (5, 4) and eb.shape == (5, 6)
    fresh = EmbeddingCache(tmp_path / "c")  # a new process reads each namespace back
    np.testing.assert_array_equal(embed_items(TEXTS[:5], "text", a, fresh), ea)
    np.testing.assert_array_equal(embed_items(TEXTS[:5], "text", b, fresh), eb)
    assert a.calls == 1 and b.calls == 1
    assert fresh.folder("enc-a") != fresh.folder("enc-b")
    assert (fresh.folder("enc-a") / "identity.txt").read_text().strip() == "enc-a"


def test_same_content_under_another_name_hits(tmp_path):
    from PIL import Image

    Image.new("RGB", (5, 5), (1, 2, 3)).save(tmp_path / "x.png")
    (tmp_path / "copy.png").write_bytes((tmp_path / "x.png").read_bytes())
    enc = HashEncoder("img", dim=3)
    files = [tmp_path / "x.png", tmp_path / "copy.png"]
    out = embed_items(files, "image", enc, EmbeddingCache(tmp_path / "c"))
    assert enc.items == 1 and np.array_equal(out[0], out[1])


def test_interrupted_write_leaves_no_entry(tmp_path, monkeypatch):
    import promptprism.io as pio

    cache = EmbeddingCache(tmp_path / "c")
    enc = HashEncoder("interrupt", dim=4)

    def boom(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(pio.os, "fsync", boom)
    with pytest.raises(KeyboardInterrupt):
        embed_items(TEXTS[:8], "text", enc, cache, chunk=4)
    monkeypatch.undo()
    shards = cache.folder("interrupt") / "shards"
    assert list(shards.iterdir()) == []  # neither a shard nor a temporary file
    fresh = EmbeddingCache(tmp_path / "c")
    out = embed_items(TEXTS[:8], "text", enc, fresh, chunk=4)
    np.testing.assert_array_equal(out, HashEncoder("interrupt", dim=4).encode_texts(TEXTS[:8]))


def test_leftovers_of_a_killed_run_are_ignored(tmp_path):
    cache = EmbeddingCache(tmp_path / "c")
    enc = HashEncoder("leftovers", dim=4)
    embed_items(TEXTS[:4], "text", enc, cache, chunk=4)
    shards = cache.folder("leftovers") / "shards"
    good = next(shards.glob("*.npz"))
    data = good.read_bytes()
    (shards / f".{good.name}.abc123.tmp").write_bytes(data[:20])  # what SIGKILL during a write leaves
    (shards / "damaged.npz").write_bytes(data[: len(data) // 2])  # a shard damaged outside promptprism
    fresh = EmbeddingCache(tmp_path / "c")
    enc2 = HashEncoder("leftovers", dim=4)
    out = embed_items(TEXTS[:8], "text", enc2, fresh, chunk=4)
    assert enc2.items == 4  # only the 4 new texts
    store = fresh.store("leftovers")
    assert isinstance(store, DiskStore) and any("damaged.npz" in s for s in store.skipped)
    np.testing.assert_array_equal(out, HashEncoder("leftovers", dim=4).encode_texts(TEXTS[:8]))


SLOW_RUN = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
    from _embed_helpers import HashEncoder
    from promptprism.embed import EmbeddingCache, embed_items

    class Slow(HashEncoder):
        def encode_texts(self, texts):
            time.sleep(0.3)
            return super().encode_texts(texts)

    texts = [f"prompt number {i}" for i in range(40)]
    embed_items(texts, "text", Slow("killed", dim=4), EmbeddingCache(sys.argv[3]), chunk=4)
""")


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_a_killed_process_resumes(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text(SLOW_RUN)
    cache_dir = tmp_path / "c"
    proc = subprocess.Popen([sys.executable, str(script), str(SRC), str(Path(__file__).parent),
                             str(cache_dir)], env={**os.environ, "PYTHONPATH": str(SRC)})
    shards = EmbeddingCache(cache_dir).folder("killed") / "shards"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list(shards.glob("*.npz"))) < 2 and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = len(list(shards.glob("*.npz")))
    assert 2 <= done < 10, "the run must be killed part-way"
    enc = HashEncoder("killed", dim=4)
    out = embed_items(TEXTS, "text", enc, EmbeddingCache(cache_dir), chunk=4)
    cached = 40 - enc.items
    assert cached >= 4 * done - 4 and enc.items > 0  # resumed: the finished shards were not embedded again
    np.testing.assert_array_equal(out, HashEncoder("killed", dim=4).encode_texts(TEXTS))
    assert not EmbeddingCache(cache_dir).store("killed").skipped
    enc2 = HashEncoder("killed", dim=4)
    embed_items(TEXTS, "text", enc2, EmbeddingCache(cache_dir), chunk=4)
    assert enc2.calls == 0  # and now it is complete


# ------------------------------------------------------------------------------- entries verified on read
def _rewrite_shards(shards: Path, make_vectors) -> None:
    for shard in shards.glob("*.npz"):
        with np.load(shard) as z:
            keys = z["keys"].copy()
        np.savez(shard, keys=keys, vectors=make_vectors(keys.shape[0]))


def test_tampered_shards_are_recomputed_never_served(tmp_path):
    enc = HashEncoder("tamper", dim=16)
    cache = EmbeddingCache(tmp_path / "c")
    good = embed_items(TEXTS[:20], "text", enc, cache, chunk=8)
    _rewrite_shards(cache.folder("tamper") / "shards", lambda n: np.zeros((n, 7), dtype=np.float32))
    enc2 = HashEncoder("tamper", dim=16)
    with pytest.warns(UserWarning, match="checksum"):
        out = embed_items(TEXTS[:20], "text", enc2, EmbeddingCache(tmp_path / "c"), chunk=8)
    assert out.shape == (20, 16)  # not 20 x 7 zero "embeddings"
    assert enc2.items == 20  # every altered entry embedded again
    np.testing.assert_array_equal(out, good)


def test_nan_and_wrong_dtype_entries_are_recomputed(tmp_path):
    from promptprism.embed.cache import shard_checksum

    enc = HashEncoder("nan", dim=4)
    cache = EmbeddingCache(tmp_path / "c")
    good = embed_items(TEXTS[:6], "text", enc, cache, chunk=6)
    shard = next((cache.folder("nan") / "shards").glob("*.npz"))
    with np.load(shard) as z:
        keys, vec = z["keys"].copy(), z["vectors"].copy()
    vec[2] = np.nan  # a NaN row with a valid checksum: the encoder's own output, never served
    np.savez(shard, keys=keys, vectors=vec, check=shard_checksum(keys, vec))
    enc2 = HashEncoder("nan", dim=4)
    with pytest.warns(UserWarning, match="non-finite"):
        out = embed_items(TEXTS[:6], "text", enc2, EmbeddingCache(tmp_path / "c"), chunk=6)
    assert enc2.items == 1 and np.isfinite(out).all()
    np.testing.assert_array_equal(out, good)
    np.savez(shard, keys=keys, vectors=vec.astype(np.float64))  # float64: not what promptprism writes
    enc3 = HashEncoder("nan", dim=4)
    with pytest.warns(UserWarning, match="float64"):
        out = embed_items(TEXTS[:6], "text", enc3, EmbeddingCache(tmp_path / "c"), chunk=6)
    assert enc3.items == 5  # the shard's 5 finite rows; the 6th is in the shard the second run wrote
    np.testing.assert_array_equal(out, good)


def test_tampered_cache_through_the_cli_gives_correct_embeddings(tmp_path, capsys, hash_encoder):
    m = write_manifest(tmp_path / "m.jsonl", TEXTS[:10])
    args = ["embed", m, "--out", tmp_path / "o.npz", "--text-model", "hash", "--cache", tmp_path / "c", "-q"]
    assert run_cli(capsys, args)[0] == 0
    with np.load(tmp_path / "o.npz") as z:
        first = z["prompt_embeddings"].copy()
    for folder in (tmp_path / "c").iterdir():
        _rewrite_shards(folder / "shards", lambda n: np.zeros((n, 7), dtype=np.float32))
    from promptprism.data import inputs

    inputs._memory = None
    with pytest.warns(UserWarning):
        assert run_cli(capsys, args)[0] == 0
    with np.load(tmp_path / "o.npz") as z:
        np.testing.assert_array_equal(z["prompt_embeddings"], first)


def test_temporary_files_of_a_dead_writer_are_removed_on_the_next_run(tmp_path):
    from promptprism.embed.cache import _host

    cache = EmbeddingCache(tmp_path / "c")
    enc = HashEncoder("tmpfiles", dim=4)
    embed_items(TEXTS[:4], "text", enc, cache, chunk=4)
    shards = cache.folder("tmpfiles") / "shards"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    left = shards / f".abc.npz.{_host()}-{dead}.tmp"  # what SIGKILL during a write leaves
    alive = shards / f".def.npz.{_host()}-{os.getpid()}.tmp"  # a writer still at work: kept
    left.write_bytes(b"partial")
    alive.write_bytes(b"partial")
    EmbeddingCache(tmp_path / "c").store("tmpfiles").get([])
    assert not left.exists() and alive.exists()
