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

from ..data.imageio import to_rgb
from ..errors import OptionError
from .base import ImageLike, fold_batchnorm, load_strictly, read_state_dict
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


# ------------------------------------------------------------------------------------ the network, as tables
# A convolution: (name, in channels, out channels, kernel, stride, padding); a string channel count is one
# of the block's arguments ("in": its input width, "pool": Mixed_5's pool features, "c7": Mixed_6's 7 x 7
# width). A branch: the steps applied in turn to the block's input (a convolution's name, or a pool of
# POOLS); a tuple as its last step forks: each of its convolutions gets the branch so far, and each output
# is kept. A block's output: its branches' outputs, concatenated on channels, in order.
_1x7, _7x1 = ((1, 7), (0, 3)), ((7, 1), (3, 0))
_1x3, _3x1 = ((1, 3), (0, 1)), ((3, 1), (1, 0))

#: torchvision's InceptionA (Mixed_5b-5d)
INCEPTION_A = {
    "convs": (("branch1x1", "in", 64, 1, 1, 0), ("branch5x5_1", "in", 48, 1, 1, 0),
              ("branch5x5_2", 48, 64, 5, 1, 2), ("branch3x3dbl_1", "in", 64, 1, 1, 0),
              ("branch3x3dbl_2", 64, 96, 3, 1, 1), ("branch3x3dbl_3", 96, 96, 3, 1, 1),
              ("branch_pool", "in", "pool", 1, 1, 0)),
    "branches": (("branch1x1",), ("branch5x5_1", "branch5x5_2"),
                 ("branch3x3dbl_1", "branch3x3dbl_2", "branch3x3dbl_3"), ("avg", "branch_pool")),
}
#: InceptionB (Mixed_6a): the grid reduction 35 -> 17
INCEPTION_B = {
    "convs": (("branch3x3", "in", 384, 3, 2, 0), ("branch3x3dbl_1", "in", 64, 1, 1, 0),
              ("branch3x3dbl_2", 64, 96, 3, 1, 1), ("branch3x3dbl_3", 96, 96, 3, 2, 0)),
    "branches": (("branch3x3",), ("branch3x3dbl_1", "branch3x3dbl_2", "branch3x3dbl_3"), ("max_s2",)),
}
#: InceptionC (Mixed_6b-6e): factorised 7 x 7 convolutions
INCEPTION_C = {
    "convs": (("branch1x1", "in", 192, 1, 1, 0), ("branch7x7_1", "in", "c7", 1, 1, 0),
              ("branch7x7_2", "c7", "c7", _1x7[0], 1, _1x7[1]),
              ("branch7x7_3", "c7", 192, _7x1[0], 1, _7x1[1]),
              ("branch7x7dbl_1", "in", "c7", 1, 1, 0), ("branch7x7dbl_2", "c7", "c7", _7x1[0], 1, _7x1[1]),
              ("branch7x7dbl_3", "c7", "c7", _1x7[0], 1, _1x7[1]),
              ("branch7x7dbl_4", "c7", "c7", _7x1[0], 1, _7x1[1]),
              ("branch7x7dbl_5", "c7", 192, _1x7[0], 1, _1x7[1]), ("branch_pool", "in", 192, 1, 1, 0)),
    "branches": (("branch1x1",), ("branch7x7_1", "branch7x7_2", "branch7x7_3"),
                 tuple(f"branch7x7dbl_{i}" for i in range(1, 6)), ("avg", "branch_pool")),
}
#: InceptionD (Mixed_7a): the grid reduction 17 -> 8
INCEPTION_D = {
    "convs": (("branch3x3_1", "in", 192, 1, 1, 0), ("branch3x3_2", 192, 320, 3, 2, 0),
              ("branch7x7x3_1", "in", 192, 1, 1, 0), ("branch7x7x3_2", 192, 192, _1x7[0], 1, _1x7[1]),
              ("branch7x7x3_3", 192, 192, _7x1[0], 1, _7x1[1]), ("branch7x7x3_4", 192, 192, 3, 2, 0)),
    "branches": (("branch3x3_1", "branch3x3_2"), tuple(f"branch7x7x3_{i}" for i in range(1, 5)),
                 ("max_s2",)),
}
#: InceptionE (Mixed_7b, 7c): forked 1 x 3 / 3 x 1 branches; FID's Mixed_7c pools with a 3 x 3 max
INCEPTION_E = {
    "convs": (("branch1x1", "in", 320, 1, 1, 0), ("branch3x3_1", "in", 384, 1, 1, 0),
              ("branch3x3_2a", 384, 384, _1x3[0], 1, _1x3[1]),
              ("branch3x3_2b", 384, 384, _3x1[0], 1, _3x1[1]),
              ("branch3x3dbl_1", "in", 448, 1, 1, 0), ("branch3x3dbl_2", 448, 384, 3, 1, 1),
              ("branch3x3dbl_3a", 384, 384, _1x3[0], 1, _1x3[1]),
              ("branch3x3dbl_3b", 384, 384, _3x1[0], 1, _3x1[1]), ("branch_pool", "in", 192, 1, 1, 0)),
    "branches": (("branch1x1",), ("branch3x3_1", ("branch3x3_2a", "branch3x3_2b")),
                 ("branch3x3dbl_1", "branch3x3dbl_2", ("branch3x3dbl_3a", "branch3x3dbl_3b")),
                 ("pool", "branch_pool")),
}
#: the stem, as one block: convolutions and 3 x 3 / stride 2 max pools
STEM = {
    "convs": (("Conv2d_1a_3x3", 3, 32, 3, 2, 0), ("Conv2d_2a_3x3", 32, 32, 3, 1, 0),
              ("Conv2d_2b_3x3", 32, 64, 3, 1, 1), ("Conv2d_3b_1x1", 64, 80, 1, 1, 0),
              ("Conv2d_4a_3x3", 80, 192, 3, 1, 0)),
    "branches": (("Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3", "max_s2", "Conv2d_3b_1x1",
                  "Conv2d_4a_3x3", "max_s2"),),
}
#: the mixed blocks after the stem, in order: (module name, block table, its arguments)
MIXED = (
    ("Mixed_5b", INCEPTION_A, {"in": 192, "pool": 32}),
    ("Mixed_5c", INCEPTION_A, {"in": 256, "pool": 64}),
    ("Mixed_5d", INCEPTION_A, {"in": 288, "pool": 64}),
    ("Mixed_6a", INCEPTION_B, {"in": 288}),
    ("Mixed_6b", INCEPTION_C, {"in": 768, "c7": 128}),
    ("Mixed_6c", INCEPTION_C, {"in": 768, "c7": 160}),
    ("Mixed_6d", INCEPTION_C, {"in": 768, "c7": 160}),
    ("Mixed_6e", INCEPTION_C, {"in": 768, "c7": 192}),
    ("Mixed_7a", INCEPTION_D, {"in": 768}),
    ("Mixed_7b", INCEPTION_E, {"in": 1280, "pool": "avg"}),
    ("Mixed_7c", INCEPTION_E, {"in": 2048, "pool": "max_s1"}),
)


