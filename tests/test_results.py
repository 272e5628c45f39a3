"""Results: JSON round trips, load_result on folders and files, errors, atomic writes."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from brute import small_sets
from promptprism import InputError, PairedSet, PromptSplit, PromptSplitResult, load_result
from promptprism.io import atomic_open, atomic_save_npz, atomic_write_text
from promptprism.methods.promptsplit import Mode, PromptLoading, SampleScore
from promptprism.results import to_jsonable


@pytest.fixture(scope="module")
def result():
    (tt, zt, pt), (tr, zr, pr) = small_sets(3)
    return PromptSplit(kernel="gaussian", n_modes=2, top_k=3, seed=4).fit(
        PairedSet(tt, zt, prompts=pt, outputs=[f"img {i}.png" for i in range(len(tt))]),
        PairedSet(tr, zr, prompts=pr))


def test_json_round_trip(result):
    text = result.to_json()
    back = PromptSplitResult.from_json(text)
    assert back == result
    assert back.to_json() == text
    assert all(isinstance(m, Mode) for m in back.modes)
    assert isinstance(back.modes[0].top_samples[0], SampleScore)
    assert isinstance(back.modes[0].top_prompts[0], PromptLoading)
    # reference samples have no output strings: None survives the trip
    assert any(s.output is None for m in back.modes for s in m.top_samples + m.top_samples_other)
    assert json.loads(text)["kind"] == "promptsplit"


def test_save_and_load_folder_and_file(tmp_path, result):
    path = result.save(tmp_path / "new" / "dir")
    assert path == tmp_path / "new" / "dir" / "result.json"
    assert load_result(tmp_path / "new" / "dir") == result
    assert load_result(path) == result
    assert load_result(str(path)) == result
    assert os.listdir(path.parent) == ["result.json"]


def test_save_overwrites_atomically(tmp_path, result):
    result.save(tmp_path)
    other = PromptSplitResult.from_dict({**result.to_dict(), "seed": 99})
    other.save(tmp_path)
    assert load_result(tmp_path).seed == 99
    assert os.listdir(tmp_path) == ["result.json"]


def test_to_jsonable():
    out = to_jsonable({"a": np.float32(1.5), "b": np.arange(3), "c": (np.int64(2), float("nan")),
                       "d": np.bool_(True), 4: float("inf")})
    assert out == {"a": 1.5, "b": [0, 1, 2], "c": [2, None], "d": True, "4": None}
    json.dumps(out, allow_nan=False)


def test_load_errors(tmp_path, result):
    with pytest.raises(InputError, match="no such file"):
        load_result(tmp_path / "missing")
    with pytest.raises(InputError, match="no such file"):
        load_result(tmp_path)  # a folder without result.json
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="bad.json.*JSON"):
        load_result(bad)
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({**result.to_dict(), "kind": "nonsense"}))
    with pytest.raises(InputError, match="nonsense"):
        load_result(unknown)
    nokind = tmp_path / "nokind.json"
    nokind.write_text(json.dumps({"eigenvalues": []}))
    with pytest.raises(InputError, match="kind"):
        load_result(nokind)


@pytest.mark.parametrize("content", ["[1, 2, 3]", "42", '"text"', '{"kind": "promptsplit"}',
                                     '{"kind": "promptsplit", "eigenvalues": [], "bogus": 1}'])
def test_load_malformed_results_raise_input_error(tmp_path, content):
    path = tmp_path / "result.json"
    path.write_text(content)
    with pytest.raises(InputError, match="result.json"):
        load_result(path)


def test_atomic_write_leaves_no_temp_file(tmp_path):
    target = tmp_path / "sub" / "file.txt"
    atomic_write_text(target, "one")
    assert target.read_text() == "one"
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write("half written")
        raise RuntimeError("interrupted")
    assert target.read_text() == "one"  # the old file is intact
    assert os.listdir(target.parent) == ["file.txt"]
    npz = atomic_save_npz(tmp_path / "arrays.data", x=np.arange(4))
    assert npz.name == "arrays.data"
    with np.load(npz) as z:
        np.testing.assert_array_equal(z["x"], np.arange(4))
    assert sorted(os.listdir(tmp_path)) == ["arrays.data", "sub"]


def test_a_fresh_process_loads_and_shows_a_result_of_a_kind_it_never_imported(tmp_path, result):
    """``import promptprism`` loads the methods lazily: load_result still knows every kind, a result's
    repr is still the report's summary."""
    import subprocess
    import sys

    result.save(tmp_path)
    code = (
        "import sys, promptprism\n"
        "before = sorted(m for m in sys.modules if m.startswith('promptprism.methods'))\n"
        f"r = promptprism.load_result({str(tmp_path)!r})\n"
        "print(before, type(r).__name__, repr(r).splitlines()[0])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("[] PromptSplitResult ")
    assert "<PromptSplitResult" not in out  # (the fallback repr: the summaries were not loaded)
    assert result.__class__.__name__ in out


def test_result_json_is_readable_and_the_same_data(result):
    """result.json: objects one entry per line down to PRETTY_DEPTH levels, lists of numbers on one line
    (written by json's C encoder), the same data as ``json.dumps``; NaN refused."""
    from promptprism.jsonable import PRETTY_DEPTH, readable_json

    text = result.to_json()
    assert json.loads(text) == json.loads(json.dumps(result.to_dict()))
    assert result.to_json(indent=None) == json.dumps(result.to_dict(), allow_nan=False)
    lines = text.splitlines()
    assert lines[0] == "{" and lines[1].startswith('  "kind": ') and lines[-1] == "}"
    assert any(line.startswith('  "eigenvalues": [') and line.endswith("],") for line in lines)
    data = {"a": [1.5, 2, None], "b": {"c": {"d": {"e": 1}}}, "f": [{"g": [[1, "x"]]}], "h": [], "i": {}}
    text = readable_json(data)
    assert json.loads(text) == data and PRETTY_DEPTH == 3
    assert '  "a": [1.5, 2, null],' in text and '      "d": {"e": 1}' in text
    assert '      "g": [[1, "x"]]' in text
    with pytest.raises(ValueError):
        readable_json({"a": [float("nan")]})


def test_to_jsonable_keeps_each_kind_of_value_as_it_was():
    import dataclasses
    import enum
    from pathlib import Path

    class Level(enum.IntEnum):
        LOW = 1

    @dataclasses.dataclass(frozen=True)
    class Inner:
        x: float
        tag: str = "t"

    out = to_jsonable({"nan": float("nan"), "f64": np.float64(2.5), "bool": True, "none": None,
                       "level": Level.LOW, "cls": Inner, "inner": [Inner(float("-inf")), Inner(1.0, "u")],
                       "path": Path("a/b")})
    assert out == {"nan": None, "f64": 2.5, "bool": True, "none": None, "level": 1, "cls": Inner,
                   "inner": [{"x": None, "tag": "t"}, {"x": 1.0, "tag": "u"}], "path": "a/b"}
    assert type(out["f64"]) is float and out["bool"] is True


def test_one_dict_per_result_inside_a_save_only(result):
    import dataclasses

    from promptprism.results import one_dict_per_result

    assert result.to_dict() is not result.to_dict() and result.to_dict() == result.to_dict()
    with one_dict_per_result():
        first = result.to_dict()
        assert result.to_dict() is first
        with one_dict_per_result():  # (nested: the same memo)
            assert result.to_dict() is first
        other = dataclasses.replace(result, seed=99)
        assert other.to_dict() is not first and other.to_dict()["seed"] == 99
    assert result.to_dict() is not first and result.to_dict() == first


def test_loading_leaves_the_garbage_collector_as_it_was(tmp_path, result):
    import gc

    path = result.save(tmp_path)
    assert load_result(path) == result and gc.isenabled()
    path.write_text(path.read_text().replace('"seed": 4', '"seed": "four"'))
    with pytest.raises(InputError, match="seed"):
        load_result(path)
    assert gc.isenabled()
