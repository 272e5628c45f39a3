"""The shared checks (tests/method_tester.py) on PromptSplit, K-way, Scendi, regions and the reference
metrics: torch == numpy, the command line == the library, one clear error per bad option, the numbers == a
reference implementation (brute force from SPEC's definitions, or the peer package), and (slow) a dask cluster
== one process."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import pytest

from backends import HAS_TORCH
from brute import joint_gram_loops
from method_tester import VOLATILE, MethodCase, MethodTester, assert_same_result
from promptprism import KWaySplit, PromptSplit, RegionCMS, Scendi, load_paired
from promptprism.methods.metrics import ReferenceMetrics


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


def _kway_files(folder: Path):
    """Three sets on the same prompts: the planted mixture's two and a noisier copy of the first."""
    from promptprism.datasets import gaussian_mixture

    test, ref, _ = gaussian_mixture(2, per_component=8, seed=3)
    rng = np.random.default_rng(1)
    noisy = test.output_embeddings + 0.3 * rng.standard_normal(test.output_embeddings.shape)
    paths = [_save_set(folder / name, t, z, list(test.prompts)) for name, t, z in (
        ("a", test.prompt_embeddings, test.output_embeddings),
        ("b", ref.prompt_embeddings, ref.output_embeddings), ("c", test.prompt_embeddings, noisy))]
    return tuple(load_paired(p) for p in paths), [str(p) for p in paths]


def _kway_brute(data) -> dict:
    """distances[a][b] = ||C_a - C_b||_F^2 (eta 1) from the joint Gram matrix entry by entry:
    ||C_a||_F^2 = (1/n^2) sum_ij (psi_i . psi_j)^2, so the means of G**2 over the a x a, b x b and a x b
    blocks (SPEC: the PromptSplit distance)."""
    t = np.vstack([s.prompt_embeddings for s in data])
    z = np.vstack([s.output_embeddings for s in data])
    g = joint_gram_loops(t, z, "gaussian", 1.0, 2.0) ** 2
    sizes = [len(s) for s in data]
    edges = np.r_[0, np.cumsum(sizes)]
    block = lambda a, b: g[edges[a]:edges[a + 1], edges[b]:edges[b + 1]].mean()  # noqa: E731
    return {f"distances[{a}][{b}]": block(a, a) + block(b, b) - 2 * block(a, b)
            for a in range(3) for b in range(3) if a != b}


def _metrics_files(folder: Path):
    """Two generated sets and a reference, 3-d (output-only numbers: prompts one-hot)."""
    rng = np.random.default_rng(5)
    prompts = np.eye(4)[np.arange(120) % 4]
    sets = {"real": rng.standard_normal((120, 3)), "near": rng.standard_normal((120, 3)) + 0.2,
            "far": 1.5 * rng.standard_normal((120, 3)) + 1.0}
    paths = {n: _save_set(folder / n, prompts, z, [f"p{i % 4}" for i in range(120)]) for n, z in sets.items()}
    data = ([load_paired(paths["near"]), load_paired(paths["far"])], load_paired(paths["real"]))
    return data, [str(paths["near"]), str(paths["far"]), "--reference", str(paths["real"])]


def _metrics_peer(data) -> dict:
    """precision, recall, density, coverage from the peer package prdc (Naeem et al.'s code)."""
    prdc = pytest.importorskip("prdc")
    gens, ref = data
    out = {}
    for k, g in enumerate(gens):
        m = prdc.compute_prdc(real_features=ref.output_embeddings, fake_features=g.output_embeddings,
                              nearest_k=5)
        out.update({f"models[{k}].{key}": float(m[key]) for key in ("precision", "recall", "density",
                                                                      "coverage")})
    return out


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

KWAY = MethodCase(
    name="kway",
    estimator=lambda **o: KWaySplit(**{"kernel": "gaussian", "method": "exact", "sigma_prompt": 1.0,
                                       "sigma_output": 2.0, "n_modes": 3, "seed": 0, "permutations": 0, **o}),
    fit=lambda est, data: est.fit(list(data), ["a", "b", "c"]),
    write=_kway_files,
    command=["compare", "--kernel", "gaussian", "--method", "exact", "--sigma-prompt", "1.0",
             "--sigma-output", "2.0", "--modes", "3", "--seed", "0", "--permutations", "0"],
    bad_options={"--modes": "0", "--kernel": "bogus", "--alpha": "2"},
    ignore=(*VOLATILE, "sets"),  # config: the command records the input paths
    reference=_kway_brute,
)

METRICS = MethodCase(
    name="metrics",
    estimator=lambda **o: ReferenceMetrics(**{"bootstrap": 0, "subsets": 5, "subset_size": 60, "seed": 0,
                                              **o}),
    fit=lambda est, data: est.compare(data[0], data[1], names=["near", "far"], reference_name="real"),
    write=_metrics_files,
    command=["metrics", "--bootstrap", "0", "--subsets", "5", "--subset-size", "60", "--seed", "0"],
    bad_options={"--nearest-k": "0", "--subsets": "-1", "--confidence": "2"},
    ignore=(*VOLATILE, "output_encoder"),  # config: the command records the encoder it read them with
    reference=_metrics_peer,
    reference_tolerance=(1e-9, 1e-12),
)

#: Scendi without prompt texts (no grouped-prompts route)
SCENDI_UNLABELLED = dataclasses.replace(SCENDI, name="scendi-unlabelled",
                                        write=functools.partial(_scendi_files, labels=False))

CASES = [PROMPTSPLIT, KWAY, SCENDI, REGIONS, METRICS]
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


@pytest.mark.parametrize("case", [c for c in CASES if c.reference is not None], ids=str)
def test_numbers_equal_the_reference_implementation(case, tmp_path):
    MethodTester(case).run_reference_test(tmp_path)


@pytest.mark.parametrize(("case", "flag"), BAD)
def test_each_bad_option_is_one_line_naming_its_flag(case, flag, tmp_path):
    MethodTester(case).run_bad_option_test(tmp_path, flag)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_same_seed_gives_the_same_result(case, tmp_path):
    MethodTester(case).run_determinism_test(tmp_path)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_result_json_matches_its_schema_and_reads_back(case, tmp_path):
    MethodTester(case).run_round_trip_test(tmp_path)


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


def test_the_order_check_tells_a_sum_from_the_first_row(tmp_path):
    """``run_order_test`` passes a statistic that is a sum over rows and fails one that reads the first."""
    rows = np.arange(12.0).reshape(6, 2)
    case = MethodCase(name="toy", estimator=lambda **o: np.sum, fit=lambda est, data: {"value": est(data)},
                      write=lambda folder: (rows, []),
                      permute=lambda data, rng: data[rng.permutation(len(data))])
    MethodTester(case).run_order_test(tmp_path)
    first = dataclasses.replace(case, fit=lambda est, data: {"value": data[0].tolist()})
    with pytest.raises(AssertionError):
        MethodTester(first).run_order_test(tmp_path)
