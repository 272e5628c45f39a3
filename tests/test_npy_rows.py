"""Row-streamed .npy inputs behave like the arrays they hold; PromptSplit gives the same result on them."""

import numpy as np
import pytest

from promptprism import InputError, PromptSplit, load_paired
from promptprism.data.npy import NpyRows


@pytest.fixture()
def folder(tmp_path):
    rng = np.random.default_rng(0)
    t = rng.standard_normal((120, 6)).astype(np.float32)
    z = rng.standard_normal((120, 5)).astype(np.float32)
    np.save(tmp_path / "prompt_embeddings.npy", t)
    np.save(tmp_path / "output_embeddings.npy", z)
    np.save(tmp_path / "prompts.npy", np.array([f"p{i % 7}" for i in range(120)]))
    return tmp_path, t, z


def test_indexing_matches_numpy(folder):
    path, t, _ = folder
    rows = NpyRows(path / "prompt_embeddings.npy")
    assert rows.shape == t.shape and len(rows) == 120 and rows.dtype == t.dtype
    for key in (slice(3, 17), slice(None, None, 5), slice(110, 500), [7, 2, 119], np.array([0, -1]), 4, -2):
        np.testing.assert_array_equal(rows[key], t[key])
    np.testing.assert_array_equal(np.asarray(rows), t)
    with pytest.raises(IndexError):
        rows[[0, 120]]


def _same_spectrum(a, b):
    """Equal up to float32 rounding of the random features (BLAS kernels and chunk shapes change it)."""
    tol = 64 * np.finfo(np.float32).eps * np.abs(a.eigenvalues).max() if a.config["precision"] == "float32" \
        else 1e-12
    np.testing.assert_allclose(a.eigenvalues, b.eigenvalues, rtol=0, atol=tol)


def test_promptsplit_same_on_streamed_and_in_memory(folder):
    path, t, z = folder
    streamed = load_paired(path)
    assert isinstance(streamed.prompt_embeddings, NpyRows)
    est = PromptSplit(method="rff", n_features=200, chunk_size=17, n_modes=3)
    a = est.fit(streamed, streamed)
    b = PromptSplit(method="rff", n_features=200, chunk_size=1000, n_modes=3).fit(
        (t, z, [f"p{i % 7}" for i in range(120)]), (t, z, [f"p{i % 7}" for i in range(120)]))
    _same_spectrum(a, b)


def test_truncated_and_nonfinite_files_are_reported(folder):
    path, t, z = folder
    bad = t.copy()
    bad[33, 1] = np.inf
    np.save(path / "prompt_embeddings.npy", bad)
    with pytest.raises(InputError, match=r"row 33 .*column 1 is inf"):
        load_paired(path)
    raw = (path / "output_embeddings.npy").read_bytes()
    (path / "output_embeddings.npy").write_bytes(raw[: len(raw) - 40])
    np.save(path / "prompt_embeddings.npy", t)
    with pytest.raises(InputError, match="truncated"):
        load_paired(path)


def test_sharded_folder_reads_as_one_array(tmp_path):
    """prompt_embeddings-00000.npy, -00001.npy, ... are read in natural name order, as one array."""
    from promptprism.data.npy import ShardedRows

    rng = np.random.default_rng(1)
    t = rng.standard_normal((100, 6))
    z = rng.standard_normal((100, 4))
    bounds = [0, 7, 40, 41, 100]  # uneven shards, one of a single row
    for k in range(4):  # numbered by first row: names sort wrongly as plain strings (40 before 7)
        idx = bounds[k]
        np.save(tmp_path / f"prompt_embeddings-{idx}.npy", t[bounds[k] : bounds[k + 1]])
        np.save(tmp_path / f"output_embeddings-{idx}.npy", z[bounds[k] : bounds[k + 1]])
        names = np.array([f"p{i % 5}" for i in range(bounds[k], bounds[k + 1])])
        np.save(tmp_path / f"prompts-{idx}.npy", names)
    s = load_paired(tmp_path)
    assert isinstance(s.prompt_embeddings, ShardedRows) and len(s) == 100
    for key in (slice(0, 100), slice(5, 45), slice(40, 41), [99, 0, 40, 7], -1):
        np.testing.assert_array_equal(s.prompt_embeddings[key], t[key])
    assert s.prompts[:6] == ["p0", "p1", "p2", "p3", "p4", "p0"]
    a = PromptSplit(method="rff", n_features=100, chunk_size=9, n_modes=2).fit(s, s)
    b = PromptSplit(method="rff", n_features=100, chunk_size=9, n_modes=2).fit((t, z), (t, z))
    _same_spectrum(a, b)
    np.save(tmp_path / "output_embeddings-100.npy", rng.standard_normal((3, 5)))  # wrong width
    with pytest.raises(InputError, match="does not match the first shard"):
        load_paired(tmp_path)


