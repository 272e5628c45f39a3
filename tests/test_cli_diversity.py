"""``promptprism diversity``: success on one and several inputs, and each kind of bad input (exit 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import promptprism as pp
from backends import HAS_TORCH
from promptprism.cli import main


def write_set(path, n=60, seed=0, d_t=6, d_z=9, prompts=None, **override):
    rng = np.random.default_rng(seed)
    bank = rng.standard_normal((5, d_t))
    which = np.arange(n) % 5
    arrays = {"prompt_embeddings": bank[which],
              "output_embeddings": bank[which] @ rng.standard_normal((d_t, d_z))
              + rng.standard_normal((n, d_z)),
              "prompts": np.array(prompts if prompts is not None else [f"prompt {w}" for w in which]),
              "outputs": np.array([f"output {i}" for i in range(n)])}
    arrays.update(override)
    np.savez(path, **arrays)
    return path


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_single_input_writes_scores_and_clusters(tmp_path, capsys):
    src = write_set(tmp_path / "model_a.npz")
    code, out, err = run(["diversity", src, "--out", tmp_path / "res", "--clusters", "3", "--top-k", "4",
                          "--seed", "7", "-q"], capsys)
    assert code == 0, err
    data = json.loads((tmp_path / "res" / "result.json").read_text())
    assert data["kind"] == "scendi"
    for key in ("scendi", "scendi_prompt", "scendi_order2", "vendi", "rke", "clusters",
                "clusters_unconditioned", "model_share", "prompt_share"):
        assert key in data
    assert data["seed"] == 7
    assert len(data["clusters"]) == 3 and len(data["clusters"][0]["top_samples"]) == 4
    assert data["clusters"][0]["top_samples"][0]["prompt"].startswith("prompt ")
    # the same numbers as the Python API
    res = pp.Scendi(n_clusters=3, top_k=4, seed=7).fit(pp.load_paired(src))
    assert data["scendi"] == pytest.approx(res.scendi, rel=1e-12)
    assert data["vendi"] == pytest.approx(res.vendi, rel=1e-12)
    assert isinstance(pp.load_result(tmp_path / "res"), pp.ScendiResult)


def test_several_inputs_one_table(tmp_path, capsys):
    paths = [write_set(tmp_path / f"{name}.npz", seed=i) for i, name in enumerate(("sdxl", "pixart", "flux"))]
    code, out, err = run(["diversity", *paths, "--out", tmp_path / "cmp", "--kernel", "gaussian",
                          "--features", "200", "--seed", "3"], capsys)
    assert code == 0, err
    for name in ("sdxl", "pixart", "flux"):
        assert name in out
    for col in ("scendi", "vendi", "rke"):
        assert col in out
    data = json.loads((tmp_path / "cmp" / "result.json").read_text())
    assert data["kind"] == "scendi_comparison" and data["seed"] == 3
    assert [m["name"] for m in data["models"]] == ["sdxl", "pixart", "flux"]
    for m in data["models"]:
        for key in ("scendi", "scendi_prompt", "vendi", "rke", "clusters"):
            assert key in m
        assert m["config"]["seed_output"] == 3 and m["config"]["seed_prompt"] == 4
    back = pp.load_result(tmp_path / "cmp")
    assert [m.name for m in back.models] == ["sdxl", "pixart", "flux"]


def test_identical_prompts_warn_but_succeed(tmp_path, capsys):
    n = 40
    src = write_set(tmp_path / "same.npz", n=n, prompt_embeddings=np.tile(np.arange(1.0, 7.0), (n, 1)),
                    prompts=["a photo"] * n)
    code, out, err = run(["diversity", src, "--out", tmp_path / "res", "-q"], capsys)
    assert code == 0, err
    assert "warning" in err and "identical" in err and "Vendi" in err
    data = json.loads((tmp_path / "res" / "result.json").read_text())
    assert data["prompt_rank"] == 1 and any("identical" in w for w in data["warnings"])


@pytest.mark.parametrize("case, expect", [
    ("unpaired", "prompt_embeddings has 60 rows but output_embeddings has 59"),
    ("nan", "row 17 (0-based), column 2 is NaN"),
    ("one_sample", "has 1 (prompt, output) pair; Scendi needs at least 2"),
    ("missing_array", "has no array 'output_embeddings'"),
    ("zero_row", "row 3 (0-based) is all zeros"),
])
def test_bad_input_exit_2_and_nothing_written(tmp_path, capsys, case, expect):
    rng = np.random.default_rng(1)
    path = tmp_path / f"{case}.npz"
    if case == "unpaired":
        write_set(path, output_embeddings=rng.standard_normal((59, 9)), outputs=np.array(["o"] * 59))
    elif case == "nan":
        x = rng.standard_normal((60, 9))
        x[17, 2] = np.nan
        write_set(path, output_embeddings=x)
    elif case == "one_sample":
        write_set(path, n=1)
    elif case == "missing_array":
        np.savez(path, prompt_embeddings=rng.standard_normal((5, 3)))
    elif case == "zero_row":
        x = rng.standard_normal((60, 9))
        x[3] = 0.0
        write_set(path, output_embeddings=x)
    good = write_set(tmp_path / "good.npz")
    # a bad second input must stop the whole comparison before anything is written
    code, out, err = run(["diversity", good, path, "--out", tmp_path / "res", "-q"], capsys)
    assert code == 2
    assert expect in " ".join(err.split()), err
    assert path.name in " ".join(err.split())
    assert not (tmp_path / "res" / "result.json").exists()


@pytest.mark.parametrize("argv, expect", [
    (["--kernel", "laplace"], "unknown kernel 'laplace'"),
    (["--kernel", "gaussian", "--features", "201"], "must be even"),
    (["--kernel", "gaussian", "--sigma-output", "-2"], "--sigma-output must be > 0"),
    (["--seed", "x"], "--seed must be an integer"),
    (["--clusters", "0"], "--clusters must be > 0"),
])
def test_bad_options_exit_2(tmp_path, capsys, argv, expect):
    src = write_set(tmp_path / "a.npz")
    code, out, err = run(["diversity", src, "--out", tmp_path / "res", *argv], capsys)
    assert code == 2
    assert expect in " ".join(err.split()), err
    assert not (tmp_path / "res" / "result.json").exists()


def test_missing_file_and_shared_frequencies_across_spaces(tmp_path, capsys):
    code, _, err = run(["diversity", tmp_path / "nope.npz", "--out", tmp_path / "res"], capsys)
    assert code == 2 and "no such file" in err
    src = write_set(tmp_path / "a.npz")  # prompts 6-d, outputs 9-d
    code, _, err = run(["diversity", src, "--out", tmp_path / "res", "--kernel", "gaussian",
                        "--shared-frequencies"], capsys)
    assert code == 2 and "one embedding space" in " ".join(err.split())
    assert not (tmp_path / "res" / "result.json").exists()


def test_one_output_per_prompt_cross_fits_and_reports_intervals(tmp_path, capsys):
    rng = np.random.default_rng(5)
    t = rng.standard_normal((50, 60))  # 50 prompts spanning 50 directions: no residual degree of freedom
    x = t[:, :8] + 0.5 * rng.standard_normal((50, 8))
    np.savez(tmp_path / "one.npz", prompt_embeddings=t, output_embeddings=x,
             prompts=np.array([f"question {i}" for i in range(50)]))
    code, out, err = run(["diversity", tmp_path / "one.npz", "--out", tmp_path / "res", "--bootstrap", "100",
                          "--no-report"], capsys)
    assert code == 0, err
    data = json.loads((tmp_path / "res" / "result.json").read_text())
    assert data["gamma_estimator"].startswith("cross-fit (5 folds")
    boot = data["bootstrap"]
    assert {k: boot[k] for k in ("replicates", "level", "seed", "resample", "interval")} == {
        "replicates": 100, "level": 0.95, "seed": 0, "resample": "prompts",
        "interval": "basic"}  # auto: the cross-fitted estimator keeps the bootstrap
    assert boot["validity"]["holds"] is False and "cross-fit" in boot["validity"]["reason"]
    assert "intervals not calibrated here" in " ".join(out.split())
    assert set(data["intervals"]) == {"scendi", "scendi_prompt", "vendi", "rke", "model_share",
                                      "prompt_share"}
    assert data["model_share"] > 0.1  # not the in-sample collapse to 0
    assert "bootstrap intervals" in " ".join(out.split()) and "cross-fit" in out
    assert "biased low" not in err and "cosine kernel" not in err


def test_models_on_the_same_prompts_get_paired_differences(tmp_path, capsys):
    a = write_set(tmp_path / "a.npz", seed=0)
    rng = np.random.default_rng(1)
    base = np.load(a)
    noisy = base["output_embeddings"] + 3.0 * rng.standard_normal(base["output_embeddings"].shape)
    b = write_set(tmp_path / "b.npz", seed=0, output_embeddings=noisy)
    code, out, err = run(["diversity", a, b, "--out", tmp_path / "cmp", "--bootstrap", "100", "--no-report"],
                         capsys)
    assert code == 0, err
    data = json.loads((tmp_path / "cmp" / "result.json").read_text())
    diffs = {d["metric"]: d for d in data["differences"]}
    assert set(diffs) == {"scendi", "model_share"}
    assert diffs["model_share"]["method"] == "paired jackknife"
    assert diffs["model_share"]["separated"] and diffs["model_share"]["difference"] < 0
    assert "Differences between models" in out


@pytest.mark.parametrize("argv, expect", [
    (["--bootstrap", "-1"], "--bootstrap must be >= 0"),
    (["--bootstrap", "x"], "--bootstrap must be an integer"),
    (["--bootstrap", "5"], "at least 20 replicates"),
    (["--confidence", "1.5", "--bootstrap", "50"], "confidence must lie strictly between 0 and 1"),
    (["--gamma-estimator", "loo"], "--gamma-estimator must be one of"),
    (["--folds", "1"], "--folds must be >= 2"),
    (["--ridge", "-2"], "ridge must be 'cv' or a number >= 0"),
    (["--precision", "half"], "precision must be"),
])
def test_bad_bootstrap_and_estimator_options_exit_2(tmp_path, capsys, argv, expect):
    src = write_set(tmp_path / "a.npz")
    code, out, err = run(["diversity", src, "--out", tmp_path / "res", *argv], capsys)
    assert code == 2
    assert expect in " ".join(err.split()), err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "res" / "result.json").exists()


def test_bootstrap_over_a_single_prompt_is_refused(tmp_path, capsys):
    src = write_set(tmp_path / "a.npz", prompt_embeddings=np.ones((60, 6)), prompts=["same"] * 60)
    code, out, err = run(["diversity", src, "--out", tmp_path / "res", "--bootstrap", "50"], capsys)
    assert code == 2 and "at least 2 distinct prompts" in " ".join(err.split()), err
    code, out, err = run(["diversity", src, "--out", tmp_path / "res2", "--no-report"], capsys)  # auto: off
    assert code == 0, err
    assert json.loads((tmp_path / "res2" / "result.json").read_text())["intervals"] == {}


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_device_flag_runs_the_array_core_on_torch(tmp_path, capsys):
    src = write_set(tmp_path / "model_a.npz")
    code, _, err = run(["diversity", src, "--out", tmp_path / "t", "--device", "torch", "--no-report", "-q"],
                       capsys)
    assert code == 0, err
    data = json.loads((tmp_path / "t" / "result.json").read_text())
    assert data["config"]["device"] == "torch:cpu"
    ref = pp.Scendi().fit(pp.load_paired(src))
    assert data["scendi"] == pytest.approx(ref.scendi, rel=1e-9)
    code, _, err = run(["diversity", src, "--out", tmp_path / "u", "--device", "gpu"], capsys)
    assert code == 2 and "--device" in err and not (tmp_path / "u").exists()
