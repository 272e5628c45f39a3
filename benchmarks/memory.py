"""Peak memory of one call, counted two ways, each blind where the other sees.

* **resident** (:func:`resident_peak`): the peak resident set above the one at the call's start, the
  kernel's own count: Linux keeps a process's resident high-water mark (``VmHWM`` in ``/proc/self/status``)
  and resets it to the current resident set when ``5`` is written to ``/proc/self/clear_refs`` (Linux 4.0
  and later). It sees every page: numpy's, the anonymous memory maps promptprism writes its large Gram
  matrices, features and factors into (``promptprism.backend.populated_empty`` and friends), torch's
  allocator, the BLAS's buffers. It misses memory the process already held and reuses (freed heap pages not
  given back, a thread pool's buffers kept from an earlier call).
* **traced** (:func:`traced_peak`): ``tracemalloc``'s peak of the allocations made through Python's and
  numpy's allocators, reused memory included; blind to memory maps, torch and the BLAS.

A benchmark that sets one package's memory beside another's prints both and states the larger
(:func:`larger`). :func:`resident_peak` gives None where the high-water mark cannot be reset ("n/a").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
import tracemalloc
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


def traced_peak(fn: Callable[[], Any]) -> float:
    """MiB: ``tracemalloc``'s peak of the allocations ``fn`` makes (Python and numpy), in a run of its own
    (tracing slows code that allocates often: not a run to time)."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def larger(*mib: float | None) -> float | None:
    """The largest of the counts that were measured (None when none was)."""
    seen = [m for m in mib if m is not None]
    return max(seen) if seen else None


def mib_text(mib: float | None, width: int = 8) -> str:
    """``mib`` as a right-aligned whole number, or "n/a"."""
    return f"{'n/a':>{width}}" if mib is None else f"{mib:>{width},.0f}"
