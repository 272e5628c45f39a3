"""Reading image files without silent loss: one opener and one RGB conversion for every reader.

Every image that promptprism reads (the encoders, manifests, image folders, CompCon image banks, the region
method's image sets) goes through :func:`open_image` and :func:`as_rgb`, which make these choices explicit:

* **pixel limit**: an image of more than ``max_pixels()`` pixels (Pillow's ``Image.MAX_IMAGE_PIXELS``, about
  89 million by default) is refused with an :class:`~promptprism.errors.InputError` naming the file, its size
  and the limit, before its pixels are decoded (a "decompression bomb" cannot exhaust memory). Raise
  ``PIL.Image.MAX_IMAGE_PIXELS`` in Python for trusted files.
* **16-bit and 32-bit greyscale** (modes ``I;16*``, ``I``): values are *scaled* from 0..65535 to 0..255
  (Pillow's own ``convert("RGB")`` clips them, turning most of a 16-bit image white). 32-bit values beyond
  0..65535 are clipped to it, and a note says so.
* **float greyscale** (mode ``F``): taken as [0, 1] when its largest value is at most 1, else as 0..255.
* **palette** (mode ``P``): expanded through the palette; a palette transparency becomes an alpha channel.
* **alpha** (``RGBA``, ``LA``, ``PA``, palette transparency): composited onto a white background, so a
  transparent pixel reads as white, never as the undefined colour stored under it.
* everything else (``1``, ``L``, ``CMYK``, ``YCbCr``, ...) goes through Pillow's colour conversion.

:func:`describe_conversion` says in words what was done to a mode (for the notes that readers print).
"""

from __future__ import annotations

import io
import os
import re
import warnings
from typing import Any

import numpy as np

from ..errors import InputError

_SIXTEEN_BIT = ("I;16", "I;16B", "I;16L", "I;16N", "I")
_ALPHA_MODES = ("RGBA", "LA", "PA", "RGBa", "La")


def _pil():
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - depends on the installation
        raise InputError("reading image files needs Pillow (pip install pillow)") from None
    return Image


def max_pixels() -> int | None:
    """The pixel limit in force: Pillow's ``Image.MAX_IMAGE_PIXELS`` (None: no limit)."""
    limit = _pil().MAX_IMAGE_PIXELS
    return None if limit is None else int(limit)


def _bomb_error(where: str, size: tuple[int, int] | None, exc: Exception | None = None) -> InputError:
    limit = max_pixels()
    if size is not None:
        shown = f"{size[0]} x {size[1]} = {size[0] * size[1]:,} pixels"
    else:  # Pillow refused it while opening: its message holds the pixel count
        m = re.search(r"\((\d+) pixels\)", str(exc or ""))
        shown = f"{int(m.group(1)):,} pixels" if m else "too many pixels"
    return InputError(f"{where}: image is {shown}, over the limit of {limit:,} pixels "
                      "(PIL.Image.MAX_IMAGE_PIXELS; raise it in Python for a trusted file)")


def image_header(path: str | os.PathLike, where: str) -> tuple[str, tuple[int, int], dict]:
    """(mode, (width, height), info) of an image file read from its header only (no decoding), checked
    against the pixel limit; an unreadable file or one over the limit is an :class:`InputError` naming
    ``where``."""
    Image = _pil()
    from PIL import UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                mode, size, info = im.mode, im.size, dict(im.info)
    except Image.DecompressionBombError as exc:
        raise _bomb_error(where, None, exc) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as exc:
        raise InputError(f"{where} is not a readable image ({exc})") from None
    limit = max_pixels()
    if limit is not None and size[0] * size[1] > limit:
        raise _bomb_error(where, size)
    return mode, size, info


def check_pixels(width: int, height: int, where: str) -> None:
    """Refuse an image of ``width`` x ``height`` pixels beyond the limit every reader applies (for a writer:
    what it would write could not be read back)."""
    limit = max_pixels()
    if limit is not None and int(width) * int(height) > limit:
        raise _bomb_error(where, (int(width), int(height)))


def open_image(source: str | os.PathLike | bytes | bytearray, where: str | None = None):
    """Open and decode an image file (or its bytes) as a PIL image in its own mode, checked against the
    pixel limit before decoding. Any failure is an :class:`InputError` naming ``where`` (default: the
    path)."""
    Image = _pil()
    from PIL import UnidentifiedImageError

    label = where or (str(source) if isinstance(source, (str, os.PathLike)) else "image")
    fh = io.BytesIO(bytes(source)) if isinstance(source, (bytes, bytearray)) else source
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(fh) as im:
                limit = max_pixels()
                if limit is not None and im.size[0] * im.size[1] > limit:
                    raise _bomb_error(label, im.size)
                im.load()
                return im.copy()
    except Image.DecompressionBombError as exc:
        raise _bomb_error(label, None, exc) from None
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError(f"{label}: image file does not exist") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as exc:
        raise InputError(f"{label}: not a readable image ({exc})") from None


