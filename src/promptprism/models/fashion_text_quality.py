"""Quality of the text-conditioned Fashion generator: class accuracy by a classifier of real images and
attribute accuracy by the caption rules.

* class accuracy: a multinomial logistic regression on pixels (scaled to 0..1) fitted on real training
  images (:func:`fit_pixel_classifier`); its accuracy on samples (label = the prompt's class) is compared with
  its accuracy on real test images;
* attribute accuracy (:func:`attribute_accuracy`): a sample's attributes measured by
  :func:`promptprism.models.fashion_captions.attribute_table` under the checkpoint's frozen thresholds, with
  the prompt's class, match the words of its prompt; per attribute and per rare / common cell.

The Frechet distance beside them is ``promptprism.methods.metrics.frechet.frechet_distance``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from . import fashion_captions as fc


def fit_pixel_classifier(images: np.ndarray, labels: np.ndarray, *, seed: int = 0) -> Any:
    """A logistic regression (scikit-learn, lbfgs, C=0.1) on pixel rows / 255 of uint8 (n, 28, 28) images."""
    from sklearn.linear_model import LogisticRegression

    x = np.asarray(images, dtype=np.float64).reshape(len(images), -1) / 255.0
    return LogisticRegression(C=0.1, max_iter=300, random_state=seed).fit(x, np.asarray(labels))


def class_accuracy(classifier: Any, images: np.ndarray, labels: np.ndarray) -> float:
    """Share of ``images`` the classifier assigns to their ``labels``."""
    x = np.asarray(images, dtype=np.float64).reshape(len(images), -1) / 255.0
    return float(np.mean(classifier.predict(x) == np.asarray(labels)))


def attribute_accuracy(images: np.ndarray, prompts: list[str], thresholds: np.ndarray) -> dict:
    """For samples ``images`` (n, 28, 28) of ``prompts``: the share whose measured attribute equals the
    prompt's word, per attribute (``"brightness"``, ...; over the prompts naming it) and per cell kind
    (``"rare"``: a word of a :data:`~promptprism.models.fashion_captions.RARE_CELLS` cell on its class,
    ``"common"``: every other named word); each entry is ``(accuracy, count)``."""
    if len(images) != len(prompts):
        raise InputError(f"need one prompt per image, got {len(prompts)} prompts for {len(images)} images")
    parsed = [fc.parse_prompt(p) for p in prompts]
    classes = np.array([c for c, _ in parsed], dtype=np.int64)
    measured = fc.attribute_table(np.asarray(images), classes, thresholds)
    hits: dict[str, list[bool]] = {a: [] for a in (*fc.ATTRIBUTES, "rare", "common")}
    for i, (cls, words) in enumerate(parsed):
        for a, w in words.items():
            ok = bool(measured[i, fc.ATTRIBUTES.index(a)] == fc.VALUES[a].index(w))
            hits[a].append(ok)
            hits["rare" if fc.is_rare(cls, {a: w}) else "common"].append(ok)
    return {k: (float(np.mean(v)) if v else float("nan"), len(v)) for k, v in hits.items()}


def family_prompts(cls: str, attribute: str, word: str) -> list[str]:
    """The caption prompts of one family: class ``cls`` with ``attribute`` = ``word`` (any other words)."""
    c = fc.class_words().index(cls)
    return [t for t, k, words in fc.all_prompts() if k == c and words.get(attribute) == word]


def family_share(ranking: list[str], cls: str, attribute: str) -> float:
    """Share of the prompts of ``ranking`` that name class ``cls`` and a word of ``attribute``."""
    if not ranking:
        return 0.0
    c = fc.class_words().index(cls)
    hits = [fc.parse_prompt(p)[0] == c and attribute in fc.parse_prompt(p)[1] for p in ranking]
    return float(np.mean(hits))
