"""The text-conditioned Fashion generator: packaged weights, seeded sampling, attribute accuracy, and
PromptSplit finding the planted family of the second generator."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.errors import InputError, OptionError
from promptprism.models import fashion_captions as fc
from promptprism.models import fashion_text as ft
from promptprism.models.fashion_text_quality import attribute_accuracy, family_prompts, family_share

PLANTED = ("bag", "brightness")  # the second generator's swapped (class, attribute)


def paired_samples(images, prompts, name):
    """Prompts by the bundled MiniLM (sentence embeddings), outputs as pixel rows on 0..1."""
    from promptprism.data.paired import PairedSet
    from promptprism.embed.registry import get_encoder

    text = get_encoder("minilm", modality="text", device="cpu").encode_texts(list(prompts))
    pixels = np.asarray(images, dtype=np.float64).reshape(len(images), -1) / 255.0
    return PairedSet(np.asarray(text, dtype=np.float64), pixels, prompts=list(prompts), name=name)


def test_experiment_prompts_are_distinct_seeded_and_span_the_families():
    p = ft.experiment_prompts(300, seed=1)
    assert len(p) == len(set(p)) == 300 and p == ft.experiment_prompts(300, seed=1)
    assert p != ft.experiment_prompts(300, seed=2)
    assert sorted(ft.experiment_prompts(550, 0)) == sorted(t for t, _, _ in fc.all_prompts())
    parsed = [fc.parse_prompt(t) for t in p]
    assert {c for c, _ in parsed} == set(range(10))
    assert any(fc.is_rare(c, w) for c, w in parsed)
    with pytest.raises(OptionError):
        ft.experiment_prompts(551)


def test_attribute_accuracy_by_hand():
    th = np.zeros((10, 3))
    th[8] = [100.0, 10.0, 1.0]  # bag: brightness 100, size 10 pixels, texture 1 (never exceeded)
    dark_small = np.zeros((28, 28), np.uint8)
    dark_small[:2, :2] = 60  # 4 pixels of 60: dark, small, plain
    light_large = np.zeros((28, 28), np.uint8)
    light_large[:5, :5] = 200  # 25 pixels of 200: light, large, plain
    acc = attribute_accuracy(np.stack([dark_small, light_large, light_large]),
                             ["a dark, small bag", "a dark bag", "a large, patterned bag"], th)
    assert acc["brightness"] == (0.5, 2)
    assert acc["size"] == (1.0, 2)
    assert acc["texture"] == (0.0, 1)
    assert acc["common"] == (pytest.approx(3 / 5), 5)
    assert np.isnan(acc["rare"][0]) and acc["rare"][1] == 0
    assert attribute_accuracy(light_large[None], ["a photo of a patterned sneaker"], th)["rare"] == (0.0, 1)
    with pytest.raises(InputError):
        attribute_accuracy(light_large[None], [], th)


def test_family_prompts_and_share():
    fam = family_prompts("bag", "brightness", "dark")
    assert len(fam) == 18 and all("dark" in p and "bag" in p for p in fam)
    assert family_share(fam + ["a dark sandal", "a large bag"], *PLANTED) == pytest.approx(18 / 20)


@pytest.fixture(scope="module")
def final():
    if "final" not in ft.packaged_names():
        pytest.skip("no packaged text generator weights")
    return ft.load_checkpoint("final")


@pytest.mark.slow
def test_packaged_generator_is_seeded_and_meta_is_frozen(final):
    prompts = ["a dark sandal", "a photo of a light, large bag", "trouser"]
    a = ft.generate(prompts, seed=3, steps=4, checkpoint=final)
    b = ft.generate(prompts, seed=3, steps=4, checkpoint=final)
    assert a.shape == (3, 28, 28) and a.dtype == np.uint8 and np.array_equal(a, b)
    assert not np.array_equal(a, ft.generate(prompts, seed=4, steps=4, checkpoint=final))
    assert final.thresholds.shape == (10, 3)
    assert final.meta["rules"]["rare_cells"] == [list(c) for c in fc.RARE_CELLS]
    assert final.meta["swap"] is None and "fashion_text_train" in final.meta["command"]
    with pytest.raises(InputError):
        ft.load_checkpoint("no-such-checkpoint")


@pytest.mark.slow
def test_promptsplit_attributes_the_second_generator_to_the_planted_family(final):
    from promptprism import PromptSplit

    if "second-dark-light-bag" not in ft.packaged_names():
        pytest.skip("the second generator (planted family) is not packaged")
    second = ft.load_checkpoint("second-dark-light-bag")
    assert second.meta["swap"] == list(PLANTED)
    planted = family_prompts("bag", "brightness", "dark") + family_prompts("bag", "brightness", "light")
    others = [p for p in ft.experiment_prompts(550, seed=0) if p not in planted][::14][:36]
    prompts = planted + others
    opts = dict(seed=0, guidance_scale=2.0, steps=8)
    test = paired_samples(ft.generate(prompts, checkpoint=second, **opts), prompts, "second")
    ref = paired_samples(ft.generate(prompts, checkpoint=final, **opts), prompts, "final")
    result = PromptSplit(seed=0, n_modes=3, permutations=0).fit(test, ref)
    top = [r["prompt"] for r in result.prompt_ranking[:10]]
    # 36 of 72 prompts (half) belong to the family; the ranking's top ten are mostly its members
    assert family_share(top, *PLANTED) >= 0.7, top
