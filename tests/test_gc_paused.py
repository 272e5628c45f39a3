"""The cyclic garbage collector paused while a result is built, and given back as it was."""

from __future__ import annotations

import gc

import pytest

from promptprism._gc import collection_paused


def test_collection_paused_inside_and_restored_after():
    assert gc.isenabled()
    with collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), collection_paused():
        raise ValueError("a failed build")
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    try:
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
