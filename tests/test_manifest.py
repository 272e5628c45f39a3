"""Manifests (JSONL, CSV, Parquet), image folders paired by explicit rules, and every bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from _embed_helpers import (  # noqa: F401 - fixtures
    fresh_memory_cache_fixture,
    hash_encoder_fixture,
    isolated_cache_fixture,
    run_cli,
)
from promptprism.data import load_input, read_image_folder, read_input, read_manifest
from promptprism.errors import InputError

Image = pytest.importorskip("PIL.Image")  # manifests of images need Pillow (the [embed] extra)

ROWS = [
    {"id": "a", "prompt": "What is the capital of Peru?", "output": "Lima.", "temperature": 0.7},
    {"id": "b", "prompt": "What is the capital of Kenya?", "output": "Nairobi.", "temperature": 0.7},
    {"id": "c", "prompt": "What is the capital of Peru?", "output": "The capital of Peru is Lima.",
     "temperature": 1.0},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path: Path, rows: list[dict], fields: list[str] | None = None) -> Path:
    fields = fields or list(rows[0])
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return path


def write_parquet(path: Path, rows: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def save_image(path: Path, color: tuple[int, int, int], mode: str = "RGB", size: int = 12) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (size, size), color).convert(mode).save(path)
    return path


# ------------------------------------------------------------------------------------------------ formats
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_formats_read_the_same_rows(tmp_path, fmt):
    writer = {"jsonl": write_jsonl, "csv": write_csv, "parquet": write_parquet}[fmt]
    m = read_manifest(writer(tmp_path / f"runs.{fmt}", ROWS))
    assert len(m) == 3 and m.prompt_kind == "text" and m.output_kind == "text"
    assert [r.prompt for r in m.rows] == [r["prompt"] for r in ROWS]
    assert [r.output for r in m.rows] == [r["output"] for r in ROWS]
    assert [r.id for r in m.rows] == ["a", "b", "c"]
    assert float(m.rows[2].meta["temperature"]) == 1.0  # extra columns kept as metadata


def test_image_manifest_paths_are_relative_to_the_manifest(tmp_path):
    sub = tmp_path / "run"
    save_image(sub / "img" / "x.png", (255, 0, 0))
    m = read_manifest(write_jsonl(sub / "m.jsonl", [{"prompt": "red", "image": "img/x.png"}]))
    assert m.output_kind == "image" and m.rows[0].image == sub / "img" / "x.png"


def test_captioning_direction(tmp_path):
    save_image(tmp_path / "p.png", (0, 0, 255))
    m = read_manifest(write_csv(tmp_path / "cap.csv", [{"prompt_image": "p.png", "output": "a blue square"}]))
    assert m.prompt_kind == "image" and m.output_kind == "text"
    ps = load_input(tmp_path / "cap.csv", text_model="hash", image_model="hash", cache=tmp_path / "c")
    assert ps.prompts == [str(tmp_path / "p.png")] and ps.outputs == ["a blue square"]


def test_manifest_embeds_through_named_encoders(tmp_path, hash_encoder):
    loaded = read_input(write_jsonl(tmp_path / "m.jsonl", ROWS), text_model="hash", cache=tmp_path / "c")
    ps = loaded.paired
    assert ps.prompt_embeddings.shape == (3, 8) and loaded.ids == ["a", "b", "c"]
    # the repeated prompt is embedded once: 2 unique prompts + 3 unique outputs
    assert hash_encoder.items == 5
    np.testing.assert_array_equal(ps.prompt_embeddings[0], ps.prompt_embeddings[2])


def test_parquet_with_embedding_columns_is_read_as_embeddings(tmp_path, hash_encoder):
    rows = [{"prompt": "p1", "output": "o1", "prompt_embedding": [1.0, 0.0],
             "output_embedding": [0.0, 1.0, 2.0]},
            {"prompt": "p2", "output": "o2", "prompt_embedding": [0.5, 0.5],
             "output_embedding": [1.0, 1.0, 0.0]}]
    loaded = read_input(write_parquet(tmp_path / "e.parquet", rows), text_model="hash")
    assert loaded.kind == "embeddings" and hash_encoder.calls == 0
    assert loaded.paired.output_embeddings.shape == (2, 3) and loaded.paired.prompts == ["p1", "p2"]


def test_parquet_embeddings_refuse_null_and_non_text_prompts(tmp_path, hash_encoder):
    """A null prompt was read as the prompt "None" and integer prompts as their digits; the .npz and .jsonl
    readers refuse both: so does Parquet, naming the column and the row."""
    from promptprism.errors import InputError

    def rows(prompts):
        return [{"prompt": p, "output": f"o{i}", "prompt_embedding": [1.0, float(i)],
                 "output_embedding": [0.0, 1.0, float(i)]} for i, p in enumerate(prompts)]
    with pytest.raises(InputError, match=r"column 'prompt', row 1 \(0-based\) is null"):
        read_input(write_parquet(tmp_path / "n.parquet", rows(["p0", None, "p2"])))
    with pytest.raises(InputError, match="column 'prompt' must hold text, got int64"):
        read_input(write_parquet(tmp_path / "i.parquet", rows([0, 1, 2])))


def test_npz_still_loads(tmp_path):
    np.savez(tmp_path / "s.npz", prompt_embeddings=np.eye(3), output_embeddings=np.ones((3, 2)))
    assert read_input(tmp_path / "s.npz").kind == "embeddings"


# -------------------------------------------------------------------------------------- folder pairing
COLORS = {"sun": (250, 200, 0), "sea": (0, 80, 200), "leaf": (30, 160, 40)}
PROMPTS = [{"id": "sun", "prompt": "the sun"}, {"id": "sea", "prompt": "the sea"},
           {"id": "leaf", "prompt": "a leaf"}]


def _colour_of(path: str) -> tuple:
    with Image.open(path) as im:
        return im.convert("RGB").getpixel((0, 0))


def test_folder_pairs_by_stem_suffix_and_subfolder_not_listing_order(tmp_path):
    folder = tmp_path / "imgs"
    # names chosen so that alphabetical/listing order differs from the prompts-file order
    save_image(folder / "sun.png", COLORS["sun"])
    save_image(folder / "sea_1.png", COLORS["sea"])
    save_image(folder / "sea_0.png", COLORS["sea"])
    save_image(folder / "leaf" / "z.png", COLORS["leaf"])
    write_jsonl(folder / "prompts.jsonl", PROMPTS)
    m = read_image_folder(folder)
    assert [r.id for r in m.rows] == ["sun", "sea", "sea", "leaf"]  # prompts-file order
    assert [r.image.name for r in m.rows] == ["sun.png", "sea_0.png", "sea_1.png", "z.png"]
    for r in m.rows:  # every image is paired with the prompt it was drawn for
        assert _colour_of(r.image) == COLORS[r.id]
        assert r.prompt == next(p["prompt"] for p in PROMPTS if p["id"] == r.id)


def test_folder_with_mapping_column_and_external_prompts_file(tmp_path):
    folder = tmp_path / "imgs"
    save_image(folder / "001.png", COLORS["sea"])
    save_image(folder / "002.png", COLORS["sun"])
    mapping = write_csv(tmp_path / "map.csv", [{"prompt": "the sun", "image": "002.png"},
                                                {"prompt": "the sea", "image": "001.png"}])
    m = read_image_folder(folder, mapping)
    assert [(r.prompt, r.image.name) for r in m.rows] == [("the sun", "002.png"), ("the sea", "001.png")]


def test_split_runs_on_image_folders(tmp_path, capsys):
    for name in ("a", "b"):
        for i in range(3):
            for pid, col in COLORS.items():
                save_image(tmp_path / name / f"{pid}_{i}.png", tuple(min(255, c + 10 * i) for c in col))
    write_jsonl(tmp_path / "prompts.jsonl", PROMPTS)
    rc, _, err = run_cli(capsys, ["split", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "res",
                                  "--prompts", tmp_path / "prompts.jsonl", "--text-model", "hash",
                                  "--image-model", "pixels:4", "--cache", tmp_path / "c", "-q"])
    assert rc == 0, err
    result = json.loads((tmp_path / "res" / "result.json").read_text())
    assert result["n_test"] == 9


# ----------------------------------------------------------------------------------------- bad inputs
def _expect_exit2(capsys, tmp_path, input_path, *must_contain, extra=()):
    out = tmp_path / "out.npz"
    rc, _, err = run_cli(capsys, ["embed", input_path, "--out", out, "--text-model", "hash",
                                  "--image-model", "pixels", "--cache", tmp_path / "c", "-q", *extra])
    assert rc == 2, err
    assert err.startswith("error:") and err.count("error:") == 1
    for s in must_contain:
        assert s in err, (s, err)
    assert not out.exists()
    return err


def test_missing_columns(tmp_path, capsys):
    p = write_jsonl(tmp_path / "m.jsonl", [{"question": "q", "output": "o"}])
    _expect_exit2(capsys, tmp_path, p, str(p), "no prompt column", "'question'")
    p = write_csv(tmp_path / "m.csv", [{"prompt": "q", "answer": "o"}])
    _expect_exit2(capsys, tmp_path, p, str(p), "no output column", "'output'", "'image'")


def test_empty_prompt_names_the_row(tmp_path, capsys):
    rows = [{"prompt": "fine", "output": "x"}, {"prompt": "fine too", "output": "y"},
            {"prompt": "  ", "output": "z"}]
    p = write_jsonl(tmp_path / "m.jsonl", rows)
    _expect_exit2(capsys, tmp_path, p, f"{p}: row 3 (line 3)", "'prompt' is empty")
    p = write_csv(tmp_path / "m.csv", [{"prompt": "ok", "output": "x"}, {"prompt": "", "output": "y"}])
    _expect_exit2(capsys, tmp_path, p, f"{p}: row 2 (line 3)", "'prompt' is empty")


def test_missing_image_names_row_and_path(tmp_path, capsys):
    save_image(tmp_path / "ok.png", (1, 2, 3))
    p = write_jsonl(tmp_path / "m.jsonl", [{"prompt": "a", "image": "ok.png"},
                                           {"prompt": "b", "image": "gone.png"}])
    _expect_exit2(capsys, tmp_path, p, "row 2", str(tmp_path / "gone.png"), "does not exist")


def test_corrupt_images_name_row_and_path(tmp_path, capsys):
    save_image(tmp_path / "ok.png", (1, 2, 3), size=64)
    (tmp_path / "junk.png").write_bytes(b"this is not a png")
    p = write_jsonl(tmp_path / "m.jsonl", [{"prompt": "a", "image": "ok.png"},
                                           {"prompt": "b", "image": "junk.png"}])
    _expect_exit2(capsys, tmp_path, p, "row 2", str(tmp_path / "junk.png"), "not a readable image")
    # a truncated file has a valid header: it fails when decoded, still naming the row and the path
    data = (tmp_path / "ok.png").read_bytes()
    noisy = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    Image.fromarray(noisy).save(tmp_path / "full.png")
    data = (tmp_path / "full.png").read_bytes()
    (tmp_path / "cut.png").write_bytes(data[: len(data) // 2])
    p = write_jsonl(tmp_path / "t.jsonl", [{"prompt": "a", "image": "ok.png"},
                                           {"prompt": "b", "image": "cut.png"}])
    _expect_exit2(capsys, tmp_path, p, "row 2", str(tmp_path / "cut.png"), "not a readable image")


def test_non_rgb_image_is_converted_with_a_note(tmp_path, capsys):
    save_image(tmp_path / "gray.png", (120, 120, 120), mode="L")
    save_image(tmp_path / "rgba.png", (10, 20, 30), mode="RGBA")
    p = write_jsonl(tmp_path / "m.jsonl", [{"prompt": "a", "image": "gray.png"},
                                           {"prompt": "b", "image": "rgba.png"}])
    out = tmp_path / "e.npz"
    rc, _, err = run_cli(capsys, ["embed", p, "--out", out, "--text-model", "hash", "--image-model",
                                  "pixels:2", "--cache", tmp_path / "c", "-q"])
    assert rc == 0, err
    assert "note:" in err and "mode L; converted to RGB" in err and "mode RGBA" in err and "row 1" in err
    with np.load(out) as z:
        assert z["output_embeddings"].shape == (2, 12)
        np.testing.assert_allclose(z["output_embeddings"][0], 120 / 255, rtol=1e-6)


def test_folder_and_prompts_that_do_not_match(tmp_path, capsys):
    folder = tmp_path / "imgs"
    save_image(folder / "sun.png", COLORS["sun"])
    save_image(folder / "moon.png", COLORS["sea"])
    write_jsonl(folder / "prompts.jsonl", PROMPTS[:1])
    _expect_exit2(capsys, tmp_path, folder, "1 image(s) match no id", "'moon.png'")
    (folder / "moon.png").unlink()
    write_jsonl(folder / "prompts.jsonl", PROMPTS)
    _expect_exit2(capsys, tmp_path, folder, "2 prompt id(s) have no image", "'sea'", "'leaf'")


def test_zero_rows(tmp_path, capsys):
    p = tmp_path / "m.jsonl"
    p.write_text("\n", encoding="utf-8")
    _expect_exit2(capsys, tmp_path, p, str(p), "zero rows")
    p = write_csv(tmp_path / "m.csv", [], fields=["prompt", "output"])
    _expect_exit2(capsys, tmp_path, p, "zero rows")


def test_invalid_json_and_unknown_input(tmp_path, capsys):
    p = tmp_path / "m.jsonl"
    p.write_text('{"prompt": "a", "output": "b"}\n{"prompt": \n', encoding="utf-8")
    _expect_exit2(capsys, tmp_path, p, "row 2 (line 2)", "not valid JSON")
    q = tmp_path / "m.txt"
    q.write_text("x")
    _expect_exit2(capsys, tmp_path, q, "unsupported input")


def test_bad_options_exit_2(tmp_path, capsys):
    p = write_jsonl(tmp_path / "m.jsonl", ROWS)
    _expect_exit2(capsys, tmp_path, p, "--device", extra=["--device", "tpu"])
    _expect_exit2(capsys, tmp_path, p, "--batch-size", extra=["--batch-size", "0"])
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        _expect_exit2(capsys, tmp_path, p, "no CUDA device", extra=["--device", "cuda"])
    out = tmp_path / "o.npz"
    rc, _, err = run_cli(capsys, ["embed", p, "--out", out, "--text-model", "no-such-model", "-q"])
    assert rc == 2 and "not a known encoder" in err and not out.exists()
    rc, _, err = run_cli(capsys, ["embed", p, "--out", out, "--text-model", "clip", "-q"])
    assert rc == 2 and "--clip-model" in err and not out.exists()


def test_read_manifest_raises_input_error(tmp_path):
    with pytest.raises(InputError, match="no such manifest"):
        read_manifest(tmp_path / "nope.jsonl")
