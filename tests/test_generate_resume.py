"""``generate`` keyed by content: edited prompts files, resumed runs, image names, formats, generators.

The property test edits a prompts file at random (insert, delete, move, duplicate lines) between interrupted
runs and checks the final manifest against a clean run's, row for row, with no finished row made twice.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptprism.errors import InputError, OptionError
from promptprism.generate import generate_images, read_prompts
from promptprism.generate.run import MAX_ROWS, journal_path


class Recorder:
    """A deterministic image generator that records every image it made and can be stopped after a budget
    (the run then fails like an interrupted one: the rows finished so far are kept)."""

    def __init__(self):
        self.made: list[tuple[str, int]] = []
        self.budget: int | None = None

    def __call__(self, prompt, seed=0):
        if self.budget is not None and self.budget <= 0:
            raise RuntimeError("stopped")
        if self.budget is not None:
            self.budget -= 1
        self.made.append((prompt, seed))
        rng = np.random.default_rng(seed)
        return rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _rows(manifest: Path) -> list[dict]:
    return [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines()]


def _run(prompts, out, gen, **kw):
    return generate_images(prompts, out=out, generator=gen, progress=False, **kw)


def _same_as_clean(lines: list[str], out: Path, samples: int) -> None:
    """The manifest at ``out`` equals a clean run's on the same prompts, row for row and image for image."""
    with tempfile.TemporaryDirectory() as clean_dir:
        clean = Path(clean_dir) / out.name
        _run(_write(Path(clean_dir) / "p.txt", lines), clean, Recorder(), samples=samples)
        got, want = _rows(out), _rows(clean)
        assert got == want
        for row in got:
            assert (out.parent / row["image"]).read_bytes() == (clean.parent / row["image"]).read_bytes()


def _identities(lines: list[str], samples: int) -> set[tuple[str, int, int]]:
    """Each row of a prompts file as the test sees it: (text, how many times it came before, sample)."""
    out = set()
    for i, line in enumerate(lines):
        text = line.strip()
        occurrence = sum(other.strip() == text for other in lines[:i])
        out |= {(text, occurrence, k) for k in range(samples)}
    return out


POOL = ["a cat", "a dog", "a b", "a_b", "a/b", "a?b", "猫", "犬", "A CAT", "a cat "]
EDIT = st.one_of(
    st.tuples(st.just("insert"), st.integers(0, 20), st.sampled_from(POOL)),
    st.tuples(st.just("delete"), st.integers(0, 20), st.none()),
    st.tuples(st.just("move"), st.integers(0, 20), st.integers(0, 20)),
    st.tuples(st.just("duplicate"), st.integers(0, 20), st.none()),
)


def _edit(lines: list[str], edit) -> list[str]:
    kind, i, arg = edit
    lines = list(lines)
    if kind == "insert":
        lines.insert(i % (len(lines) + 1), arg)
    elif lines and kind == "delete" and len(lines) > 1:
        del lines[i % len(lines)]
    elif lines and kind == "move":
        lines.insert(arg % len(lines), lines.pop(i % len(lines)))
    elif lines and kind == "duplicate":
        j = i % len(lines)
        lines.insert(j, lines[j])
    return lines


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=st.lists(st.sampled_from(POOL), min_size=1, max_size=6),
       rounds=st.lists(st.tuples(st.lists(EDIT, max_size=3), st.integers(0, 4)), min_size=1, max_size=4),
       samples=st.integers(1, 2))
@pytest.mark.slow
def test_random_edits_between_interrupted_runs_end_in_a_clean_runs_manifest(start, rounds, samples):
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        prompts, out, gen = d / "p.txt", d / "m.jsonl", Recorder()
        lines = list(start)
        rows_ever: set[tuple[str, int, int]] = set()  # (text, occurrence, sample) of every version run
        for edits, budget in rounds:
            for edit in edits:
                lines = _edit(lines, edit)
            rows_ever |= _identities(lines, samples)
            gen.budget = budget
            try:
                _run(_write(prompts, lines), out, gen, samples=samples)
            except InputError as exc:
                assert "stopped" in str(exc) and "rows kept" in str(exc)
        gen.budget = None
        res = _run(_write(prompts, lines), out, gen, samples=samples)
        assert res.n_rows == len(lines) * samples
        rows_ever |= _identities(lines, samples)
        assert len(gen.made) <= len(rows_ever), "a finished row was generated twice"
        assert len(gen.made) == len(set(gen.made))
        _same_as_clean(lines, out, samples)


