"""FID Inception-v3 image encoder: the 2048-d pool features that FID (Heusel et al. 2017) is computed on.

The network is the TensorFlow Inception-v3 of the FID reference code ("inception-2015-12-05"), ported to
torch as ``pt_inception-2015-12-05-<hash>.pth`` (pytorch-fid's weights). It is
torchvision's Inception3 layout (1008 classes, no auxiliary head) with the FID-specific blocks: the average
pools inside Mixed_5b-5d, Mixed_6b-6e and Mixed_7b ignore the zero padding (TensorFlow's convention), and
Mixed_7c pools with a 3 x 3 max instead of an average. It is written here in plain torch (torchvision has
no build matching the pinned CPU torch); module names follow the checkpoint, which loads with
``strict=True``.

Weights are never downloaded: ``inception`` looks in the torch hub cache
(``$TORCH_HOME/hub/checkpoints/pt_inception-2015-12-05-*.pth``, ``TORCH_HOME`` defaulting to
``~/.cache/torch``), ``inception:PATH`` reads a ``.pth`` file or a folder holding one.

Preprocessing (pytorch-fid's, part of the identity): RGB in [0, 1], bilinear resize to 299 x 299
(``align_corners=False``, no antialiasing), then ``2 x - 1`` (range [-1, 1]). The features are the global
average pool after Mixed_7c, float32, NOT normalised (FID's convention).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import OptionError
from .base import ImageLike, fold_batchnorm, load_strictly, read_state_dict, to_rgb
from .efficientnet import _file_hash

WEIGHTS_GLOB = "pt_inception-2015-12-05-*.pth"
INPUT_SIZE = 299
FEATURE_DIM = 2048
NUM_CLASSES = 1008


def hub_checkpoints_dir() -> Path:
    """The torch hub's checkpoint folder (``$TORCH_HOME/hub/checkpoints``; nothing is downloaded)."""
    import torch

    return Path(torch.hub.get_dir()) / "checkpoints"


def find_weights(where: str | Path | None = None) -> Path:
    """The FID Inception weight file: ``where`` (a .pth file, or a folder holding ``pt_inception-...pth``),
    else the torch hub cache. An OptionError names the places looked in when there is none."""
    folder = hub_checkpoints_dir() if where is None else Path(where).expanduser()
    if where is not None and folder.is_file():
        return folder
    found = sorted(folder.glob(WEIGHTS_GLOB)) if folder.is_dir() else []
    if not found:
        raise OptionError(f"image_model inception: no FID Inception weights ({WEIGHTS_GLOB}) in "
                          f"{str(folder)!r}; nothing is downloaded: put pytorch-fid's "
                          f"pt_inception-2015-12-05-6726825d.pth there or pass inception:PATH")
    return found[-1]


