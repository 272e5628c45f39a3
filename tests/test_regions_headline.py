"""Regions: the headline CMS does not depend on --bootstrap, and no CMS-type number leaves [-1, 1].

The user reports behind these tests: turning on --bootstrap changed the CMS that the table and
``promptprism check`` reported (eq. 4 without, the U form with); and generated images that copy the real
ones printed a cosine similarity of 1.455 with an interval entirely above 1. Brute force from SPEC's
definitions: eq. 4 from explicit Gram matrices, the U form M_xy / sqrt(U_xx U_yy) from explicit pair means.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from promptprism import load_result
from promptprism.cli import main
from promptprism.report import render_report


def gram(a, b, gamma):
    """exp(-gamma |a_i - b_j|^2) by direct differences (rows are images, any trailing shape)."""
    a, b = a.reshape(len(a), -1), b.reshape(len(b), -1)
    return np.exp(-gamma * ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))


def eq4(x, y, gamma):
    """SPEC eq. 4: sum K_xy / sqrt(sum K_xx * sum K_yy)."""
    return gram(x, y, gamma).sum() / math.sqrt(gram(x, x, gamma).sum() * gram(y, y, gamma).sum())


def u_form(x, y, gamma):
    """mean K_xy / sqrt(mean_{i != j} K_xx * mean_{i != j} K_yy)."""
    kxx, kyy = gram(x, x, gamma), gram(y, y, gamma)
    uxx = (kxx.sum() - len(x)) / (len(x) * (len(x) - 1))
    uyy = (kyy.sum() - len(y)) / (len(y) * (len(y) - 1))
    return gram(x, y, gamma).mean() / math.sqrt(uxx * uyy)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The issue's data: real images with a trend in the top half, an unrelated set and a copy of the real
    images; regions run once without and once with --bootstrap (same seed)."""
    tmp = tmp_path_factory.mktemp("regions_headline")
    r = np.random.default_rng(0)
    real = r.random((60, 8, 8))
    real[:, :4, :] += np.linspace(0, 1, 60)[:, None, None]
    sets = {"gen1": r.random((50, 8, 8)), "gen_copy": real[:50].copy()}
    np.save(tmp / "real.npy", real)
    for name, arr in sets.items():
        np.save(tmp / f"{name}.npy", arr)
    out = {}
    for run, extra in (("plain", []), ("boot", ["--bootstrap", "20"])):
        code = main(["regions", "--real", str(tmp / "real.npy"), "--generated", str(tmp / "gen1.npy"),
                     str(tmp / "gen_copy.npy"), "--regions", "2", "--seed", "0", "--out", str(tmp / run),
                     "--no-report", "-q", *extra])
        assert code == 0
        out[run] = tmp / run
    return real, sets, out


def _pixels(images, labels, region):
    return images.reshape(len(images), -1)[:, labels == region]


def test_headline_cms_is_eq4_with_and_without_bootstrap(runs):
    real, sets, out = runs
    plain, boot = load_result(out["plain"]), load_result(out["boot"])
    assert plain.intervals == [] and len(boot.intervals) == 2
    g, labels = plain.gamma, np.asarray(plain.regions)
    for k, name in enumerate(plain.names):
        x, y = real, sets[name]
        truth = {"cms": eq4(x, y, g),
                 "region_0": eq4(_pixels(x, labels, 0), _pixels(y, labels, 0), g),
                 "region_1": eq4(_pixels(x, labels, 1), _pixels(y, labels, 1), g)}
        truth["product_cms"] = truth["region_0"] * truth["region_1"]
        rows = [res.table()[k] for res in (plain, boot)]
        for key, want in truth.items():
            assert rows[0][key] == rows[1][key] == pytest.approx(want, rel=1e-10), (name, key)
        assert plain.cms[k] == boot.cms[k] == rows[1]["cms"]  # result.json's cms is the table's
        assert plain.headline()["cms"][k] == boot.headline()["cms"][k]
    # the U form stays beside it, named as such, and is a different number on these sets
    assert boot.table()[0]["cms_uform"] == pytest.approx(u_form(real, sets["gen1"], g), rel=1e-10)
    assert abs(boot.table()[0]["cms_uform"] - boot.table()[0]["cms"]) > 0.05
    assert "cms_uform" not in plain.table()[0]
    assert plain.table()[0]["cms"] == json.loads((out["plain"] / "result.json").read_text())["cms"][0]


