"""``promptprism generate --guide-reference``: PromptSplit guidance from the command line, on a tiny random
Fashion generator checkpoint; bad input is one line, exit 2, and nothing written."""

from __future__ import annotations

import json
from importlib.util import find_spec

import numpy as np
import pytest

from promptprism.cli import main
from promptprism.data.manifest import read_manifest
from promptprism.models import fashion

# (looked up, not imported: collecting the suite stays free of diffusers' import; the tests that need it run
# in one test process under --dist loadgroup)
pytestmark = [pytest.mark.skipif(find_spec("diffusers") is None, reason="diffusers is not installed"),
              pytest.mark.slow]

TINY = fashion.UNetShape(image_size=8, channels=(8, 16), layers_per_block=1)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from PIL import Image

    root = tmp_path_factory.mktemp("guided")
    ckpt = root / "ckpt"
    fashion.save_checkpoint(ckpt, TINY.build(seed=0), fashion.training_scheduler(),
                            {"image_size": 8, "epoch": 0, "seed": 0, "command": "test"})
    lines = []
    rng = np.random.default_rng(0)
    for i in range(4):  # near-white images for "bag": the random model makes grey noise
        Image.fromarray(rng.integers(225, 256, (8, 8)).astype(np.uint8)).save(root / f"r{i}.png")
        lines.append(json.dumps({"prompt": "a photo of a bag", "image": f"r{i}.png"}))
    (root / "ref.jsonl").write_text("\n".join(lines) + "\n")
    (root / "p.txt").write_text("a photo of a bag\n")
    return root, ckpt


def _run(root, out, *extra):
    return main(["generate", str(root / "p.txt"), "--out", str(out), "--generator",
                 "promptprism.models.fashion:generate", "--samples", "3", "--seed", "1", "-q", *extra])


def _pixels(out):
    from PIL import Image

    return np.stack([np.asarray(Image.open(r.image).convert("L"), float) for r in read_manifest(out).rows])


def test_guided_generation_moves_toward_the_reference(setup, tmp_path, monkeypatch):
    root, ckpt = setup
    monkeypatch.setenv(fashion.CHECKPOINT_ENV, str(ckpt))
    monkeypatch.setenv("PROMPTPRISM_FASHION_STEPS", "3")
    assert _run(root, tmp_path / "plain.jsonl") == 0
    assert _run(root, tmp_path / "zero.jsonl", "--guide-reference", str(root / "ref.jsonl"),
                "--guide-scale", "0") == 0
    assert _run(root, tmp_path / "guided.jsonl", "--guide-reference", str(root / "ref.jsonl"),
                "--guide-scale", "200") == 0
    plain, zero, guided = (_pixels(tmp_path / f"{n}.jsonl") for n in ("plain", "zero", "guided"))
    assert np.array_equal(plain, zero)
    assert guided.mean() > plain.mean() + 5  # brighter: toward the white reference


@pytest.mark.parametrize("flags, message", [
    (["--guide-scale", "-1"], "--guide-scale must be a finite number >= 0"),
    (["--guide-rho", "nan"], "--guide-rho must be a finite number >= 0"),
])
def test_bad_guidance_is_one_line_exit_2_nothing_written(setup, tmp_path, monkeypatch, capsys, flags,
                                                         message):
    root, ckpt = setup
    monkeypatch.setenv(fashion.CHECKPOINT_ENV, str(ckpt))
    out = tmp_path / "g.jsonl"
    assert _run(root, out, "--guide-reference", str(root / "ref.jsonl"), *flags) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists() and not (tmp_path / "g_images").exists()


def test_a_generator_that_cannot_be_guided(setup, tmp_path, capsys):
    root, _ = setup
    out = tmp_path / "g.jsonl"
    code = main(["generate", str(root / "p.txt"), "--out", str(out), "--generator", "builtins:print",
                 "--guide-reference", str(root / "ref.jsonl"), "-q"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "cannot be guided" in err and len(err.splitlines()) == 1
    assert not out.exists()
