"""Section 5.4 on the Fashion generator (``demos/guidance.py``, ``models/fashion_guidance.py``) and the
generator's k-NN quality metric (``models/quality.py``), on tiny inputs and a tiny random UNet."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

from promptprism.cli.demo import sweep_options
from promptprism.demos import guidance as dg
from promptprism.errors import InputError, OptionError
from promptprism.models import fashion

# (looked up, not imported: collecting the suite stays free of diffusers' import; the tests that need it run
# in one test process under --dist loadgroup)
pytestmark = [pytest.mark.skipif(find_spec("diffusers") is None, reason="diffusers is not installed")]
from promptprism.models import fashion_guidance as fg  # noqa: E402
from promptprism.models.quality import knn_accuracy  # noqa: E402

TINY = fashion.UNetShape(image_size=8, channels=(8, 16), layers_per_block=1)


def test_knn_accuracy_is_the_majority_of_the_k_nearest_by_brute_force():
    rng = np.random.default_rng(0)
    train, train_y = rng.normal(size=(60, 3)), rng.integers(0, 3, 60)
    x, y = rng.normal(size=(30, 3)), rng.integers(0, 3, 30)
    got = knn_accuracy(x, y, train, train_y, k=5)
    d = ((x[:, None] - train[None]) ** 2).sum(-1)
    votes = [np.bincount(train_y[np.argsort(row)[:5]], minlength=3).argmax() for row in d]
    assert got == {c: float(np.mean(np.array(votes)[y == c] == c)) for c in range(3)}
    assert knn_accuracy(train, train_y, train, train_y, k=1) == {0: 1.0, 1: 1.0, 2: 1.0}  # itself nearest
    with pytest.raises(InputError, match="dimension"):
        knn_accuracy(x[:, :2], y, train, train_y)
    with pytest.raises(InputError, match="fewer than k"):
        knn_accuracy(x, y, train[:3], train_y[:3], k=5)


def test_framed_reference_frames_the_guided_classes_only():
    images = np.full((3, 8, 8), 7, np.uint8)
    out = fg.framed(images, width=2)
    assert (out[:, :2] == 255).all() and (out[:, :, -2:] == 255).all() and (out[:, 2:6, 2:6] == 7).all()
    assert (images == 7).all()  # not in place
    rows = fg.pixel_rows(out)
    assert rows.shape == (3, 64) and rows.min() >= -1 and rows.max() == 1.0
    guide, evaluate = fg.real_reference_sets(8, 5, seed=0)
    assert len(guide[0]) == len(evaluate[0]) == 30
    assert not any((a == b).all() for a in guide[0] for b in evaluate[0])  # disjoint images
    guided = np.isin(guide[1], fg.section_classes(fg.GUIDED, ()))
    assert (guide[0][guided][:, 0] == 255).all() and not (guide[0][~guided][:, 0] == 255).all()
    brightness = dg.frame_brightness(guide[0], guide[1])
    assert brightness["guided"] == 255.0 and brightness["control"] < 100


def test_runs_and_options():
    opts = dg.SweepOptions(scales=(0.0, 10.0), rho=0.5, rho_scale=10.0, through_model=True)
    assert dg.runs(opts) == [(0.0, 0.0, True), (10.0, 0.0, True), (10.0, 0.5, True), (10.0, 0.0, False)]
    assert dg.runs(dg.SweepOptions(scales=(0.0,), rho=0, compare_gradient=False)) == [(0.0, 0.0, False)]
    assert sweep_options("none", 16, 1, seed=0, steps=20) is None
    got = sweep_options("0, 50", 8, 2, seed=3, steps=5)
    assert got.scales == (0.0, 50.0) and got.seeds == (3, 4) and got.per_prompt == 8 and got.steps == 5
    for args, match in ((("0,-1", 8, 1), "guide-scales"), (("0,inf", 8, 1), "guide-scales"),
                        (("a", 8, 1), "guide-scales"), (("0", 2, 1), "guide-per-prompt"),
                        (("0", 8, 0), "guide-seeds")):
        with pytest.raises(OptionError, match=match):
            sweep_options(*args, seed=0, steps=5)


def test_demo_guidance_flags_bad_input_is_one_line_exit_2(tmp_path, capsys):
    from promptprism.cli import main

    code = main(["demo", "--trained-generator", "--out", str(tmp_path / "out"), "--guide-scales", "0,-5"])
    err = capsys.readouterr().err
    assert code == 2 and "--guide-scales" in err and "Traceback" not in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


class PixelSpace:
    """The evaluation space on pixels (the plumbing, without loading EfficientNet)."""

    def embed(self, images):
        return fg.pixel_rows(images) / 8.0

    def quality(self, feats, classes):
        return {"accuracy": {fashion.CLASS_NAMES[c]: 0.5 for c in np.unique(classes)}, "frechet": 1.0}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny") / "ckpt"
    fashion.save_checkpoint(folder, TINY.build(seed=0), fashion.training_scheduler(),
                            {"image_size": 8, "epoch": 0, "seed": 0, "command": "test"})
    return fashion.load_checkpoint(folder)


@pytest.mark.slow
def test_sweep_rows_table_and_curve_on_a_tiny_unet(tiny, tmp_path):
    import json

    opts = dg.SweepOptions(scales=(0.0, 50.0), rho=0.5, rho_scale=50.0, per_prompt=4, reference_per_class=4,
                           through_model=True, steps=2, permutations=20, seeds=(0, 1))
    seen = []
    rows = dg.sweep(tiny, opts, space=PixelSpace(), on_row=lambda rs, images: seen.append(images.shape))
    assert len(rows) == 8 and seen == [(24, 8, 8)] * 8
    assert [(r["seed"], r["scale"], r["rho"], r["through_model"]) for r in rows[:4]] == \
        [(0, 0.0, 0.0, True), (0, 50.0, 0.0, True), (0, 50.0, 0.5, True), (0, 50.0, 0.0, False)]
    unguided, guided = rows[0], rows[1]
    g = lambda r: np.mean([r["per_prompt"][n] for n in fg.GUIDED])  # noqa: E731
    assert g(guided) < g(unguided)  # toward the (framed) reference on the guided prompts
    assert guided["frame_brightness"]["guided"] > unguided["frame_brightness"]["guided"]
    assert rows[4]["distance"] != unguided["distance"]  # another seed: other samples and references
    table = dg.table_rows(rows)
    assert len(table) == 8 and all(len(r) == len(dg.TABLE_HEADERS) for r in table)
    dg.write_results(tmp_path / "g", rows, opts)
    saved = json.loads((tmp_path / "g" / "result.json").read_text())
    assert saved["seed"] == [0, 1] and saved["config"]["per_prompt"] == 4 and len(saved["rows"]) == 8
    assert (tmp_path / "g" / "curve.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "g" / "table.md").read_text().count("\n") == 10
