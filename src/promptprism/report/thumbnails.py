"""Downscaled image thumbnails for the reports, without matplotlib.

Arrays are downscaled with numpy and encoded as PNG with zlib; image files are read and downscaled with
Pillow (and photos stored as JPEG).
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from typing import Any

import numpy as np

from .canvas import FiguresUnavailable

#: longest side of a thumbnail, in pixels (the page shows them at 96 px)
THUMB_SIZE = 96


class ImageTooLarge(ValueError):
    """An image file has more pixels than Pillow's decompression-bomb limit: the page shows a placeholder."""


def png_bytes(arr: np.ndarray) -> bytes:
    """Encode an (H, W), (H, W, 1), (H, W, 3) or (H, W, 4) uint8 array as PNG (numpy + zlib only)."""
    a = np.asarray(arr, dtype=np.uint8)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[..., 0]
    if a.ndim == 2:
        color, channels = 0, 1
    elif a.ndim == 3 and a.shape[2] in (3, 4):
        color, channels = (2, 3) if a.shape[2] == 3 else (6, 4)
    else:
        raise ValueError(f"cannot encode an array of shape {a.shape} as an image")
    h, w = a.shape[:2]
    raw = np.concatenate([np.zeros((h, 1), np.uint8), a.reshape(h, w * channels)], axis=1).tobytes()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def as_uint8(image: Any) -> np.ndarray:
    """An image array (H, W[, C]) as uint8: floats in [0, 1] are scaled by 255, 16-bit values by 1/257."""
    a = np.asarray(image)
    if a.dtype == np.uint8:
        return a
    if a.dtype == np.bool_:
        return a.astype(np.uint8) * 255
    kind = a.dtype.kind
    f = np.nan_to_num(a.astype(np.float64))
    if kind == "f" and f.max(initial=0.0) <= 1.0 + 1e-9:
        f = f * 255.0
    elif kind in "iu" and f.max(initial=0.0) > 255:
        f = f / 257.0
    return np.clip(f, 0, 255).round().astype(np.uint8)


def downscale(a: np.ndarray, size: int = THUMB_SIZE) -> np.ndarray:
    """Area-average an (H, W[, C]) uint8 array so that its longest side is at most ``size`` (never
    upscaled)."""
    h, w = a.shape[:2]
    if max(h, w) <= size:
        return a
    scale = size / max(h, w)
    nh, nw = max(1, round(h * scale)), max(1, round(w * scale))
    row_starts = np.searchsorted((np.arange(h) * nh) // h, np.arange(nh))
    col_starts = np.searchsorted((np.arange(w) * nw) // w, np.arange(nw))
    f = np.add.reduceat(np.add.reduceat(a.astype(np.float64), row_starts, axis=0), col_starts, axis=1)
    counts = np.diff(np.r_[row_starts, h])[:, None] * np.diff(np.r_[col_starts, w])[None, :]
    counts = counts.reshape(counts.shape + (1,) * (a.ndim - 2))
    return np.clip(f / counts, 0, 255).round().astype(np.uint8)


def array_thumbnail(image: Any, size: int = THUMB_SIZE) -> tuple[bytes, str, bool]:
    """(PNG bytes, mime, pixelated): an image array downscaled; small images stay small and the page
    enlarges them without smoothing (``pixelated``)."""
    a = as_uint8(image)
    if a.ndim == 3 and a.shape[2] not in (1, 3, 4) and a.shape[0] in (1, 3, 4):  # CHW -> HWC
        a = np.moveaxis(a, 0, -1)
    small = max(a.shape[:2]) <= 32
    return png_bytes(downscale(a, size)), "image/png", small


def file_thumbnail(path: str | os.PathLike, size: int = THUMB_SIZE) -> tuple[bytes, str, bool]:
    """(bytes, mime, pixelated) of an image file downscaled with Pillow: JPEG for photos, PNG for small or
    transparent images."""
    try:
        import PIL  # noqa: F401
    except ImportError:
        raise FiguresUnavailable("image thumbnails need Pillow: pip install pillow") from None
    from ..data.imageio import open_image
    from ..errors import InputError

    try:  # (the one image opener: checked against the pixel limit before decoding)
        im = open_image(path, where=os.path.basename(path))
    except InputError as exc:
        if "over the limit" in str(exc):
            raise ImageTooLarge(f"{os.path.basename(path)}: too many pixels for a thumbnail ({exc})") \
                from None
        raise
    return _encode_thumbnail(im, size)


def _encode_thumbnail(im: Any, size: int) -> tuple[bytes, str, bool]:
    from PIL import Image

    im.load()
    small = max(im.size) <= 32
    has_alpha = im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info
    im = im.convert("RGBA" if has_alpha else "RGB")
    im.thumbnail((size, size), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    if small or has_alpha:
        im.save(buf, format="PNG", optimize=True)
        return buf.getvalue(), "image/png", small
    im.save(buf, format="JPEG", quality=82, optimize=True)
    return buf.getvalue(), "image/jpeg", False


def pil_thumbnail(image: Any, size: int = THUMB_SIZE) -> tuple[bytes, str, bool]:
    """A thumbnail of a PIL image, an array or a path (whatever an image source hands back)."""
    if isinstance(image, (str, os.PathLike)):
        return file_thumbnail(image, size)
    if hasattr(image, "convert") and hasattr(image, "size"):  # a PIL image
        return array_thumbnail(np.asarray(image.convert("RGB")), size)
    return array_thumbnail(image, size)
