"""The transformers-CLIP adapter on a tiny, randomly initialised CLIP saved to a temporary folder (no
download).

It checks the plumbing (local loading, batching, shapes, determinism), not what CLIP knows."""

from __future__ import annotations

import json
from importlib.util import find_spec

import numpy as np
import pytest
from PIL import Image

from promptprism import InputError
from promptprism.methods.compcon import TransformersClip, similarity_matrix

# looked up, not imported: transformers is imported by the fixture that uses it, not by every test process
pytestmark = pytest.mark.skipif(any(find_spec(m) is None for m in ("torch", "transformers")),
                                reason="torch and transformers are needed")


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    import torch
    import transformers

    torch.manual_seed(0)
    d = tmp_path_factory.mktemp("tiny-clip")
    chars = [chr(c) for c in range(33, 127)]
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    (d / "vocab.json").write_text(json.dumps(vocab))
    (d / "merges.txt").write_text("#version: 0.2\n")
    tok = transformers.CLIPTokenizer(str(d / "vocab.json"), str(d / "merges.txt"))
    proc = transformers.CLIPProcessor(
        image_processor=transformers.CLIPImageProcessor(
            size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
        ),
        tokenizer=tok,
    )
    cfg = transformers.CLIPConfig(
        text_config=dict(
            vocab_size=len(vocab),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_position_embeddings=64,
            bos_token_id=vocab["<|startoftext|>"],
            eos_token_id=vocab["<|endoftext|>"],
        ),
        vision_config=dict(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=32,
            patch_size=8,
        ),
        projection_dim=8,
    )
    transformers.CLIPModel(cfg).save_pretrained(d)
    proc.save_pretrained(d)
    return d


@pytest.mark.slow  # loads transformers' CLIP classes (~2 s of imports a test process): the slow tier
def test_tiny_clip_embeds_images_and_texts(tiny_clip):
    clip = TransformersClip(str(tiny_clip), batch_size=2)
    imgs = [Image.new("RGB", (40, 30), c) for c in ("red", "blue", "red")]
    e_img = clip.embed_images(imgs)
    e_txt = clip.embed_texts(["a cat", "fog", "a cat"])
    assert e_img.shape == (3, 8) and e_txt.shape == (3, 8)
    assert np.isfinite(e_img).all() and np.isfinite(e_txt).all()
    np.testing.assert_allclose(e_img[0], e_img[2], rtol=1e-5, atol=1e-6)  # batching does not change results
    np.testing.assert_allclose(e_txt[0], e_txt[2], rtol=1e-5, atol=1e-6)
    assert not np.allclose(e_img[0], e_img[1])
    assert similarity_matrix(e_img, e_txt).shape == (3, 3)


def test_missing_local_model_is_a_clear_input_error(tmp_path):
    with pytest.raises(InputError, match="local files"):
        TransformersClip(str(tmp_path / "no-such-model"))
