"""``promptprism metrics`` and ``diversity --reference``: result.json + report.html, one-line errors, and the
prompts a CLIP text encoder truncated counted in the result."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _cli_run import run_cli
from promptprism.results import load_result


def _npz(path, *, n=60, d=8, shift=0.0, seed=0):
    rng = np.random.default_rng(seed)
    groups = np.arange(n) % 3
    centres = np.random.default_rng(42).normal(size=(3, d))
    np.savez(path, prompt_embeddings=centres[groups],
             output_embeddings=centres[groups] + rng.normal(size=(n, d)) + shift,
             prompts=np.array([f"prompt {g}" for g in groups]))
    return path


@pytest.fixture
def sets(tmp_path):
    return (_npz(tmp_path / "a.npz", seed=1), _npz(tmp_path / "b.npz", shift=1.0, seed=2),
            _npz(tmp_path / "real.npz", seed=3))


def test_metrics_writes_result_and_report_for_several_sets(sets, tmp_path):
    a, b, real = sets
    out = tmp_path / "res"
    code, stdout, err = run_cli("metrics", a, b, "--reference", real, "--out", out, "--subset-size", "30",
                                "--subsets", "5", "--bootstrap", "20", "--seed", "3",
                                "--alignment", "on")  # (raw embeddings: the joint space is asserted here)
    assert code == 0, err
    result = load_result(out)
    assert result.kind == "metrics" and result.names == ["a", "b"] and result.reference == "real"
    assert result.seed == 3 and result.config["nearest_k"] == 5
    a_m, b_m = result.models
    assert a_m.fd < b_m.fd and a_m.kid < b_m.kid and a_m.density > b_m.density  # b is shifted
    assert a_m.clip_score is not None and a_m.per_prompt and "precision" in a_m.intervals
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Against the reference real" in page and "CLIPScore" in page
    assert "precision" in stdout and "results:" in stdout


def test_metrics_json_summary(sets, tmp_path):
    a, _, real = sets
    code, stdout, err = run_cli("metrics", a, "--reference", real, "--out", tmp_path / "j", "--json",
                                "--bootstrap", "0", "--subset-size", "30", "--subsets", "3")
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["kind"] == "metrics" and summary["n_reference"] == 60
    assert summary["models"][0]["name"] == "a" and 0 <= summary["models"][0]["coverage"] <= 1


@pytest.mark.parametrize(("flags", "message"), [
    (["--nearest-k", "0"], "--nearest-k must be > 0, got 0"),
    (["--nearest-k", "70"], "a: 60 sample(s); --nearest-k 70 needs at least 71"),  # (the set named)
    (["--mmd-kernel", "laplace"], "--mmd-kernel must be one of cosine, gaussian"),
    (["--alignment", "maybe"], "--alignment must be one of auto, on, off"),
])
def test_bad_options_are_one_line_with_status_2(sets, tmp_path, flags, message):
    a, _, real = sets
    code, _, err = run_cli("metrics", a, "--reference", real, "--out", tmp_path / "x", *flags)
    assert code == 2
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x" / "result.json").exists()


def test_diversity_with_a_reference_adds_the_metrics_beside_scendi(sets, tmp_path):
    a, b, real = sets
    out = tmp_path / "div"
    code, stdout, err = run_cli("diversity", a, b, "--reference", real, "--out", out, "--bootstrap", "0")
    assert code == 0, err
    result = load_result(out)
    for m in result.models:
        assert {"precision", "recall", "density", "coverage", "fd", "kid"} <= set(m.reference_metrics)
    assert result.models[0].reference_metrics["fd"] < result.models[1].reference_metrics["fd"]
    assert "Against the reference set" in (out / "report.html").read_text(encoding="utf-8")
    assert "coverage" in stdout


@pytest.mark.slow
def test_clip_truncated_prompts_are_counted(tmp_path):
    pytest.importorskip("transformers")
    from _tiny_clip import build_tiny_clip

    clip = build_tiny_clip(tmp_path / "clip")  # context of 64 tokens, a token per byte
    long = "a cat sitting on a red sofa in a sunny living room, " * 8  # ~420 bytes
    prompts = ["a cat", "a dog", long, "a bird", long + "at night", "a fish"] * 3
    rows = [{"prompt": p, "output": f"caption {i} {p[:20]}"} for i, p in enumerate(prompts)]
    manifest = tmp_path / "gen.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "res"
    code, stdout, err = run_cli("metrics", manifest, "--reference", manifest, "--out", out,
                                "--text-model", "clip", "--clip-model", clip, "--cache", tmp_path / "c",
                                "--device", "cpu", "--bootstrap", "0", "--nearest-k", "3")
    assert code == 0, err
    m = load_result(out).models[0]
    assert m.truncation == {"prompts": 18, "truncated": 6, "context_length": 64}
    assert "6 of 18 prompts longer than the text encoder's 64 tokens were truncated" in stdout
    assert m.precision == 1.0 and m.coverage == 1.0  # the reference is the set itself


def test_metrics_accepts_output_embeddings_alone(sets, tmp_path):
    a, _, real = sets
    rng = np.random.default_rng(5)
    outputs_only = tmp_path / "outputs.npz"
    np.savez(outputs_only, output_embeddings=np.load(a)["output_embeddings"])
    ref_outputs = tmp_path / "ref_outputs.npz"
    np.savez(ref_outputs, output_embeddings=rng.normal(size=(60, 8)))
    out = tmp_path / "only"
    code, stdout, err = run_cli("metrics", outputs_only, a, "--reference", ref_outputs, "--out", out,
                                "--subset-size", "30", "--subsets", "3", "--bootstrap", "0")
    assert code == 0, err
    only, paired = load_result(out).models
    assert only.name == "outputs" and only.clip_score is None and not only.per_prompt
    assert any("output embeddings only" in n for n in only.notes)
    assert paired.per_prompt  # the paired set keeps its prompts (CLIPScore: only for a declared joint space)
    # the same rows give the same numbers, with or without prompt embeddings beside them
    for key in ("precision", "recall", "density", "coverage", "fd", "kid", "mmd2"):
        assert getattr(only, key) == getattr(paired, key), key
    code, _, err = run_cli("metrics", outputs_only, "--reference", real, "--out", tmp_path / "on",
                           "--alignment", "on")
    assert code == 2 and "needs prompt embeddings" in err and len(err.strip().splitlines()) == 1, err


def test_outputs_only_is_read_from_npz_and_npy_folders_only(sets, tmp_path):
    from promptprism.data.loaders import load_output_embeddings

    a, _, _ = sets
    folder = tmp_path / "outputs"
    folder.mkdir()
    np.save(folder / "output_embeddings.npy", np.arange(12.0).reshape(4, 3))
    assert np.array_equal(np.asarray(load_output_embeddings(folder)), np.arange(12.0).reshape(4, 3))
    assert load_output_embeddings(a) is None  # a paired set stays a paired set
    manifest = tmp_path / "m.jsonl"
    manifest.write_text('{"prompt": "p", "output": "o"}\n', encoding="utf-8")
    assert load_output_embeddings(manifest) is None
