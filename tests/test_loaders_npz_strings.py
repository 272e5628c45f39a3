"""Strings in an .npz as users save them: bytes arrays (h5py and many pipelines) read as UTF-8 text, never as
"b'...'"; bytes that are not UTF-8 and object (pickled) arrays refused in one line naming the array."""

from __future__ import annotations

import numpy as np
import pytest

import promptprism as pp
from _cli_run import run_cli
from promptprism.errors import InputError


def _save(path, prompts):
    rng = np.random.default_rng(0)
    np.savez(path, prompt_embeddings=rng.normal(size=(4, 3)), output_embeddings=rng.normal(size=(4, 2)),
             prompts=prompts, outputs=np.array(["o0", "o1", "o2", "o3"]))
    return path


def test_bytes_prompts_are_the_same_prompts_as_strings(tmp_path):
    words = ["a cat", "a dog", "éclair", "a cat"]
    as_str = pp.load_paired(_save(tmp_path / "s.npz", np.array(words)))
    as_bytes = pp.load_paired(_save(tmp_path / "b.npz", np.array([w.encode() for w in words])))
    assert list(as_bytes.prompts) == words == list(as_str.prompts)


def test_bytes_that_are_not_utf8_are_refused_by_array_and_row(tmp_path):
    path = _save(tmp_path / "bad.npz", np.array([b"a", b"b", b"\xff\xfe", b"c"]))
    said = r"bad.npz: array 'prompts' row 2 \(0-based\) holds bytes that are not UTF-8"
    with pytest.raises(InputError, match=said):
        pp.load_paired(path)


def test_an_object_array_is_refused_by_its_name(tmp_path):
    path = _save(tmp_path / "obj.npz", np.array(["a", "b", "c", "d"], dtype=object))
    with pytest.raises(InputError, match="array 'prompts' is an object \\(pickled\\) array") as caught:
        pp.load_paired(path)
    assert "not a readable" not in str(caught.value)
    ok = _save(tmp_path / "ok.npz", np.array(["a", "b", "c", "d"]))
    code, out, err = run_cli("split", ok, path, "--out", tmp_path / "r", "--quiet")
    assert code == 2 and err.strip().count("\n") == 0 and "array 'prompts' is an object" in err
