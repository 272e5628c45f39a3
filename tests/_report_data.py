"""Results and inputs for the report tests (pure and browser): small real runs, and a synthetic 100k one."""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from promptprism import PairedSet, PromptSplit
from promptprism.datasets import colored_digits
from promptprism.methods.compcon.pipeline import CompConResult
from promptprism.methods.promptsplit import Mode, PromptLoading, PromptSplitResult, SampleScore
from promptprism.methods.regions import RegionCMS

#: samples per set of the big synthetic result (the issue's "over 100k samples": 200k in all)
BIG_N = 100_000


@functools.cache
def digits_run(per_prompt: int = 4):
    """The demo's data, small: (result, inputs, images)."""
    data = colored_digits(per_prompt=per_prompt, seed=0)
    result = PromptSplit(seed=0, n_modes=3, top_k=5).fit(data.test, data.reference)
    return (
        result,
        {"test": data.test, "reference": data.reference},
        {"test": data.test_images, "reference": data.reference_images},
    )


@functools.cache
def regions_run():
    """Regions on random 6x6 images with two 'checkpoints': (result, inputs)."""
    rng = np.random.default_rng(0)
    real = rng.random((40, 6, 6))
    real[:, :, 3:] = 0.5 * real[:, :, :3] + 0.5 * rng.random((40, 6, 3))
    early = np.clip(real[:20] + rng.normal(0, 0.3, (20, 6, 6)), 0, 1)
    late = np.clip(real[20:] + rng.normal(0, 0.05, (20, 6, 6)), 0, 1)
    result = RegionCMS(n_regions=3, seed=0).fit(real).compare([early, late], ["epoch 1", "epoch 2"])
    return result, {"real": real, "generated": [early, late]}


