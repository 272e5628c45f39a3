"""benchmarks/memory.py: the peak resident set of a call counts what tracemalloc misses (anonymous memory
maps, as promptprism's large Gram matrices and features are allocated) and not what was resident before."""

import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from memory import reset_peak, resident_peak  # noqa: E402

from promptprism.backend import populated_zeros  # noqa: E402

MIB = 2**20
pytestmark = pytest.mark.skipif(reset_peak() is None, reason="no resettable resident high-water mark")


def test_memory_mapped_array_counted_where_tracemalloc_sees_nothing():
    def mapped() -> float:
        a = populated_zeros((200 * MIB // 8,), np.float64)  # (pages mapped at allocation)
        return float(a[::4096].sum())

    tracemalloc.start()
    mapped()
    traced = tracemalloc.get_traced_memory()[1] / MIB
    tracemalloc.stop()
    assert traced < 5
    _, seconds, peak = resident_peak(mapped)
    assert 190 <= peak <= 260 and seconds > 0


def test_numpy_array_counted_and_earlier_memory_not():
    kept = np.ones(150 * MIB // 8)  # resident before the call: not the call's
    _, _, idle = resident_peak(lambda: None)
    assert idle < 20

    def temporary() -> float:
        return float(np.full(100 * MIB // 8, 2.0).sum())

    _, _, peak = resident_peak(temporary)
    assert 95 <= peak <= 150
    assert kept[0] == 1.0


def test_traced_peak_counts_reused_heap_memory_the_resident_count_misses():
    from memory import larger, traced_peak

    def temporary() -> float:
        return float(np.full(40 * MIB // 8, 1.0).sum())

    temporary()  # (its pages may stay with the process: a later call can reuse them without new pages)
    assert 39 <= traced_peak(temporary) <= 45
    assert larger(None, 3.0, 7.5) == 7.5 and larger(None, None) is None
