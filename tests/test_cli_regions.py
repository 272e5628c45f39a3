"""``promptprism regions`` end to end: inputs in every format, result.json, and each bad input -> exit 2."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from _cli_run import listed
from backends import HAS_TORCH
from promptprism.cli import main

PIL = pytest.importorskip("PIL.Image")


def write_png_folder(folder, images):
    folder.mkdir(parents=True, exist_ok=True)
    for i, img in enumerate(images):
        arr = np.clip(np.round(img * 255), 0, 255).astype(np.uint8)
        PIL.fromarray(arr.squeeze(-1) if arr.ndim == 3 and arr.shape[-1] == 1 else arr).save(
            folder / f"img_{i:03d}.png")
    return folder


@pytest.fixture
def images():
    rng = np.random.default_rng(0)
    base = rng.random((40, 6, 6))
    base[:, :, 3:] = 0.5 * base[:, :, :3] + 0.5 * rng.random((40, 6, 3))
    return base


def run(argv, capsys):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_regions_cli_success_all_formats(tmp_path, images, capsys):
    np.save(tmp_path / "real.npy", images)
    np.save(tmp_path / "gen_a.npy", images[:20])
    noisy = np.clip(images[20:] + np.random.default_rng(1).normal(0, 0.3, (20, 6, 6)), 0, 1)
    folder = write_png_folder(tmp_path / "gen_b", noisy)
    (tmp_path / "m.csv").write_text("image\n" + "\n".join(f"gen_b/img_{i:03d}.png" for i in range(20)) + "\n")
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps({"image": f"gen_b/img_{i:03d}.png"})
                                                for i in range(20)) + "\n")
    out = tmp_path / "out"
    code, stdout, err = run(["regions", "--real", str(tmp_path / "real.npy"), "--generated",
                             str(tmp_path / "gen_a.npy"), str(folder), str(tmp_path / "m.csv"),
                             str(tmp_path / "m.jsonl"), "--regions", "3", "--seed", "5", "--out", str(out)],
                            capsys)
    assert code == 0, err
    r = json.loads((out / "result.json").read_text())
    assert r["kind"] == "regions" and r["seed"] == 5
    assert r["names"] == ["gen_a", "gen_b", "m.csv", "m.jsonl"]  # same stems told apart (issue 40)
    assert len(r["cms"]) == len(r["product_cms"]) == 4
    assert len(r["region_cms"]) == 4 and all(len(row) == 3 for row in r["region_cms"])
    assert len(r["regions"]) == 36 and sorted(set(r["regions"])) == [0, 1, 2]
    assert np.asarray(r["cka_matrix"]).shape == (36, 36)
    assert all(math.isfinite(v) for v in r["cms"] + r["product_cms"])
    # folder and manifests read the same PNGs: identical numbers; the noisy set scores lower
    assert r["cms"][1] == r["cms"][2] == r["cms"][3]
    assert r["cms"][1] < r["cms"][0]
    assert "region 0" in stdout and "gen_b" in stdout and "product" in stdout
    assert (out / "curves.csv").exists() and (out / "cka_matrix.npy").exists()


def test_regions_cli_colour_folder_and_constant_pixels(tmp_path, capsys):
    rng = np.random.default_rng(2)
    real = rng.random((30, 5, 5, 3))
    real[:, 0, 0, :] = 0.2  # a constant pixel: handled, never NaN
    real[:, 4, :, :] = 0.0  # a constant row
    write_png_folder(tmp_path / "real", real)
    write_png_folder(tmp_path / "gen", real[:15])
    out = tmp_path / "out"
    args = ["regions", "--real", str(tmp_path / "real"), "--generated", str(tmp_path / "gen"),
            "--regions", "2", "--out", str(out), "--quiet", "--precision", "float32"]
    try:
        import matplotlib  # noqa: F401

        args.append("--plot")
    except ImportError:
        pass
    code, _, err = run(args, capsys)
    assert code == 0, err
    if "--plot" in args:
        assert (out / "curves.png").stat().st_size > 0 and (out / "regions.png").stat().st_size > 0
    r = json.loads((out / "result.json").read_text())
    assert r["image_shape"] == [5, 5, 3]
    assert 0 in r["constant_pixels"] and 20 in r["constant_pixels"]
    flat = [v for row in r["cka_matrix"] for v in row]
    assert all(v is not None and math.isfinite(v) for v in flat)
    assert all(math.isfinite(v) for v in r["region_cms"][0])


def bad(tmp_path, argv, capsys, *needles):
    out = tmp_path / "out"
    code, _, err = run(argv + ["--out", str(out)], capsys)
    assert code == 2, err
    text = " ".join(err.split())
    for needle in needles:
        assert needle in text, text
    assert not (out / "result.json").exists()
    assert not out.exists() or not any(out.iterdir())


def test_bad_different_sizes(tmp_path, images, capsys):
    np.save(tmp_path / "real.npy", images)
    np.save(tmp_path / "gen.npy", np.zeros((10, 7, 6)))
    bad(tmp_path, ["regions", "--real", str(tmp_path / "real.npy"), "--generated", str(tmp_path / "gen.npy")],
        capsys, "gen.npy", "same size")


def test_bad_different_channels(tmp_path, images, capsys):
    np.save(tmp_path / "real.npy", images)
    np.save(tmp_path / "gen.npy", np.zeros((10, 6, 6, 3)))
    bad(tmp_path, ["regions", "--real", str(tmp_path / "real.npy"), "--generated", str(tmp_path / "gen.npy")],
        capsys, "gen.npy", "3 channel(s)", "real images have 1")


def test_bad_folder_with_mixed_sizes_names_the_file(tmp_path, images, capsys):
    folder = write_png_folder(tmp_path / "gen", images[:5])
    PIL.fromarray(np.zeros((4, 4), np.uint8)).save(folder / "img_zzz.png")
    np.save(tmp_path / "real.npy", images)
    bad(tmp_path, ["regions", "--real", str(tmp_path / "real.npy"), "--generated", str(folder)],
        capsys, "img_zzz.png", "differs")


def test_bad_fewer_images_than_a_block(tmp_path, images, capsys):
    np.save(tmp_path / "real.npy", images)
    np.save(tmp_path / "gen.npy", images[:10])
    bad(tmp_path, ["regions", "--real", str(tmp_path / "real.npy"), "--generated", str(tmp_path / "gen.npy"),
                   "--block-size", "16"], capsys, "fewer images than one block", "16")
    bad(tmp_path, ["regions", "--real", str(tmp_path / "real.npy"), "--generated", str(tmp_path / "gen.npy"),
                   "--cka-block-size", "64"], capsys, "fewer images than one CKA block")
    bad(tmp_path, ["regions", "--real", str(tmp_path / "real.npy"), "--generated", str(tmp_path / "gen.npy"),
                   "--cka-images", "1"], capsys, "--cka-images must be >= 2")


def test_bad_all_pixels_constant(tmp_path, capsys):
    np.save(tmp_path / "real.npy", np.full((20, 4, 4), 0.3))
    np.save(tmp_path / "gen.npy", np.full((20, 4, 4), 0.3))
    bad(tmp_path, ["regions", "--real", str(tmp_path / "real.npy"), "--generated", str(tmp_path / "gen.npy"),
                   "--regions", "2"], capsys, "real images")


def test_bad_more_regions_than_pixels(tmp_path, images, capsys):
    np.save(tmp_path / "real.npy", images)
    bad(tmp_path, ["regions", "--real", str(tmp_path / "real.npy"), "--generated", str(tmp_path / "real.npy"),
                   "--regions", "37"], capsys, "--regions = 37", "36 pixels")


def test_bad_misc_inputs(tmp_path, images, capsys):
    np.save(tmp_path / "real.npy", images)
    real = str(tmp_path / "real.npy")
    bad(tmp_path, ["regions", "--real", real, "--generated", str(tmp_path / "nope.npy")], capsys,
        "nope.npy", "no such file")
    np.save(tmp_path / "flat.npy", np.zeros((10, 36)))
    bad(tmp_path, ["regions", "--real", real, "--generated", str(tmp_path / "flat.npy")], capsys,
        "flat.npy", "(n, H, W)")
    (tmp_path / "m.csv").write_text("path\nx.png\n")
    bad(tmp_path, ["regions", "--real", real, "--generated", str(tmp_path / "m.csv")], capsys,
        "m.csv", "'image' column")
    bad(tmp_path, ["regions", "--real", real, "--generated", real, "--regions", "three"], capsys,
        "--regions")
    bad(tmp_path, ["regions", "--real", real, "--generated", real, "--gamma", "-1"], capsys, "gamma")
    bad(tmp_path, ["regions", "--real", real, "--generated", real, "--precision", "half"], capsys,
        "precision")
    bad(tmp_path, ["regions", "--real", real, "--generated", real, "--bogus", "1"], capsys, "--bogus")
    nan = images.copy()
    nan[3, 1, 2] = np.nan
    np.save(tmp_path / "nan.npy", nan)
    bad(tmp_path, ["regions", "--real", str(tmp_path / "nan.npy"), "--generated", real], capsys,
        "nan.npy", "image 3")


def test_bad_seed_message_and_result_json_folder_writes_nothing(tmp_path, images, capsys):
    np.save(tmp_path / "real.npy", images)
    real = str(tmp_path / "real.npy")
    code, _, err = run(["regions", "--real", real, "--generated", real, "--seed", "abc", "--out",
                        str(tmp_path / "o1")], capsys)
    assert code == 2 and "--seed must be an integer, got 'abc'" in err
    out = tmp_path / "o2"
    (out / "result.json").mkdir(parents=True)  # a folder where result.json goes
    code, _, err = run(["regions", "--real", real, "--generated", real, "--regions", "2", "--out", str(out),
                        "--no-report"], capsys)
    assert code == 2 and "result.json is a folder" in err and "Traceback" not in err
    assert listed(out) == ["result.json"]  # no half-written cka_matrix/curves


def test_regions_reads_a_manifest_through_columns(tmp_path, images, capsys):
    """A manifest whose image paths sit in another column: refused with a pointer, read with --columns, and
    the numbers equal those of the same images given as .npy arrays."""
    sets = {"real": images, "gen": images ** 3}
    for name, arr in sets.items():
        folder = write_png_folder(tmp_path / name, arr)
        rows = [json.dumps({"picture": f"img_{i:03d}.png"}) for i in range(len(arr))]
        (folder / "m.jsonl").write_text("\n".join(rows) + "\n")
        np.save(tmp_path / f"{name}.npy", np.round(np.clip(arr, 0, 1) * 255) / 255)
    common = ["--regions", "2", "--no-report", "--seed", "3"]
    manifests = ["--real", str(tmp_path / "real" / "m.jsonl"),
                 "--generated", str(tmp_path / "gen" / "m.jsonl")]
    code, _, err = run(["regions", *manifests, "--out", str(tmp_path / "a"), *common], capsys)
    assert code == 2 and "no 'image' column" in err and "columns" in err
    code, _, err = run(["regions", *manifests, "--out", str(tmp_path / "b"), "--columns", "image=picture",
                        *common], capsys)
    assert code == 0, err
    code, _, err = run(["regions", "--real", str(tmp_path / "real.npy"), "--generated",
                        str(tmp_path / "gen.npy"), "--out", str(tmp_path / "c"), *common], capsys)
    assert code == 0, err
    b = json.loads((tmp_path / "b" / "result.json").read_text())
    c = json.loads((tmp_path / "c" / "result.json").read_text())
    assert b["cms"][0] < 0.999  # a real difference, not two identical sets
    np.testing.assert_allclose(b["cms"], c["cms"], atol=1e-9)
    np.testing.assert_allclose(b["region_cms"], c["region_cms"], atol=1e-9)


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_device_flag_runs_pixel_cka_and_cms_on_torch(tmp_path, images, capsys):
    np.save(tmp_path / "real.npy", images)
    np.save(tmp_path / "gen.npy", images[:30] ** 2)
    files = ["--real", str(tmp_path / "real.npy"), "-g", str(tmp_path / "gen.npy")]
    results = {}
    for device in ("cpu", "torch"):
        code, _, err = run(["regions", *files, "-o", str(tmp_path / device), "--regions", "2",
                            "--device", device, "--no-report"], capsys)
        assert code == 0, err
        results[device] = json.loads((tmp_path / device / "result.json").read_text())
    assert results["torch"]["config"]["device"] == "torch:cpu"
    assert results["torch"]["regions"] == results["cpu"]["regions"]
    assert results["torch"]["cms"] == pytest.approx(results["cpu"]["cms"], rel=1e-10)
    code, _, err = run(["regions", *files, "-o", str(tmp_path / "bad"), "--device", "gpu"], capsys)
    assert code == 2 and "--device" in err


@pytest.mark.slow  # (about a second: out of the quick loop)
def test_the_table_bolds_every_tied_lowest_region_as_the_report_does(tmp_path, images, capsys, monkeypatch):
    """A generated set equal to the real one: every region's CMS is 1, all tied; the terminal table bolds
    each (it bolded region 0 alone, where the report's table and verdict name the tie), and a clearly
    lowest region alone."""
    from rich.table import Table

    from promptprism.methods.regions.result import lowest_regions

    rows = []
    monkeypatch.setattr(Table, "add_row", lambda self, *cells, **kw: rows.append(cells))
    np.save(tmp_path / "real.npy", images)
    worse = images.copy()
    worse[:, :, 3:] = np.random.default_rng(2).random((40, 6, 3))  # the right half's structure lost
    np.save(tmp_path / "same.npy", images)
    np.save(tmp_path / "worse.npy", worse)
    code, _, err = run(["regions", "--real", str(tmp_path / "real.npy"), "--generated",
                        str(tmp_path / "same.npy"), str(tmp_path / "worse.npy"), "--regions", "2",
                        "--seed", "0", "--out", str(tmp_path / "out")], capsys)
    assert code == 0, err
    r = json.loads((tmp_path / "out" / "result.json").read_text())
    bold = {row[0]: [k for k, cell in enumerate(row[3:]) if str(cell).startswith("[bold]")] for row in rows}
    for name, cms in zip(r["names"], r["region_cms"], strict=True):
        assert bold[name] == sorted(lowest_regions(cms)), (name, cms, bold)
    assert len(bold["same"]) == 2 and len(bold["worse"]) == 1