def test_check_gives_the_same_verdict_with_and_without_bootstrap(runs, capsys):
    _, _, out = runs
    verdicts = []
    for run in ("plain", "boot"):
        capsys.readouterr()
        code = main(["check", str(out[run]), "--fail-on", "cms<0.4"])
        lines = [ln for ln in capsys.readouterr().out.splitlines() if "cms<0.4" in ln]
        verdicts.append((code, lines))
    assert verdicts[0] == verdicts[1]
    assert verdicts[0][0] == 1 and any(ln.startswith("FAIL") and "gen1" in ln for ln in verdicts[0][1])


def _cosine_values(record: dict) -> list[float]:
    """Every CMS-type number of a result.json (mmd2 and the rest left out)."""
    vals = [*record["cms"], *record["product_cms"], *(v for row in record["region_cms"] for v in row)]
    for iv in record["intervals"]:
        for b in [iv["cms"], iv["product_cms"], *iv["region_cms"]]:
            vals += [b["low"], b["high"], b["debiased"]]
    return vals


def test_copied_images_keep_every_cosine_in_range_with_a_note(runs, capsys):
    real, sets, out = runs
    g = load_result(out["boot"]).gamma
    raw = u_form(real, sets["gen_copy"], g)
    assert raw > 1.2  # the unclipped U form of the copy: the case of the report (1.4553)
    for run in ("plain", "boot"):
        record = json.loads((out[run] / "result.json").read_text())
        vals = _cosine_values(record)
        assert vals and all(-1.0 <= v <= 1.0 for v in vals), run
        header, *lines = (out[run] / "curves.csv").read_text().splitlines()
        for line in lines:
            row = dict(zip(header.split(","), line.split(","), strict=True))
            assert all(-1.0 <= float(v) <= 1.0 for k, v in row.items() if k not in ("set", "mmd2")), run
    boot = json.loads((out["boot"] / "result.json").read_text())
    copy = boot["intervals"][1]
    assert copy["cms"] == {"low": 1.0, "high": 1.0, "debiased": 1.0}  # intersected with [-1, 1]
    notes = [n for n in boot["notes"] if n.startswith("gen_copy:")]
    assert len(notes) == 1 and f"whole image {raw:.4f}" in notes[0]
    assert "repeat (copy) real ones" in notes[0] and "entirely above 1" in notes[0]
    assert json.loads((out["plain"] / "result.json").read_text())["notes"] == []
    # the printed table: no number above 1, the note printed
    capsys.readouterr()
    main(["regions", "--real", str(out["boot"].parent / "real.npy"), "--generated",
          str(out["boot"].parent / "gen_copy.npy"), "--regions", "2", "--bootstrap", "20",
          "--out", str(out["boot"].parent / "again"), "--no-report"])
    printed = capsys.readouterr().out
    table = printed.split("CMS: eq. 4")[0]
    assert [float(v) for v in re.findall(r"\d+\.\d{4}", table)]
    assert all(float(v) <= 1.0 for v in re.findall(r"\d+\.\d{4}", table))
    assert "! gen_copy: the U-form CMS exceeded 1 before clipping" in printed


def test_report_page_labels_the_u_form_and_shows_the_note(runs):
    _, _, out = runs
    doc = render_report(load_result(out["boot"]))
    assert "CMS (eq. 4)" in doc and "U-form" in doc
    assert "the U-form CMS exceeded 1 before clipping" in doc
    assert "CMS (U-form)" not in doc
