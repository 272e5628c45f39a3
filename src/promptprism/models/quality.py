"""Quality of a generator's samples by a classifier of real images: k-nearest-neighbour accuracy per prompt.

A sample counts as correct when the majority of its k nearest real training images (in a feature space,
e.g. EfficientNet-Lite0's L2-normalised features) belong to its prompt's class. The Frechet distance beside
it is ``promptprism.methods.metrics.frechet.frechet_distance`` (not repeated here).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_positive_number
from ..errors import InputError


def knn_accuracy(features: Any, labels: Any, train_features: Any, train_labels: Any, *, k: int = 5
                 ) -> dict[int, float]:
    """The share of rows of ``features`` whose k nearest ``train_features`` (Euclidean; for unit rows the
    same neighbours as cosine similarity) vote for their own label, per label in ``labels`` (ties go to
    the smaller label, scikit-learn's rule)."""
    from sklearn.neighbors import KNeighborsClassifier

    check_positive_number(k, "k", integer=True)
    x, y = np.asarray(features, dtype=np.float64), np.asarray(labels)
    tx, ty = np.asarray(train_features, dtype=np.float64), np.asarray(train_labels)
    if x.ndim != 2 or tx.ndim != 2 or x.shape[1] != tx.shape[1]:
        raise InputError(f"features: expected (n, d) arrays of one dimension, got {x.shape} and {tx.shape}")
    if len(x) != len(y) or len(tx) != len(ty):
        raise InputError("labels: expected one label per feature row")
    if len(tx) < k:
        raise InputError(f"train_features: {len(tx)} rows, fewer than k = {k}")
    pred = KNeighborsClassifier(n_neighbors=int(k)).fit(tx, ty).predict(x)
    return {int(c): float(np.mean(pred[y == c] == c)) for c in np.unique(y)}
