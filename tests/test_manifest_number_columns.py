"""Numbers where text is expected (a JSON 42, a Parquet integer column: often an id picked by mistake) are
read as text, as CSV gives them, and said in a note naming the column, how many rows and the first."""

from __future__ import annotations

import json
import warnings

import pyarrow as pa
import pyarrow.parquet as pq

from promptprism.data.manifest import read_manifest


def _rows(n=6):
    return [{"prompt": f"write about {i % 3}", "output": f"answer {i}"} for i in range(n)]


def test_a_number_in_a_text_column_is_read_as_text_and_noted(tmp_path):
    rows = _rows()
    rows[4]["output"] = 42
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    m = read_manifest(path)
    assert m.rows[4].output == "42"
    [note] = m.notes
    assert "column 'output' holds numbers, not text, in 1 of 6 rows" in note and "42" in note


def test_a_whole_integer_column_is_noted_and_text_columns_are_not(tmp_path):
    rows = _rows()
    pq.write_table(pa.table({"prompt": [r["prompt"] for r in rows], "output": list(range(6))}),
                   tmp_path / "ids.parquet")
    m = read_manifest(tmp_path / "ids.parquet")
    assert [r.output for r in m.rows] == [str(i) for i in range(6)]
    assert any("holds numbers, not text, in every row" in n for n in m.notes)
    pq.write_table(pa.table({"prompt": [r["prompt"] for r in rows], "output": [r["output"] for r in rows]}),
                   tmp_path / "text.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_manifest(tmp_path / "text.parquet").notes == []


def test_empty_outputs_are_kept_and_noted_with_their_count_and_first_row(tmp_path):
    """An empty or white-space output was embedded and counted with no word (a null one is refused, and
    generate asks again on an empty answer): kept, as a model may answer nothing, and noted."""
    rows = _rows()
    rows[2]["output"], rows[5]["output"] = "", "   "
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    m = read_manifest(path)
    assert [r.output for r in m.rows][2] == "" and len(m.rows) == 6
    [note] = m.notes
    assert note.startswith("2 of 6 rows have an empty output (first ") and "row 3" in note, note
