"""JSON Lines end at \\n only: strings may hold U+2028, U+2029, U+0085, form feeds raw (json.dumps with
ensure_ascii=False writes them so, and model answers hold them). Manifests, generate's journal and its
finished manifest, and one-prompt-per-line files are read whole; the line numbers are the file's."""

from __future__ import annotations

import json

import pytest

from _cli_run import run_cli
from promptprism.data.tables import read_table, text_lines
from promptprism.errors import InputError

ODD = "a\u2028b\u2029c\u0085d\x0ce\x0bf\x1cg"


def test_text_lines_cut_at_newlines_only():
    assert text_lines(f"x{ODD}\r\ny\n\nz") == [f"x{ODD}", "y", "", "z"]
    assert text_lines("x\n") == ["x"] and text_lines("") == []


def test_a_manifest_with_raw_separators_in_strings_is_read_whole(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"prompt": "p1", "output": ODD}, ensure_ascii=False) + "\n" +
                    json.dumps({"prompt": "p2", "output": "c"}) + "\n", encoding="utf-8")
    rows = read_table(path).records
    assert [r.values["output"] for r in rows] == [ODD, "c"]
    path.write_text(json.dumps({"prompt": ODD}, ensure_ascii=False) + "\n{broken\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"row 2 \(line 2\)"):
        read_table(path)


def test_generate_resumes_a_journal_whose_answers_hold_separators(tmp_path):
    (tmp_path / "p.txt").write_text(f"first {ODD} prompt\nsecond\n", encoding="utf-8")
    out = tmp_path / "m.jsonl"
    for _ in range(2):  # (the second run reads the finished manifest back)
        code, _, err = run_cli("generate", tmp_path / "p.txt", "--out", out, "--generator",
                               "test_generate:painter", "-q")
        assert code == 0, err
    rows = [json.loads(line) for line in text_lines(out.read_text(encoding="utf-8"))]
    assert [r["prompt"] for r in rows] == [f"first {ODD} prompt", "second"]