def describe_conversion(mode: str, info: dict | None = None) -> str | None:
    """What :func:`as_rgb` does to an image of this mode, in words (None for RGB, which is kept as is)."""
    if mode == "RGB":
        return None
    if mode in _SIXTEEN_BIT:
        how = " (16-bit values scaled to 8 bits)"
    elif mode == "F":
        how = " (float values scaled to 8 bits)"
    elif mode in _ALPHA_MODES or (mode == "P" and info and "transparency" in info):
        how = " (alpha composited onto white)"
    elif mode == "P":
        how = " (palette expanded)"
    else:
        how = ""
    return f"mode {mode}; converted to RGB{how}"


def as_rgb(im: Any, where: str = "image", notes: list[str] | None = None):
    """A PIL ``RGB`` image from a PIL image of any mode, by the rules of the module docstring."""
    Image = _pil()
    mode = im.mode
    if mode == "RGB":
        return im
    if mode in _SIXTEEN_BIT:
        arr = np.asarray(im, dtype=np.float64)
        if arr.size and (arr.min() < 0 or arr.max() > 65535):
            if notes is not None:
                notes.append(f"{where}: 32-bit values outside 0..65535 clipped to it")
            arr = np.clip(arr, 0, 65535)
        grey = np.rint(arr * (255.0 / 65535.0)).astype(np.uint8)
        return Image.fromarray(grey, mode="L").convert("RGB")
    if mode == "F":
        arr = np.nan_to_num(np.asarray(im, dtype=np.float64), nan=0.0, posinf=255.0, neginf=0.0)
        scale = 255.0 if arr.size and arr.max() <= 1.0 else 1.0
        grey = np.clip(np.rint(arr * scale), 0, 255).astype(np.uint8)
        return Image.fromarray(grey, mode="L").convert("RGB")
    if mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
        if im.mode == "RGB":
            return im
        mode = "RGBA"
    if mode in _ALPHA_MODES:
        rgba = im.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return im.convert("RGB")


def read_rgb(source: str | os.PathLike | bytes | bytearray, where: str | None = None,
             notes: list[str] | None = None):
    """:func:`open_image` then :func:`as_rgb`: the PIL RGB image every encoder sees."""
    im = open_image(source, where)
    return as_rgb(im, where or str(source), notes)


def to_rgb(image: Any, where: str = "image"):
    """A PIL RGB image from a path, bytes, an array (H, W), (H, W, 3|4) or a PIL image.

    Files and PIL images go through :func:`read_rgb` / :func:`as_rgb` (pixel limit, 16-bit scaling,
    palette and alpha rules documented there); images and arrays over the pixel limit are
    refused as files are. Arrays: uint16 scaled from 0..65535 like a
    16-bit file, floats at most 1 taken as [0, 1], other numbers clipped to 0..255; empty or non-numeric
    arrays are refused."""
    Image = _pil()

    if isinstance(image, (str, os.PathLike)):
        return read_rgb(image, where if str(image) in where else f"{where}: image file {str(image)!r}")
    if isinstance(image, (bytes, bytearray)):
        return read_rgb(image, where)
    if isinstance(image, Image.Image):
        check_pixels(*image.size, where)  # the readers' limit, before any conversion (a writer's too)
        return as_rgb(image, where)
    arr = np.asarray(image)
    if arr.ndim >= 2:
        check_pixels(arr.shape[1], arr.shape[0], where)
    if arr.dtype.kind not in "biuf":
        raise InputError(f"{where}: an image array must hold numbers, got dtype {arr.dtype}")
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[..., 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise InputError(f"{where}: an image array must be (H, W), (H, W, 3) or (H, W, 4), got {arr.shape}")
    if arr.size == 0:
        raise InputError(f"{where}: the image array is empty (shape {arr.shape})")
    if arr.dtype == np.uint16:  # 16-bit values scaled to 8 bits, as the image reader does for 16-bit files
        arr = np.rint(arr.astype(np.float64) * (255.0 / 65535.0)).astype(np.uint8)
    if arr.dtype != np.uint8:
        a = arr.astype(np.float64)
        if not np.isfinite(a).all():
            raise InputError(f"{where}: the image array holds NaN or inf")
        if a.max(initial=0.0) <= 1.0:  # floats in [0, 1]
            a = a * 255.0
        arr = np.clip(np.rint(a), 0, 255).astype(np.uint8)
    return Image.fromarray(arr).convert("RGB")
