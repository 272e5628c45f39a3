"""``demo --trained-generator`` section by section: Ctrl-C keeps the finished sections, a missing data set
names its package, the size presets (on a tiny random UNet and stand-in real images: the plumbing)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from importlib.util import find_spec

import numpy as np
import pytest

from promptprism.cli import main
from promptprism.datasets import FASHION_MNIST_ENV, fashion_mnist_available
from promptprism.demos import fashion_run
from promptprism.io import STAGING_PREFIX
from promptprism.models import fashion

# (looked up, not imported: collecting the suite stays free of diffusers' import; the tests that need it run
# in one test process under --dist loadgroup)
pytestmark = [pytest.mark.skipif(find_spec("diffusers") is None, reason="diffusers is not installed")]

TINY = fashion.UNetShape(image_size=8, channels=(8, 16), layers_per_block=1)


@pytest.fixture(scope="module")
def tiny_weights(tmp_path_factory):
    """Two 'training' checkpoints and a 'second generator' (random tiny UNets)."""
    folder = tmp_path_factory.mktemp("weights")
    for i, (name, answers, init) in enumerate([("step-10", {}, None), ("step-20", {}, None),
                                               ("second", {"sneaker": "sandal"}, "step-10")]):
        fashion.save_checkpoint(folder / name, TINY.build(seed=i), fashion.training_scheduler(),
                                {"image_size": 8, "steps": 10, "answers": answers, "init": init, "seed": 0})
    return folder


@pytest.fixture
def small_real(monkeypatch):
    """300 random 8x8 'real' images per split (the classifier and the references, without the data set)."""
    def real_images(split, image_size=16):
        rng = np.random.default_rng(0 if split == "train" else 1)
        return rng.integers(0, 256, (300, image_size, image_size), dtype=np.uint8), np.arange(300) % 10

    monkeypatch.setattr(fashion, "real_images", real_images)


def _leftovers(folder):
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(STAGING_PREFIX)]


@pytest.mark.slow
def test_ctrl_c_keeps_the_finished_sections_and_says_so(tmp_path, tiny_weights, small_real, monkeypatch,
                                                        capsys):
    def interrupted(ctx):
        raise KeyboardInterrupt

    monkeypatch.setattr(fashion_run, "SECTIONS", [("quality", fashion_run.quality_section),
                                                  ("monitoring", interrupted)])
    out = tmp_path / "demo"
    code = main(["demo", "--trained-generator", "--weights", str(tiny_weights), "--per-prompt", "10",
                 "--steps", "2", "--out", str(out), "-q"])
    err = capsys.readouterr().err
    assert code == 130, err
    assert err == f"stopped: kept sections quality in {out}; monitoring was not finished\n"
    summary = json.loads((out / "summary.json").read_text())
    assert [s["name"] for s in summary["sections"]] == ["quality"] and summary["complete"] is False
    assert len(json.loads((out / "quality.json").read_text())["accuracy_generated"]) == 10
    page = (out / "report.html").read_text()
    assert "Quality of the generator" in page and "had not finished" in page
    assert not _leftovers(out)


def test_missing_data_set_names_the_package(tmp_path, monkeypatch, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv(FASHION_MNIST_ENV, str(empty))
    assert not fashion_mnist_available()
    code = main(["demo", "--trained-generator", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"no Fashion-MNIST files in {empty}" in err
    assert "`sudo apt-get install dataset-fashion-mnist` (Debian/Ubuntu)" in err and FASHION_MNIST_ENV in err
    assert not (tmp_path / "out").exists()


def test_the_full_sizes_are_the_earlier_defaults_and_quick_is_smaller():
    from promptprism.demos.guidance import SweepOptions

    full, quick, old = fashion_run.FULL, fashion_run.QUICK, SweepOptions()
    assert (full.per_prompt, full.steps, full.bootstrap) == (40, 20, 200)
    assert (full.guide_scales, full.guide_per_prompt, full.guide_reference_per_class,
            full.guide_permutations) == (old.scales, old.per_prompt, old.reference_per_class,
                                         old.permutations)
    # the quick split keeps the full sample size: at 20 per prompt it missed the planted sneaker difference
    assert quick.per_prompt == full.per_prompt
    for field in ("steps", "bootstrap", "guide_per_prompt", "guide_reference_per_class",
                  "guide_permutations"):
        assert getattr(quick, field) < getattr(full, field), field
    assert quick.per_prompt >= 10 and len(quick.guide_scales) < len(full.guide_scales)
    assert "quick sizes: 40 samples per prompt, 10 DDIM steps" in quick.describe()


@pytest.mark.slow
def test_sigint_to_the_command_keeps_the_finished_sections(tmp_path, tiny_weights):
    if not fashion_mnist_available():
        pytest.skip("needs dataset-fashion-mnist")
    out = tmp_path / "demo"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "promptprism", "demo", "--trained-generator", "--weights",
                             str(tiny_weights), "--per-prompt", "10", "--steps", "2", "--out", str(out),
                             "--sections", "quality,monitoring,cfg-diversity,split,verdicts"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # a background
    # job's children start with SIGINT ignored, and Python then installs no handler for it
    deadline = time.monotonic() + 300
    while not (out / "summary.json").is_file() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr and stderr.count("\n") == 1, stderr
    assert stderr.startswith("stopped: kept sections quality") and "was not finished" in stderr
    kept = [s["name"] for s in json.loads((out / "summary.json").read_text())["sections"]]
    assert kept and stderr.startswith(f"stopped: kept sections {', '.join(kept)} in {out};")
    assert (out / "report.html").is_file() and not _leftovers(out)
    for name in kept[1:]:  # the sections with a method's own report: both files, whole
        folder = out / {"cfg-diversity": "cfg-diversity"}.get(name, name)
        assert json.loads((folder / "result.json").read_text()) and (folder / "report.html").is_file()


@pytest.mark.slow
def test_the_split_section_page_has_each_prompts_images_and_a_map(tmp_path, tiny_weights, small_real,
                                                                   monkeypatch):
    """Issue 41: the generator demo's split page showed "0 outputs" per prompt and no map."""
    import re

    monkeypatch.setattr(fashion_run, "SECTIONS", [("split", fashion_run.split_section)])
    out = tmp_path / "demo"
    code = main(["demo", "--trained-generator", "--weights", str(tiny_weights), "--per-prompt", "10",
                 "--steps", "2", "--out", str(out), "-q"])
    assert code == 0
    html = (out / "split" / "report.html").read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="pp-data">(.*?)</script>', html, re.S).group(1)
    view = json.loads(block)["view"]
    assert len(view["prompts"]) == 10
    from promptprism.report.explore import PER_PROMPT

    for p in view["prompts"]:  # every prompt's 10 + 10 images: counted, and a seeded few in its view
        assert (p["n_test"], p["n_reference"]) == (10, 10)
        assert len(p["rows"]["test"]) == len(p["rows"]["reference"]) == PER_PROMPT
        assert all(view["rows"][r].get("im") is not None for r in p["rows"]["test"])
    assert len(view["map"]["x"]) == 200 and "map not drawn" not in html
