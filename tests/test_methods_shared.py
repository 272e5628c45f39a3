"""The shared checks (tests/method_tester.py) on PromptSplit, Scendi and regions: torch == numpy, the command
line == the library, one clear error per bad option, and (slow) a dask cluster == one process."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import pytest

from backends import HAS_TORCH
from method_tester import VOLATILE, MethodCase, MethodTester, assert_same_result
from promptprism import PromptSplit, RegionCMS, Scendi, load_paired


# ----------------------------------------------------------------------------------------------- fixtures
def _save_set(folder: Path, prompts: np.ndarray, outputs: np.ndarray, labels: list[str] | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "prompt_embeddings.npy", prompts)
    np.save(folder / "output_embeddings.npy", outputs)
    if labels is not None:
        np.save(folder / "prompts.npy", np.array(labels))
    return folder


def _promptsplit_files(folder: Path):
    """Two sets of a planted mixture, as .npy folders (row-streamed: cluster workers read their rows)."""
    from promptprism.datasets import gaussian_mixture

    test, ref, _ = gaussian_mixture(2, per_component=40, seed=3)
    paths = [_save_set(folder / name, s.prompt_embeddings, s.output_embeddings, list(s.prompts))
             for name, s in (("test", test), ("reference", ref))]
    return tuple(load_paired(p) for p in paths), [str(p) for p in paths]


def _scendi_files(folder: Path, labels: bool = True):
    """One model's outputs: prompts from four topics, outputs driven by the prompt plus the model's own
    variation; ``labels``: the prompts' texts are saved too."""
    rng = np.random.default_rng(0)
    which = np.arange(160) % 4
    bank = rng.standard_normal((4, 5))
    t = bank[which] + 0.05 * rng.standard_normal((160, 5))
    z = bank[which] @ rng.standard_normal((5, 7)) + rng.standard_normal((160, 7))
    path = _save_set(folder / "model", t, z, [f"topic {w}" for w in which] if labels else None)
    return load_paired(path), [str(path)]


def _regions_files(folder: Path):
    """Real 6x6 images with correlated halves and two generated sets (noisier, closer), as .npy files."""
    rng = np.random.default_rng(0)
    real = rng.random((60, 6, 6))
    real[:, :, 3:] = 0.5 * real[:, :, :3] + 0.5 * rng.random((60, 6, 3))
    sets = {"real": real[:40], "early": np.clip(real[40:] + rng.normal(0, 0.3, (20, 6, 6)), 0, 1),
            "late": np.clip(real[40:] + rng.normal(0, 0.05, (20, 6, 6)), 0, 1)}
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, arr in sets.items():
        paths[name] = folder / f"{name}.npy"
        np.save(paths[name], arr)
    data = (paths["real"], [paths["early"], paths["late"]])
    files = ["--real", paths["real"], "--generated", paths["early"], "--generated", paths["late"]]
    return data, [str(f) for f in files]


# -------------------------------------------------------------------------------------------------- cases
PROMPTSPLIT = MethodCase(
    name="promptsplit",
    estimator=lambda **o: PromptSplit(**{"kernel": "gaussian", "method": "rff", "n_features": 200,
                                         "precision": "float64", "n_modes": 3, "seed": 0, "permutations": 0,
                                         "chunk_size": 50, "partition_rows": 100, **o}),
    fit=lambda est, data: est.fit(*data),
    write=_promptsplit_files,
    command=["split", "--kernel", "gaussian", "--method", "rff", "--features", "200",
             "--precision", "float64", "--modes", "3", "--seed", "0", "--permutations", "0",
             "--chunk-size", "50", "--partition-rows", "100"],
    bad_options={"--modes": "0", "--kernel": "bogus", "--alpha": "2", "--eta": "-1"},
    # rff evaluates cos/sin in float32 (fast_trig): numpy's and torch's may differ by an ulp
    backend_tolerance=(1e-5, 1e-7),
)

