"""Image sets as pixels, and what a partition task needs to read its rows.

An image set is either pixels in memory, float64 (n, d, c) (d = H * W pixels of c channels, row-major), or an
:class:`~promptprism.data.images.ImageRows` (a folder, ``.npy`` or manifest read lazily). Tasks get a slice of
the in-memory pixels, or the ImageRows plus the image indices they read themselves (on a cluster worker).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import InputError


def as_pixels(images: Any, name: str = "images") -> np.ndarray:
    """(n, H, W) or (n, H, W, C) images -> float64 (n, d, c) pixels, d = H * W in row-major order.

    Raises :class:`InputError` naming ``name``, the image and the pixel for a non-finite value.
    """
    arr = np.asarray(images)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise InputError(f"{name}: expected a numeric image array, got dtype {arr.dtype}")
    if arr.ndim == 3:
        arr = arr[..., None]
    if arr.ndim != 4:
        raise InputError(f"{name}: expected shape (n, H, W) or (n, H, W, C), got {arr.shape}")
    if 0 in arr.shape:
        raise InputError(f"{name}: empty image array of shape {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise InputError(f"{name}: image {int(bad[0])} (0-based) has a non-finite value at pixel "
                         f"({int(bad[1])}, {int(bad[2])}); all values must be finite")
    n, h, w, c = arr.shape
    return arr.reshape(n, h * w, c)


def check_same_shape(shape: Sequence[int], real_shape: Sequence[int], name: str) -> None:
    """An InputError naming ``name`` unless images of ``shape`` (n, H, W, C) have the real images' size and
    channels ``real_shape`` (H, W, C)."""
    h, w, c = real_shape
    if tuple(shape[1:3]) != (h, w):
        raise InputError(f"{name}: images are {shape[2]}x{shape[1]} (W x H) but the real images are {w}x{h}; "
                         f"all images must have the same size")
    if shape[3] != c:
        raise InputError(f"{name}: images have {shape[3]} channel(s) but the real images have {c}; convert "
                         f"both to the same colour mode")


def is_rows(source: Any) -> bool:
    """True for a file-backed :class:`~promptprism.data.images.ImageRows` set."""
    from ...data.images import ImageRows

    return isinstance(source, ImageRows)


def source_shape(source: Any) -> tuple[int, int, int]:
    """(n, d, c) of pixels (n, d, c) or of an :class:`ImageRows` set."""
    if is_rows(source):
        n, h, w, c = source.shape
        return n, h * w, c
    return source.shape


def task_rows(source: Any, indices: np.ndarray) -> tuple[Any, np.ndarray | None]:
    """What a task needs for rows ``indices``: a file-backed set travels as itself plus the indices (the
    worker reads them), in-memory pixels as the slice (and ``None``)."""
    if is_rows(source):
        return source, np.asarray(indices, dtype=np.int64)
    return np.ascontiguousarray(source[np.asarray(indices, dtype=np.int64)]), None


def read_pixels(source: Any, indices: np.ndarray | None) -> np.ndarray:
    """The pixels a task was given by :func:`task_rows` (reading the files when ``indices`` is set)."""
    if indices is None:
        return source
    return as_pixels(source.read(indices), source.where)


def chunk_rows(n: int, size: int) -> list[np.ndarray]:
    """Consecutive row ranges [a, a + size) covering 0..n-1."""
    return [np.arange(a, min(a + size, n)) for a in range(0, n, size)]


def onehot(labels: np.ndarray) -> np.ndarray:
    """(d, C) membership matrix of region labels 0..C-1."""
    labels = np.asarray(labels, dtype=np.int64).reshape(-1)
    out = np.zeros((labels.shape[0], int(labels.max()) + 1))
    out[np.arange(labels.shape[0]), labels] = 1.0
    return out


#: images read to see a set's pixel scale (:func:`pixel_span`)
SPAN_SAMPLE = 64
#: a generated set whose pixel span exceeds the real images' this many times is on another scale
SCALE_MISMATCH = 4.0
#: a generated set whose pixels reach beyond the real images' range by this share of its width is on another
#: range ([-1, 1], a diffusion model's, against [0, 1])
RANGE_MISMATCH = 0.25


def pixel_span(source: Any, sample: int = SPAN_SAMPLE) -> tuple[float, float]:
    """(min, max) of the pixel values of the first ``sample`` images (evenly spaced through the set)."""
    n = source_shape(source)[0]
    rows = np.unique(np.linspace(0, n - 1, min(n, sample)).astype(np.int64))
    pixels = read_pixels(*task_rows(source, rows))
    return float(np.min(pixels)), float(np.max(pixels))


def scale_note(span: tuple[float, float], real: tuple[float, float]) -> str | None:
    """A note when a generated set's pixel span is :data:`SCALE_MISMATCH` times the real images' or more
    (0-255 against 0-1), or reaches beyond their range by :data:`RANGE_MISMATCH` of its width ([-1, 1] or
    [-1, 0] against [0, 1]), or lies in [0, 1] against real images in [-1, 1]: at the real images'
    bandwidth its CMS then reads low for pixels that only moved."""
    width, real_width = span[1] - span[0], real[1] - real[0]
    if not real_width > 0:
        return None
    spans = (f"its pixel values span [{span[0]:.4g}, {span[1]:.4g}] (a sample of its images), the real "
             f"images' [{real[0]:.4g}, {real[1]:.4g}]")
    if width >= SCALE_MISMATCH * real_width:
        return (f"{spans}: the sets are on different scales (e.g. 0-255 against 0-1), so its CMS reads as if "
                "they shared nothing; rescale it to the real images' scale")
    beyond = max(real[0] - span[0], span[1] - real[1])
    # (a [0, 1] set against real images in [-1, 1]: inside their range, but on the other convention)
    conventions = real[0] < -0.5 and real[1] <= 1.05 and span[0] >= -0.05 and span[1] <= 1.05
    if beyond > RANGE_MISMATCH * real_width or conventions:
        return (f"{spans}: the sets are on different ranges (e.g. one in [-1, 1], the other in [0, 1]), so "
                "its CMS reads low for pixels that only moved; map it to the real images' range")
    return None

