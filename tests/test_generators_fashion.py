"""The Fashion-MNIST generator's checkpoints and its batched ``generate`` callable, on a tiny random UNet."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

from promptprism.cli import main
from promptprism.data.manifest import read_manifest
from promptprism.errors import InputError
from promptprism.models import fashion

# (looked up, not imported: collecting the suite stays free of diffusers' import; the tests that need it run
# in one test process under --dist loadgroup)
# every test here runs diffusers' UNet (importing diffusers alone takes ~3.5 s a test process): the slow tier
pytestmark = [pytest.mark.skipif(find_spec("diffusers") is None, reason="diffusers is not installed"),
              pytest.mark.slow]

TINY = fashion.UNetShape(image_size=8, channels=(8, 16), layers_per_block=1)


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny") / "ckpt"
    fashion.save_checkpoint(folder, TINY.build(seed=0), fashion.training_scheduler(),
                            {"image_size": 8, "epoch": 0, "seed": 0, "command": "test"})
    return folder


def test_checkpoint_round_trip_in_fp16(tiny_checkpoint):
    import torch

    ckpt = fashion.load_checkpoint(tiny_checkpoint)
    fresh = TINY.build(seed=0)
    for (name, a), b in zip(ckpt.unet.state_dict().items(), fresh.state_dict().values(), strict=True):
        assert a.dtype == torch.float32, name
        assert torch.equal(a, b.half().float()), name  # stored in fp16, loaded back as float32
    assert ckpt.image_size == 8 and ckpt.unet.config.num_class_embeds == fashion.NULL_CLASS + 1
    again = fashion.save_checkpoint(tiny_checkpoint.parent / "again", ckpt.unet, ckpt.scheduler, ckpt.meta)
    assert str(tiny_checkpoint) not in (again / "unet" / "config.json").read_text()  # no local path kept


@pytest.mark.slow
def test_batched_generator_is_seeded_and_independent_of_the_batch(tiny_checkpoint):
    gen = fashion.fashion_generator(tiny_checkpoint, steps=3, batch_size=4)
    assert gen.batch_size == 4
    prompts = list(fashion.class_prompts()[:3]) + ["sneaker"]
    together = gen(prompts, [1, 2, 3, 4])
    alone = [gen([p], [s])[0] for p, s in zip(prompts, [1, 2, 3, 4], strict=True)]
    assert all(im.shape == (8, 8) and im.dtype == np.uint8 for im in together)
    assert all(np.abs(a.astype(int) - b.astype(int)).max() <= 1 for a, b in zip(together, alone, strict=True))
    assert not np.array_equal(together[0], gen(prompts[:1], [5])[0])  # another seed, another image
    with pytest.raises(InputError, match="not a Fashion-MNIST class prompt"):
        gen(["a photo of a cat"], [0])


def test_generate_cli_with_the_callable_and_bad_input(tiny_checkpoint, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(fashion.CHECKPOINT_ENV, str(tiny_checkpoint))
    monkeypatch.setenv("PROMPTPRISM_FASHION_STEPS", "2")
    prompts = tmp_path / "p.txt"
    prompts.write_text("a photo of a bag\na photo of a sneaker\n")
    out = tmp_path / "g.jsonl"
    code = main(["generate", str(prompts), "--out", str(out), "--generator",
                 "promptprism.models.fashion:generate", "--samples", "3", "-q"])
    assert code == 0
    rows = read_manifest(out).rows
    assert len(rows) == 6 and all(r.image.is_file() for r in rows)
    prompts.write_text("a photo of a cat\n")
    code = main(["generate", str(prompts), "--out", str(tmp_path / "bad.jsonl"), "--generator",
                 "promptprism.models.fashion:generate", "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "not a Fashion-MNIST class prompt" in err and "Traceback" not in err
    assert not (tmp_path / "bad.jsonl").exists()


def test_training_command_bad_input_is_one_line_exit_2(tmp_path, capsys):
    from promptprism.models.fashion_train import main as train_main

    assert train_main(["--out", str(tmp_path / "t"), "--answer", "sneaker=cat"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "PROMPT_CLASS=IMAGE_CLASS" in err
    assert train_main(["--out", str(tmp_path / "t"), "--epochs", "0"]) == 2


@pytest.fixture(scope="module")
def tiny_weights(tmp_path_factory):
    """Two 'training' checkpoints and a 'second generator' (random tiny UNets: the plumbing, not quality)."""
    folder = tmp_path_factory.mktemp("weights")
    for i, (name, answers, init) in enumerate([("step-10", {}, None), ("step-20", {}, None),
                                               ("second", {"sneaker": "sandal"}, "step-10")]):
        fashion.save_checkpoint(folder / name, TINY.build(seed=i), fashion.training_scheduler(),
                                {"image_size": 8, "steps": 10, "answers": answers, "init": init, "seed": 0})
    return folder


def test_demo_generator_bad_input_is_one_line_exit_2(tmp_path, tiny_weights, capsys):
    for argv, expected in ((["--weights", str(tmp_path / "nope")], "no such folder"),
                           (["--weights", str(tmp_path)], "holds no checkpoint"),
                           (["--weights", str(tiny_weights), "--per-prompt", "5"], "at least 10")):
        code = main(["demo", "--trained-generator", "--out", str(tmp_path / "out"), *argv])
        err = capsys.readouterr().err
        assert code == 2 and expected in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


CLASS_SECTIONS = "quality,monitoring,cfg-diversity,split,verdicts,guidance"  # the class generator


@pytest.mark.slow
def test_demo_generator_writes_every_section(tmp_path, tiny_weights, monkeypatch):
    import json

    from promptprism.demos import guidance as demo_guidance
    from promptprism.report.references import external_references

    # the guidance section's real-image evaluation space, small (the plumbing, not the numbers)
    monkeypatch.setattr(demo_guidance, "TRAIN_NEIGHBOURS", 30)
    monkeypatch.setattr(demo_guidance, "REAL_TEST_EVERY", 300)
    out = tmp_path / "demo"
    assert main(["demo", "--trained-generator", "--weights", str(tiny_weights), "--per-prompt", "10",
                 "--steps", "2", "--guide-scales", "0,50", "--guide-per-prompt", "4", "--out", str(out), "-q",
                 "--sections", CLASS_SECTIONS]) == 0
    summary = json.loads((out / "summary.json").read_text())
    titles = [s["title"] for s in summary["sections"]]
    assert len(titles) == 6 and summary["checkpoints"] == ["step-10", "step-20"]
    verdicts, guided = summary["sections"][4], summary["sections"][5]
    assert verdicts["name"] == "verdicts" and len(verdicts["rows"]) >= 10  # the modes, then the 10 prompts
    assert len(json.loads((out / "split" / "result.json").read_text())["quality"]["findings"]) == len(
        verdicts["rows"])
    assert "guidance" in guided["title"] and len(guided["rows"]) == 4  # 0, 50, rho, prediction constant
    assert (out / "guidance" / "result.json").is_file() and (out / "guidance" / "curve.png").is_file()
    for sub in ("monitoring", "cfg-diversity", "split"):
        assert (out / sub / "result.json").is_file() and (out / sub / "report.html").is_file()
    assert len(summary["sections"][2]["rows"]) == 4  # one row per CFG scale
    quality = json.loads((out / "quality.json").read_text())
    assert len(quality["accuracy_generated"]) == 10 and quality["frechet_distance_pixels"] > 0
    page = (out / "report.html").read_text()
    assert not external_references(page) and "samples-cfg" not in page.split("<main")[0]
    assert all(caption in page for _, caption in guided["figures"])  # the curve and the samples, shown
    assert (out / "guidance" / "samples.png").is_file()
