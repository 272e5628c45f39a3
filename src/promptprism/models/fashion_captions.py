"""Captions of Fashion-MNIST images from their class and three attributes measured from their pixels.

The rules (pure numpy, reproducible; pixels are uint8 on 0..255 of a 28 x 28 image):

* foreground: the pixels > :data:`INK` (25);
* **brightness** ``dark`` / ``light``: the mean intensity of the foreground pixels;
* **size** ``small`` / ``large``: the number of foreground pixels;
* **texture** ``plain`` / ``patterned``: the mean absolute 4-neighbour Laplacian of the image (on 0..1)
  over the interior foreground (foreground pixels whose 4 neighbours are foreground too; 0 when none).

A measure above its class's threshold gives the second word (light, large, patterned), else the first.
The thresholds are the per-class medians over the training set (:func:`class_thresholds`), so each attribute
splits each class about 50/50; they are frozen with a checkpoint and applied unchanged to generated images
(:func:`attribute_table`). Some (class, attribute, value) cells are made rare on purpose
(:data:`RARE_CELLS`: :func:`rare_mask` keeps only 10 % of their images, seeded). Each image gets one
phrasing (:func:`caption`), drawn by a seeded rng: the class alone or with 1-3 of its attributes, bare or
"a photo of ...".
"""

from __future__ import annotations

import itertools

import numpy as np

from .fashion import CLASS_NAMES

INK = 25  #: foreground threshold on 0..255
ATTRIBUTES = ("brightness", "size", "texture")
#: the (below-threshold, above-threshold) words of each attribute
VALUES = {"brightness": ("dark", "light"), "size": ("small", "large"), "texture": ("plain", "patterned")}
#: (class, attribute, word) cells kept at :data:`RARE_KEEP` of their images in the training captions
RARE_CELLS = (("sneaker", "texture", "patterned"), ("trouser", "brightness", "dark"),
              ("coat", "size", "small"))
RARE_KEEP = 0.1
TEMPLATES = ("{phrase}", "a photo of {phrase}")


def class_words() -> tuple[str, ...]:
    """The class names as they appear in captions (lower case)."""
    return tuple(n.lower() for n in CLASS_NAMES)


def measures(images: np.ndarray) -> np.ndarray:
    """uint8 images (n, H, W) -> (n, 3) float: brightness, size and texture measures (module docstring)."""
    x = np.asarray(images, dtype=np.float64)
    fg = x > INK
    count = fg.sum(axis=(1, 2))
    brightness = np.where(count > 0, (x * fg).sum(axis=(1, 2)) / np.maximum(count, 1), 0.0)
    p = np.pad(x / 255.0, ((0, 0), (1, 1), (1, 1)), mode="edge")
    lap = p[:, :-2, 1:-1] + p[:, 2:, 1:-1] + p[:, 1:-1, :-2] + p[:, 1:-1, 2:] - 4 * p[:, 1:-1, 1:-1]
    f = np.pad(fg, ((0, 0), (1, 1), (1, 1)), mode="constant")
    interior = fg & f[:, :-2, 1:-1] & f[:, 2:, 1:-1] & f[:, 1:-1, :-2] & f[:, 1:-1, 2:]
    n_in = interior.sum(axis=(1, 2))
    texture = np.where(n_in > 0, (np.abs(lap) * interior).sum(axis=(1, 2)) / np.maximum(n_in, 1), 0.0)
    return np.stack([brightness, count.astype(np.float64), texture], axis=1)


