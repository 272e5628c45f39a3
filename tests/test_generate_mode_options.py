"""``generate``'s options belong to one mode: text options given with an image generator (or image options in
text mode, --steps with a callable, guidance settings without --guide-reference) are refused in one line
naming them, exit 2, and nothing is written; they were dropped without a word."""

from __future__ import annotations

import pytest

from _cli_run import run_cli


@pytest.mark.parametrize("extra, named", [
    (["--system", "Answer in French", "--temperature", "0.2", "--max-tokens", "5"],
     "--system, --temperature, --max-tokens: not used by --generator generation; leave them out"),
    (["--model", "gpt"], "--model: not used by --generator generation; leave it out"),
    (["--steps", "50"], "--steps: not used by --generator generation"),
    (["--guide-scale", "2"], "--guide-scale and --guide-rho go with --guide-reference"),
])
def test_options_of_the_other_mode_are_refused(tmp_path, extra, named):
    (tmp_path / "p.txt").write_text("a\nb\n")
    out = tmp_path / "m.jsonl"
    code, _, err = run_cli("generate", tmp_path / "p.txt", "--out", out, "--generator",
                           "test_generate:painter", "-q", *extra)
    assert code == 2 and named in err and err.strip().count("\n") == 0
    assert not out.exists() and not out.with_name("m.jsonl.partial").exists()


def test_image_options_in_text_mode_are_refused(tmp_path):
    (tmp_path / "p.txt").write_text("a\n")
    code, _, err = run_cli("generate", tmp_path / "p.txt", "--out", tmp_path / "t.jsonl", "--base-url",
                           "http://127.0.0.1:9/v1", "--model", "m", "--steps", "3", "-q")
    assert code == 2 and "--steps: not used by text generation" in err


def test_the_same_run_without_them_writes_its_manifest(tmp_path):
    (tmp_path / "p.txt").write_text("a\nb\n")
    code, _, err = run_cli("generate", tmp_path / "p.txt", "--out", tmp_path / "m.jsonl", "--generator",
                           "test_generate:painter", "-q")
    assert code == 0, err
    assert len((tmp_path / "m.jsonl").read_text().splitlines()) == 2
