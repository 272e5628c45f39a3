"""Image sets for the regions method: folders, .npy arrays and manifests -> float arrays (n, H, W, C).

* a folder: every image file in it (``IMAGE_SUFFIXES``, not recursive), sorted by file name, read with
  Pillow; greyscale files ('1', 'L', 'LA', 'I', 'I;16', 'F') become one channel (alpha dropped), everything
  else RGB (alpha composited onto white); 8-bit values are divided by 255 and 16-bit ones by 65535, so
  values lie in [0, 1]. All images must have the same size and channel count, else the first file that
  differs is named.
* a ``.npy`` array of shape (n, H, W) or (n, H, W, C): uint8 is divided by 255, uint16 by 65535, bool becomes
  0/1, floats are used as they are (the kernel bandwidth follows their scale).
* a manifest (``.csv``, ``.jsonl``) with an ``image`` column of paths relative to the manifest's folder.

Image files are opened by :mod:`promptprism.data.imageio` (pixel limit with a clear error; palette images
expanded, alpha composited onto white, for the RGB ones).

Every error names the file and what was expected.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import InputError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm")
_GREY_MODES = {"1", "L", "LA", "I", "I;16", "I;16B", "I;16L", "F"}


def _read_image(path: Path) -> np.ndarray:
    from .imageio import as_rgb, open_image

    img = open_image(path)  # pixel limit, readable; errors name the file
    mode = img.mode
    try:
        if mode in _GREY_MODES:
            if mode in ("1", "L", "LA"):
                arr = np.asarray(img.convert("L"), dtype=np.float64) / 255.0
            elif mode.startswith("I;16") or mode == "I":
                arr = np.asarray(img, dtype=np.float64) / 65535.0
            else:
                arr = np.asarray(img, dtype=np.float64)
            return arr[..., None]
        return np.asarray(as_rgb(img, str(path)), dtype=np.float64) / 255.0
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"{path}: cannot be read as an image ({type(exc).__name__}: {exc})") from None


def _stack(paths: list[Path], where: str) -> np.ndarray:
    if not paths:
        raise InputError(f"{where}: no images found (expected files ending in {', '.join(IMAGE_SUFFIXES)})")
    first = _read_image(paths[0])
    out = np.empty((len(paths),) + first.shape)
    out[0] = first
    for i, p in enumerate(paths[1:], 1):
        img = _read_image(p)
        if img.shape != first.shape:
            what = ("size" if img.shape[:2] != first.shape[:2] else "channel count")
            raise InputError(f"{p}: image {what} differs: {img.shape[1]}x{img.shape[0]} with {img.shape[2]} "
                             f"channel(s), but {paths[0].name} is {first.shape[1]}x{first.shape[0]} with "
                             f"{first.shape[2]}; all images of a set must match")
        out[i] = img
    return out


def _read_manifest(path: Path, columns: dict[str, str] | None = None) -> list[Path]:
    from .manifest import check_image
    from .tables import check_text, read_table

    column = (columns or {}).get("image", "image")
    table = read_table(path)
    if not table.records:
        raise InputError(f"{path}: the manifest has no rows")
    paths = []
    for rec in table.records:
        value = rec.values.get(column)
        if not value or not isinstance(value, str):
            raise InputError(f"{rec.where}: no {column!r} column/key; a manifest needs an image column of "
                             "paths relative to the manifest (the columns option maps another column to "
                             "'image')")
        p = Path(check_text(value, rec.where, column))
        p = p if p.is_absolute() else path.parent / p
        check_image(p, rec.where)
        paths.append(p)
    return paths


def _check_npy_dtype(dtype: np.dtype, path: Path) -> None:
    if not (dtype == np.bool_ or np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating)):
        raise InputError(f"{path}: expected a numeric image array, got dtype {dtype}")


def _npy_to_float(arr: np.ndarray, path: Path, first: int = 0) -> np.ndarray:
    """uint8 / 255, uint16 / 65535, everything else as float64; rows must be finite (``first``: the
    0-based index of ``arr[0]`` in the file, for the error message)."""
    if arr.dtype == np.uint8:
        return arr.astype(np.float64) / 255.0
    if arr.dtype == np.uint16:
        return arr.astype(np.float64) / 65535.0
    out = arr.astype(np.float64)
    if not np.isfinite(out).all():
        i = int(np.argwhere(~np.isfinite(out))[0][0])
        raise InputError(f"{path}: image {first + i if isinstance(first, int) else first[i]} (0-based) has "
                         "NaN or inf values; all must be finite")
    return out


class ImageRows:
    """An image set that is read by image index, where it is needed (for example on a dask worker).

    Same formats and values as :func:`load_images` (a folder, a ``.npy`` array, a ``.csv``/``.jsonl``
    manifest), but :meth:`open` reads only the list of files (and the first image, for the size) or the
    ``.npy`` header; :meth:`read` reads the requested images. It holds paths only, so it pickles cheaply:
    the workers of a cluster read their own partitions (the paths must be readable there).
    """

    def __init__(self, kind: str, paths: list[Path], shape: tuple[int, int, int, int], where: str) -> None:
        self.kind = kind  # "files" or "npy"
        self.paths = [Path(p) for p in paths]
        self.shape = tuple(int(s) for s in shape)
        self.where = where

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"ImageRows({self.where!r}, shape={self.shape})"

    @classmethod
    def open(cls, path: str | os.PathLike, name: str = "images", *,
             columns: dict[str, str] | None = None) -> ImageRows:
        """Index an image set (its file list and first image, or the ``.npy`` header); no more is read.
        ``columns``: ``{"image": NAME}`` when a manifest keeps its image paths in another column."""
        path = Path(path)
        where = f"{name} ({path})"
        if not path.exists():
            raise InputError(f"{where}: no such file or folder")
        suffix = path.suffix.lower()
        if path.is_dir() or suffix in (".csv", ".jsonl"):
            if path.is_dir():
                files = sorted((p for p in path.iterdir()
                                if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES), key=lambda p: p.name)
            else:
                files = _read_manifest(path, columns)
            if not files:
                raise InputError(f"{where}: no images found (expected files ending in "
                                 f"{', '.join(IMAGE_SUFFIXES)})")
            first = _read_image(files[0])
            return cls("files", files, (len(files),) + first.shape, where)
        if suffix == ".npy":
            from .npy import NpyRows

            rows = NpyRows(path)
            shape = rows.shape + (1,) if rows.ndim == 3 else rows.shape
            if len(shape) != 4:
                raise InputError(f"{path}: expected an array of shape (n, H, W) or (n, H, W, C), got "
                                 f"{rows.shape}")
            if 0 in shape:
                raise InputError(f"{path}: the image array is empty (shape {rows.shape})")
            _check_npy_dtype(rows.dtype, path)
            return cls("npy", [path], shape, where)
        if suffix in IMAGE_SUFFIXES:
            raise InputError(f"{where}: a single image file; pass the folder that holds the images")
        raise InputError(f"{where}: unsupported input; expected an image folder, a .npy array (n, H, W[, C]) "
                         "or a .csv/.jsonl manifest with an 'image' column")

    def read(self, indices) -> np.ndarray:
        """Images ``indices`` (0-based, any order) as float64 (k, H, W, C)."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if self.kind == "npy":
            from .npy import NpyRows

            rows = NpyRows(self.paths[0])
            contiguous = idx.size > 0 and bool(np.all(np.diff(idx) == 1))
            arr = rows[int(idx[0]):int(idx[-1]) + 1] if contiguous else rows[idx]
            arr = np.asarray(arr).reshape((idx.size,) + self.shape[1:])
            return _npy_to_float(arr, self.paths[0], first=idx)
        out = np.empty((idx.size,) + self.shape[1:])
        for k, i in enumerate(idx):
            img = _read_image(self.paths[i])
            if img.shape != self.shape[1:]:
                p, p0 = self.paths[i], self.paths[0]
                what = ("size" if img.shape[:2] != self.shape[1:3] else "channel count")
                raise InputError(f"{p}: image {what} differs: {img.shape[1]}x{img.shape[0]} with "
                                 f"{img.shape[2]} channel(s), but {p0.name} is "
                                 f"{self.shape[2]}x{self.shape[1]} with {self.shape[3]}; all images of a set "
                                 "must match")
            out[k] = img
        return out