def class_thresholds(images: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(10, 3) per-class medians of :func:`measures` (the frozen attribute thresholds; 0 for an absent
    class)."""
    m = measures(images)
    labels = np.asarray(labels)
    return np.stack([np.median(m[labels == c], axis=0) if np.any(labels == c) else np.zeros(3)
                     for c in range(len(CLASS_NAMES))])


def attribute_table(images: np.ndarray, labels: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """(n, 3) int 0/1: each image's attribute value (1 = above its class threshold: light, large,
    patterned) under the frozen ``thresholds``."""
    m = measures(images)
    return (m > np.asarray(thresholds)[np.asarray(labels)]).astype(np.int64)


def rare_mask(labels: np.ndarray, attrs: np.ndarray, seed: int, keep: float = RARE_KEEP) -> np.ndarray:
    """Boolean (n,): the images kept for training; an image in a :data:`RARE_CELLS` cell is kept with
    probability ``keep`` (a seeded draw)."""
    labels, attrs = np.asarray(labels), np.asarray(attrs)
    u = np.random.default_rng([seed, 44]).random(labels.size)
    rare = np.zeros(labels.size, bool)
    for cls, attr, word in RARE_CELLS:
        a = ATTRIBUTES.index(attr)
        rare |= (labels == class_words().index(cls)) & (attrs[:, a] == VALUES[attr].index(word))
    return ~rare | (u < keep)


def phrase(cls: int, words: dict[str, str]) -> str:
    """"a dark, small sandal": the attribute words in :data:`ATTRIBUTES` order, then the class."""
    noun = class_words()[cls]
    adjectives = ", ".join(words[a] for a in ATTRIBUTES if a in words)
    text = f"{adjectives} {noun}" if adjectives else noun
    return ("an " if text[0] in "aeiou" else "a ") + text


def caption(cls: int, attrs: np.ndarray, rng: np.random.Generator) -> str:
    """One image's caption: a random subset of its attributes (each kept with probability 1/2) in a random
    template of :data:`TEMPLATES` (the class name alone when the subset is empty, half the time)."""
    chosen = {a: VALUES[a][int(attrs[i])] for i, a in enumerate(ATTRIBUTES) if rng.random() < 0.5}
    template = TEMPLATES[int(rng.integers(len(TEMPLATES)))]
    if not chosen and rng.random() < 0.5:
        return class_words()[cls]
    return template.format(phrase=phrase(cls, chosen))


def captions(labels: np.ndarray, attrs: np.ndarray, seed: int, swap: tuple[str, str] | None = None) -> list:
    """The caption of every image (seeded). ``swap=(class, attribute)`` flips that attribute's word on that
    class's images (the planted disagreement of a second generator: "dark bag" on light bags)."""
    attrs = np.array(attrs, copy=True)
    if swap is not None:
        cls, attr = swap
        rows = np.asarray(labels) == class_words().index(cls)
        attrs[rows, ATTRIBUTES.index(attr)] = 1 - attrs[rows, ATTRIBUTES.index(attr)]
    rng = np.random.default_rng([seed, 28])
    return [caption(int(c), a, rng) for c, a in zip(labels, attrs, strict=True)]


def all_prompts() -> list[tuple[str, int, dict]]:
    """Every distinct caption the rules make: (text, class, {attribute: word}), in a fixed order."""
    out = []
    for cls in range(len(CLASS_NAMES)):
        out.append((class_words()[cls], cls, {}))
        for k in range(len(ATTRIBUTES) + 1):
            for subset in itertools.combinations(ATTRIBUTES, k):
                for vals in itertools.product(*(VALUES[a] for a in subset)):
                    words = dict(zip(subset, vals, strict=True))
                    for t in TEMPLATES:
                        out.append((t.format(phrase=phrase(cls, words)), cls, words))
    return out


def parse_prompt(text: str) -> tuple[int, dict]:
    """(class, {attribute: word}) of a caption made by these rules (or any text naming a class and
    attribute words); raises ValueError when no class is named."""
    low = text.lower()
    hits = [i for i, w in enumerate(class_words()) if w in low]
    if not hits:
        raise ValueError(f"prompt {text!r} names no Fashion-MNIST class ({', '.join(class_words())})")
    cls = max(hits, key=lambda i: len(class_words()[i]))  # "t-shirt" over "shirt"
    tokens = low.replace(",", " ").split()
    words = {a: w for a in ATTRIBUTES for w in VALUES[a] if w in tokens}
    return cls, words


def is_rare(cls: int, words: dict) -> bool:
    """Whether a prompt's (class, attributes) falls in a :data:`RARE_CELLS` cell."""
    return any(class_words()[cls] == c and words.get(a) == w for c, a, w in RARE_CELLS)
