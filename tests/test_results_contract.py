"""The results contract (issue 40): versioned schemas, complete --json, relocatable inputs checked by their
fingerprints, named sets, the CI gate, and the small fixes (report --out, metrics GEN REF, generate
--samples raised)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from _cli_run import run_cli
from promptprism.datasets import colored_digits
from promptprism.io import atomic_save_npz
from promptprism.schema import kinds, result_schema, shipped_schema, summary_schema

NAMING = ("--namer", "words", "--judge", "lexical", "--quiet")


def _save(path, s, images=None):
    arrays = dict(prompt_embeddings=s.prompt_embeddings, output_embeddings=s.output_embeddings,
                  prompts=np.array(s.prompts), outputs=np.array(s.outputs))
    atomic_save_npz(path, **arrays)
    return path


@pytest.fixture(scope="module")
def digits():
    return colored_digits(per_prompt=8, seed=0)


@pytest.fixture(scope="module")
def third(digits):
    """A third model: the test set's model on other draws."""
    return colored_digits(per_prompt=8, seed=1).test


@pytest.fixture
def split_run(tmp_path, digits):
    """A split results folder ``run`` with its inputs beside it in ``data``."""
    data = tmp_path / "data"
    data.mkdir(parents=True)
    test, ref = _save(data / "test.npz", digits.test), _save(data / "reference.npz", digits.reference)
    code, _, err = run_cli("split", test, ref, "--out", tmp_path / "run", "--quiet", "--permutations", "50",
                           "--no-report")
    assert code == 0, err
    return tmp_path / "run"


def _one_line_exit_2(code, err):
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


# ------------------------------------------------------------------------------------- schemas
def test_shipped_schemas_are_the_generated_ones():
    for kind in kinds():
        assert shipped_schema(kind) == result_schema(kind), f"run python -m promptprism.schema ({kind})"
        assert shipped_schema(kind, summary=True) == summary_schema(kind), kind


def test_the_schema_refuses_wrong_types_extra_fields_and_newer_versions(split_run):
    data = json.loads((split_run / "result.json").read_text())
    validator = Draft202012Validator(result_schema("promptsplit"))
    assert validator.is_valid(data)
    for bad in ({**data, "distance": "large"}, {**data, "surprise": 1},
                {**data, "schema_version": data["schema_version"] + 1},
                {**data, "modes": [{**data["modes"][0], "rank": "one"}]},
                {k: v for k, v in data.items() if k != "eigenvalues"}):
        assert not validator.is_valid(bad)


def test_newer_tampered_and_unversioned_results(split_run, tmp_path):
    path = split_run / "result.json"
    data = json.loads(path.read_text())
    old = {k: v for k, v in data.items() if k not in ("schema_version", "inputs")}
    path.write_text(json.dumps(old))
    from promptprism.results import load_result

    assert load_result(split_run).distance == data["distance"]  # version 1 (no schema_version) is read
    for bad, words in (({**data, "schema_version": 99}, "newer promptprism"),
                       ({**data, "distance": "x"}, "distance: expected a number"),
                       ({**data, "schema_version": "2"}, "schema_version '2' is not a version")):
        path.write_text(json.dumps(bad))
        code, _, err = run_cli("report", split_run)
        _one_line_exit_2(code, err)
        assert words in err


