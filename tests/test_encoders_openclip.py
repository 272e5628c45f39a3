"""open_clip checkpoints through transformers' CLIPModel: a tiny random-init checkpoint in open_clip's hub
layout (open_clip_config.json + weights with open_clip's names), and both towers recomputed here from the raw
state dict with open_clip's definitions (nn.MultiheadAttention, x @ proj): the mapping is checked by value,
not by shape. Plus the registry names, the never-download error, the cache identity and foreign weights."""

from __future__ import annotations

import json
from importlib.util import find_spec

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from promptprism.embed import get_encoder  # noqa: E402
from promptprism.embed.openclip import OPENAI_MEAN, OPENAI_STD, OpenCLIPEncoder, preprocess  # noqa: E402
from promptprism.embed.registry import clear_encoders  # noqa: E402
from promptprism.errors import OptionError  # noqa: E402

# transformers looked up, not imported, at collection (each test process would pay for it)
pytestmark = pytest.mark.skipif(find_spec("transformers") is None, reason="transformers is not installed")

WIDTH, LAYERS, PATCH, IMAGE, EMBED, TEXT_WIDTH, HEADS, CONTEXT = 32, 2, 8, 32, 16, 24, 4, 16


def _vocab() -> dict[str, int]:
    """open_clip's vocabulary order without merges: byte symbols, the same with </w>, then the start and
    end tokens (end-of-text is the largest id, which open_clip's argmax pooling relies on)."""
    from tokenizers import pre_tokenizers

    symbols = sorted(pre_tokenizers.ByteLevel.alphabet())
    words = symbols + [s + "</w>" for s in symbols] + ["<|startoftext|>", "<|endoftext|>"]
    return {w: i for i, w in enumerate(words)}


def _block(g, prefix: str, width: int) -> dict:
    return {f"{prefix}ln_1.weight": 1 + 0.1 * torch.randn(width, generator=g),
            f"{prefix}ln_1.bias": 0.1 * torch.randn(width, generator=g),
            f"{prefix}attn.in_proj_weight": torch.randn(3 * width, width, generator=g) / width ** 0.5,
            f"{prefix}attn.in_proj_bias": 0.1 * torch.randn(3 * width, generator=g),
            f"{prefix}attn.out_proj.weight": torch.randn(width, width, generator=g) / width ** 0.5,
            f"{prefix}attn.out_proj.bias": 0.1 * torch.randn(width, generator=g),
            f"{prefix}ln_2.weight": 1 + 0.1 * torch.randn(width, generator=g),
            f"{prefix}ln_2.bias": 0.1 * torch.randn(width, generator=g),
            f"{prefix}mlp.c_fc.weight": torch.randn(4 * width, width, generator=g) / width ** 0.5,
            f"{prefix}mlp.c_fc.bias": 0.1 * torch.randn(4 * width, generator=g),
            f"{prefix}mlp.c_proj.weight": torch.randn(width, 4 * width, generator=g) / (4 * width) ** 0.5,
            f"{prefix}mlp.c_proj.bias": 0.1 * torch.randn(width, generator=g)}


