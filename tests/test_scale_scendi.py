"""Scendi on a dask LocalCluster of 2 processes equals the single-process run (both streaming passes)."""

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from method_tester import VOLATILE, assert_same_result  # noqa: E402
from promptprism import Scendi, execution, load_paired  # noqa: E402
from promptprism.cli import main  # noqa: E402

pytestmark = pytest.mark.slow  # minutes in all: run by `make test` / CI, not by -m 'not slow'


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Digits (real pixels) with prompts that name the digit's parity: a .npy folder workers read."""
    from sklearn.datasets import load_digits

    d = load_digits()
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(d.target))[:600]
    prompts = np.eye(2)[d.target[idx] % 2] + 0.05 * rng.standard_normal((600, 2))
    root = tmp_path_factory.mktemp("scendi")
    np.save(root / "prompt_embeddings.npy", prompts)
    np.save(root / "output_embeddings.npy", d.data[idx] / 16.0)
    return root


def _same(a, b):
    """The shared comparison (method_tester.assert_same_result): sums in another order, to 1e-9; the
    samples' scores (projections on eigenvectors, which move by about the square root of the eigenvalues'
    round-off) to 1e-7, the spectra's small tail eigenvalues to 1e-10 absolute; the input's name and path
    are recorded only when it is a file."""
    assert_same_result(a, b, rtol=1e-9, atol=1e-15,
                       tolerances={"score": (1e-7, 1e-12), "eigenvalues": (1e-9, 1e-10)},
                       ignore=(*VOLATILE, "partition_rows", "config.input", "name"))


@pytest.mark.parametrize("kernel", ["cosine", "gaussian"])
def test_cluster_equals_single_process(client, folder, kernel):
    data = load_paired(folder)
    est = Scendi(kernel=kernel, n_features=300, chunk_size=64, partition_rows=128, n_clusters=3, seed=2)
    local = est.fit(data)
    with execution(client):
        _same(local, est.fit(data))  # workers read the .npy partitions
        in_memory = (np.asarray(data.prompt_embeddings), np.asarray(data.output_embeddings))
        _same(local, est.fit(in_memory))  # slices shipped to the workers


def test_diversity_cli_with_local_cluster(folder, tmp_path):
    import json

    assert main(["diversity", str(folder), "--out", str(tmp_path / "a"), "--quiet"]) == 0
    assert main(["diversity", str(folder), "--out", str(tmp_path / "b"), "--quiet", "--workers", "2",
                 "--partition-rows", "100", "--chunk-size", "50"]) == 0
    a = json.loads((tmp_path / "a" / "result.json").read_text())
    b = json.loads((tmp_path / "b" / "result.json").read_text())
    for key in ("scendi", "scendi_prompt", "vendi", "rke"):
        assert b[key] == pytest.approx(a[key], rel=1e-9)
