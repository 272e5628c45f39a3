"""``promptprism split`` end to end: results on success; on bad input exit 2, one precise line, no result."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _cli_run import listed
from promptprism import PromptSplit, PromptSplitResult, load_paired, load_result
from promptprism.cli import main


def _arrays(seed, n, d_t=3, d_z=4):
    rng = np.random.default_rng(seed)
    return {
        "prompt_embeddings": rng.standard_normal((n, d_t)),
        "output_embeddings": rng.standard_normal((n, d_z)) + 0.3,
        "prompts": np.array([f"prompt {i % 4}" for i in range(n)]),
        "outputs": np.array([f"output {i}" for i in range(n)]),
    }


@pytest.fixture
def files(tmp_path):
    test, ref = tmp_path / "test.npz", tmp_path / "ref.npz"
    np.savez(test, **_arrays(0, 14))
    np.savez(ref, **_arrays(1, 11))
    return test, ref


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _write(path, **arrays):
    np.savez(path, **arrays)
    return path


def test_success_writes_result(tmp_path, files, capsys):
    test, ref = files
    out = tmp_path / "out"
    code, stdout, err = _run(capsys, "split", test, ref, "--out", out, "--kernel", "cosine", "--modes", "3",
                             "--seed", "5", "--quiet")
    assert code == 0, err
    assert "result.json" in stdout
    data = json.loads((out / "result.json").read_text())
    assert data["kind"] == "promptsplit"
    for key in ("eigenvalues", "modes", "distance", "config", "seed"):
        assert key in data
    assert data["eigenvalues"] == sorted(data["eigenvalues"], reverse=True)
    assert data["seed"] == 5 and data["config"]["kernel"] == "cosine" and data["config"]["n_modes"] == 3
    assert 0 < len(data["modes"]) <= 6
    for mode in data["modes"]:
        assert {"eigenvalue", "top_samples", "top_prompts"} <= set(mode)
        assert mode["top_samples"] and mode["top_prompts"]
        assert mode["top_samples"][0]["output"].startswith("output ")
    assert data["distance"] > 0
    loaded = load_result(out)
    assert isinstance(loaded, PromptSplitResult)
    assert loaded == PromptSplitResult.from_json((out / "result.json").read_text())
    assert loaded.to_dict() == data
    # the same numbers as the Python API on the same files
    api = PromptSplit(kernel="cosine", n_modes=3, seed=5).fit(load_paired(test, "test"),
                                                              load_paired(ref, "reference"))
    assert loaded.eigenvalues == api.eigenvalues
    assert loaded.modes == api.modes
    assert listed(out) == ["report.html", "result.json"]


@pytest.mark.parametrize("extra", [["--method", "rff", "--features", "64"],
                                   ["--method", "exact", "--sigma-prompt", "0.5*median", "--eta", "0.5"]])
def test_success_gaussian_and_folder_input(tmp_path, capsys, extra):
    folders = []
    for name, seed, n in (("t", 2, 12), ("r", 3, 10)):
        folder = tmp_path / name
        folder.mkdir()
        for key, value in _arrays(seed, n).items():
            np.save(folder / f"{key}.npy", value)
        folders.append(folder)
    out = tmp_path / "out"
    code, _, err = _run(capsys, "split", *folders, "--out", out, "--quiet", *extra)
    assert code == 0, err
    res = load_result(out / "result.json")
    assert res.method == extra[1]
    assert res.config["sigma_prompt"] > 0


# --------------------------------------------------------------------------------------- bad inputs
def _bad(tmp_path, name, **changes):
    arrays = _arrays(7, 9)
    arrays.update(changes)
    return _write(tmp_path / name, **{k: v for k, v in arrays.items() if v is not None})


def _nan_at(row, col, value):
    a = _arrays(7, 9)["output_embeddings"]
    a[row, col] = value
    return a


BAD_INPUTS = {
    "missing file": (lambda p: p / "nope.npz", [], ["nope.npz", "no such file"]),
    "missing array": (lambda p: _bad(p, "noout.npz", output_embeddings=None), [],
                      ["noout.npz", "output_embeddings"]),
    "row counts": (lambda p: _bad(p, "rows.npz", output_embeddings=np.ones((8, 4))), [],
                   ["rows.npz", "9 rows", "8"]),
    "dims": (lambda p: _bad(p, "dims.npz", prompt_embeddings=np.ones((9, 5))), [],
             ["dims.npz", "5 dimensions", "3"]),
    "nan": (lambda p: _bad(p, "nan.npz", output_embeddings=_nan_at(6, 2, np.nan)), [],
            ["nan.npz", "output_embeddings", "row 6", "NaN"]),
    "inf": (lambda p: _bad(p, "inf.npz", output_embeddings=_nan_at(4, 1, -np.inf)), [],
            ["inf.npz", "output_embeddings", "row 4", "inf"]),
    "zero vector": (lambda p: _bad(p, "zero.npz", output_embeddings=_nan_at(5, slice(None), 0.0)),
                    ["--kernel", "cosine"], ["zero.npz", "output_embeddings", "row 5", "zero"]),
    "empty": (lambda p: _bad(p, "empty.npz", prompt_embeddings=np.ones((0, 3)),
                             output_embeddings=np.ones((0, 4)), prompts=np.array([], dtype=str),
                             outputs=np.array([], dtype=str)), [], ["empty.npz", "0 rows", "empty"]),
    "prompt strings": (lambda p: _bad(p, "strings.npz", prompts=np.array(["a", "b"])), [],
                       ["strings.npz", "prompts", "2 entries"]),
    "not npz": (lambda p: (p / "data.csv").write_text("1,2\n") and p / "data.csv", [], ["data.csv"]),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input(tmp_path, files, capsys, case):
    make, extra, words = BAD_INPUTS[case]
    bad = make(tmp_path)
    _, ref = files
    out = tmp_path / "out"
    code, _, err = _run(capsys, "split", bad, ref, "--out", out, "--quiet", *extra)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert not (out / "result.json").exists()


BAD_OPTIONS = {
    "sigma -1": (["--sigma-prompt", "-1"], ["--sigma-prompt", "-1"]),
    "sigma 0": (["--sigma-prompt", "0"], ["--sigma-prompt", "> 0"]),
    "sigma abc": (["--sigma-output", "abc"], ["--sigma-output", "abc"]),
    "sigma rule": (["--sigma-prompt", "median*x"], ["--sigma-prompt", "median*x"]),
    "features 0": (["--method", "rff", "--features", "0"], ["features", "0"]),
    "features odd": (["--method", "rff", "--features", "51"], ["features", "even", "51"]),
    "features text": (["--features", "many"], ["--features", "many"]),
    "rff cosine": (["--method", "rff", "--kernel", "cosine"], ["rff", "cosine", "sketch"]),
    "kernel": (["--kernel", "laplace"], ["kernel", "laplace"]),
    "method": (["--method", "magic"], ["method", "magic"]),
    "eta": (["--eta", "0"], ["eta"]),
    "modes": (["--modes", "0"], ["modes"]),
    "seed": (["--seed", "-3"], ["seed", "-3"]),
    "null samples 3": (["--null-samples", "3"], ["--null-samples", "at least 4", "3"]),
    "null samples text": (["--null-samples", "all"], ["--null-samples", "all"]),
}


@pytest.mark.parametrize("case", list(BAD_OPTIONS))
def test_bad_option(tmp_path, files, capsys, case):
    extra, words = BAD_OPTIONS[case]
    test, ref = files
    out = tmp_path / "out"
    code, _, err = _run(capsys, "split", test, ref, "--out", out, "--quiet", *extra)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert not out.exists() or not (out / "result.json").exists()


@pytest.mark.parametrize("argv", [["--bogus"], ["--features"]])
def test_usage_errors_exit_2(tmp_path, files, capsys, argv):
    test, ref = files
    code, _, err = _run(capsys, "split", test, ref, "--out", tmp_path / "out", *argv)
    assert code == 2
    assert "--bogus" in err or "--features" in err
    assert not (tmp_path / "out" / "result.json").exists()
    code, _, _ = _run(capsys, "split", test)  # missing argument and --out
    assert code == 2


def test_failed_run_keeps_earlier_result(tmp_path, files, capsys):
    test, ref = files
    out = tmp_path / "out"
    assert _run(capsys, "split", test, ref, "--out", out, "--quiet")[0] == 0
    before = (out / "result.json").read_bytes()
    report = (out / "report.html").read_bytes()
    nan = _bad(tmp_path, "nan.npz", output_embeddings=_nan_at(1, 1, np.nan))
    for argv in ([nan, ref], [test, tmp_path / "missing.npz"], [test, ref, "--sigma-prompt", "abc"],
                 [test, ref, "--bogus"]):
        code, _, _ = _run(capsys, "split", *argv, "--out", out, "--quiet")
        assert code == 2
        assert (out / "result.json").read_bytes() == before
        assert (out / "report.html").read_bytes() == report
        assert listed(out) == ["report.html", "result.json"]


def test_error_names_file_with_brackets(tmp_path, files, capsys):
    # file names are printed verbatim, not interpreted as console markup
    _, ref = files
    bad = _bad(tmp_path, "run[b].npz", output_embeddings=_nan_at(2, 0, np.nan))
    code, _, err = _run(capsys, "split", bad, ref, "--out", tmp_path / "out", "--quiet")
    assert code == 2
    assert "run[b].npz" in err and "row 2" in err


@pytest.mark.parametrize("sub", ["", "inner"])
def test_out_that_is_a_file(tmp_path, files, capsys, sub):
    test, ref = files
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    out = blocker / sub if sub else blocker
    code, _, err = _run(capsys, "split", test, ref, "--out", out, "--quiet")
    assert code == 2
    assert err.startswith("error: ") and "blocker" in err and "not a folder" in err
    assert blocker.read_text() == "not a folder"
    code, _, err = _run(capsys, "demo", "--out", out, "--quiet")
    assert code == 2 and "not a folder" in err


@pytest.mark.parametrize("block", [3, 65536])
def test_folder_inputs_name_array_and_row(tmp_path, files, capsys, monkeypatch, block):
    # rows are scanned in blocks (memory-mapped inputs): the row reported must be the global row
    import promptprism._validation as validation

    monkeypatch.setattr(validation, "_SCAN_ROWS", block)
    _, ref = files
    folder = tmp_path / "set"
    folder.mkdir()
    arrays = _arrays(9, 10)
    arrays["prompt_embeddings"][7, 1] = np.nan
    np.save(folder / "prompt_embeddings.npy", arrays["prompt_embeddings"])
    code, _, err = _run(capsys, "split", folder, ref, "--out", tmp_path / "out", "--quiet")
    assert code == 2 and "output_embeddings" in err and "set" in err  # not there yet
    np.save(folder / "output_embeddings.npy", arrays["output_embeddings"])
    code, _, err = _run(capsys, "split", folder, ref, "--out", tmp_path / "out", "--quiet")
    assert code == 2 and "prompt_embeddings" in err and "row 7" in err and "NaN" in err
    arrays["prompt_embeddings"][7, 1] = 1.0
    arrays["output_embeddings"][8] = 0.0
    np.save(folder / "prompt_embeddings.npy", arrays["prompt_embeddings"])
    np.save(folder / "output_embeddings.npy", arrays["output_embeddings"])
    code, _, err = _run(capsys, "split", folder, ref, "--out", tmp_path / "out", "--quiet",
                        "--kernel", "cosine")
    assert code == 2 and "output_embeddings" in err and "row 8" in err
    assert not (tmp_path / "out" / "result.json").exists()
    code, _, err = _run(capsys, "split", folder, ref, "--out", tmp_path / "out", "--quiet")
    assert code == 0, err  # a zero vector is fine for the gaussian kernel
