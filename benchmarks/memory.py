"""Peak memory of one call, as the machine sees it: the peak resident set above the one at the call's start.

``tracemalloc`` sees only allocations made through Python's and numpy's allocators: not the anonymous
memory maps promptprism writes its large Gram matrices, features and factors into
(``promptprism.backend.populated_empty`` and friends), not torch's allocator, not the BLAS's buffers. A
benchmark that sets one package's memory beside another's has to count all of them, so this module reads
the kernel's own count instead: Linux keeps a process's resident high-water mark (``VmHWM`` in
``/proc/self/status``) and resets it to the current resident set when ``5`` is written to
``/proc/self/clear_refs`` (Linux 4.0 and later).

:func:`resident_peak` returns None where that is not available (then the benchmarks print "n/a").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STATUS, CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")


def _status_kib(field: str) -> int | None:
    try:
        for line in STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])  # (the kernel writes "VmHWM:   123456 kB")
    except (OSError, ValueError, IndexError):
        return None
    return None


def _trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim``): memory freed before the
    call would otherwise be reused inside the resident set the call starts from and not be counted."""
    name = ctypes.util.find_library("c")
    try:
        ctypes.CDLL(name).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        pass


def reset_peak() -> int | None:
    """Reset the resident high-water mark to the resident set now; that resident set in KiB (None where the
    kernel keeps no resettable mark)."""
    _trim_heap()
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return None
    return _status_kib("VmRSS")


def resident_peak(fn: Callable[[], Any]) -> tuple[Any, float, float | None]:
    """(``fn()``, its wall seconds, the MiB its peak resident set rose above the one at its start): every
    page it touched at once counts (numpy and memory-mapped arrays, torch, the BLAS's buffers, threads'
    stacks); None where Linux's resettable high-water mark is not available."""
    start = reset_peak()
    t0 = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - t0
    peak = _status_kib("VmHWM") if start is not None else None
    return value, seconds, (None if peak is None else max(peak - start, 0) / 1024)


def mib_text(mib: float | None, width: int = 8) -> str:
    """``mib`` as a right-aligned whole number, or "n/a"."""
    return f"{'n/a':>{width}}" if mib is None else f"{mib:>{width},.0f}"
