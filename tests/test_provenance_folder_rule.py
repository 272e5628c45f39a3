"""A folder input's fingerprint covers the data, not notes or results kept beside it (rule 2): a README or
a results folder written inside an input folder no longer makes earlier results read it as edited; an edited
array still does; records written under rule 1 are checked under rule 1."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.errors import InputError
from promptprism.provenance import fingerprint, input_record, verify


def test_notes_and_results_inside_an_input_folder_are_not_edits(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    rng = np.random.default_rng(0)
    np.save(folder / "prompt_embeddings.npy", rng.normal(size=(5, 2)))
    np.save(folder / "output_embeddings.npy", rng.normal(size=(5, 3)))
    old = {"test": {**input_record(folder, tmp_path), "folder_rule": 1}}
    old["test"].update(fingerprint(folder, rule=1))
    new = {"test": input_record(folder, tmp_path)}
    assert new["test"]["folder_rule"] == 2
    (folder / "README.txt").write_text("notes")
    (folder / "res").mkdir()
    (folder / "res" / "result.json").write_text("{}")
    (folder / "res" / "curves.csv").write_text("a\n1\n")
    verify("test", folder, new)  # unchanged data: accepted
    with pytest.raises(InputError, match="edited since the run"):
        verify("test", folder, old)  # rule 1 counts every file, as before
    np.save(folder / "output_embeddings.npy", rng.normal(size=(5, 3)))
    with pytest.raises(InputError, match="edited since the run"):
        verify("test", folder, new)


def test_a_differing_copy_beside_a_moved_folder_is_said_when_the_recorded_file_is_used(tmp_path):
    """A results folder moved with edited copies of its inputs: the recorded file at its absolute path is
    used (it still holds the set the result was computed on), now with one warning naming both."""
    from promptprism.provenance import locate

    data = tmp_path / "data"
    data.mkdir()
    np.save(data / "x.npy", np.arange(6.0))
    results = tmp_path / "results"
    results.mkdir()
    record = input_record(data / "x.npy", results)
    moved = tmp_path / "elsewhere"
    (moved / "results").mkdir(parents=True)
    (moved / "data").mkdir()
    np.save(moved / "data" / "x.npy", np.arange(6.0) + 1)  # (an edited copy where the relative path points)
    with pytest.warns(UserWarning, match="is not the set the result recorded there"):
        assert locate(record, moved / "results") == data / "x.npy"
    np.save(moved / "data" / "x.npy", np.arange(6.0))  # (an identical copy: used, no word)
    assert locate(record, moved / "results") == moved / "results" / ".." / "data" / "x.npy"