def test_a_missing_misnamed_or_doubled_shard_is_refused(tmp_path):
    """A gap in the shards' numbers lost rows; a whole array beside its shards is ambiguous."""
    rng = np.random.default_rng(2)
    for k in range(3):
        np.save(tmp_path / f"prompt_embeddings-{k:05d}.npy", rng.standard_normal((10, 3)))
        np.save(tmp_path / f"output_embeddings-{k:05d}.npy", rng.standard_normal((10, 2)))
    assert len(load_paired(tmp_path)) == 30
    (tmp_path / "output_embeddings-00001.npy").unlink()
    with pytest.raises(InputError, match=r"shard 1 is missing"):
        load_paired(tmp_path)
    np.save(tmp_path / "output_embeddings-00001.npy", rng.standard_normal((10, 2)))
    np.save(tmp_path / "output_embeddings.npy", rng.standard_normal((30, 2)))
    with pytest.raises(InputError, match="holds both output_embeddings.npy and 3 shard"):
        load_paired(tmp_path)
    (tmp_path / "output_embeddings.npy").unlink()
    np.save(tmp_path / "output_embeddings-last.npy", rng.standard_normal((10, 2)))
    with pytest.raises(InputError, match="not a shard name"):
        load_paired(tmp_path)


def test_parquet_dataset_streams_by_row_group(tmp_path):
    """A folder of Parquet files with list columns reads as one array, row group by row group; bad rows
    are named."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from promptprism.data.inputs import load_input
    from promptprism.data.npy import ParquetRows

    rng = np.random.default_rng(2)
    t = rng.standard_normal((90, 5))
    z = rng.standard_normal((90, 3))
    for k, (a, b) in enumerate([(0, 40), (40, 90)]):
        table = pa.table({"prompt": [f"p{i % 6}" for i in range(a, b)],
                          "prompt_embedding": [list(r) for r in t[a:b]],
                          "output_embedding": [list(r) for r in z[a:b]]})
        pq.write_table(table, tmp_path / f"part-{k}.parquet", row_group_size=15)  # several row groups
    s = load_input(tmp_path, cache=None)
    assert isinstance(s.prompt_embeddings, ParquetRows) and len(s) == 90
    for key in (slice(0, 90), slice(10, 55), slice(44, 46), [89, 0, 41]):
        np.testing.assert_array_equal(s.prompt_embeddings[key], t[key])
    assert s.prompts[:7] == ["p0", "p1", "p2", "p3", "p4", "p5", "p0"]
    a = PromptSplit(method="rff", n_features=80, chunk_size=13, n_modes=2).fit(s, s)
    b = PromptSplit(method="rff", n_features=80, chunk_size=13, n_modes=2).fit((t, z), (t, z))
    _same_spectrum(a, b)
    bad = pa.table({"prompt_embedding": [[1.0, 2.0], [1.0]], "output_embedding": [[1.0], [2.0]]})
    pq.write_table(bad, tmp_path / "bad.parquet")
    with pytest.raises(InputError, match=r"bad.parquet: column 'prompt_embedding', row 1"):
        np.asarray(load_input(tmp_path / "bad.parquet", cache=None).prompt_embeddings)
    # embeddings written as text ('1,2'): one line naming the column and its type (was an Arrow error, exit 1)
    text = pa.table({"prompt_embedding": ["1,2", "3,4"], "output_embedding": [[1.0, 2.0], [3.0, 4.0]]})
    pq.write_table(text, tmp_path / "text.parquet")
    said = r"text.parquet: column 'prompt_embedding' must hold a list of numbers in each row \(an embedding\)"
    with pytest.raises(InputError, match=said + r", got (large_)?string"):
        np.asarray(load_input(tmp_path / "text.parquet", cache=None).prompt_embeddings)