def open_clip_state(seed: int = 0, vocab_size: int = 514) -> dict:
    """Random weights with open_clip's names and shapes (ViT-style image tower, causal text tower)."""
    g = torch.Generator().manual_seed(seed)
    grid = (IMAGE // PATCH) ** 2
    s = {"visual.class_embedding": torch.randn(WIDTH, generator=g) / WIDTH ** 0.5,
         "visual.positional_embedding": torch.randn(grid + 1, WIDTH, generator=g) / WIDTH ** 0.5,
         "visual.conv1.weight": torch.randn(WIDTH, 3, PATCH, PATCH, generator=g) / (3 * PATCH * PATCH) ** 0.5,
         "visual.ln_pre.weight": 1 + 0.1 * torch.randn(WIDTH, generator=g),
         "visual.ln_pre.bias": 0.1 * torch.randn(WIDTH, generator=g),
         "visual.ln_post.weight": 1 + 0.1 * torch.randn(WIDTH, generator=g),
         "visual.ln_post.bias": 0.1 * torch.randn(WIDTH, generator=g),
         "visual.proj": torch.randn(WIDTH, EMBED, generator=g) / WIDTH ** 0.5,
         "token_embedding.weight": torch.randn(vocab_size, TEXT_WIDTH, generator=g) * 0.1,
         "positional_embedding": torch.randn(CONTEXT, TEXT_WIDTH, generator=g) * 0.1,
         "ln_final.weight": 1 + 0.1 * torch.randn(TEXT_WIDTH, generator=g),
         "ln_final.bias": 0.1 * torch.randn(TEXT_WIDTH, generator=g),
         "text_projection": torch.randn(TEXT_WIDTH, EMBED, generator=g) / TEXT_WIDTH ** 0.5,
         "logit_scale": torch.tensor(np.log(1 / 0.07), dtype=torch.float32)}
    for i in range(LAYERS):
        s.update(_block(g, f"visual.transformer.resblocks.{i}.", WIDTH))
        s.update(_block(g, f"transformer.resblocks.{i}.", TEXT_WIDTH))
    return s


def write_open_clip(folder, *, seed: int = 0, safetensors: bool = True, tokenizer: bool = True,
                    quick_gelu: bool = False, **preprocess_cfg):
    """A tiny open_clip checkpoint folder in the hub layout; returns (folder, state dict)."""
    from transformers import CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = _vocab()
    cfg = {"model_cfg": {"embed_dim": EMBED, "quick_gelu": quick_gelu,
                         "vision_cfg": {"image_size": IMAGE, "layers": LAYERS, "width": WIDTH,
                                        "patch_size": PATCH, "head_width": WIDTH // HEADS},
                         "text_cfg": {"context_length": CONTEXT, "vocab_size": len(vocab),
                                      "width": TEXT_WIDTH, "heads": HEADS, "layers": LAYERS}},
           "preprocess_cfg": {"mean": list(OPENAI_MEAN), "std": list(OPENAI_STD), **preprocess_cfg}}
    (folder / "open_clip_config.json").write_text(json.dumps(cfg))
    state = open_clip_state(seed, len(vocab))
    if safetensors:
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in state.items()}, str(folder / "open_clip_model.safetensors"))
    else:
        torch.save(state, folder / "open_clip_pytorch_model.bin")
    if tokenizer:
        CLIPTokenizer(vocab=vocab, merges=[]).save_pretrained(folder)
    return folder, state


# ---- open_clip's forward, from the raw state dict ----------------------------------------------------

def _ln(x, s, p):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], s[p + ".weight"], s[p + ".bias"], eps=1e-5)


def _blocks(x, s, prefix, *, width, mask=None, quick_gelu=False):
    act = (lambda t: t * torch.sigmoid(1.702 * t)) if quick_gelu else torch.nn.functional.gelu
    for i in range(LAYERS):
        p = f"{prefix}{i}."
        mha = torch.nn.MultiheadAttention(width, HEADS, batch_first=True)
        mha.load_state_dict({"in_proj_weight": s[p + "attn.in_proj_weight"],
                             "in_proj_bias": s[p + "attn.in_proj_bias"],
                             "out_proj.weight": s[p + "attn.out_proj.weight"],
                             "out_proj.bias": s[p + "attn.out_proj.bias"]})
        h = _ln(x, s, p + "ln_1")
        x = x + mha(h, h, h, need_weights=False, attn_mask=mask)[0]
        h = _ln(x, s, p + "ln_2")
        h = torch.nn.functional.linear(act(torch.nn.functional.linear(h, s[p + "mlp.c_fc.weight"],
                                                                      s[p + "mlp.c_fc.bias"])),
                                       s[p + "mlp.c_proj.weight"], s[p + "mlp.c_proj.bias"])
        x = x + h
    return x


def open_clip_image_features(s, pixels, *, quick_gelu=False):
    x = torch.nn.functional.conv2d(pixels, s["visual.conv1.weight"], stride=PATCH)  # (n, w, g, g)
    x = x.flatten(2).transpose(1, 2)
    cls = s["visual.class_embedding"].expand(x.shape[0], 1, -1)
    x = torch.cat([cls, x], 1) + s["visual.positional_embedding"]
    x = _blocks(_ln(x, s, "visual.ln_pre"), s, "visual.transformer.resblocks.", width=WIDTH,
                quick_gelu=quick_gelu)
    return _ln(x[:, 0], s, "visual.ln_post") @ s["visual.proj"]


def open_clip_text_features(s, ids):
    n = ids.shape[1]
    x = s["token_embedding.weight"][ids] + s["positional_embedding"][:n]
    mask = torch.full((n, n), float("-inf")).triu(1)
    x = _ln(_blocks(x, s, "transformer.resblocks.", width=TEXT_WIDTH, mask=mask), s, "ln_final")
    return x[torch.arange(ids.shape[0]), ids.argmax(-1)] @ s["text_projection"]


# ---- tests ------------------------------------------------------------------------------------------

def _images(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (40, 30, 3), dtype=np.uint8) for _ in range(n)] + [
        rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)]


