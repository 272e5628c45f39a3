"""The data layer under hostile or careless input: column mapping, one table reader, images read without
silent loss, pixel limits, encodings, duplicate ids, tiny embeddings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from _embed_helpers import (  # noqa: F401 - fixtures
    fresh_memory_cache_fixture,
    hash_encoder_fixture,
    isolated_cache_fixture,
)
from promptprism import PairedSet
from promptprism.data import load_input, read_image_folder, read_manifest
from promptprism.errors import InputError, OptionError

Image = pytest.importorskip("PIL.Image")


def _csv(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


# --------------------------------------------------------------------------------------- column mapping
def test_columns_map_question_answer(tmp_path, hash_encoder):
    p = _csv(tmp_path / "qa.csv", "qid,question,answer,prompt\nq1,Capital of Peru?,Lima,old\n"
                                  "q2,Capital of Kenya?,Nairobi,old\n")
    with pytest.raises(InputError, match="map yours with columns="):
        read_manifest(_csv(tmp_path / "x.csv", "question,answer\na,b\n"))
    m = read_manifest(p, columns={"prompt": "question", "output": "answer", "id": "qid"})
    assert [r.prompt for r in m.rows] == ["Capital of Peru?", "Capital of Kenya?"]
    assert [r.output for r in m.rows] == ["Lima", "Nairobi"] and [r.id for r in m.rows] == ["q1", "q2"]
    assert m.rows[0].meta == {"prompt": "old"}  # the unmapped 'prompt' column is kept as metadata
    ps = load_input(p, columns={"prompt": "question", "output": "answer"}, text_model="hash", cache=None)
    assert ps.prompts == ["Capital of Peru?", "Capital of Kenya?"] and ps.outputs == ["Lima", "Nairobi"]


def test_columns_errors_name_the_role_and_the_file(tmp_path):
    p = _csv(tmp_path / "qa.csv", "question,answer\na,b\n")
    with pytest.raises(InputError, match=r"qa.csv: no column 'quest' \(mapped to 'prompt'\)"):
        read_manifest(p, columns={"prompt": "quest", "output": "answer"})
    with pytest.raises(OptionError, match="unknown role 'answer'"):
        read_manifest(p, columns={"answer": "answer"})
    with pytest.raises(OptionError, match="mapped to more than one role"):
        read_manifest(p, columns={"prompt": "question", "output": "question"})
    with pytest.raises(OptionError, match="either 'output' or 'image'"):
        read_manifest(p, columns={"output": "answer", "image": "question"})


def test_columns_on_an_image_folder_prompts_file(tmp_path):
    for name, col in (("sun", (250, 200, 0)), ("sea", (0, 40, 200))):
        Image.new("RGB", (6, 6), col).save(tmp_path / f"{name}.png")
    (tmp_path / "p.jsonl").write_text(json.dumps({"key": "sun", "text": "the sun"}) + "\n"
                                      + json.dumps({"key": "sea", "text": "the sea"}) + "\n")
    m = read_image_folder(tmp_path, tmp_path / "p.jsonl", columns={"id": "key", "prompt": "text"})
    assert [(r.id, r.prompt, r.image.name) for r in m.rows] == [("sun", "the sun", "sun.png"),
                                                                ("sea", "the sea", "sea.png")]


# ------------------------------------------------------------------------------------ encodings and ids
def test_latin1_manifest_names_file_and_line(tmp_path):
    p = _csv(tmp_path / "m.csv", "prompt,output\nok,fine\ncaf\xe9,na\xefve\n", encoding="latin-1")
    with pytest.raises(InputError, match=r"m.csv: line 3: not UTF-8 text \(byte 0xe9"):
        read_manifest(p)


def test_lone_surrogate_in_jsonl_names_row_and_column(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('{"prompt": "fine", "output": "x"}\n{"prompt": "bad \\ud800", "output": "y"}\n')
    with pytest.raises(InputError, match=r"row 2 \(line 2\): column 'prompt' holds a lone surrogate"):
        read_manifest(p)


def test_duplicate_ids_are_refused_naming_both_rows(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text("".join(json.dumps({"id": i, "prompt": "p", "output": o}) + "\n"
                         for i, o in (("a", "1"), ("b", "2"), ("a", "3"))))
    with pytest.raises(InputError, match=r"row 3 \(line 3\): id 'a' repeats .*row 1 \(line 1\)"):
        read_manifest(p)


# ---------------------------------------------------------------------------------------------- images
def test_16bit_png_is_scaled_not_clipped(tmp_path):
    from promptprism.embed.base import to_rgb

    grad = np.tile(np.linspace(0, 65535, 256).astype(np.uint16), (4, 1))
    Image.fromarray(grad).save(tmp_path / "g16.png")
    with Image.open(tmp_path / "g16.png") as im:
        assert im.mode.startswith("I")  # read back as 16-bit (or 32-bit) greyscale
    rgb = np.asarray(to_rgb(tmp_path / "g16.png"))[..., 0].astype(float)
    assert (rgb == 255).mean() < 0.01  # Pillow's convert("RGB") makes 99.6 % of this white
    np.testing.assert_allclose(rgb[0], np.rint(np.linspace(0, 255, 256)), atol=1)


def test_alpha_and_palette_transparency_composite_onto_white(tmp_path):
    from promptprism.embed.base import to_rgb

    rgba = np.zeros((2, 2, 4), dtype=np.uint8)
    rgba[..., 0] = 200  # red under the alpha
    rgba[0, 0, 3] = 255  # one opaque pixel, three transparent
    Image.fromarray(rgba, "RGBA").save(tmp_path / "a.png")
    out = np.asarray(to_rgb(tmp_path / "a.png"))
    assert tuple(out[0, 0]) == (200, 0, 0) and tuple(out[1, 1]) == (255, 255, 255)
    pal = Image.new("P", (2, 2), 0)
    pal.putpalette([10, 20, 30, 40, 50, 60] + [0] * 762)
    pal.putpixel((1, 1), 1)
    pal.save(tmp_path / "p.png", transparency=1)
    out = np.asarray(to_rgb(tmp_path / "p.png"))
    assert tuple(out[0, 0]) == (10, 20, 30) and tuple(out[1, 1]) == (255, 255, 255)


def test_pixel_limit_is_an_input_error_in_every_reader(tmp_path, monkeypatch):
    from promptprism.data.images import load_images
    from promptprism.embed.base import to_rgb

    (tmp_path / "imgs").mkdir()
    Image.new("RGB", (20, 10)).save(tmp_path / "imgs" / "big.png")
    (tmp_path / "m.jsonl").write_text(json.dumps({"prompt": "p", "image": "imgs/big.png"}) + "\n")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 150)  # over the limit: 200 pixels (bomb error: > 300)
    with pytest.raises(InputError, match=r"big.png.*20 x 10 = 200 pixels, over the limit of 150 pixels"):
        read_manifest(tmp_path / "m.jsonl")
    with pytest.raises(InputError, match=r"big.png.*200 pixels, over the limit of 150"):
        to_rgb(tmp_path / "imgs" / "big.png")
    with pytest.raises(InputError, match=r"big.png.*over the limit of 150"):
        load_images(tmp_path / "imgs")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 50)  # Pillow's DecompressionBombError (> 2x the limit)
    with pytest.raises(InputError, match=r"big.png.*200 pixels, over the limit of 50"):
        to_rgb(tmp_path / "imgs" / "big.png")
    with pytest.raises(InputError, match=r"big.png.*over the limit of 50"):
        read_manifest(tmp_path / "m.jsonl")


# ------------------------------------------------------------------------------------ tiny embeddings
def test_tiny_embeddings_are_not_called_all_zeros():
    pe = np.full((3, 4), 1e-300)
    ps = PairedSet(pe, np.ones((3, 4)))
    with pytest.raises(InputError, match=r"row 0 \(0-based\) is not zero but too small .*1e-300"):
        ps.check_nonzero("cosine")
    pe[1] = 0.0
    pe[0] = 1.0
    with pytest.raises(InputError, match=r"row 1 \(0-based\) is all zeros"):
        PairedSet(pe, np.ones((3, 4))).check_nonzero("cosine")


# ---------------------------------------------------------------------------------------------- reprs
def test_paired_set_repr_is_one_line_without_arrays():
    ps = PairedSet(np.zeros((1000, 384)), np.ones((1000, 512)), prompts=[f"p{i % 7}" for i in range(1000)],
                   name="sdxl")
    text = repr(ps)
    assert "\n" not in text and len(text) < 150
    assert "n=1000" in text and "384" in text and "512" in text and "7 prompts" in text
    assert "array" not in text and "p3" not in text


def test_saving_values_beyond_float32_is_refused_not_written_as_inf(tmp_path):
    from promptprism.data.save import save_paired

    rng = np.random.default_rng(0)
    prompts = rng.standard_normal((5, 3))
    prompts[2, 1] = 1e300  # float64 holds it; the float32 .npz layout would store inf
    paired = PairedSet(prompts, rng.standard_normal((5, 3)), name="huge")
    with pytest.raises(InputError, match=r"prompt_embeddings: row 2 \(0-based\), column 1 is 1e\+300, beyond "
                                         r"float32's range"):
        save_paired(tmp_path / "out.npz", paired)
    assert not (tmp_path / "out.npz").exists()
    prompts[2, 1] = 3e38  # the largest float32 values are kept exactly
    save_paired(tmp_path / "ok.npz", PairedSet(prompts, rng.standard_normal((5, 3)), name="ok"))
    assert np.isfinite(np.load(tmp_path / "ok.npz")["prompt_embeddings"]).all()