def test_a_line_inserted_at_the_top_is_generated_and_nothing_else(tmp_path):
    gen = Recorder()
    out = tmp_path / "m.jsonl"
    _run(_write(tmp_path / "p.txt", ["one", "two", "three"]), out, gen)
    before = {r["prompt"]: r for r in _rows(out)}
    gen.made.clear()
    res = _run(_write(tmp_path / "p.txt", ["zero", "one", "two", "three"]), out, gen)
    assert [p for p, _ in gen.made] == ["zero"] and (res.n_generated, res.n_reused) == (1, 3)
    after = _rows(out)
    assert [r["prompt"] for r in after] == ["zero", "one", "two", "three"]
    assert [r["id"] for r in after] == ["1_0", "2_0", "3_0", "4_0"]  # ids follow the file as it is now
    for r in after[1:]:  # the kept rows keep their image and seed
        assert (r["image"], r["seed"]) == (before[r["prompt"]]["image"], before[r["prompt"]]["seed"])


def test_changed_settings_are_refused_in_one_line(tmp_path):
    prompts = _write(tmp_path / "p.txt", ["one", "two"])
    out = tmp_path / "m.jsonl"
    _run(prompts, out, Recorder(), seed=1)
    with pytest.raises(OptionError, match="not generated with these settings"):
        _run(prompts, out, Recorder(), seed=2)


def test_image_names_never_collide(tmp_path):
    ids = ["a b", "a_b", "a/b", "a?b", "猫", "犬", "A_B"]
    p = tmp_path / "p.jsonl"
    p.write_text("".join(json.dumps({"id": i, "prompt": "same prompt"}) + "\n" for i in ids),
                 encoding="utf-8")
    out = tmp_path / "m.jsonl"
    _run(p, out, Recorder(), samples=2)
    rows = _rows(out)
    images = [r["image"] for r in rows]
    assert len(rows) == 14 and len({i.casefold() for i in images}) == 14
    assert all((tmp_path / i).is_file() and i.isascii() for i in images)
    seeds = [r["seed"] for r in rows]
    assert len(set(seeds)) == 14  # the same prompt on 7 rows: 7 occurrences, each its own samples
    p2 = _write(tmp_path / "q.txt", ["猫", "犬", "a b", "a/b"])
    _run(p2, tmp_path / "n.jsonl", Recorder())
    assert len({r["image"] for r in _rows(tmp_path / "n.jsonl")}) == 4


def test_every_prompts_format_reads_the_same(tmp_path):
    want = ["first prompt", "second, with a comma", "猫"]
    (tmp_path / "p.txt").write_bytes(b"\xef\xbb\xbf" + "\n".join(want).encode() + b"\n")
    (tmp_path / "p.json").write_text(json.dumps(want, ensure_ascii=False, indent=2), encoding="utf-8")
    (tmp_path / "o.json").write_text(json.dumps([{"prompt": w} for w in want]), encoding="utf-8")
    (tmp_path / "p.csv").write_bytes(b"\xef\xbb\xbfprompt\n" + "".join(f'"{w}"\n' for w in want).encode())
    (tmp_path / "p.jsonl").write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps({"prompt": w}) + "\n"
                                                                 for w in want).encode())
    for name in ("p.txt", "p.json", "o.json", "p.csv", "p.jsonl"):
        assert [r.prompt for r in read_prompts(tmp_path / name)] == want, name
        assert [r.id for r in read_prompts(tmp_path / name)] == ["1", "2", "3"], name