@pytest.mark.slow
@pytest.mark.parametrize("quick_gelu", [False, True])
def test_image_tower_reproduces_open_clips_forward_from_the_raw_weights(tmp_path, quick_gelu):
    folder, state = write_open_clip(tmp_path / "oc", quick_gelu=quick_gelu)
    enc = OpenCLIPEncoder(folder, device="cpu", batch_size=2, normalize=False)
    images = _images()
    got = enc.encode_images(images)
    pixels = torch.from_numpy(preprocess(images, size=IMAGE))
    with torch.no_grad():
        want = open_clip_image_features(state, pixels, quick_gelu=quick_gelu).numpy()
    assert got.shape == (4, EMBED) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert np.abs(want[0] - want[1]).max() > 0.05  # the check can fail: images give different features


@pytest.mark.slow
def test_text_tower_reproduces_open_clips_forward_at_the_end_of_text_token(tmp_path):
    folder, state = write_open_clip(tmp_path / "oc", safetensors=False)
    enc = OpenCLIPEncoder(folder, device="cpu", batch_size=2, normalize=False)
    assert enc.modalities == {"image", "text"}
    texts = ["a photo of a cat", "dog", "an image of a rather long sentence that is cut"]
    got = enc.encode_texts(texts)
    vocab = _vocab()
    for text, row in zip(texts, got, strict=True):
        words = [vocab[c + "</w>" if j == len(w) - 1 else c] for w in text.split() for j, c in enumerate(w)]
        ids = [vocab["<|startoftext|>"], *words[:CONTEXT - 2], vocab["<|endoftext|>"]]
        with torch.no_grad():
            want = open_clip_text_features(state, torch.tensor([ids]))[0].numpy()
        np.testing.assert_allclose(row, want, rtol=1e-4, atol=1e-5)
    normed = OpenCLIPEncoder(folder, device="cpu").encode_texts(texts[:1])
    np.testing.assert_allclose(normed[0], got[0] / np.linalg.norm(got[0]), rtol=1e-5)


def test_preprocessing_shortest_side_crop_and_openai_normalisation():
    flat = np.zeros((48, 32, 3), np.uint8)
    flat[...] = (255, 128, 0)
    x = preprocess([flat], size=32)
    want = (np.array([255, 128, 0]) / 255.0 - np.array(OPENAI_MEAN)) / np.array(OPENAI_STD)
    np.testing.assert_allclose(x[0].transpose(1, 2, 0), np.broadcast_to(want, (32, 32, 3)), atol=1e-5)
    ramp = np.repeat(np.arange(64, dtype=np.uint8)[:, None], 32, axis=1)  # 64 rows x 32 columns
    y = preprocess([ramp], size=32, mean=(0, 0, 0), std=(1, 1, 1))[0, 0]
    assert y.shape == (32, 32) and np.allclose(y, y[:, :1])  # only the long side is resized
    assert abs(y[:, 0].mean() * 255 - ramp.mean()) < 1.5  # centre crop keeps the middle


@pytest.mark.slow  # loads transformers' CLIP classes (~2 s of imports a test process): the slow tier
def test_registry_names_and_the_clip_model_option(tmp_path):
    folder, _ = write_open_clip(tmp_path / "oc")
    clear_encoders()
    by_name = get_encoder(f"open_clip:{folder}", modality="image", device="cpu")
    assert isinstance(by_name, OpenCLIPEncoder)
    assert isinstance(get_encoder(str(folder), modality="text", device="cpu"), OpenCLIPEncoder)  # a folder
    as_clip = get_encoder("clip", modality="text", clip_model=f"open_clip:{folder}", device="cpu")
    assert isinstance(as_clip, OpenCLIPEncoder)
    image_only, _ = write_open_clip(tmp_path / "no_tok", tokenizer=False)
    with pytest.raises(OptionError, match="embeds image"):
        get_encoder(f"open_clip:{image_only}", modality="text", device="cpu")
    clear_encoders()


@pytest.mark.slow  # loads transformers' CLIP classes (~2 s of imports a test process): the slow tier
def test_identity_names_weights_and_preprocessing(tmp_path):
    a, _ = write_open_clip(tmp_path / "a", seed=0)
    b, _ = write_open_clip(tmp_path / "b", seed=1)
    c, _ = write_open_clip(tmp_path / "c", seed=0, mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])
    ids = {OpenCLIPEncoder(p).identity for p in (a, b, c)}
    assert len(ids) == 3 and all(i.startswith("open_clip-") for i in ids)
    assert "shortest32-bicubic" in OpenCLIPEncoder(a).identity
    assert OpenCLIPEncoder(a, normalize=False).identity != OpenCLIPEncoder(a).identity