def build_fid_inception():
    """An untrained FID Inception-v3 (torch ``nn.Module``) whose parameter names match the checkpoint;
    ``features(x)`` maps (n, 3, 299, 299) inputs in [-1, 1] to (n, 2048) pool features."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    class BasicConv2d(nn.Module):
        def __init__(self, cin: int, cout: int, kernel, stride=1, padding=0) -> None:
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, bias=False)
            self.bn = nn.BatchNorm2d(cout, eps=0.001)

        def forward(self, x):
            return F.relu(self.bn(self.conv(x)))

    def avg_pool(x):  # TensorFlow's: the padded zeros do not count
        return F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)

    class InceptionA(nn.Module):
        def __init__(self, cin: int, pool_features: int) -> None:
            super().__init__()
            self.branch1x1 = BasicConv2d(cin, 64, 1)
            self.branch5x5_1 = BasicConv2d(cin, 48, 1)
            self.branch5x5_2 = BasicConv2d(48, 64, 5, padding=2)
            self.branch3x3dbl_1 = BasicConv2d(cin, 64, 1)
            self.branch3x3dbl_2 = BasicConv2d(64, 96, 3, padding=1)
            self.branch3x3dbl_3 = BasicConv2d(96, 96, 3, padding=1)
            self.branch_pool = BasicConv2d(cin, pool_features, 1)

        def forward(self, x):
            return torch.cat([self.branch1x1(x), self.branch5x5_2(self.branch5x5_1(x)),
                              self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
                              self.branch_pool(avg_pool(x))], 1)

    class InceptionB(nn.Module):
        def __init__(self, cin: int) -> None:
            super().__init__()
            self.branch3x3 = BasicConv2d(cin, 384, 3, stride=2)
            self.branch3x3dbl_1 = BasicConv2d(cin, 64, 1)
            self.branch3x3dbl_2 = BasicConv2d(64, 96, 3, padding=1)
            self.branch3x3dbl_3 = BasicConv2d(96, 96, 3, stride=2)

        def forward(self, x):
            return torch.cat([self.branch3x3(x),
                              self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
                              F.max_pool2d(x, 3, stride=2)], 1)

    class InceptionC(nn.Module):
        def __init__(self, cin: int, c7: int) -> None:
            super().__init__()
            self.branch1x1 = BasicConv2d(cin, 192, 1)
            self.branch7x7_1 = BasicConv2d(cin, c7, 1)
            self.branch7x7_2 = BasicConv2d(c7, c7, (1, 7), padding=(0, 3))
            self.branch7x7_3 = BasicConv2d(c7, 192, (7, 1), padding=(3, 0))
            self.branch7x7dbl_1 = BasicConv2d(cin, c7, 1)
            self.branch7x7dbl_2 = BasicConv2d(c7, c7, (7, 1), padding=(3, 0))
            self.branch7x7dbl_3 = BasicConv2d(c7, c7, (1, 7), padding=(0, 3))
            self.branch7x7dbl_4 = BasicConv2d(c7, c7, (7, 1), padding=(3, 0))
            self.branch7x7dbl_5 = BasicConv2d(c7, 192, (1, 7), padding=(0, 3))
            self.branch_pool = BasicConv2d(cin, 192, 1)

        def forward(self, x):
            b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
            d = x
            for i in range(1, 6):
                d = getattr(self, f"branch7x7dbl_{i}")(d)
            return torch.cat([self.branch1x1(x), b7, d, self.branch_pool(avg_pool(x))], 1)

    class InceptionD(nn.Module):
        def __init__(self, cin: int) -> None:
            super().__init__()
            self.branch3x3_1 = BasicConv2d(cin, 192, 1)
            self.branch3x3_2 = BasicConv2d(192, 320, 3, stride=2)
            self.branch7x7x3_1 = BasicConv2d(cin, 192, 1)
            self.branch7x7x3_2 = BasicConv2d(192, 192, (1, 7), padding=(0, 3))
            self.branch7x7x3_3 = BasicConv2d(192, 192, (7, 1), padding=(3, 0))
            self.branch7x7x3_4 = BasicConv2d(192, 192, 3, stride=2)

        def forward(self, x):
            b7 = x
            for i in range(1, 5):
                b7 = getattr(self, f"branch7x7x3_{i}")(b7)
            return torch.cat([self.branch3x3_2(self.branch3x3_1(x)), b7, F.max_pool2d(x, 3, stride=2)], 1)

    class InceptionE(nn.Module):
        def __init__(self, cin: int, max_pool: bool) -> None:
            super().__init__()
            self.max_pool = max_pool  # FID's Mixed_7c: a 3 x 3 max pool where Inception has an average
            self.branch1x1 = BasicConv2d(cin, 320, 1)
            self.branch3x3_1 = BasicConv2d(cin, 384, 1)
            self.branch3x3_2a = BasicConv2d(384, 384, (1, 3), padding=(0, 1))
            self.branch3x3_2b = BasicConv2d(384, 384, (3, 1), padding=(1, 0))
            self.branch3x3dbl_1 = BasicConv2d(cin, 448, 1)
            self.branch3x3dbl_2 = BasicConv2d(448, 384, 3, padding=1)
            self.branch3x3dbl_3a = BasicConv2d(384, 384, (1, 3), padding=(0, 1))
            self.branch3x3dbl_3b = BasicConv2d(384, 384, (3, 1), padding=(1, 0))
            self.branch_pool = BasicConv2d(cin, 192, 1)

        def forward(self, x):
            b3 = self.branch3x3_1(x)
            d = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
            pooled = F.max_pool2d(x, 3, stride=1, padding=1) if self.max_pool else avg_pool(x)
            return torch.cat([self.branch1x1(x), self.branch3x3_2a(b3), self.branch3x3_2b(b3),
                              self.branch3x3dbl_3a(d), self.branch3x3dbl_3b(d), self.branch_pool(pooled)], 1)

    class FIDInceptionV3(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.Conv2d_1a_3x3 = BasicConv2d(3, 32, 3, stride=2)
            self.Conv2d_2a_3x3 = BasicConv2d(32, 32, 3)
            self.Conv2d_2b_3x3 = BasicConv2d(32, 64, 3, padding=1)
            self.Conv2d_3b_1x1 = BasicConv2d(64, 80, 1)
            self.Conv2d_4a_3x3 = BasicConv2d(80, 192, 3)
            self.Mixed_5b = InceptionA(192, 32)
            self.Mixed_5c = InceptionA(256, 64)
            self.Mixed_5d = InceptionA(288, 64)
            self.Mixed_6a = InceptionB(288)
            self.Mixed_6b = InceptionC(768, 128)
            self.Mixed_6c = InceptionC(768, 160)
            self.Mixed_6d = InceptionC(768, 160)
            self.Mixed_6e = InceptionC(768, 192)
            self.Mixed_7a = InceptionD(768)
            self.Mixed_7b = InceptionE(1280, max_pool=False)
            self.Mixed_7c = InceptionE(2048, max_pool=True)
            self.fc = nn.Linear(FEATURE_DIM, NUM_CLASSES)

        def features(self, x):
            """(n, 3, 299, 299) in [-1, 1] -> (n, 2048) global average pool after Mixed_7c."""
            x = self.Conv2d_2b_3x3(self.Conv2d_2a_3x3(self.Conv2d_1a_3x3(x)))
            x = self.Conv2d_4a_3x3(self.Conv2d_3b_1x1(F.max_pool2d(x, 3, stride=2)))
            x = F.max_pool2d(x, 3, stride=2)
            for name in ("5b", "5c", "5d", "6a", "6b", "6c", "6d", "6e", "7a", "7b", "7c"):
                x = getattr(self, f"Mixed_{name}")(x)
            return torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)

        def forward(self, x):
            return self.fc(self.features(x))

    return FIDInceptionV3()


def preprocess(images: Sequence[ImageLike], *, offset: int = 0) -> np.ndarray:
    """(n, 3, 299, 299) float32: RGB / 255, bilinear resize to 299 x 299 (``align_corners=False``, no
    antialiasing, as pytorch-fid's ``F.interpolate``), then ``2 x - 1``."""
    import torch
    from torch.nn import functional as F

    out = np.empty((len(images), 3, INPUT_SIZE, INPUT_SIZE), dtype=np.float32)
    for i, img in enumerate(images):
        arr = np.asarray(to_rgb(img, where=f"image {offset + i}"), dtype=np.float32) / 255.0
        x = torch.from_numpy(arr.transpose(2, 0, 1).copy())[None]
        if x.shape[-2:] != (INPUT_SIZE, INPUT_SIZE):
            x = F.interpolate(x, size=(INPUT_SIZE, INPUT_SIZE), mode="bilinear", align_corners=False)
        out[i] = (2.0 * x[0] - 1.0).numpy()
    return out


class InceptionEncoder:
    """Images -> (n, 2048) FID Inception-v3 pool features, float32, not normalised (see the module
    docstring). ``weights``: a .pth file or a folder holding ``pt_inception-2015-12-05-*.pth``; None = the
    torch hub cache."""

    modalities = frozenset({"image"})

    def __init__(self, weights: str | Path | None = None, *, device: str = "cpu",
                 batch_size: int = 64) -> None:
        self.weights = find_weights(weights)
        self.device = device
        self.batch_size = batch_size
        self.identity = (f"fid-inception-v3-{_file_hash(self.weights)}-bilinear{INPUT_SIZE}-pm1"
                         f"-pool{FEATURE_DIM}-raw")
        self._model = None

    def model(self):
        """The network with its weights (loaded once, strictly), in eval mode, batch norms folded into the
        convolutions."""
        if self._model is None:

            net = build_fid_inception()
            where = str(self.weights)
            state = read_state_dict(self.weights, "image_model inception")
            load_strictly(net, state, ignored=("num_batches_tracked",),
                          mismatch=f"image_model inception: {where!r} is not the FID Inception-v3 checkpoint")
            self._model = fold_batchnorm(net.eval(), {"conv": "bn"}).to(self.device)
        return self._model

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Not supported: an image-only encoder."""
        raise OptionError("inception embeds images only; pick a text model for texts")

    def encode_images(self, images: Sequence[ImageLike]) -> np.ndarray:
        """(n, 2048) float32 pool features (raw, as FID uses them)."""
        import torch

        net = self.model()
        parts = []
        for start in range(0, len(images), self.batch_size):
            x = torch.from_numpy(preprocess(images[start:start + self.batch_size], offset=start))
            with torch.inference_mode():
                parts.append(net.features(x.to(self.device)).float().cpu().numpy())
        return np.concatenate(parts) if parts else np.zeros((0, FEATURE_DIM), np.float32)