def load_images(path: str | os.PathLike, name: str = "images", *,
                columns: dict[str, str] | None = None) -> np.ndarray:
    """Load an image set as float64 (n, H, W, C); see the module docstring for the formats. ``columns``:
    ``{"image": NAME}`` when a manifest keeps its image paths in another column."""
    path = Path(path)
    where = f"{name} ({path})"
    if not path.exists():
        raise InputError(f"{where}: no such file or folder")
    if path.is_dir():
        files = sorted((p for p in path.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES),
                       key=lambda p: p.name)
        return _stack(files, where)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        try:
            arr = np.load(path, allow_pickle=False)
        except Exception as exc:
            raise InputError(f"{path}: cannot be read as a .npy array ({exc})") from None
        if arr.ndim == 3:
            arr = arr[..., None]
        if arr.ndim != 4:
            raise InputError(f"{path}: expected an array of shape (n, H, W) or (n, H, W, C), got {arr.shape}")
        if 0 in arr.shape:
            raise InputError(f"{path}: the image array is empty (shape {arr.shape})")
        _check_npy_dtype(arr.dtype, path)
        return _npy_to_float(arr, path)
    if suffix in (".csv", ".jsonl"):
        return _stack(_read_manifest(path, columns), where)
    if suffix in IMAGE_SUFFIXES:
        raise InputError(f"{where}: a single image file; pass the folder that holds the images")
    raise InputError(f"{where}: unsupported input; expected an image folder, a .npy array (n, H, W[, C]) or "
                     "a .csv/.jsonl manifest with an 'image' column")
