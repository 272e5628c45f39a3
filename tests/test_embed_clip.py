"""The CLIP path: a tiny random CLIPModel saved to a folder and loaded by path, on real images."""

from __future__ import annotations

import json
from importlib.util import find_spec

import numpy as np
import pytest
from PIL import Image

from _embed_helpers import (  # noqa: F401 - fixtures
    fresh_memory_cache_fixture,
    hash_encoder_fixture,
    isolated_cache_fixture,
    run_cli,
)
from _tiny_clip import build_tiny_clip

# transformers looked up, not imported, at collection (each test process would pay for it)
pytestmark = [pytest.mark.slow,  # minutes in all: run by `make test` / CI, not by -m 'not slow'
              pytest.mark.skipif(any(find_spec(m) is None for m in ("torch", "transformers")),
                                 reason="torch and transformers are needed")]

skdata = pytest.importorskip("skimage.data")


@pytest.fixture(scope="session")
def clip_dir(tmp_path_factory):
    return build_tiny_clip(tmp_path_factory.mktemp("tiny-clip") / "clip")


@pytest.fixture(scope="session")
def images(tmp_path_factory):
    """Real photographs from scikit-image (camera is grayscale) and scikit-learn's digits, as PNG files."""
    from sklearn.datasets import load_digits

    folder = tmp_path_factory.mktemp("imgs")
    paths = {}
    for name in ("astronaut", "coffee", "chelsea", "camera"):
        img = getattr(skdata, name)()
        paths[name] = folder / f"{name}.png"
        Image.fromarray(img).save(paths[name])
    digits = load_digits()
    for k in range(4):
        arr = (digits.images[k] / 16.0 * 255).astype(np.uint8)
        paths[f"digit{k}"] = folder / f"digit{k}.png"
        Image.fromarray(np.kron(arr, np.ones((4, 4), dtype=np.uint8))).save(paths[f"digit{k}"])
    return paths


def test_clip_by_path_shapes_normalisation_determinism(clip_dir, images):
    from promptprism.embed import get_encoder
    from promptprism.embed.clip import CLIPEncoder

    enc = get_encoder(str(clip_dir), modality="image", device="cpu")  # a local folder, through the registry
    assert isinstance(enc, CLIPEncoder)
    files = [images[k] for k in ("astronaut", "coffee", "chelsea", "camera", "digit0", "digit1")]
    e = enc.encode_images(files)
    assert e.dtype == np.float32 and e.shape == (6, 16)
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    assert np.linalg.matrix_rank(e) > 1 and not np.allclose(e[0], e[1])  # different images, different rows
    # deterministic, independent of batching and of how the image is given (path, array)
    again = CLIPEncoder(clip_dir, device="cpu", batch_size=2).encode_images(
        [np.asarray(Image.open(f).convert("RGB")) for f in files])
    np.testing.assert_allclose(again, e, atol=1e-5)
    t = enc.encode_texts(["an astronaut", "a cup of coffee", "a cat"])
    assert t.shape == (3, 16) and t.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0, atol=1e-5)
    # the named entry with --clip-model resolves to the same model and identity
    named = get_encoder("clip", modality="image", clip_model=str(clip_dir), device="cpu")
    assert named.identity == enc.identity
    np.testing.assert_allclose(named.encode_images(files[:2]), e[:2], atol=1e-6)


def test_clip_loaded_path_matches_the_saved_model(clip_dir, images):
    """The registry loads exactly the saved weights (compare with transformers directly)."""
    import torch
    from transformers import CLIPModel, CLIPProcessor

    from promptprism.embed import get_encoder

    model = CLIPModel.from_pretrained(str(clip_dir), local_files_only=True).eval()
    proc = CLIPProcessor.from_pretrained(str(clip_dir), local_files_only=True)
    with torch.inference_mode():
        out = model.get_image_features(**proc(images=[Image.open(images["coffee"]).convert("RGB")],
                                              return_tensors="pt"))
    ref = getattr(out, "pooler_output", out).numpy()[0]
    ref = ref / np.linalg.norm(ref)
    got = get_encoder("clip", modality="image", clip_model=str(clip_dir), device="cpu").encode_images(
        [images["coffee"]])[0]
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_text_to_image_and_image_to_text_manifests(clip_dir, images, tmp_path, capsys):
    rows = [{"prompt": f"a photo of {k}", "image": str(p)} for k, p in images.items()]
    t2i = tmp_path / "t2i.jsonl"
    t2i.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "t2i.npz"
    rc, _, err = run_cli(capsys, ["embed", t2i, "--out", out, "--text-model", "clip", "--image-model",
                                  "clip", "--clip-model", clip_dir, "--cache", tmp_path / "c",
                                  "--device", "cpu", "-q"])
    assert rc == 0, err
    assert "mode L; converted to RGB" in err  # the grayscale camera image
    with np.load(out) as z:
        assert z["prompt_embeddings"].shape == (8, 16) and z["output_embeddings"].shape == (8, 16)
        assert str(z["prompt_encoder"]) == str(z["output_encoder"])  # one joint CLIP space

    # captioning: the prompt is an image, the output a caption
    cap = tmp_path / "cap.csv"
    cap.write_text("prompt_image,output\n" + "".join(f"{p},a caption of {k}\n" for k, p in images.items()))
    from promptprism.data import InputNote, load_input

    with pytest.warns(InputNote, match="camera.png' has mode L; converted to RGB"):
        ps = load_input(cap, text_model="clip", clip_model=str(clip_dir), cache=tmp_path / "c", device="cpu")
    assert ps.prompt_embeddings.shape == (8, 16) and ps.outputs[0] == "a caption of astronaut"
    with np.load(out) as z:  # the same images, embedded as prompts here, as outputs there (via the cache)
        np.testing.assert_allclose(ps.prompt_embeddings, z["output_embeddings"], atol=1e-6)


def test_split_on_image_manifests_with_clip(clip_dir, images, tmp_path, capsys):
    for m, keys in (("a", list(images)), ("b", list(images)[::-1])):
        rows = [{"prompt": f"picture {i}", "image": str(images[k])} for i, k in enumerate(keys)]
        (tmp_path / f"{m}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rc, _, err = run_cli(capsys, ["split", tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--out",
                                  tmp_path / "r", "--clip-model", clip_dir, "--cache", tmp_path / "c", "-q"])
    assert rc == 0, err
    assert json.loads((tmp_path / "r" / "result.json").read_text())["n_reference"] == 8


def test_clip_model_that_is_not_there(tmp_path, capsys):
    p = tmp_path / "m.jsonl"
    p.write_text('{"prompt": "x", "output": "y"}\n')
    rc, _, err = run_cli(capsys, ["embed", p, "--out", tmp_path / "o.npz", "--text-model", "clip",
                                  "--clip-model", "no-such-org/no-such-clip", "-q"])
    assert rc == 2 and "not in the local Hugging Face cache" in err and not (tmp_path / "o.npz").exists()
