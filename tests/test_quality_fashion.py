"""The image case of issue 43 item 5 on the packaged generators: the second generator (fine-tuned with sandal
images for "a photo of a sneaker") against the first, both scored against the real Fashion-MNIST test images
of each prompt (:mod:`promptprism.demos.fashion_verdicts`, the generator demo's "verdicts" section): farther
from the real sneakers on the sneaker prompt, level with the first elsewhere."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

from promptprism.datasets import fashion_mnist_available

# diffusers looked up, not imported: importing it at collection cost every test process ~1.3 s
pytestmark = [pytest.mark.slow,  # samples 2 x 400 images
              pytest.mark.skipif(find_spec("diffusers") is None, reason="diffusers is not installed"),
              pytest.mark.skipif(not fashion_mnist_available(),
                                 reason="Debian's dataset-fashion-mnist is not installed")]

SNEAKER = "prompt 'a photo of a sneaker'"


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    """The demo's split and verdicts sections at its quick sizes (40 per prompt, 10 DDIM steps, seed 0) on
    the packaged weights; what they saved, by folder."""
    from promptprism.demos.fashion import REAL_TEST_IMAGES, DemoContext, split_section
    from promptprism.demos.fashion_verdicts import verdicts_section
    from promptprism.models.fashion import find_checkpoints, packaged_weights, real_images

    saved = {}

    def save(result, out, **kwargs):
        saved[out.name] = result
        return {}

    training, second = find_checkpoints(packaged_weights())
    x, y = real_images("test", 16)
    idx = np.random.default_rng(0).permutation(y.size)[:REAL_TEST_IMAGES]
    ctx = DemoContext(out=tmp_path_factory.mktemp("demo"), training=training, second=second, per_prompt=40,
                      steps=10, seed=0, report=False, real_test=x[idx], real_test_labels=y[idx], save=save,
                      options={"bootstrap": 100})
    assert split_section(ctx) is not None
    section = verdicts_section(ctx)
    return saved["split"].quality, section


def test_the_sandal_trained_generator_is_farther_from_real_sneakers_and_level_elsewhere(verdicts):
    record, section = verdicts
    by = {e["id"]: e for e in record["findings"]}
    print([(e["id"], round(e["models"]["test"]["mean"], 2), round(e["models"]["reference"]["mean"], 2),
            round(e["p_adjusted"], 4), e["closer"]) for e in record["findings"]])
    sneaker = by[SNEAKER]
    assert sneaker["closer"] == "reference" and sneaker["p_adjusted"] <= 0.01
    assert sneaker["models"]["test"]["mean"] < sneaker["models"]["reference"]["mean"] - 0.2
    others = [e for e in record["findings"] if e["id"].startswith("prompt '") and e["id"] != SNEAKER]
    assert len(others) == 9 and sum(e["closer"] is None for e in others) >= 7
    modes = [e for e in record["findings"] if e["id"].startswith("mode ")]
    assert modes and all(e["closer"] in (None, "reference") for e in modes)
    assert any(e["closer"] == "reference" for e in modes)  # the mode on the sneaker prompts
    assert section.folder == "split" and len(section.rows) == len(record["findings"])