def test_not_in_the_cache_is_never_downloaded(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(OptionError) as e:
        get_encoder("open_clip:hf-hub:laion/CLIP-ViT-B-32-laion2B-s34B-b79K", modality="image", device="cpu")
    assert "\n" not in str(e.value) and "nothing is downloaded" in str(e.value)
    assert not (tmp_path / "hub").exists() or not any((tmp_path / "hub").rglob("*.safetensors"))


@pytest.mark.slow  # loads transformers' CLIP classes (~2 s of imports a test process): the slow tier
def test_foreign_weights_and_other_architectures_fail_with_one_line(tmp_path):
    folder, state = write_open_clip(tmp_path / "oc")
    from safetensors.torch import save_file

    bad = dict(state)
    bad["visual.transformer.resblocks.0.ls_1.gamma"] = torch.ones(WIDTH)  # layer scale: not CLIP
    del bad["visual.ln_post.weight"]
    save_file({k: v.contiguous() for k, v in bad.items()}, str(folder / "open_clip_model.safetensors"))
    with pytest.raises(OptionError) as e:
        OpenCLIPEncoder(folder).encode_images(_images(1))
    msg = str(e.value)
    assert "\n" not in msg and "missing vision_model.post_layernorm.weight" in msg and "ls_1.gamma" in msg
    cfg = json.loads((folder / "open_clip_config.json").read_text())
    cfg["model_cfg"]["vision_cfg"]["timm_model_name"] = "vit_base_patch16_siglip_224"
    (folder / "open_clip_config.json").write_text(json.dumps(cfg))
    with pytest.raises(OptionError, match="timm_model_name"):
        OpenCLIPEncoder(folder)
    (folder / "open_clip_config.json").unlink()
    with pytest.raises(OptionError, match="open_clip_config.json"):
        OpenCLIPEncoder(folder)


@pytest.mark.slow
def test_compcon_reads_an_open_clip_checkpoint_in_one_space(tmp_path):
    from promptprism.methods.compcon.embedding import LazyClip

    folder, state = write_open_clip(tmp_path / "oc")
    clip = LazyClip(f"open_clip:{folder}")  # not mistaken for module:factory
    images = _images(2)
    got = clip.embed_images(images)
    with torch.no_grad():
        want = open_clip_image_features(state, torch.from_numpy(preprocess(images, size=IMAGE))).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)  # raw features, as CompCon expects
    assert clip.embed_texts(["a cat", "a dog"]).shape == (2, EMBED)


@pytest.mark.slow
def test_without_tokenizer_files_the_openai_vocabulary_comes_from_the_local_cache(tmp_path, monkeypatch):
    """A folder with only open_clip's two files and OpenAI's vocabulary size borrows the cached
    openai/clip-vit-base-patch32 tokenizer (the identity names it); without it, images only."""
    from transformers import CLIPTokenizer

    from promptprism.embed.openclip import OPENAI_TOKENIZER

    folder = tmp_path / "oc"
    folder.mkdir()
    cfg = {"model_cfg": {"embed_dim": EMBED,
                         "vision_cfg": {"image_size": IMAGE, "layers": LAYERS, "width": WIDTH,
                                        "patch_size": PATCH, "head_width": WIDTH // HEADS},
                         "text_cfg": {"context_length": CONTEXT, "vocab_size": 49408, "width": TEXT_WIDTH,
                                      "heads": HEADS, "layers": LAYERS}}}
    (folder / "open_clip_config.json").write_text(json.dumps(cfg))
    state = open_clip_state(0, 49408)
    torch.save(state, folder / "open_clip_pytorch_model.bin")
    import huggingface_hub.constants

    hub = tmp_path / "hub"
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))  # read at each lookup
    assert OpenCLIPEncoder(folder).modalities == {"image"}  # nothing cached yet
    repo = hub / f"models--{OPENAI_TOKENIZER.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    CLIPTokenizer(vocab=_vocab(), merges=[]).save_pretrained(repo / "snapshots" / ("0" * 40))
    enc = OpenCLIPEncoder(folder, normalize=False)
    assert enc.modalities == {"image", "text"} and "-tok" in enc.identity
    got = enc.encode_texts(["a cat"])
    vocab = _vocab()
    ids = [vocab["<|startoftext|>"], vocab["a</w>"], vocab["c"], vocab["a"], vocab["t</w>"],
           vocab["<|endoftext|>"]]
    with torch.no_grad():
        want = open_clip_text_features(state, torch.tensor([ids]))[0].numpy()
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-5)
