"""Ctrl-C says one line: what a run kept (generate: the rows in its .partial journal, every row that finished
while the run stopped included, so no image is left outside it), or that results are written whole or not
at all; exit 130. It was a silent 130, with one finished image missing from the journal."""

from __future__ import annotations

import json

import pytest

from _cli_run import run_cli
from promptprism.generate import run as run_module


def _interrupt_on_call(monkeypatch, at: int, signal: type = KeyboardInterrupt):
    real, calls = run_module.wait, {"n": 0}

    def wait(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == at:
            real(*args, **kwargs)  # (the rows running finish meanwhile, as a pool shutdown lets them)
            raise signal
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "wait", wait)


@pytest.mark.parametrize("concurrency", [1, 3])
def test_an_interrupted_generate_says_what_it_kept_and_keeps_every_finished_row(tmp_path, monkeypatch,
                                                                                 concurrency):
    (tmp_path / "p.txt").write_text("".join(f"thing {i}\n" for i in range(8)))
    out = tmp_path / "m.jsonl"
    _interrupt_on_call(monkeypatch, 3)
    code, _, err = run_cli("generate", tmp_path / "p.txt", "--out", out, "--generator",
                           "test_generate:painter", "--concurrency", concurrency, "-q")
    assert code == 130
    [line] = err.strip().splitlines()
    journal = out.with_name("m.jsonl.partial")
    kept = [json.loads(x) for x in journal.read_text().splitlines()]
    assert line == (f"interrupted: {len(kept)} of 8 rows kept in {journal}; run the same command again to "
                    "continue")
    images = sorted(p.name for p in (tmp_path / "m_images").iterdir())
    assert len(images) == len(kept) >= 2  # every image written is in the journal
    monkeypatch.undo()
    code, _, err = run_cli("generate", tmp_path / "p.txt", "--out", out, "--generator",
                           "test_generate:painter", "-q")
    assert code == 0, err
    assert len(out.read_text().splitlines()) == 8 and not journal.exists()


def test_an_interrupted_command_says_nothing_was_half_written(tmp_path, monkeypatch):
    import numpy as np

    from promptprism.methods.promptsplit import estimator

    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        np.savez(tmp_path / f"{name}.npz", prompt_embeddings=rng.normal(size=(20, 3)),
                 output_embeddings=rng.normal(size=(20, 2)))

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(estimator.PromptSplit, "fit", stop)
    code, _, err = run_cli("split", tmp_path / "a.npz", tmp_path / "b.npz", "--out", tmp_path / "r", "-q")
    assert code == 130
    assert err.strip() == "interrupted: whatever was written is whole (results are written whole " \
                          "or not at all)"
    assert not (tmp_path / "r" / "result.json").exists()


def test_a_terminated_generate_says_so_with_what_it_kept_and_exits_143(tmp_path, monkeypatch):
    """SIGTERM (raised as Terminated by the command line's handler) read "interrupted:" and exit 130."""
    from promptprism.errors import Terminated

    (tmp_path / "p.txt").write_text("".join(f"thing {i}\n" for i in range(6)))
    out = tmp_path / "m.jsonl"
    _interrupt_on_call(monkeypatch, 2, Terminated)
    code, _, err = run_cli("generate", tmp_path / "p.txt", "--out", out, "--generator",
                           "test_generate:painter", "-q")
    assert code == 143, err
    [line] = err.strip().splitlines()
    assert line.startswith("terminated: ") and "rows kept in" in line
