"""``generate``: prompts -> manifest, against a scripted OpenAI-compatible server and Python callables.

The scripted server (tests/compcon_fakes.py) only checks the protocol; real-model runs are in
tests/test_real_llm.py.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from compcon_fakes import ScriptedServer
from promptprism.cli import main
from promptprism.data.manifest import read_manifest
from promptprism.errors import InputError, OptionError, PromptPrismError
from promptprism.generate import generate_images, generate_text, read_prompts
from promptprism.generate.llm_server import free_port
from promptprism.generate.run import journal_path


def _prompts(tmp_path, lines=("What is 1+1?", "Name a colour.", "Say hello.")):
    p = tmp_path / "prompts.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _gen(prompts, out, srv, **kw):
    kw.setdefault("model", "m")
    return generate_text(prompts, out=out, base_url=srv.base_url, api_key_env=None, progress=False, **kw)


def _last(body):
    return body["messages"][-1]["content"]


def _echo(body, stage, n):
    user = body["messages"][-1]["content"]
    return f"answer to {user} (seed {body.get('seed')})"


def test_text_manifest_rows_seeds_system_prompt(tmp_path):
    prompts = _prompts(tmp_path)
    with ScriptedServer(_echo) as srv:
        res = generate_text(prompts, out=tmp_path / "out.jsonl", base_url=srv.base_url, model="m",
                            system_prompt="Be brief.", samples=2, seed=3, api_key_env=None, progress=False)
    assert (res.n_rows, res.n_generated, res.n_reused) == (6, 6, 0)
    assert all(r["messages"][0] == {"role": "system", "content": "Be brief."} for r in srv.requests)
    assert len({r["seed"] for r in srv.requests}) == 6  # every sample its own seed
    m = read_manifest(tmp_path / "out.jsonl")
    assert [r.prompt for r in m.rows] == ["What is 1+1?"] * 2 + ["Name a colour."] * 2 + ["Say hello."] * 2
    assert [r.id for r in m.rows] == ["1_0", "1_1", "2_0", "2_1", "3_0", "3_1"]
    assert [r.meta["prompt_id"] for r in m.rows] == ["1", "1", "2", "2", "3", "3"]
    assert all(r.output.startswith(f"answer to {r.prompt}") for r in m.rows)
    assert [r.meta["sample"] for r in m.rows] == [0, 1] * 3
    assert not journal_path(tmp_path / "out.jsonl").exists()


def test_resume_after_failure_keeps_rows_and_never_regenerates(tmp_path):
    prompts = _prompts(tmp_path, [f"question {i}" for i in range(8)])
    out = tmp_path / "out.jsonl"

    def flaky(body, stage, n):
        return (400, "bad request") if "question 5" in _last(body) else _echo(body, stage, n)

    with ScriptedServer(flaky) as srv:
        with pytest.raises(PromptPrismError, match=r"HTTP 400.*5 of 8 rows kept .*run the same command"):
            _gen(prompts, out, srv)
    assert not out.exists() and journal_path(out).exists()
    with ScriptedServer(_echo) as srv:
        res = generate_text(prompts, out=out, base_url=srv.base_url, model="m", api_key_env=None,
                            progress=False)
        asked = [r["messages"][-1]["content"] for r in srv.requests]
    assert (res.n_generated, res.n_reused) == (3, 5) and asked == ["question 5", "question 6", "question 7"]
    assert [r.prompt for r in read_manifest(out).rows] == [f"question {i}" for i in range(8)]
    with ScriptedServer(_echo) as srv:  # a finished manifest: nothing asked again
        res = generate_text(prompts, out=out, base_url=srv.base_url, model="m", api_key_env=None,
                            progress=False)
        assert srv.requests == [] and res.n_reused == 8
    with ScriptedServer(_echo) as srv, pytest.raises(OptionError, match="other settings|not generated with"):
        generate_text(prompts, out=out, base_url=srv.base_url, model="other", api_key_env=None,
                      progress=False)


def test_torn_journal_line_is_ignored(tmp_path):
    prompts = _prompts(tmp_path)
    out = tmp_path / "out.jsonl"
    with ScriptedServer(lambda b, s, n: (400, "no") if "hello" in _last(b) else "ok") as srv:
        with pytest.raises(PromptPrismError):
            _gen(prompts, out, srv)
    with open(journal_path(out), "a") as fh:
        fh.write('{"key": "3\\u001f0", "sett')  # killed mid-write
    with ScriptedServer(lambda b, s, n: "ok") as srv:
        res = generate_text(prompts, out=out, base_url=srv.base_url, model="m", api_key_env=None,
                            progress=False)
    assert (res.n_generated, res.n_reused) == (1, 2)


def test_bounded_concurrency(tmp_path):
    prompts = _prompts(tmp_path, [f"q{i}" for i in range(9)])
    lock, state = threading.Lock(), {"now": 0, "max": 0}

    def slow(body, stage, n):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.15)
        with lock:
            state["now"] -= 1
        return "ok"

    with ScriptedServer(slow) as srv:
        generate_text(prompts, out=tmp_path / "o.jsonl", base_url=srv.base_url, model="m", concurrency=3,
                      api_key_env=None, progress=False)
    assert state["max"] == 3


def test_empty_answers_are_reasked_then_an_error_naming_the_row(tmp_path):
    prompts = _prompts(tmp_path)
    out = tmp_path / "out.jsonl"
    with ScriptedServer(lambda b, s, n: "  \n" if "colour" in _last(b) else "fine") as srv:
        with pytest.raises(InputError, match=r"prompt id 2 \('Name a colour.'\), sample 0: m .* answered "
                                             r"nothing usable 3 times"):
            _gen(prompts, out, srv)
        seeds = [r["seed"] for r in srv.requests if "colour" in r["messages"][-1]["content"]]
    assert len(seeds) == 3 and len(set(seeds)) == 3
    assert len(journal_path(out).read_text().splitlines()) == 1  # prompt 1 kept; prompt 3 never started


def test_prompts_file_errors(tmp_path):
    p = tmp_path / "p.txt"
    p.write_text("one\n\nthree\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"p.txt: line 2: an empty line"):
        read_prompts(p)
    j = tmp_path / "p.jsonl"
    j.write_text('{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"line 2\): id 'a' repeats"):
        read_prompts(j)
    c = tmp_path / "p.csv"
    c.write_text("id,prompt,topic\nq1,hello,greet\nq2,,greet\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"p.csv: row 2 .*empty or missing 'prompt'"):
        read_prompts(c)
    c.write_text("id,prompt,topic\nq1,hello,greet\n", encoding="utf-8")
    assert read_prompts(c)[0].meta == {"topic": "greet"}


def _cli(argv, capsys):
    code = main(argv)
    return code, capsys.readouterr()


def test_cli_text_and_bad_input_exit_2(tmp_path, capsys):
    prompts = _prompts(tmp_path)
    with ScriptedServer(_echo) as srv:
        code, cap = _cli(["generate", str(prompts), "--out", str(tmp_path / "m.jsonl"), "--endpoint",
                          srv.base_url, "--model", "m", "--samples", "2", "-q"], capsys)
    assert code == 0 and len(read_manifest(tmp_path / "m.jsonl")) == 6
    code, cap = _cli(["generate", str(prompts), "--out", str(tmp_path / "z.jsonl"), "--base-url",
                      "http://127.0.0.1:1/v1", "--model", "m", "--samples", "0"], capsys)
    assert code == 2 and "--samples must be >= 1, got 0" in cap.err
    url = f"http://127.0.0.1:{free_port()}/v1"
    code, cap = _cli(["generate", str(prompts), "--out", str(tmp_path / "u.jsonl"), "--base-url", url,
                      "--model", "m", "--retries", "0", "-q"], capsys)
    assert code == 2 and f"{url}/chat/completions unreachable" in cap.err
    assert len(cap.err.strip().splitlines()) == 1
    bad = tmp_path / "bad.txt"
    bad.write_text("a\n\nb\n", encoding="utf-8")
    code, cap = _cli(["generate", str(bad), "--out", str(tmp_path / "b.jsonl"), "--base-url", url,
                      "--model", "m"], capsys)
    assert code == 2 and "bad.txt: line 2: an empty line" in cap.err and "Traceback" not in cap.err


# ------------------------------------------------------------------------------------------------ images
def painter(prompt, seed=0):
    """A test generator: a flat image whose colour comes from the prompt and the seed."""
    rng = np.random.default_rng(seed)
    return np.full((16, 16, 3), rng.integers(0, 256, 3), dtype=np.uint8)


def raising(prompt):
    """A generator that breaks on one prompt."""
    if "boom" in prompt:
        raise RuntimeError("out of memory")
    return np.zeros((8, 8, 3), dtype=np.uint8)


def wrong_type(prompt):
    """A generator that returns a dict instead of an image."""
    return {"image": prompt}


def test_images_from_a_callable(tmp_path):
    prompts = _prompts(tmp_path, ["a red cat", "a blue dog"])
    res = generate_images(prompts, out=tmp_path / "imgs.jsonl", generator="test_generate:painter", samples=3,
                          progress=False)
    m = read_manifest(tmp_path / "imgs.jsonl")
    assert res.n_rows == 6 and m.output_kind == "image"
    assert all(r.image.is_file() and r.image.parent.name == "imgs_images" for r in m.rows)
    from PIL import Image

    colours = {tuple(np.asarray(Image.open(r.image))[0, 0]) for r in m.rows}
    assert len(colours) == 6  # each sample drawn with its own seed


def test_image_generator_errors_name_the_row_and_keep_rows(tmp_path, capsys):
    prompts = _prompts(tmp_path, ["fine", "boom", "later"])
    out = tmp_path / "x.jsonl"
    with pytest.raises(InputError, match=r"prompt id 2, sample 0 .*raised RuntimeError: out of memory"):
        generate_images(prompts, out=out, generator=raising, progress=False)
    assert len(journal_path(out).read_text().splitlines()) == 1
    code, cap = _cli(["generate", str(prompts), "--out", str(tmp_path / "w.jsonl"), "--generator",
                      "test_generate:wrong_type", "-q"], capsys)
    assert code == 2 and "returned dict; expected one image" in cap.err
    code, cap = _cli(["generate", str(prompts), "--out", str(tmp_path / "w.jsonl"), "--generator",
                      "test_generate:nothing_here", "-q"], capsys)
    assert code == 2 and "cannot import" in cap.err


@pytest.mark.slow  # imports diffusers (~3.5 s a test process): the slow tier
def test_diffusers_absent_or_bad_folder_is_one_clear_error(tmp_path):
    prompts = _prompts(tmp_path)
    try:
        import diffusers  # noqa: F401
    except ImportError:
        with pytest.raises(OptionError, match="needs the diffusers package"):
            generate_images(prompts, out=tmp_path / "d.jsonl", diffusers=tmp_path, progress=False)
    with pytest.raises(OptionError, match="not a folder"):
        generate_images(prompts, out=tmp_path / "d.jsonl", diffusers=tmp_path / "nope", progress=False)


def test_manifest_rows_are_json_lines(tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "h1", "prompt": "Who was Caesar?", "topic": "history"}) + "\n")
    with ScriptedServer(lambda b, s, n: "A Roman general.") as srv:
        generate_text(prompts, out=tmp_path / "o.jsonl", base_url=srv.base_url, model="m", api_key_env=None,
                      progress=False)
    row = json.loads((tmp_path / "o.jsonl").read_text())
    assert row["topic"] == "history" and row["prompt_id"] == "h1" and row["output"] == "A Roman general."


@pytest.mark.parametrize("column", ["seed", "sample", "output", "model"])
def test_a_prompts_column_generate_would_overwrite_is_refused(tmp_path, column):
    """A user's 'seed', 'sample', 'output' or 'model' column was overwritten by generate's own fields,
    without a word; other columns are copied."""
    c = tmp_path / "p.csv"
    c.write_text(f"prompt,topic,{column}\nWhat is DNA,science,42\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"p.csv: row 1.*column '{column}' is a field generate writes .*"
                                         rf"rename it \(e.g. 'user_{column}'\)"):
        read_prompts(c)
    j = tmp_path / "p.jsonl"
    j.write_text('{"prompt": "a", "topic": "t"}\n{"prompt": "b", "' + column + '": 1}\n', encoding="utf-8")
    with pytest.raises(InputError, match=rf"line 2\): column '{column}'"):
        read_prompts(j)