# ------------------------------------------------------------------------------------- --json
def _json(*argv):
    code, out, err = run_cli(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


def _nulls_for_objects(value, path=""):
    """Paths where --json prints null inside a list of objects (what the old summary did)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _nulls_for_objects(v, f"{path}.{k}")]
    if isinstance(value, list):
        found = [f"{path}[{i}]" for i, v in enumerate(value) if v is None] \
            if any(isinstance(v, dict) for v in value) else []
        return found + [p for i, v in enumerate(value) for p in _nulls_for_objects(v, f"{path}[{i}]")]
    return []


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_every_command_prints_its_whole_summary_valid_against_its_schema(tmp_path, digits, third):
    sets = [_save(tmp_path / f"m{k}.npz", s) for k, s in enumerate((digits.test, digits.reference, third))]
    runs = {
        "promptsplit": _json("split", sets[0], sets[1], "--out", tmp_path / "s", "--permutations", "20",
                             "--no-report"),
        "promptsplit_kway": _json("compare", *sets, "--out", tmp_path / "c", "--permutations", "20",
                                  "--no-report"),
        "scendi_comparison": _json("diversity", sets[0], sets[1], "--out", tmp_path / "d", "--no-report",
                                   "--bootstrap", "0"),
        "metrics": _json("metrics", sets[0], "--reference", sets[1], "--out", tmp_path / "m", "--no-report",
                         "--bootstrap", "0", "--subsets", "5", "--subset-size", "50"),
    }
    for kind, summary in runs.items():
        assert summary["kind"] == kind
        Draft202012Validator(summary_schema(kind)).validate(summary)
        assert not _nulls_for_objects(summary), kind
        assert summary["inputs"], kind  # the sets it read, with their fingerprints
    split = runs["promptsplit"]
    assert all(isinstance(r, dict) and r["prompt"] for r in split["prompt_ranking"])
    assert split["truncated"]["eigenvalues"] == len(json.loads((tmp_path / "s" / "result.json").read_text())
                                                    ["eigenvalues"])
    kway = runs["promptsplit_kway"]
    assert np.asarray(kway["distances"]).shape == (3, 3) and np.asarray(kway["pair_p_values"]).shape == (3, 3)
    assert [p["pair"] for p in kway["pairs"]] == [["m0", "m1"], ["m0", "m2"], ["m1", "m2"]]
    assert [p["config"]["test"] for p in kway["pairs"]] == ["m0", "m0", "m1"]
    assert [r["model"] for r in kway["one_vs_rest"]] == ["m0", "m1", "m2"]


# ------------------------------------------------------------------------------------- relocatable
def test_a_moved_results_folder_is_read_from_anywhere(split_run, tmp_path, monkeypatch):
    moved = tmp_path / "elsewhere" / "copied"
    shutil.copytree(split_run, moved)  # the results folder and its data, moved together
    shutil.copytree(tmp_path / "data", tmp_path / "elsewhere" / "data")
    shutil.rmtree(split_run)
    shutil.rmtree(tmp_path / "data")
    monkeypatch.chdir(tmp_path / "elsewhere")  # another working directory, relative paths
    code, _, err = run_cli("describe", "copied", *NAMING)
    assert code == 0, err
    assert json.loads((moved / "result.json").read_text())["descriptions"]["modes"]
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    code, _, err = run_cli("report", moved)
    assert code == 0 and (moved / "report.html").stat().st_size > 1000, err


def test_inputs_outside_the_folder_are_found_by_their_absolute_path(tmp_path, digits, monkeypatch):
    test, ref = _save(tmp_path / "t.npz", digits.test), _save(tmp_path / "r.npz", digits.reference)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("split", "t.npz", "r.npz", "--out", "a/run", "--quiet", "--permutations", "20")
    assert code == 0, err
    shutil.move(str(tmp_path / "a" / "run"), str(tmp_path / "moved"))
    monkeypatch.chdir(tmp_path / "moved")
    record = json.loads((tmp_path / "moved" / "result.json").read_text())["inputs"]["test"]
    assert record["path"] == "../../t.npz" and record["absolute"] == str(test.resolve())
    code, _, err = run_cli("describe", ".", *NAMING)
    assert code == 0, err
    assert ref.exists()


@pytest.mark.parametrize("change", ["swapped", "other prompts", "edited", "fewer rows", "missing"])
def test_describe_refuses_inputs_that_are_not_the_ones_of_the_result(split_run, tmp_path, change):
    data = split_run.parent / "data"
    before = (split_run / "result.json").read_bytes()
    z = dict(np.load(data / "test.npz"))
    args = []
    if change == "swapped":
        args = [data / "reference.npz", data / "test.npz"]
        words = "holds the reference set of this result"
    elif change == "missing":
        (data / "test.npz").unlink()
        words = "not found"
    else:
        if change == "other prompts":
            z["prompts"] = np.array([p + " again" for p in z["prompts"]])
            words = "prompts differ"
        elif change == "edited":
            z["output_embeddings"] = z["output_embeddings"] * 0.99
            words = "content differs"
        else:
            z = {k: v[:-1] for k, v in z.items()}
            words = "rows where the result was computed on"
        np.savez(data / "test.npz", **z)
    code, _, err = run_cli("describe", split_run, *[str(a) for a in args], *NAMING)
    _one_line_exit_2(code, err)
    assert words in err and "test input" in err
    assert (split_run / "result.json").read_bytes() == before  # nothing amended


def test_a_results_folder_is_a_baseline_set(split_run, tmp_path):
    code, _, err = run_cli("split", split_run.parent / "data" / "reference.npz", split_run, "--out",
                           tmp_path / "b",
                           "--quiet", "--permutations", "20")
    assert code == 0, err
    recorded = json.loads((tmp_path / "b" / "result.json").read_text())["inputs"]["reference"]
    first = json.loads((split_run / "result.json").read_text())
    assert recorded["sha256"] == first["inputs"]["test"]["sha256"]


# ------------------------------------------------------------------------------------- named sets
@pytest.mark.slow  # three sets through the command (~1.5 s quiet)
def test_same_stems_are_told_apart_and_names_flow_into_the_result(tmp_path, digits, third):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        _save(tmp_path / folder / "x.npz", digits.test if folder == "a" else digits.reference)
    _save(tmp_path / "y.npz", third)
    paths = [tmp_path / "a" / "x.npz", tmp_path / "b" / "x.npz", tmp_path / "y.npz"]
    common = ("--permutations", "0", "--no-report", "--quiet")
    code, _, err = run_cli("compare", *paths, "--out", tmp_path / "c1", *common)
    assert code == 0, err
    result = json.loads((tmp_path / "c1" / "result.json").read_text())
    assert result["names"] == ["a/x", "b/x", "y"] and sorted(result["inputs"]) == ["a/x", "b/x", "y"]
    code, _, err = run_cli("compare", *paths, "--names", "base,tuned,third", "--out", tmp_path / "c2",
                           *common)
    assert code == 0, err
    assert json.loads((tmp_path / "c2" / "result.json").read_text())["names"] == ["base", "tuned", "third"]
    code, _, err = run_cli("compare", *(f"{n}={p}" for n, p in zip("pqr", paths, strict=True)), "--out",
                           tmp_path / "c3", *common)
    assert code == 0, err
    assert json.loads((tmp_path / "c3" / "result.json").read_text())["names"] == ["p", "q", "r"]
    for bad in (("--names", "one,two"), ("--names", "a,a,b"), ("--names", "a,,b")):
        code, _, err = run_cli("compare", *paths, *bad, "--out", tmp_path / "bad", *common)
        _one_line_exit_2(code, err)
        assert "--names" in err


def test_metrics_names_the_reference_apart_from_the_generated_sets(tmp_path, digits):
    (tmp_path / "gen").mkdir()
    gen = _save(tmp_path / "gen" / "reference.npz", digits.test)
    ref = _save(tmp_path / "reference.npz", digits.reference)
    code, _, err = run_cli("metrics", gen, ref, "--out", tmp_path / "m", "--bootstrap", "0", "--no-report",
                           "--subsets", "5", "--subset-size", "50", "--quiet")
    assert code == 0, err
    assert "is the reference set" in err  # GEN REF: said, not guessed silently
    result = json.loads((tmp_path / "m" / "result.json").read_text())
    names = [m["name"] for m in result["models"]]
    assert len({*names, result["reference"]}) == 2 and not any(n.endswith("_2") for n in names)
    code, _, err = run_cli("metrics", gen, ref, gen, "--out", tmp_path / "m2")
    _one_line_exit_2(code, err)
    assert "--reference" in err and "promptprism metrics" in err


# ------------------------------------------------------------------------------------- the CI gate
@pytest.mark.slow  # two fits and the check command (~1.5 s quiet)
def test_check_fails_on_a_planted_regression_and_passes_a_same_distribution_pair(tmp_path, digits):
    planted = tmp_path / "planted"
    code, _, err = run_cli("split", _save(tmp_path / "t.npz", digits.test),
                           _save(tmp_path / "r.npz", digits.reference), "--out", planted, "--quiet",
                           "--permutations", "100", "--no-report")
    assert code == 0, err
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, 4))
    same = []
    for k in range(2):
        y = x @ np.eye(4) + rng.normal(scale=0.5, size=x.shape)
        atomic_save_npz(tmp_path / f"same{k}.npz", prompt_embeddings=x, output_embeddings=y)
        same.append(tmp_path / f"same{k}.npz")
    null = tmp_path / "null"
    code, _, err = run_cli("split", *same, "--out", null, "--quiet", "--permutations", "100", "--no-report")
    assert code == 0, err
    code, out, _ = run_cli("check", planted, "--fail-on", "significant")
    assert code == 1 and out.startswith("FAIL significant")
    code, out, err = run_cli("check", null, "--fail-on", "significant")
    assert code == 0, (out, err)
    code, out, _ = run_cli("check", planted, "--fail-on", "distance>1e9", "--fail-on", "significant",
                           "--json")
    summary = json.loads(out)
    assert code == 1 and summary["passed"] is False
    assert [c["failed"] for c in summary["checks"]] == [False, True]
    code, out, _ = run_cli("check", planted, "--baseline", null, "--fail-on", "ratio(distance)>2")
    assert code == 1 and "ratio of distance" in out
    code, out, _ = run_cli("check", planted, "--baseline", planted, "--fail-on", "change(distance)>0")
    assert code == 0, out
    for bad in ("fd>1", "distance>>1", "change(distance)>0"):
        code, _, err = run_cli("check", planted, "--fail-on", bad)
        _one_line_exit_2(code, err)
        assert "--fail-on" in err


# ------------------------------------------------------------------------------------- small ones
def test_report_out_is_honoured(split_run, tmp_path):
    code, _, err = run_cli("report", split_run, "--out", tmp_path / "pages")
    assert code == 0, err
    assert (tmp_path / "pages" / "report.html").is_file() and not (split_run / "report.html").exists()


def tiny_image(prompt, seed=0):
    """A generator for the tests: a 4 x 4 image whose value is the seed."""
    return np.full((4, 4, 3), seed % 251, dtype=np.uint8)


def test_raising_samples_adds_the_missing_ones_and_json_says_what_was_done(tmp_path):
    prompts = tmp_path / "p.txt"
    prompts.write_text("a cat\na dog\n")
    out = tmp_path / "m.jsonl"
    argv = ("generate", prompts, "--generator", "test_results_contract:tiny_image", "--out", out, "-q")
    first = _json(*argv, "--samples", "1")
    assert (first["rows"], first["generated"], first["skipped"]) == (2, 2, 0)
    before = {json.loads(line)["image"] for line in out.read_text().splitlines()}
    raised = _json(*argv, "--samples", "3")
    assert (raised["rows"], raised["generated"], raised["skipped"]) == (6, 4, 2)
    after = {json.loads(line)["image"] for line in out.read_text().splitlines()}
    assert before < after and raised["files"]["manifest"] == str(out)


def test_report_dir_draws_the_stored_map_and_computes_nothing(tmp_path, digits, monkeypatch):
    code, _, err = run_cli("split", _save(tmp_path / "t.npz", digits.test), _save(tmp_path / "r.npz",
                           digits.reference), "--out", tmp_path / "s", "--quiet", "--permutations", "20")
    assert code == 0, err
    layout = json.loads((tmp_path / "s" / "result.json").read_text())["layout"]
    assert len(layout["x"]) == len(layout["points"]) == layout["shown"] > 12
    import promptprism.methods.promptsplit.core as core
    import promptprism.methods.promptsplit.layout as lay
    import promptprism.report.map as rmap

    def computed(*args, **kwargs):
        raise AssertionError("the report computed a map or a Gram matrix")

    for module, name in ((lay, "sample_map"), (rmap, "sample_map"), (core, "joint_gram"),
                         (rmap, "embed_2d")):
        monkeypatch.setattr(module, name, computed)
    (tmp_path / "s" / "report.html").unlink()
    code, _, err = run_cli("report", tmp_path / "s")
    assert code == 0, err
    assert "kernel PCA map of the samples coloured by mode" in (tmp_path / "s" / "report.html").read_text()


@pytest.mark.slow  # ~4 s: loads scikit-learn
def test_split_map_projection_t_sne_is_stored_and_drawn_by_report_dir(tmp_path, digits):
    """--map-projection t-sne: the stored layout says so, its points differ from the default kernel PCA's,
    and both the command's page and ``report DIR`` (drawing the stored map) name it."""
    pair = (_save(tmp_path / "t.npz", digits.test), _save(tmp_path / "r.npz", digits.reference))
    common = ("--quiet", "--permutations", "0")
    code, _, err = run_cli("split", *pair, "--out", tmp_path / "k", *common)
    assert code == 0, err
    code, _, err = run_cli("split", *pair, "--out", tmp_path / "t", "--map-projection", "t-sne", *common)
    assert code == 0, err
    kpca, tsne = (json.loads((tmp_path / d / "result.json").read_text())["layout"] for d in ("k", "t"))
    assert (kpca["projection"], tsne["projection"]) == ("kernel-pca", "t-sne")
    assert kpca["points"] == tsne["points"] and kpca["mode"] == tsne["mode"] and kpca["x"] != tsne["x"]
    assert "kernel PCA map of the samples coloured by mode" in (tmp_path / "k" / "report.html").read_text()
    (tmp_path / "t" / "report.html").unlink()
    code, _, err = run_cli("report", tmp_path / "t")
    assert code == 0, err
    assert "t-SNE map of the samples coloured by mode" in (tmp_path / "t" / "report.html").read_text()
    code, _, err = run_cli("split", *pair, "--out", tmp_path / "x", "--map-projection", "umap", *common)
    assert code == 2 and "Traceback" not in err


def test_split_names_its_two_sets(tmp_path, digits):
    t, r = _save(tmp_path / "t.npz", digits.test), _save(tmp_path / "r.npz", digits.reference)
    for args, out in (((t, r, "--names", "base,tuned"), "n1"), ((f"base={t}", f"tuned={r}"), "n2")):
        code, _, err = run_cli("split", *args, "--out", tmp_path / out, "--quiet", "--permutations", "0",
                               "--no-report")
        assert code == 0, err
        config = json.loads((tmp_path / out / "result.json").read_text())["config"]
        assert (config["test"], config["reference"]) == ("base", "tuned")
    code, _, err = run_cli("split", t, r, "--names", "only-one", "--out", tmp_path / "bad")
    _one_line_exit_2(code, err)
    assert "--names" in err


def test_an_unrelated_file_at_the_relative_path_does_not_hide_the_recorded_one(tmp_path):
    """A results folder moved where its relative input path now names another file: the recorded absolute
    path still holds the set with the recorded fingerprint, and that one is found (it was refused)."""
    from promptprism.provenance import fingerprint, locate

    original = tmp_path / "data" / "set.npy"
    original.parent.mkdir()
    np.save(original, np.arange(6.0))
    moved = tmp_path / "elsewhere" / "a" / "run"
    moved.mkdir(parents=True)
    np.save(tmp_path / "elsewhere" / "set.npy", np.zeros(6))  # what ../../set.npy names from the moved folder
    record = {"path": "../../set.npy", "absolute": str(original), **fingerprint(original)}
    assert locate(record, moved) == original
    np.save(original, np.ones(6))  # neither matches now: the relative one, for verify to refuse
    assert locate(record, moved) == moved / "../../set.npy"
