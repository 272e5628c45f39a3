"""RegionCMS on a dask LocalCluster of 2 processes equals the single-process run, even if a worker dies.

Real images: scikit-learn's 8x8 digits (seeded split). The sums over images (pixel CKA blocks, constant
pixels, the kernel sums of the CMS, the cross-region CKA) are tasks; locally they run one after the other,
on the cluster one per partition with a tree reduction. Only the order of floating-point sums differs.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from method_tester import VOLATILE, assert_same_result  # noqa: E402
from promptprism import RegionCMS, execution  # noqa: E402
from promptprism.cli import main  # noqa: E402
from promptprism.data.images import ImageRows, load_images  # noqa: E402

pytestmark = pytest.mark.slow  # minutes in all: run by `make test` / CI, not by -m 'not slow'

SEED = 7


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """Real (train) digits and two generated sets (held-out digits, and held-out digits with the top three
    rows noised), in memory and as files that the workers read: .npy arrays and a PNG folder."""
    from PIL import Image
    from sklearn.datasets import load_digits

    x = load_digits().images / 16.0
    perm = np.random.default_rng(0).permutation(len(x))
    train, held = x[perm[:600]], x[perm[600:1000]]
    gen_a = held[:200]
    gen_b = held[200:].copy()
    gen_b[:, :3] = np.clip(gen_b[:, :3] + np.random.default_rng(1).normal(0, 0.3, gen_b[:, :3].shape), 0, 1)
    root = tmp_path_factory.mktemp("digits")
    np.save(root / "train.npy", train)
    np.save(root / "gen_a.npy", gen_a)
    folder = root / "gen_b"
    folder.mkdir()
    for i, img in enumerate(gen_b):
        Image.fromarray(np.round(img * 255).astype(np.uint8)).save(folder / f"img_{i:03d}.png")
    return {"train": train, "gen_a": gen_a, "gen_b": load_images(folder)[..., 0], "root": root}


def _estimator(block_size=None):
    return RegionCMS(n_regions=3, cka_block_size=50, block_size=block_size, partition_rows=100, seed=SEED)


def _same(a, b):
    """The shared comparison (method_tester.assert_same_result): sums over images in another order, to
    1e-9; the inputs' paths are recorded only when they are files."""
    assert_same_result(a, b, rtol=1e-9, atol=1e-12, ignore=(*VOLATILE, "real", "generated", "reference"),
                       tolerances={k: (1e-9, 0) for k in ("cms", "product_cms", "mmd2", "region_cms")}
                       | {"gamma": (1e-12, 0)})


@pytest.mark.parametrize("block_size", [None, 50])
def test_cluster_equals_single_process(client, digits, block_size):
    est = _estimator(block_size)
    local = est.fit(digits["train"]).compare([digits["gen_a"], digits["gen_b"]])
    assert len(set(local.regions)) == 3 and local.cms[1] < local.cms[0]
    root = digits["root"]
    # the workers read the .npy rows and the PNG files of their partitions themselves
    with distributed.get_task_stream(client) as stream, execution(client):
        files = est.fit(root / "train.npy").compare([root / "gen_a.npy", ImageRows.open(root / "gen_b")])
    _same(local, files)
    ran = [t["key"][0] if isinstance(t["key"], tuple) else t["key"] for t in stream.data]
    per_func = {f: sum(str(k).startswith(f) for k in ran) for f in (
        "pixel_cka_partition", "pixel_range_partition", "cross_cka_partition", "merge_copy",
        "region_block_partition" if block_size else "region_sums_partition")}
    # 600 real images: 12 CKA blocks of 50, 6 partitions of 100; the CMS: 21 + 2 * 3 + 2 * 12 chunk pairs
    # (exact) or 2 * 4 blocks of 50; partial results are merged on the workers
    assert per_func["pixel_cka_partition"] == 12 and per_func["pixel_range_partition"] == 6
    assert per_func["region_sums_partition" if block_size is None else "region_block_partition"] == \
        (21 + 2 * 3 + 2 * 12 if block_size is None else 8)
    assert per_func["merge_copy"] > 20
    # in-memory arrays: sliced per task and shipped
    with execution(client):
        arrays = est.fit(digits["train"]).compare([digits["gen_a"], digits["gen_b"]])
    _same(local, arrays)
    # and the same file-backed tasks without a cluster (one code path: the tasks run here, in order)
    _same(local, est.fit(root / "train.npy").compare([root / "gen_a.npy", root / "gen_b"]))