SCENDI = MethodCase(
    name="scendi",
    estimator=lambda **o: Scendi(**{"kernel": "cosine", "n_clusters": 2, "top_k": 4, "seed": 2,
                                    "chunk_size": 64, "partition_rows": 64, **o}),
    fit=lambda est, data: est.fit(data),
    write=_scendi_files,
    command=["diversity", "--kernel", "cosine", "--clusters", "2", "--top-k", "4", "--seed", "2",
             "--chunk-size", "64", "--partition-rows", "64", "--bootstrap", "0"],
    bad_options={"--clusters": "0", "--kernel": "bogus", "--top-k": "0"},
    backend_tolerance=(1e-7, 1e-10),
)

REGIONS = MethodCase(
    name="regions",
    estimator=lambda **o: RegionCMS(**{"n_regions": 3, "seed": 0, "partition_rows": 10, **o}),
    fit=lambda est, data: est.fit(data[0]).compare(data[1], [p.stem for p in data[1]]),
    write=_regions_files,
    command=["regions", "--regions", "3", "--seed", "0", "--partition-rows", "10"],
    bad_options={"--regions": "0", "--gamma": "-1", "--bootstrap": "-1"},
    backend_tolerance=(1e-7, 1e-10),
    ignore=(*VOLATILE, "real", "generated", "reference"),  # config: the command records the input paths
)

#: Scendi without prompt texts (no grouped-prompts route)
SCENDI_UNLABELLED = dataclasses.replace(SCENDI, name="scendi-unlabelled",
                                        write=functools.partial(_scendi_files, labels=False))

CASES = [PROMPTSPLIT, SCENDI, REGIONS]
BAD = [pytest.param(c, flag, id=f"{c.name}{flag}") for c in CASES for flag in c.bad_options]


# -------------------------------------------------------------------------------------------------- checks
@pytest.mark.parametrize("case", [pytest.param(PROMPTSPLIT, marks=pytest.mark.slow), SCENDI, REGIONS],
                         ids=str)
@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_torch_equals_numpy(case, tmp_path):
    MethodTester(case).run_backend_test(tmp_path)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_command_line_equals_library(case, tmp_path):
    MethodTester(case).run_cli_test(tmp_path)


@pytest.mark.parametrize(("case", "flag"), BAD)
def test_each_bad_option_is_one_line_naming_its_flag(case, flag, tmp_path):
    MethodTester(case).run_bad_option_test(tmp_path, flag)


@pytest.mark.slow  # a 2-process dask cluster: seconds per case
@pytest.mark.parametrize("case", [
    PROMPTSPLIT,
    SCENDI,
    SCENDI_UNLABELLED,
    REGIONS,
], ids=str)
def test_cluster_equals_one_process(case, dask_client, tmp_path):
    MethodTester(case).run_cluster_test(dask_client, tmp_path)


# ------------------------------------------------------------------------------------- the tester itself
def test_the_comparison_finds_each_kind_of_difference():
    a = {"eigenvalues": [0.5, 0.25], "modes": [{"index": 3, "side": "test", "score": 1.0}],
         "timings": {"s": 1}}
    assert_same_result(a, {**a, "timings": {"s": 2}})  # wall times are not the result
    assert_same_result(a, {**a, "eigenvalues": [0.5, 0.25 + 1e-12]})
    for other in ({**a, "eigenvalues": [0.5, 0.2500001]},
                  {**a, "eigenvalues": [0.5]},
                  {**a, "modes": [{"index": 4, "side": "test", "score": 1.0}]},
                  {**a, "modes": [{"index": 3, "side": "reference", "score": 1.0}]},
                  {**a, "extra": None}):
        with pytest.raises(AssertionError):
            assert_same_result(a, other)
    assert_same_result(a, {**a, "eigenvalues": [0.5, 0.2500001]}, tolerances={"eigenvalues": (0, 1e-6)})
    nested = {"config": {"test": "a"}, "significance": {"test": "permutation"}}
    assert_same_result(nested, {**nested, "config": {"test": "b"}}, ignore=("config.test",))
    with pytest.raises(AssertionError, match="significance.test"):
        assert_same_result(nested, {**nested, "significance": {"test": "none"}}, ignore=("config.test",))
    with pytest.raises(AssertionError, match=r"result.modes\[0\].score"):
        assert_same_result(a, {**a, "modes": [{"index": 3, "side": "test", "score": 1.1}]})
