"""The paper's colour experiment (section 5.1) on bundled digits: PromptSplit names the 10 altered prompts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from promptprism import PromptSplit, PromptSplitResult, load_result
from promptprism.cli import main
from promptprism.datasets import colored_digits

pytestmark = pytest.mark.slow  # minutes in all: run by `make test` / CI, not by -m 'not slow'


@pytest.fixture(scope="module")
def data():
    return colored_digits(per_prompt=40, seed=0)


@pytest.fixture(scope="module")
def exact(data):
    return PromptSplit(seed=0, method="exact").fit(data.test, data.reference)


def test_dataset_layout(data):
    assert len(data.test) == len(data.reference) == 20 * 40
    assert data.test.dim_prompt == 20 and data.test.dim_output == 8 * 8 * 3
    assert len(data.altered_test) == len(data.altered_reference) == 5
    assert set(data.altered_test).isdisjoint(data.altered_reference)
    # altered prompts get the wrong style, the others the style they ask for
    for s, altered in ((data.test, data.altered_test), (data.reference, data.altered_reference)):
        for prompt, output in zip(s.prompts, s.outputs, strict=True):
            asked = prompt.split()[1]
            drawn = output.split()[0]
            assert (asked != drawn) == (prompt in altered)


def _check(result, data):
    # a prompt is altered when one of the two models draws the wrong style for it; on such a prompt the
    # test model draws grayscale where the reference draws colour (or the other way round), so both sides
    # of the disagreement carry it
    expected = set(data.altered_test) | set(data.altered_reference)
    assert {row["prompt"] for row in result.prompt_ranking[:10]} == expected
    top = result.positive_modes[0]
    assert top.eigenvalue > 0
    assert all(s.set == "test" and s.prompt in expected for s in top.top_samples)
    assert all(s.output.startswith("grayscale") for s in top.top_samples)  # what the test model overdoes
    bottom = result.negative_modes[0]
    assert bottom.eigenvalue < 0
    assert all(s.set == "reference" and s.prompt in expected for s in bottom.top_samples)
    assert all(s.output.startswith("colored") for s in bottom.top_samples)


def test_exact_finds_altered_prompts(data, exact):
    assert exact.method == "exact"
    _check(exact, data)


def test_rff_finds_altered_prompts(data):
    res = PromptSplit(seed=0, method="rff", n_features=2000).fit(data.test, data.reference)
    assert res.method == "rff"
    _check(res, data)


def test_cli_demo(tmp_path, data, exact, capsys, monkeypatch):
    # the demo's fit is the `exact` fixture's (not a second 30 s fit): the demo must call the default
    # estimator on the same data, and `auto` must resolve to the exact route at this size
    from promptprism.methods import promptsplit
    from promptprism.methods.promptsplit.estimator import EXACT_MAX_SAMPLES

    calls = []

    class Reused(PromptSplit):
        def fit(self, test, reference):
            calls.append(self)
            assert self.method == "auto" and self.seed == 0
            assert len(test) + len(reference) <= EXACT_MAX_SAMPLES  # auto = exact here
            for got, want in ((test, data.test), (reference, data.reference)):
                np.testing.assert_array_equal(got.prompt_embeddings, want.prompt_embeddings)
                np.testing.assert_array_equal(got.output_embeddings, want.output_embeddings)
                assert got.prompts == want.prompts and got.outputs == want.outputs
            return exact

    monkeypatch.setattr(promptsplit, "PromptSplit", Reused)  # (the demo imports it when it runs)
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--quiet"]) == 0
    assert len(calls) == 1
    assert "10/10" in capsys.readouterr().out
    assert (out / "result.json").is_file()
    assert json.loads((out / "result.json").read_text())["kind"] == "promptsplit"
    res = load_result(out)
    assert isinstance(res, PromptSplitResult)
    _check(res, data)
    # the demo runs the default estimator (auto = exact here) on the same data
    assert res.method == "exact"
    np.testing.assert_allclose(res.eigenvalues, exact.eigenvalues, rtol=1e-9, atol=1e-12)
    assert sorted(p.name for p in (out / "data").iterdir()) == ["reference.npz", "test.npz"]


@pytest.mark.parametrize(("argv", "word"), [(["--seed", "-1"], "seed"), (["--per-prompt", "0"], "per-prompt"),
                                            (["--per-prompt", "-3"], "per-prompt")])
def test_cli_demo_bad_options(tmp_path, capsys, argv, word):
    assert main(["demo", "--out", str(tmp_path / "demo"), "--quiet", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and word in err
    assert not (tmp_path / "demo").exists()
