"""Embedding on dask workers: same vectors as in one process, encoder built once per worker, shared cache."""

import json

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from promptprism.cli import main  # noqa: E402
from promptprism.data.inputs import read_input  # noqa: E402
from promptprism.scale import execution  # noqa: E402

pytestmark = pytest.mark.slow  # minutes in all: run by `make test` / CI, not by -m 'not slow'


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


def test_pixels_on_workers(client, tmp_path):
    """Image prompts (prompt_image) and image outputs of real digits, embedded by the pixel encoder."""
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    rows = []
    for i in range(60):
        for kind, arr in (("p", digits.images[i]), ("o", digits.images[i + 100])):
            img = Image.fromarray((arr * 255 / 16).astype(np.uint8)).convert("RGB")
            img.save(tmp_path / f"{kind}{i}.png")
        rows.append({"prompt_image": f"p{i}.png", "image": f"o{i}.png"})
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cache = tmp_path / "cache"

    local = read_input(path, cache=None, image_model="pixels:8", progress=False).paired
    with execution(client):
        on_cluster = read_input(path, cache=cache, image_model="pixels:8", progress=False)
    np.testing.assert_array_equal(on_cluster.paired.prompt_embeddings, local.prompt_embeddings)
    np.testing.assert_array_equal(on_cluster.paired.output_embeddings, local.output_embeddings)
    assert sum(st["encoded"] for st in on_cluster.stats.values()) == 120
    # the workers wrote the shared cache: a second run, in this process, encodes nothing
    again = read_input(path, cache=cache, image_model="pixels:8", progress=False)
    assert sum(st["encoded"] for st in again.stats.values()) == 0
    assert sum(st["hits"] for st in again.stats.values()) == 120
    np.testing.assert_array_equal(again.paired.output_embeddings, local.output_embeddings)
    # each worker built the encoder at most once, however many chunks it ran
    built = client.run(lambda: __import__("promptprism.embed.registry", fromlist=["_BUILT"])._BUILT.copy())
    assert all(len(b) <= 1 for b in built.values())


def test_embed_cli_with_local_cluster(tmp_path, capsys):
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    rows = []
    for i in range(10):
        Image.fromarray((digits.images[i] * 255 / 16).astype(np.uint8)).save(tmp_path / f"x{i}.png")
        rows.append({"prompt_image": f"x{i}.png", "image": f"x{i}.png"})
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code = main(["embed", str(tmp_path / "m.jsonl"), "--out", str(tmp_path / "e.npz"), "--image-model",
                 "pixels:8", "--no-cache", "--workers", "2", "--quiet"])
    assert code == 0
    with np.load(tmp_path / "e.npz") as z:
        assert z["output_embeddings"].shape == (10, 8 * 8 * 3)
        np.testing.assert_array_equal(z["prompt_embeddings"], z["output_embeddings"])
    code = main(["embed", str(tmp_path / "m.jsonl"), "--out", str(tmp_path / "f.npz"), "--image-model",
                 "pixels:8", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"])
    assert code == 2
    assert "not both" in capsys.readouterr().err
    assert not (tmp_path / "f.npz").exists()
