"""The one gate for inputs and options: arrays the user handed in become clean float arrays, options are
checked by one helper each (a choice, an interval, a positive number, a seed, a precision), or fail with a
precise message.

Errors are raised where a bad value enters, and name its source (a file path or a parameter), the array and
the first offending row, in the manner of scikit-learn's ``check_array``; an option's error carries the
parameter's name as data (``OptionError.parameter``), which the CLI maps to its flag.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection, Iterator
from typing import Any

import numpy as np

from .errors import InputError, OptionError

#: rows checked per block when scanning (possibly memory-mapped) arrays for non-finite values
_SCAN_ROWS = 65536


def _where(source: str | None, name: str) -> str:
    return f"{source}: {name}" if source else name


def check_matrix(
    array: Any,
    name: str,
    *,
    source: str | None = None,
    min_rows: int = 1,
    allow_memmap: bool = True,
) -> np.ndarray:
    """Return ``array`` as a 2-D floating array after checking shape and finiteness.

    Memory-mapped arrays and row-streamed ``.npy`` files (:class:`~promptprism.data.npy.NpyRows`) are
    checked block by block and never loaded whole, so million-row inputs are never copied; everything else
    becomes a float64 ndarray.
    """
    where = _where(source, name)
    # a row source (data.npy.RowSource) says so with ``row_streamed``: read by rows, never loaded whole
    row_streamed = getattr(array, "row_streamed", False) is True
    streamed = (isinstance(array, np.memmap) or row_streamed) and allow_memmap
    if streamed:
        arr = array
    else:
        try:
            arr = np.asarray(array)
        except Exception as exc:  # ragged lists and the like
            raise InputError(f"{where}: cannot be read as a numeric matrix ({exc})") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise InputError(f"{where}: expected a numeric matrix, got an array of dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise InputError(f"{where}: complex values are not supported")
    if arr.ndim != 2:
        raise InputError(
            f"{where}: expected a 2-D array (rows = samples, columns = embedding dimensions), "
            f"got shape {arr.shape}"
        )
    if arr.shape[0] < min_rows:
        raise InputError(f"{where}: has {arr.shape[0]} rows; at least {min_rows} needed (the set is empty)"
                         if arr.shape[0] == 0 else
                         f"{where}: has {arr.shape[0]} rows; at least {min_rows} needed")
    if arr.shape[1] == 0:
        raise InputError(f"{where}: has 0 columns (empty embeddings)")
    if not streamed:
        if not np.issubdtype(arr.dtype, np.floating):
            arr = arr.astype(np.float64)
    for start in range(0, arr.shape[0], _SCAN_ROWS):
        block = np.asarray(arr[start : start + _SCAN_ROWS])
        with np.errstate(over="ignore", invalid="ignore"):  # (huge finite values may overflow the sum)
            if np.isfinite(block.sum()):  # every value finite (a NaN or inf makes the sum so); else look
                continue
        bad = first_non_finite(block, row_offset=start)
        if bad is not None:
            raise InputError(f"{where}: {bad}; all embedding values must be finite")
    return arr


def check_same_width(x: Any, y: Any, names: tuple[str, str] = ("the reference", "the generated set")
                     ) -> None:
    """Two feature matrices of the same dimension (one encoder's), else an InputError naming both."""
    if x.shape[1] != y.shape[1]:
        raise InputError(f"{names[0]} and {names[1]} have {x.shape[1]} and {y.shape[1]} dimensions; they "
                         "must come from the same encoder")


def check_feature_pair(x: Any, y: Any, names: tuple[str, str], *, min_rows: int = 1
                       ) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` as checked feature matrices (:func:`check_matrix`: 2-D, numeric, finite, at least
    ``min_rows`` rows) of the same dimension: the entry check of the public metric functions."""
    x, y = check_matrix(x, names[0], min_rows=min_rows), check_matrix(y, names[1], min_rows=min_rows)
    check_same_width(x, y, names)
    return x, y


def first_non_finite(arr: Any, *, row_offset: int = 0) -> str | None:
    """Where the first NaN or inf of ``arr`` lies, in words ('row 3 (0-based), column 2 is NaN'; 'entry 2
    (0-based) is inf' for a vector; rows counted from ``row_offset``), or None when every value is finite."""
    arr = np.asarray(arr)
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size == 0:
        return None
    pos = tuple(int(i) for i in bad[0])
    kind = "NaN" if np.isnan(arr[pos]) else "inf"
    if arr.ndim == 2:
        return f"row {row_offset + pos[0]} (0-based), column {pos[1]} is {kind}"
    return f"entry {pos[0] if arr.ndim == 1 else pos} (0-based) is {kind}"


def check_nonzero_rows(arr: np.ndarray, name: str, *, source: str | None = None, why: str = "") -> None:
    """Fail on the first all-zero row (its direction, and so its cosine similarity, is undefined)."""
    for start in range(0, arr.shape[0], _SCAN_ROWS):
        block = np.asarray(arr[start : start + _SCAN_ROWS])
        zero = np.flatnonzero(~np.any(block != 0, axis=1))
        if zero.size:
            raise InputError(f"{_where(source, name)}: row {start + int(zero[0])} (0-based) is all zeros; "
                             f"{why or 'a zero vector has no direction'}")
        b64 = block.astype(np.float64, copy=False)
        norms = np.einsum("ij,ij->i", b64, b64)
        tiny = np.flatnonzero(norms <= np.finfo(np.float64).tiny)  # |x|^2 underflows: not all zeros
        if tiny.size:
            i = int(tiny[0])
            big = float(np.max(np.abs(block[i])))
            raise InputError(f"{_where(source, name)}: row {start + i} (0-based) is not zero but too "
                             f"small to normalise (largest |value| {big:.3g}, its squared norm underflows "
                             "float64); rescale the embeddings")


def check_strings(values: Any, name: str, n_rows: int, *, source: str | None = None) -> list[str] | None:
    """Return display strings as a list of ``str`` of length ``n_rows`` (or None when absent)."""
    if values is None:
        return None
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputError(f"{_where(source, name)}: expected a 1-D array of strings, got shape {arr.shape}")
    if arr.shape[0] != n_rows:
        raise InputError(f"{_where(source, name)}: has {arr.shape[0]} entries but the embeddings have "
                         f"{n_rows} rows; there must be one per row")
    return [str(v) for v in arr.tolist()]


def check_positive_number(value: Any, name: str, *, integer: bool = False, even: bool = False,
                          allow_zero: bool = False) -> float | int:
    """Validate a scalar option; the message names the option and the value received."""
    kind = "integer" if integer else "number"
    ok_type = isinstance(value, numbers.Integral) if integer else isinstance(value, numbers.Real)
    if isinstance(value, bool) or not ok_type:
        raise OptionError(f"{name} must be a positive {kind}, got {value!r}", parameter=name)
    if not np.isfinite(float(value)) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise OptionError(f"{name} must be {bound}, got {value!r}", parameter=name)
    if even and int(value) % 2:
        raise OptionError(f"{name} must be even (cos and sin features come in pairs), got {value!r}",
                          parameter=name)
    return int(value) if integer else float(value)


def check_seed(seed: Any) -> int:
    """Seeds are explicit non-negative integers so that they can be written into result.json."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise OptionError(f"seed must be a non-negative integer, got {seed!r}", parameter="seed")
    return int(seed)


def check_choice(value: Any, choices: Collection[Any], *, parameter: str) -> Any:
    """``value`` when it is one of ``choices``; else ``"<parameter> must be one of a, b, got 'x'"``."""
    if isinstance(value, str) and value in choices:
        return value
    if not isinstance(value, str) and any(value is c or value == c for c in choices):
        return value
    raise OptionError(f"{parameter} must be one of {', '.join(map(str, choices))}, got {value!r}",
                      parameter=parameter)


def check_interval(value: Any, low: float, high: float, *, parameter: str, closed: str = "neither") -> float:
    """A real number in the interval from ``low`` to ``high`` (``closed``: 'neither' (open), 'left',
    'right' or 'both' ends included) as a float; booleans, text and NaN are refused."""
    ends = {"neither": (False, False), "left": (True, False), "right": (False, True), "both": (True, True)}
    if closed not in ends:
        raise ValueError(f"closed must be one of {', '.join(ends)}, got {closed!r}")
    with_low, with_high = ends[closed]
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    x = float(value) if real else float("nan")
    above = x >= low if with_low else x > low
    below = x <= high if with_high else x < high
    if not (above and below):
        if closed == "neither":
            where = f"lie strictly between {low:g} and {high:g}"
        else:
            where = f"be in {'[' if with_low else '('}{low:g}, {high:g}{']' if with_high else ')'}"
        raise OptionError(f"{parameter} must {where}, got {value!r}", parameter=parameter)
    return x


#: floating-point precisions of the array core: ``numpy`` dtypes by name
PRECISIONS = {"float32": np.float32, "float64": np.float64}


def check_precision(precision: Any, name: str = "precision") -> type:
    """The numpy dtype named by ``precision`` ('float32' or 'float64'); OptionError otherwise."""
    if precision not in PRECISIONS:
        raise OptionError(f"{name} must be 'float32' or 'float64', got {precision!r}", parameter=name)
    return PRECISIONS[precision]


def chunks(n: int, size: int) -> Iterator[tuple[int, int]]:
    """``[start, stop)`` row ranges of at most ``size`` rows covering ``0..n``."""
    for start in range(0, n, size):
        yield start, min(n, start + size)


def available_memory() -> int:
    """Bytes of memory available to this process now (physical memory not in use; MemAvailable on Linux)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import os

        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - platform dependent
        return 2**63 - 1


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} PiB"  # pragma: no cover


def check_memory(n_bytes: float, *, what: str, fraction: float = 0.9, parameter: str | None = None) -> int:
    """Refuse, before allocating, a size that cannot fit in the memory available now.

    ``what`` names the parameter and value that asked for it (``"n_features 1000000000"``); the message says
    the size asked for and the memory there is. ``parameter``: the parameter the refusal is about (default:
    the first word of ``what`` when it is a name). Returns ``n_bytes`` as an int.
    """
    n_bytes = float(n_bytes)
    avail = available_memory()
    if not np.isfinite(n_bytes) or n_bytes > fraction * avail:
        first = what.split(" ", 1)[0]
        raise OptionError(f"{what} needs about {_size(n_bytes)} of memory, but {_size(avail)} is available; "
                          "choose a smaller value",
                          parameter=parameter or (first if first.isidentifier() else None))
    return int(n_bytes)
