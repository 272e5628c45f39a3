"""DINOv2 and SigLIP image encoders from local folders, tested with tiny randomly initialised checkpoints
written here with ``save_pretrained`` (no weights ship in a package; nothing is downloaded)."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

from promptprism.embed import get_encoder
from promptprism.embed.hf_vision import VisionEncoder
from promptprism.embed.registry import clear_encoders
from promptprism.errors import OptionError

# transformers looked up here and imported where used: importing it at collection costs every test process
pytestmark = [pytest.mark.slow,  # minutes in all: run by `make test` / CI, not by -m 'not slow'
              pytest.mark.skipif(any(find_spec(m) is None for m in ("torch", "transformers")),
                                 reason="torch and transformers are needed")]


def _processor():
    import transformers

    return transformers.BitImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32},
                                          do_convert_rgb=True)


def tiny_dinov2(folder, seed=0):
    import torch
    import transformers

    cfg = transformers.Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=64, image_size=32, patch_size=8)
    torch.manual_seed(seed)
    transformers.Dinov2Model(cfg).eval().save_pretrained(folder)
    _processor().save_pretrained(folder)
    return folder


def tiny_siglip(folder, seed=0):
    import torch
    import transformers

    cfg = transformers.SiglipConfig(
        text_config=dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, max_position_embeddings=16),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                           image_size=32, patch_size=8))
    torch.manual_seed(seed)
    transformers.SiglipModel(cfg).eval().save_pretrained(folder)
    transformers.SiglipImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder


def _images(n=4, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (40, 30, 3), dtype=np.uint8) for _ in range(n)]


@pytest.mark.parametrize("build,kind", [(tiny_dinov2, "dinov2"), (tiny_siglip, "siglip")])
def test_tiny_checkpoint_embeds_images_offline(tmp_path, build, kind):
    clear_encoders()
    folder = build(tmp_path / kind)
    enc = get_encoder(str(folder), modality="image", device="cpu", batch_size=3)
    assert isinstance(enc, VisionEncoder) and enc.kind == kind and enc.modalities == {"image"}
    imgs = _images()
    f = enc.encode_images(imgs + imgs[:1])
    assert f.shape == (5, 32) and f.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(f, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(f[0], f[4], atol=1e-5)  # batching does not change an image's features
    assert not np.allclose(f[0], f[1])
    # same checkpoint through the prefixed name: same identity; other weights: another identity (cache key)
    same = get_encoder(f"{kind}:{folder}", modality="image", device="cpu", batch_size=3)
    assert same.identity == enc.identity and enc.identity.startswith(kind)
    other = VisionEncoder(build(tmp_path / f"{kind}-2", seed=1))
    assert other.identity != enc.identity
    with pytest.raises(OptionError, match="images only"):
        enc.encode_texts(["a cat"])


def test_not_in_cache_is_never_downloaded(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(OptionError, match="not a local folder and not in the local Hugging Face cache"):
        get_encoder("dinov2:facebook/dinov2-small", modality="image", device="cpu")
    with pytest.raises(OptionError, match="model_type 'dinov2'; expected siglip"):
        VisionEncoder(tiny_dinov2(tmp_path / "d"), kind="siglip")
