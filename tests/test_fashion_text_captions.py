"""Caption and attribute rules of the text-conditioned Fashion generator against hand-computed arrays."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.models import fashion_captions as fc


def _square(value: int, side: int, size: int = 8) -> np.ndarray:
    im = np.zeros((size, size), np.uint8)
    im[1: 1 + side, 1: 1 + side] = value
    return im


def test_measures_of_flat_squares_by_hand():
    ims = np.stack([_square(200, 4), _square(100, 2), np.zeros((8, 8), np.uint8)])
    m = fc.measures(ims)
    assert m[0, 0] == 200 and m[0, 1] == 16
    assert m[1, 0] == 100 and m[1, 1] == 4
    assert m[2].tolist() == [0.0, 0.0, 0.0]  # no ink: all measures 0
    # flat inside: the interior (4 neighbours inked) of a 4x4 square is its 2x2 centre, Laplacian 0
    assert m[0, 2] == 0.0
    # a 2x2 square has no interior pixel
    assert m[1, 2] == 0.0


def test_texture_is_the_mean_abs_laplacian_over_interior_ink():
    im = _square(200, 5)
    im[3, 3] = 100  # the centre of the 5x5 square (rows/cols 1..5)
    m = fc.measures(im[None])
    # interior = the 3x3 centre (rows/cols 2..4); |lap| at the centre 4*100/255, at its 4 neighbours 100/255
    expected = (4 * 100 / 255 + 4 * 100 / 255) / 9
    assert m[0, 2] == pytest.approx(expected)
    assert m[0, 0] == pytest.approx((24 * 200 + 100) / 25)


def test_thresholds_are_class_medians_and_frozen():
    ims = np.stack([_square(v, 4) for v in (50, 100, 150, 200, 250)] + [_square(90, 3)] * 2)
    labels = np.array([0, 0, 0, 0, 0, 1, 1])
    th = fc.class_thresholds(ims, labels)
    assert th.shape == (10, 3) and th[0, 0] == 150 and th[0, 1] == 16 and th[1, 0] == 90
    table = fc.attribute_table(ims, labels, th)
    assert table[:5, 0].tolist() == [0, 0, 0, 1, 1]  # above the median = light
    # frozen: new images are judged by the given thresholds, not their own medians
    assert fc.attribute_table(np.stack([_square(160, 4)] * 3), np.zeros(3, int), th)[:, 0].tolist() == [1] * 3


def test_phrases_and_parsing_round_trip():
    words = {"texture": "patterned", "brightness": "dark"}
    assert fc.phrase(8, words) == "a dark, patterned bag"
    assert fc.phrase(9, {}) == "an ankle boot"
    for text, cls, w in fc.all_prompts():
        assert fc.parse_prompt(text) == (cls, w)
    assert fc.parse_prompt("a light shirt") == (6, {"brightness": "light"})
    assert fc.parse_prompt("a light t-shirt") == (0, {"brightness": "light"})
    with pytest.raises(ValueError):
        fc.parse_prompt("a dark cat")


def test_all_prompts_are_550_distinct():
    texts = [t for t, _, _ in fc.all_prompts()]
    assert len(texts) == len(set(texts)) == 550


def test_captions_name_only_true_attributes_and_swap_flips_one_class():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, 400)
    attrs = rng.integers(0, 2, (400, 3))
    caps = fc.captions(labels, attrs, seed=3)
    assert caps == fc.captions(labels, attrs, seed=3)
    swapped = fc.captions(labels, attrs, seed=3, swap=("bag", "brightness"))
    for c, a, text, text2 in zip(labels, attrs, caps, swapped, strict=True):
        cls, words = fc.parse_prompt(text)
        assert cls == c
        for attr, w in words.items():
            assert fc.VALUES[attr].index(w) == a[fc.ATTRIBUTES.index(attr)]
        if c != 8:
            assert text2 == text
        elif "brightness" in words:
            assert fc.parse_prompt(text2)[1]["brightness"] != words["brightness"]
    assert len(set(caps)) > 100


def test_rare_cells_are_rare_in_the_caption_table():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 10, 20000)
    attrs = rng.integers(0, 2, (20000, 3))
    keep = fc.rare_mask(labels, attrs, seed=0)
    for cls, attr, word in fc.RARE_CELLS:
        cell = (labels == fc.class_words().index(cls)) & (attrs[:, fc.ATTRIBUTES.index(attr)]
                                                          == fc.VALUES[attr].index(word))
        other = (labels == fc.class_words().index(cls)) & ~cell
        assert 0.06 < keep[cell].mean() < 0.14  # 10 % kept
        assert keep[other].all() or keep[other].mean() > 0.95  # only rare-cell images dropped
    assert fc.is_rare(7, {"texture": "patterned"}) and not fc.is_rare(7, {"texture": "plain"})