def test_prompts_file_faults_are_one_line(tmp_path):
    cases = {
        "dup.csv": ("id,prompt,output,output\n1,a,x,y\n", r"header names column 'output' 2 times"),
        "latin1.txt": ("caf\xe9\n".encode("latin-1"), r"line 1: not UTF-8 text"),
        "bad.json": ('["a", ', r"not valid JSON"),
        "nums.json": ("[1, 2]", r"row 1 \(list item\): expected a JSON object \(or a string"),
        "empty.json": ("[]", r"the prompts file is empty"),
        "blank.json": ('["a", "  "]', r"row 2 \(list item\): an empty or missing 'prompt'"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        with pytest.raises(InputError, match=message):
            read_prompts(path)


def sixteen_bit(prompt, seed=0):
    """A generator returning a 16-bit ramp."""
    return (np.arange(16, dtype=np.uint16).reshape(4, 4) * 4369)


def test_sixteen_bit_arrays_are_scaled_like_the_image_reader(tmp_path):
    from PIL import Image

    from promptprism.data.imageio import as_rgb

    out = tmp_path / "m.jsonl"
    _run(_write(tmp_path / "p.txt", ["x"]), out, sixteen_bit)
    got = np.asarray(Image.open(tmp_path / _rows(out)[0]["image"]))[..., 0]
    want = np.asarray(as_rgb(Image.fromarray(sixteen_bit("x"))))[..., 0]
    np.testing.assert_array_equal(got, want)
    assert got.min() == 0 and got.max() == 255 and len(np.unique(got)) == 16  # scaled, not clipped


@pytest.mark.parametrize("returned, message", [
    (np.zeros((0, 0, 3), dtype=np.uint8), "the image array is empty"),
    (np.array([[{}, {}]], dtype=object), "must hold numbers, got dtype object"),
    ("exit", r"called sys.exit\(3\)"),
    ("interrupt", "raised KeyboardInterrupt"),
])
def test_bad_generator_output_is_an_error_naming_the_row(tmp_path, returned, message):
    def gen(prompt, seed=0):
        if isinstance(returned, str) and returned == "exit":
            raise SystemExit(3)
        if isinstance(returned, str):
            raise KeyboardInterrupt
        return returned

    out = tmp_path / "m.jsonl"
    with pytest.raises(InputError, match=f"prompt id 1, sample 0 .*{message}"):
        _run(_write(tmp_path / "p.txt", ["x"]), out, gen)
    assert not out.exists()


def test_a_plan_over_the_row_limit_is_refused_before_it_starts(tmp_path):
    gen = Recorder()
    with pytest.raises(OptionError, match=f"over the {MAX_ROWS:,} rows"):
        _run(_write(tmp_path / "p.txt", ["x", "y"]), tmp_path / "m.jsonl", gen, samples=MAX_ROWS)
    assert gen.made == [] and not journal_path(tmp_path / "m.jsonl").exists()


def test_cli_generator_faults_exit_2_with_one_line(tmp_path, capsys):
    from promptprism.cli import main

    prompts = _write(tmp_path / "p.txt", ["x"])
    for spec, message in [("test_generate_resume:exits", "called sys.exit(3)"),
                          ("test_generate_resume:interrupts", "raised KeyboardInterrupt"),
                          ("test_generate_resume:empty", "the image array is empty")]:
        code = main(["generate", str(prompts), "--out", str(tmp_path / "m.jsonl"), "--generator", spec, "-q"])
        err = capsys.readouterr().err
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    code = main(["generate", str(prompts), "--out", str(tmp_path / "m.jsonl"), "--generator",
                 "test_generate_resume:sixteen_bit", "--samples", "1000000000", "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "--samples 1000000000 x 1 prompts" in err


def exits(prompt, seed=0):
    """A generator that calls sys.exit."""
    raise SystemExit(3)


def interrupts(prompt, seed=0):
    """A generator that raises KeyboardInterrupt."""
    raise KeyboardInterrupt


def empty(prompt, seed=0):
    """A generator that returns an empty array."""
    return np.zeros((0, 4), dtype=np.uint8)
