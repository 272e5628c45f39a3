"""The FID Inception-v3 loader: a random-init checkpoint saved in the real file's layout loads strictly
through the registry (a local path, or the torch hub cache), pytorch-fid's preprocessing against a hand
computation, deterministic 2048-d features, the identity, and one clear line for absent or foreign weights."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from promptprism.embed import get_encoder  # noqa: E402
from promptprism.embed.inception import InceptionEncoder, build_fid_inception, preprocess  # noqa: E402
from promptprism.embed.registry import clear_encoders  # noqa: E402
from promptprism.errors import OptionError  # noqa: E402

FILE = "pt_inception-2015-12-05-6726825d.pth"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A random FID Inception (conv weights scaled so activations neither vanish nor explode, batch-norm
    statistics random) saved as the hub cache's file name; the state dict is returned too."""
    torch.manual_seed(0)
    net = build_fid_inception()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.Conv2d):
                torch.nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            elif isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
    state = {k: v for k, v in net.state_dict().items() if not k.endswith("num_batches_tracked")}
    folder = tmp_path_factory.mktemp("hub") / "hub" / "checkpoints"
    folder.mkdir(parents=True)
    torch.save(state, folder / FILE)
    return folder / FILE, state


def _bilinear(img: np.ndarray, size: int) -> np.ndarray:
    """Bilinear resize with half-pixel centres (align_corners=False), by hand."""
    h, w = img.shape[:2]

    def taps(n_in: int):
        src = np.maximum((np.arange(size) + 0.5) * n_in / size - 0.5, 0.0)
        lo = np.minimum(np.floor(src).astype(int), n_in - 1)
        return lo, np.minimum(lo + 1, n_in - 1), src - lo

    y0, y1, fy = taps(h)
    x0, x1, fx = taps(w)
    top = img[y0][:, x0] * (1 - fx)[None, :, None] + img[y0][:, x1] * fx[None, :, None]
    bottom = img[y1][:, x0] * (1 - fx)[None, :, None] + img[y1][:, x1] * fx[None, :, None]
    return top * (1 - fy)[:, None, None] + bottom * fy[:, None, None]


def test_preprocessing_is_bilinear_299_then_minus_one_to_one():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    x = preprocess([img, np.full((299, 299, 3), 51, np.uint8)])
    assert x.shape == (2, 3, 299, 299) and x.dtype == np.float32
    by_hand = 2.0 * _bilinear(img.astype(np.float64) / 255.0, 299) - 1.0
    np.testing.assert_allclose(x[0].transpose(1, 2, 0), by_hand, atol=1e-5)
    np.testing.assert_allclose(x[1], 2 * 51 / 255 - 1, atol=1e-6)  # 299 x 299 is not resampled
    assert x.min() >= -1.0 and x.max() <= 1.0


def test_checkpoint_layout_matches_the_fid_network(checkpoint):
    _, state = checkpoint
    assert len(state) == 472  # 94 conv + batch-norm layers (conv weight + 4 batch-norm tensors) + fc
    assert state["fc.weight"].shape == (1008, 2048)
    assert state["Mixed_7c.branch_pool.conv.weight"].shape == (192, 2048, 1, 1)
    assert state["Mixed_6e.branch7x7dbl_5.conv.weight"].shape == (192, 192, 1, 7)
    assert "AuxLogits.fc.weight" not in state