def test_bad_image_read_on_a_worker_names_the_file(client, digits, tmp_path):
    from PIL import Image

    from promptprism.errors import InputError

    folder = tmp_path / "mixed"
    folder.mkdir()
    for i, img in enumerate(digits["gen_a"][:150]):
        Image.fromarray(np.round(img * 255).astype(np.uint8)).save(folder / f"img_{i:03d}.png")
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(folder / "img_zzz.png")  # read by a later partition
    with execution(client):
        est = _estimator().fit(digits["train"])
        with pytest.raises(InputError, match="img_zzz.png.*differs"):
            est.compare(folder)


def test_worker_killed_mid_run_gives_same_result(digits):
    """A worker process is SIGKILLed while tasks run: the scheduler re-runs its tasks (the nanny restarts
    the process) and nothing is counted twice."""
    from conftest import run_killing_a_worker

    root = digits["root"]
    est = RegionCMS(n_regions=3, cka_block_size=20, partition_rows=40, seed=SEED)
    expected = est.fit(digits["train"]).compare([digits["gen_a"], digits["gen_b"]])

    def run(c):
        with execution(c):
            return est.fit(root / "train.npy").compare([root / "gen_a.npy", root / "gen_b"])

    got = run_killing_a_worker(run)
    _same(expected, got)


def test_cli_workers_writes_the_same_numbers(digits, tmp_path, capsys):
    root = digits["root"]
    args = ["regions", "--real", str(root / "train.npy"), "--generated", str(root / "gen_a.npy"),
            str(root / "gen_b"), "--regions", "3", "--cka-block-size", "50", "--partition-rows", "100",
            "--seed", str(SEED), "-q"]
    assert main(args + ["--out", str(tmp_path / "one")]) == 0, capsys.readouterr().err
    assert main(args + ["--workers", "2", "--out", str(tmp_path / "two")]) == 0, capsys.readouterr().err
    one, two = (json.loads((tmp_path / d / "result.json").read_text()) for d in ("one", "two"))
    for key in ("cms", "product_cms", "mmd2", "region_cms", "cka_matrix", "cross_region_cka"):
        np.testing.assert_allclose(np.asarray(one[key]), np.asarray(two[key]), rtol=1e-9, atol=1e-12,
                                   err_msg=key)
    assert one["regions"] == two["regions"] and one["names"] == two["names"] == ["gen_a", "gen_b"]
    assert one["config"]["partition_rows"] == two["config"]["partition_rows"] == 100


@pytest.mark.slow
@pytest.mark.parametrize("block_size", [None, 40])
def test_cluster_bootstrap_equals_single_process(client, digits, block_size):
    """The bootstrap counts travel with the chunk pairs; the intervals match the single-process run."""
    est = RegionCMS(n_regions=3, cka_block_size=50, block_size=block_size, partition_rows=100, seed=SEED,
                    bootstrap=40)
    local = est.fit(digits["train"]).compare([digits["gen_a"], digits["gen_b"]])
    with execution(client):
        dist = est.fit(digits["root"] / "train.npy").compare([digits["root"] / "gen_a.npy", digits["gen_b"]])
    _same(local, dist)
    assert local.bootstrap == dist.bootstrap
    for a, b in zip(local.intervals, dist.intervals, strict=True):
        for what in ("cms", "product_cms"):
            for k in ("low", "high", "debiased"):
                assert a[what][k] == pytest.approx(b[what][k], rel=1e-9)
        for ra, rb in zip(a["region_cms"], b["region_cms"], strict=True):
            assert ra == pytest.approx(rb, rel=1e-9)