def build_fid_inception():
    """An untrained FID Inception-v3 (torch ``nn.Module``) built from the tables above, whose parameter
    names match the checkpoint; ``features(x)`` maps (n, 3, 299, 299) inputs in [-1, 1] to (n, 2048) pool
    features."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    pools = {
        "avg": lambda x: F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False),  # TensorFlow's
        "max_s1": lambda x: F.max_pool2d(x, 3, stride=1, padding=1),
        "max_s2": lambda x: F.max_pool2d(x, 3, stride=2),
    }

    class BasicConv2d(nn.Module):
        def __init__(self, cin: int, cout: int, kernel, stride=1, padding=0) -> None:
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, bias=False)
            self.bn = nn.BatchNorm2d(cout, eps=0.001)

        def forward(self, x):
            return F.relu(self.bn(self.conv(x)))

    class Block(nn.Module):
        """A block of the tables: its convolutions, its branches run on the input, concatenated."""

        def __init__(self, table: dict, args: dict) -> None:
            super().__init__()
            for name, cin, cout, kernel, stride, padding in table["convs"]:
                self.add_module(name, BasicConv2d(args.get(cin, cin), args.get(cout, cout), kernel,
                                                  stride=stride, padding=padding))
            self.branches = [tuple(args.get(step, step) if isinstance(step, str) else step for step in b)
                             for b in table["branches"]]

        def forward(self, x):
            outs = []
            for branch in self.branches:
                h = x
                for step in branch:
                    if isinstance(step, tuple):  # a fork: every convolution of it gets h
                        outs += [getattr(self, name)(h) for name in step]
                        h = None
                    else:
                        h = pools[step](h) if step in pools else getattr(self, step)(h)
                if h is not None:
                    outs.append(h)
            return outs[0] if len(outs) == 1 else torch.cat(outs, 1)

    class FIDInceptionV3(Block):
        """The stem (this block's own convolutions, at the top level as in the checkpoint), the mixed
        blocks, the classifier."""

        def __init__(self) -> None:
            super().__init__(STEM, {})
            for name, table, args in MIXED:
                self.add_module(name, Block(table, args))
            self.fc = nn.Linear(FEATURE_DIM, NUM_CLASSES)

        def features(self, x):
            """(n, 3, 299, 299) in [-1, 1] -> (n, 2048) global average pool after Mixed_7c."""
            x = super().forward(x)
            for name, _, _ in MIXED:
                x = getattr(self, name)(x)
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