@pytest.mark.slow
def test_loads_strictly_through_the_registry_and_gives_deterministic_2048d_features(checkpoint, monkeypatch):
    path, _ = checkpoint
    monkeypatch.setenv("TORCH_HOME", str(path.parents[2]))  # TORCH_HOME/hub/checkpoints/FILE
    clear_encoders()
    enc = get_encoder("inception", modality="image", device="cpu", batch_size=2)
    assert isinstance(enc, InceptionEncoder) and enc.weights == path
    rng = np.random.default_rng(1)
    images = [rng.integers(0, 256, (64, 48, 3), dtype=np.uint8), rng.integers(0, 256, (299, 299, 3),
                                                                              dtype=np.uint8),
              np.zeros((20, 20), np.uint8)]
    f = enc.encode_images(images)
    assert f.shape == (3, 2048) and f.dtype == np.float32 and np.isfinite(f).all()
    assert (f >= 0).all() and (f > 0).mean() > 0.3  # a pool of ReLUs: non-negative, not all dead
    assert np.abs(f[0] - f[1]).max() > 1e-3 * np.abs(f).max()  # different images, different features
    np.testing.assert_array_equal(enc.encode_images(images[:1]), f[:1])  # deterministic, batch-independent
    # the same numbers from the network run by hand on the hand-made input (nothing else in between)
    net = build_fid_inception().eval()
    net.load_state_dict(torch.load(path, weights_only=True), strict=True)
    with torch.no_grad():
        x = torch.from_numpy(2.0 * _bilinear(images[0].astype(np.float64) / 255.0, 299) - 1.0)
        ref = net.features(x.permute(2, 0, 1)[None].float()).numpy()
    np.testing.assert_allclose(f[:1], ref, rtol=1e-3, atol=1e-4 * np.abs(ref).max())
    same = get_encoder(f"inception:{path}", modality="image", device="cpu")
    assert same.identity == enc.identity  # the weights' hash, not where they lie
    clear_encoders()


def test_identity_names_the_weights_hash_and_the_preprocessing(checkpoint, tmp_path):
    path, state = checkpoint
    enc = InceptionEncoder(path)
    assert enc.identity.startswith("fid-inception-v3-") and "bilinear299" in enc.identity
    assert "pm1" in enc.identity and "pool2048" in enc.identity
    # the identity hashes the file: any other bytes under the hub's name are other weights (a one-tensor
    # file here, not another 95 MB copy of the network's)
    torch.save({"fc.bias": state["fc.bias"] + 1.0}, tmp_path / FILE)
    assert InceptionEncoder(tmp_path).identity != enc.identity  # other weights, other cache entries


def test_missing_or_renamed_key_fails_with_one_clear_line(checkpoint, tmp_path):
    _, state = checkpoint
    # the keys are checked before any tensor is read: a one-number tensor under each key keeps the files
    # small (the real tensors would write 2 x 95 MB)
    state = {k: torch.zeros(1) for k in state}
    missing = {k: v for k, v in state.items() if k != "Mixed_7c.branch_pool.conv.weight"}
    torch.save(missing, tmp_path / "missing.pth")
    with pytest.raises(OptionError) as e:
        InceptionEncoder(tmp_path / "missing.pth").model()
    msg = str(e.value)
    assert "\n" not in msg and "missing.pth" in msg and "missing Mixed_7c.branch_pool.conv.weight" in msg
    renamed = {k.replace("Mixed_5b.", "Mixed_5x."): v for k, v in state.items()}
    torch.save(renamed, tmp_path / "renamed.pth")
    with pytest.raises(OptionError, match=r"unexpected Mixed_5x\.") as e:
        InceptionEncoder(tmp_path / "renamed.pth").model()
    assert "\n" not in str(e.value) and "missing Mixed_5b." in str(e.value)
    (tmp_path / "junk.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(OptionError, match="cannot read") as e:
        InceptionEncoder(tmp_path / "junk.pth").model()
    assert "\n" not in str(e.value)


def test_absent_weights_name_where_they_were_looked_for_and_nothing_is_downloaded(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    clear_encoders()
    with pytest.raises(OptionError) as e:
        get_encoder("inception", modality="image", device="cpu")
    msg = str(e.value)
    assert "\n" not in msg and str(tmp_path / "torch" / "hub" / "checkpoints") in msg
    assert "nothing is downloaded" in msg
    assert not (tmp_path / "torch").exists()  # no download attempted, nothing created
    with pytest.raises(OptionError, match="empty"):
        get_encoder(f"inception:{tmp_path / 'empty'}", modality="image", device="cpu")
    with pytest.raises(OptionError, match="embeds image"):
        InceptionEncoder.__new__(InceptionEncoder).encode_texts(["a"])
