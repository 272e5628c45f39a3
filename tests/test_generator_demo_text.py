"""The text generator's demo sections: chosen by ``--sections``, written like the others, and PromptSplit
finding nothing between a checkpoint and itself (same seeds, same samples)."""

from __future__ import annotations

import json
import shutil

import pytest

from promptprism.cli import main
from promptprism.datasets import fashion_mnist_available
from promptprism.demos import fashion_run
from promptprism.demos.fashion_text import SECOND, TEXT_SECTIONS, TextSizes, planted_prompts
from promptprism.errors import OptionError
from promptprism.models import fashion_captions as fc
from promptprism.models.fashion_text import packaged_weights


def test_pick_sections_keeps_the_given_order_and_refuses_unknown_names():
    available = [("a", None), ("b", None), ("c", None)]
    assert [n for n, _ in fashion_run.pick_sections(available, "c, a")] == ["c", "a"]
    assert fashion_run.pick_sections(available, None) == available
    for bad in ("a,zz", "", "a,a"):
        with pytest.raises(OptionError) as err:
            fashion_run.pick_sections(available, bad)
        assert err.value.parameter == "sections"


def test_unknown_section_is_one_line_naming_the_flag(tmp_path, capsys):
    code = main(["demo", "--trained-generator", "--sections", "quality,nope", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--sections" in err and "text-split" in err, err
    assert not (tmp_path / "o").exists()


def test_the_default_plan_runs_the_text_generator_first():
    names = [n for n, _ in fashion_run.SECTIONS]
    assert names[:4] == [n for n, _ in TEXT_SECTIONS]
    assert names[4:] == ["text-guidance", "text-regions", "quality", "monitoring", "cfg-diversity", "split",
                         "verdicts"]
    assert fashion_run.QUICK.text.steps < fashion_run.FULL.text.steps


def test_planted_prompts_are_half_the_family():
    prompts = planted_prompts()
    parsed = [fc.parse_prompt(p) for p in prompts]
    bag = fc.class_words().index("bag")
    family = [c == bag and "brightness" in w for c, w in parsed]
    assert len(set(prompts)) == len(prompts) and sum(family) == len(prompts) // 2


@pytest.mark.slow
def test_text_sections_write_their_results_and_a_checkpoint_equals_itself(tmp_path):
    if not fashion_mnist_available():
        pytest.skip("needs dataset-fashion-mnist")
    weights = tmp_path / "weights"
    for name in ("final", SECOND):  # the second generator as a copy of final: nothing to find
        shutil.copytree(packaged_weights() / "final", weights / name)
    out = tmp_path / "demo"
    summary = fashion_run.run_fashion_demo(
        out, weights=None, per_prompt=10, steps=2, seed=0, sections=TEXT_SECTIONS, bootstrap=20,
        options={"text": TextSizes(captions=30, per_prompt=1, steps=2), "text_weights": str(weights)})
    assert [s["name"] for s in summary["sections"]] == [n for n, _ in TEXT_SECTIONS]
    quality = json.loads((out / "text-quality.json").read_text())
    assert quality["n_captions"] == 30 and 0 <= quality["class_accuracy_samples"] <= 1
    assert quality["frechet_distance_pixels"] > 0 and quality["frechet_distance_real_halves"] > 0
    for sub in ("text-real", "text-split", "text-diversity"):
        assert (out / sub / "result.json").is_file() and (out / sub / "report.html").is_file()
    same = json.loads((out / "text-split" / "result.json").read_text())
    assert same["distance"] == pytest.approx(0.0, abs=1e-9)
    assert len(summary["sections"][3]["rows"]) == 2  # one row per CFG scale