def write_bank(root: Path, prompts: list[str], colour: tuple[int, int, int]) -> Path:
    """An image bank folder: manifest.jsonl + two 40x40 PNGs per prompt."""
    from PIL import Image

    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, p in enumerate(prompts):
        for k in range(2):
            name = f"img_{i}_{k}.png"
            arr = np.zeros((40, 40, 3), np.uint8)
            arr[:] = colour
            arr[5 + 10 * k : 15 + 10 * k, 5:35] = 255
            Image.fromarray(arr).save(root / name)
            rows.append({"prompt": p, "image": name})
    (root / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


BANK_PROMPTS = ["a sad harbour", "a lonely tree", "a bright market", "a sunny beach"]


def compcon_result(bank_a: Path, bank_b: Path) -> CompConResult:
    """A CompCon result as the pipeline writes it, over two image banks (hand-made: no chat model)."""
    iterations = [
        {
            "iteration": 0,
            "description": "Prompts about <sadness> & solitude",
            "key_concepts": ["sadness"],
            "score": None,
            "generated_prompts": ["a lonely lighthouse", "a bright kite"],
            "diverging": [True, False],
            "sampled_diverging": BANK_PROMPTS[:2],
            "sampled_non_diverging": BANK_PROMPTS[2:],
            "error": None,
        },
        {
            "iteration": 1,
            "description": None,
            "key_concepts": [],
            "score": None,
            "generated_prompts": [],
            "diverging": [],
            "sampled_diverging": [],
            "sampled_non_diverging": [],
            "error": "no Description: line",
        },
    ]
    return CompConResult(
        attributes=[
            {
                "attribute": "blue tint",
                "rank": 1,
                "score": 0.5,
                "n_diverging": 2,
                "n_prompts": 4,
                "diverging_prompts": BANK_PROMPTS[:2],
                "threshold": 0.3,
                "mean_fraction_a": 0.6,
                "mean_fraction_b": 0.1,
                "n_diverging_bank": 2,
                "proposed_for": BANK_PROMPTS[:1],
            },
            {
                "attribute": "neon lights",
                "rank": 2,
                "score": 0.0,
                "n_diverging": 0,
                "n_prompts": 4,
                "diverging_prompts": [],
                "threshold": 0.4,
                "mean_fraction_a": 0.0,
                "mean_fraction_b": 0.0,
                "n_diverging_bank": 0,
                "proposed_for": BANK_PROMPTS[2:3],
            },
        ],
        descriptions=[
            {
                "attribute": "blue tint",
                "diverging_set": BANK_PROMPTS[:2],
                "non_diverging_set_size": 2,
                "iterations": iterations,
                "best": {k: iterations[0][k] for k in ("iteration", "description", "key_concepts", "score")},
                "n_iterations": 2,
                "stopped_early": False,
                "stop_reason": "ran all 2 iterations",
                "scored": False,
            }
        ],
        discovery=[{"prompt": BANK_PROMPTS[0], "attributes": ["blue tint"], "error": None, "n_answers": 1}],
        calibration={"rule": "quantile of the null set", "quantile": 0.95},
        models={
            "A": {"type": "bank", "name": "modelA", "source": str(bank_a), "n_prompts": 4},
            "B": {"type": "bank", "name": "modelB", "source": str(bank_b), "n_prompts": 4},
            "llm": {"model": "llm-x"},
            "vlm": {"model": "vlm-y"},
            "clip": "fake-clip",
        },
        n_prompts=4,
        seed=0,
        config={"iterations": 2},
    )


class NoiseImages:
    """n images of 64x64 RGB noise (the worst case for compression), made on demand by index."""

    def __init__(self, n: int, seed: int) -> None:
        self.n, self.seed = n, seed
        self.requested: list[int] = []

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> np.ndarray:
        self.requested.append(int(i))
        return np.random.default_rng([self.seed, int(i)]).integers(0, 256, (64, 64, 3), dtype=np.uint8)


@functools.cache
def big_run(n: int = BIG_N, n_modes: int = 10, top_k: int = 10):
    """A synthetic PromptSplit result over n + n samples (200 prompts, long text outputs), its inputs
    (embeddings) and 64x64 noise images for every sample: the heaviest report the defaults can make."""
    rng = np.random.default_rng(0)
    n_prompts = 200
    sets = {}
    for side in ("test", "reference"):
        lab = rng.integers(0, n_prompts, n)
        t = rng.standard_normal((n_prompts, 16))[lab]
        z = rng.standard_normal((n, 32))
        sets[side] = PairedSet(
            t,
            z,
            prompts=[f"prompt number {i} " + "word " * 20 for i in lab],
            outputs=[f"output {i} " + "lorem ipsum " * 30 for i in range(n)],
            name=side,
        )
    modes = []
    for sign, side in ((1, "test"), (-1, "reference")):
        other = "reference" if side == "test" else "test"
        for rank in range(1, n_modes + 1):

            def samples(s, k=top_k):
                idx = rng.choice(n, k, replace=False)
                return [
                    SampleScore(s, int(i), sets[s].prompts[i], sets[s].outputs[i], float(1 / (j + 1)))
                    for j, i in enumerate(idx)
                ]

            modes.append(
                Mode(
                    rank=rank,
                    eigenvalue=sign * 0.1 / rank,
                    side=side,
                    top_samples=samples(side),
                    top_samples_other=samples(other),
                    top_prompts=[
                        PromptLoading(f"prompt number {p}", sign * 0.01, 0.5, 500, 500) for p in range(10)
                    ],
                )
            )
    ranking = [
        {
            "prompt": f"prompt number {p}",
            "disagreement": 0.001,
            "share": 0.005,
            "n_test": 500,
            "n_reference": 500,
        }
        for p in range(100)
    ]
    result = PromptSplitResult(
        eigenvalues=list(np.r_[0.1 / np.arange(1, 1001), -0.1 / np.arange(1000, 0, -1)]),
        modes=modes,
        distance=0.5,
        method="rff",
        n_test=n,
        n_reference=n,
        seed=0,
        config={
            "kernel": "gaussian",
            "eta": 1.0,
            "sigma_prompt": 5.0,
            "sigma_output": 8.0,
            "n_modes": n_modes,
            "n_features": 2000,
            "test": "test",
            "reference": "reference",
        },
        prompt_ranking=ranking,
    )
    images = {"test": NoiseImages(n, 1), "reference": NoiseImages(n, 2)}
    return result, sets, images


@functools.cache
def big_report() -> tuple[Path, float]:
    """The report of :func:`big_run`, written once per test session: (path, seconds it took)."""
    from promptprism.report import write_report

    result, sets, images = big_run()
    folder = Path(tempfile.mkdtemp(prefix="pp-big-report-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    t0 = time.perf_counter()
    path = write_report(result, folder, inputs=sets, images=images)
    return path, time.perf_counter() - t0


# ------------------------------------------------------------------------- results with the newer fields
def with_fields(obj, **fields):
    """``obj`` with ``fields`` set: through ``dataclasses.replace`` for fields its class declares, set on the
    (frozen) instance otherwise, so the pages' handling of the agreed result fields is tested whether or not
    the method classes declare them yet."""
    import dataclasses

    declared = {f.name for f in dataclasses.fields(obj)}
    obj = dataclasses.replace(obj, **{k: v for k, v in fields.items() if k in declared})
    for k, v in fields.items():
        if k not in declared:
            object.__setattr__(obj, k, v)
    return obj


NEW_PROMPTSPLIT_FIELDS = ("significance", "identical", "ranking_basis", "eigenvalues_scope", "bandwidth_scan")


def old_promptsplit_result():
    """The digits result as a result.json written before the significance fields existed (keys removed,
    loaded back)."""
    result, _, _ = digits_run()
    data = result.to_dict()
    for key in NEW_PROMPTSPLIT_FIELDS:
        data.pop(key, None)
    for mode in data["modes"]:
        mode.pop("p_value", None)
        mode.pop("significant", None)
    return PromptSplitResult.from_dict(data)


def significance_result(p_values, *, alpha=0.05, identical=False, basis=None, scan=None):
    """The digits result with a permutation-test record: ``p_values`` per mode (positive modes first);
    the null band at half of each eigenvalue's size."""
    result, _, _ = digits_run()
    modes = [
        with_fields(m, p_value=p, significant=p <= alpha) for m, p in zip(result.modes, p_values, strict=True)
    ]
    n_sig = sum(p <= alpha for p in p_values)
    pos = [abs(m.eigenvalue) / 2 for m in result.modes if m.side == "test"]
    neg = [abs(m.eigenvalue) / 2 for m in result.modes if m.side == "reference"]
    largest = p_values[int(np.argmax([abs(m.eigenvalue) for m in result.modes]))]
    verdict = (
        f"no significant difference between test and reference at alpha = {alpha}; largest eigenvalue "
        f"p = {largest}"
        if n_sig == 0
        else f"{n_sig} significant mode(s) at alpha = {alpha}"
    )
    significance = {
        "test": "permutation",
        "scheme": "within-prompt",
        "permutations": 200,
        "alpha": alpha,
        "seed": 0,
        "correction": "max-statistic step-down (FWER)",
        "null_top": {"test": pos, "reference": neg},
        "p_largest": largest,
        "n_significant": n_sig,
        "approximation": None,
        "verdict": verdict,
    }
    if basis is None:
        basis = "significant modes" if n_sig else "none: no mode is significant"
    return with_fields(
        result,
        modes=modes,
        significance=significance,
        identical=identical,
        ranking_basis=basis,
        prompt_ranking=result.prompt_ranking if n_sig else [],
        eigenvalues_scope="all",
        bandwidth_scan=scan or {},
    )


def scan_record():
    """A 'stable' bandwidth scan of the output kernel, as the estimator records it."""
    mult = [0.25, 0.5, 1.0, 2.0, 4.0]
    return {
        "output": {
            "multipliers": mult,
            "sigmas": [3.0 * m for m in mult],
            "top_eigenvalues": [[0.5, 0.3, 0.2], [0.3, 0.2, 0.1], [0.2, 0.1, 0.05], [0.19, 0.1, 0.05],
                                [0.19, 0.1, 0.05]],
            "chosen": 6.0,
            "plateau": True,
            "tolerance": 0.05,
            "note": "the top eigenvalues change by less than 5% from 2x the median on",
        }
    }
