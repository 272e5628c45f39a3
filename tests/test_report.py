"""Reports: every renderer makes a whole page that embeds its figures and thumbnails and refers to nothing
outside itself; the commands write report.html next to result.json; a 100k-sample report stays light."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import re
import subprocess
import sys
from html import unescape

import numpy as np
import pytest
from PIL import Image

from _report_data import (
    BANK_PROMPTS,
    BIG_N,
    big_report,
    big_run,
    compcon_result,
    digits_run,
    regions_run,
    write_bank,
)
from promptprism import OptionError, PairedSet, PromptSplit, load_result
from promptprism.cli import main
from promptprism.report import render_report, write_report
from promptprism.report.html import el
from promptprism.report.map import MAP_POINTS, mode_scores
from promptprism.report.references import check_self_contained, external_references
from promptprism.results import Result


# ------------------------------------------------------------------------------------------------ checks
def attribute_urls(doc: str) -> list[str]:
    """Every src/href-like attribute value of the parsed page, as a browser reads it (this test's own
    parser, not the library's; escaped text in other attributes or in elements is not a tag)."""
    from html.parser import HTMLParser

    urls: list[str] = []

    class Urls(HTMLParser):
        def handle_starttag(self, tag, attrs):
            urls.extend(v or "" for k, v in attrs if k in ("src", "href", "srcset", "poster", "action"))

    Urls().feed(doc)
    return urls


def assert_self_contained(doc: str) -> None:
    assert doc.startswith("<!DOCTYPE html>") and doc.rstrip().endswith("</html>")
    assert doc.count("<body>") == 1 and doc.count("</body>") == 1
    urls = attribute_urls(doc)
    assert not [u for u in urls if not u.startswith(("data:", "#"))]
    assert not [u for u in urls if any(m in u for m in ("http://", "https://", "//cdn", "file:"))]
    assert not re.search(r"<\s*(link|iframe|object|embed|base)\b", doc, re.I)
    # the only scripts: the page's own JSON data block and its inline script, neither with a src
    assert re.findall(r"<\s*script\b[^>]*>", doc, re.I) in (
        ['<script id="pp-js">'],
        ['<script type="application/json" id="pp-data">', '<script id="pp-js">'],
    )
    assert "@import" not in doc
    assert not re.search(r"url\(\s*['\"]?(?!data:)", " ".join(re.findall(r"<style>(.*?)</style>", doc, re.S)))


def embedded_images(doc: str) -> list[tuple[str, tuple[int, int]]]:
    """(mime, size) of every <img>, each decoded with Pillow (a broken one fails here)."""
    out = []
    for tag in re.findall(r"<img\b[^>]*>", doc):
        m = re.search(r'src="data:(image/(?:png|jpeg));base64,([^"]+)"', tag)
        assert m, f"image without an embedded data URI: {tag[:120]}"
        with Image.open(io.BytesIO(base64.b64decode(m.group(2)))) as im:
            im.load()
            out.append((m.group(1), im.size))
    return out


def n_imgs_with_alt(doc: str, alt: str) -> int:
    """Figures described as ``alt``: raster images (``<img alt>``) and inline SVG charts (``<svg
    aria-label>``, the PromptSplit page's charts)."""
    return len(re.findall(rf'<(?:img\b[^>]*alt|svg\b[^>]*aria-label)="{re.escape(alt)}"', doc))


# ------------------------------------------------------------------------------------------ PromptSplit
@pytest.mark.slow
def test_promptsplit_page_embeds_chart_gallery_and_map():
    result, inputs, images = digits_run()
    doc = render_report(result, inputs=inputs, images=images, map_points=500)
    assert_self_contained(doc)
    imgs = embedded_images(doc)
    assert n_imgs_with_alt(doc, "top positive and negative eigenvalues") == 1
    assert n_imgs_with_alt(doc, "kernel PCA map of the samples coloured by mode") == 1
    # one thumbnail per listed sample: the 8x8 digits themselves, enlarged by the page without smoothing
    expected = sum(min(8, len(m.top_samples)) + min(8, len(m.top_samples_other)) for m in result.modes)
    assert expected > 0 and len(re.findall(r'<img\b[^>]*class="px"', doc)) == expected
    assert sum(1 for mime, size in imgs if size == (8, 8)) == expected
    # the map covers every sample here, with the result's own modes
    total = result.n_test + result.n_reference
    assert f"{total:,} of {total:,} samples (100.0%" in doc and "the result's own modes" in unescape(doc)
    for row in result.prompt_ranking[:10]:
        assert row["prompt"] in doc
    for m in result.modes:
        assert f"eigenvalue {m.eigenvalue:+.4g}" in doc


@pytest.mark.slow
def test_promptsplit_map_states_its_sampling_rate():
    result, inputs, images = digits_run()
    doc = render_report(result, inputs=inputs, images=images, map_points=60)
    total = result.n_test + result.n_reference
    assert f"60 of {total:,} samples ({60 / total:.1%}" in doc
    assert "seeded with 0" in doc and "re-estimated" in doc


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_map_scores_reuse_promptsplit_exactly():
    """The map's scores on all samples are the result's: same eigenvalues, same top-sample |scores|."""
    result, inputs, _ = digits_run()
    t = {s: inputs[s].prompt_embeddings for s in inputs}
    z = {s: inputs[s].output_embeddings for s in inputs}
    scores, labels, vals = mode_scores(result, t, z, 3)
    assert labels == ["+1", "+2", "+3", "−1", "−2", "−3"]
    assert np.allclose(vals, [m.eigenvalue for m in result.modes], rtol=1e-8)
    for j, m in enumerate(result.modes):
        s = m.top_samples[0]
        row = s.index if s.set == "test" else result.n_test + s.index
        assert abs(scores[row, j]) == pytest.approx(abs(s.score), rel=1e-6)


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_promptsplit_page_without_inputs_shows_text_and_says_why_no_map():
    result, _, _ = digits_run()
    doc = render_report(result)
    assert_self_contained(doc)
    assert "The map needs the embeddings" in doc
    assert 'class="px"' not in doc and 'class="snip"' in doc
    assert "colored image of a" in doc  # the demo's outputs as text
    assert not embedded_images(doc)  # no raster figure: the eigenvalue chart is inline SVG
    assert n_imgs_with_alt(doc, "top positive and negative eigenvalues") == 1


@pytest.mark.slow  # (over 0.5 s)
def test_inputs_that_do_not_match_are_refused_with_a_note():
    result, inputs, images = digits_run()
    short = {"test": PairedSet(np.ones((3, 20)), np.ones((3, 192))), "reference": inputs["reference"]}
    doc = render_report(result, inputs=short, images={"test": images["test"][:5]})
    assert "it is not used (the data changed since the run?)" in doc
    assert "images['test'] holds 5 images" in unescape(doc)
    assert "The map needs the embeddings" in doc


def test_image_file_outputs_become_thumbnails_and_text_is_escaped(tmp_path):
    rng = np.random.default_rng(1)
    paths = []
    for i in range(12):
        arr = (rng.random((48, 64, 3)) * 255).astype(np.uint8)
        Image.fromarray(arr).save(tmp_path / f"gen_{i}.png")
        paths.append(f"gen_{i}.png")  # relative to the input's folder
    paths[3] = "gone.png"
    evil = "<script>alert(1)</script> see http://example.com/x.png"
    prompts = [evil if i % 2 else "plain prompt" for i in range(12)]
    t = np.eye(2)[np.arange(12) % 2]
    test = PairedSet(
        t,
        rng.standard_normal((12, 3)),
        prompts=prompts,
        outputs=paths,
        name="gen",
        source=str(tmp_path / "gen.npz"),
    )
    ref = PairedSet(
        t,
        rng.standard_normal((12, 3)) + 1,
        prompts=prompts,
        outputs=["a text output & <b>bold</b>"] * 12,
        name="ref",
    )
    result = PromptSplit(n_modes=2, top_k=12).fit(test, ref)
    doc = render_report(result, inputs={"test": test, "reference": ref}, map_points=24)
    assert_self_contained(doc)
    assert "<script>" not in doc and "&lt;script&gt;" in doc and "&lt;b&gt;bold&lt;/b&gt;" in doc
    jpegs = [size for mime, size in embedded_images(doc) if mime == "image/jpeg"]
    assert jpegs and all(size == (64, 48) for size in jpegs)  # downscaled only above 96 px
    if any(s.output == "gone.png" for m in result.modes for s in m.top_samples + m.top_samples_other):
        assert "image file not found: gone.png" in doc


def test_builder_refuses_external_references():
    with pytest.raises(ValueError, match="only point into itself"):
        el("img", src="https://cdn.example.com/a.png")
    with pytest.raises(ValueError, match="only point into itself"):
        el("a", "x", href="//cdn.example.com/a.css")
    assert el("a", "ok", href="#top")
    for bad in (
        '<link rel="stylesheet" href="https://fonts.example.com/a.css">',
        "<style>body{background:url(http://x/y.png)}</style>",
        "<style>@import 'https://x/y.css';</style>",
        "<img src=http://x/y.png>",
        '<script src="x.js"></script>',
    ):
        assert external_references(bad), bad
        with pytest.raises(ValueError):
            check_self_contained(bad)
    # a URL in escaped text is text, not a resource
    check_self_contained("<p>see src=http://example.com and url(http://x)</p>")


# ------------------------------------------------------------------------------------- Regions, CompCon
@pytest.mark.slow
def test_regions_page_has_map_cka_table_curves_and_images(tmp_path):
    result, inputs = regions_run()
    doc = render_report(result, inputs=inputs)
    assert_self_contained(doc)
    embedded_images(doc)
    for alt in (
        "region map over the pixel grid",
        "CMS curves over the generated sets",
        "CKA matrix ordered by region",
    ):
        assert n_imgs_with_alt(doc, alt) == 1, alt
    assert len(re.findall(r'<img\b[^>]*class="px"', doc)) == 8 * 3  # real + 2 generated sets
    for k, name in enumerate(result.names):
        assert name in doc and f"{result.cms[k]:.4g}" in doc
        for v in result.region_cms[k]:
            assert f"{v:.4g}" in doc
    # image sets read on demand (as on a cluster) give the same page
    from promptprism.data.images import ImageRows

    for name, arr in zip(("real", "e1", "e2"), (inputs["real"], *inputs["generated"]), strict=True):
        np.save(tmp_path / f"{name}.npy", arr)
    rows = {"real": ImageRows.open(tmp_path / "real.npy"),
            "generated": [ImageRows.open(tmp_path / "e1.npy"), ImageRows.open(tmp_path / "e2.npy")]}
    assert render_report(result, inputs=rows) == doc
    # a big result keeps the CKA matrix in cka_matrix.npy only: the page reads it from the folder
    big = dataclasses.replace(result, cka_matrix=None)
    assert "cka_matrix.npy is not beside it" in render_report(big)
    np.save(tmp_path / "cka_matrix.npy", np.asarray(result.cka_matrix))
    assert n_imgs_with_alt(render_report(big, base_dir=tmp_path), "CKA matrix ordered by region") == 1


@pytest.mark.slow  # (over 0.5 s)
def test_compcon_page_ranking_prompts_with_images_and_iterations(tmp_path):
    from promptprism.methods.compcon.image_sources import ImageBank

    bank_a = write_bank(tmp_path / "A", BANK_PROMPTS, (20, 40, 220))
    bank_b = write_bank(tmp_path / "B", BANK_PROMPTS, (120, 120, 120))
    result = compcon_result(bank_a, bank_b)
    sources = {"A": ImageBank.load(bank_a, "modelA"), "B": ImageBank.load(bank_b, "modelB")}
    doc = render_report(result, inputs=sources)
    assert_self_contained(doc)
    assert n_imgs_with_alt(doc, "attribute ranking") == 1
    thumbs = [size for mime, size in embedded_images(doc) if size == (40, 40)]
    assert len(thumbs) == 2 * 2 * 2  # 2 diverging prompts x 2 models x 2 images
    assert "Prompts about &lt;sadness&gt; &amp; solitude" in doc  # the description, escaped
    assert "no Description: line" in doc  # the failed iteration is listed with its error
    assert len(re.findall(r'<tr class="hl">', doc)) == 1  # the best iteration is marked
    # report DIR: the banks are found again from the result
    result.save(tmp_path / "out")
    assert main(["report", str(tmp_path / "out")]) == 0
    again = (tmp_path / "out" / "report.html").read_text()
    assert len([s for _, s in embedded_images(again) if s == (40, 40)]) == 8
    # banks gone: prompts only, with a note
    for f in bank_a.iterdir():
        f.unlink()
    bank_a.rmdir()
    assert main(["report", str(tmp_path / "out")]) == 0
    gone = (tmp_path / "out" / "report.html").read_text()
    assert "its images are not shown" in gone and BANK_PROMPTS[0] in gone


def test_unknown_kind_gets_a_generic_page():
    @dataclasses.dataclass(frozen=True)
    class ToyResult(Result):
        kind = "toy-report-test"
        score: float
        items: list

    doc = render_report(ToyResult(score=0.25, items=[1, 2, 3]))
    assert_self_contained(doc)
    assert "toy-report-test result" in doc and "0.25" in doc and "items (3 entries)" in doc


# --------------------------------------------------------------------------------- writing, notebooks
@pytest.mark.slow
def test_write_report_is_atomic_and_fails_cleanly(tmp_path):
    result, _ = regions_run()
    path = write_report(result, tmp_path / "r")
    assert path == tmp_path / "r" / "report.html" and path.read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["report.html"]  # no temporary left
    (tmp_path / "file").write_text("x")
    with pytest.raises(OptionError):
        write_report(result, tmp_path / "file")


@pytest.mark.slow
def test_repr_html_is_a_compact_summary(tmp_path):
    ps, _, _ = digits_run()
    rg, _ = regions_run()
    cc = compcon_result(tmp_path / "A", tmp_path / "B")
    for result, words in (
        (ps, ["PromptSplit result", ps.modes[0].top_prompts[0].prompt, f"{ps.n_test:,} test"]),
        (rg, ["Regions result", "epoch 1", "lowest region"]),
        (cc, ["CompCon result", "blue tint", "Prompts about &lt;sadness&gt;"]),
    ):
        doc = result._repr_html_()
        assert doc.startswith("<div") and "<table" in doc and "<img" not in doc and len(doc) < 20_000
        for w in words:
            assert w in doc, w


def test_core_methods_do_not_import_matplotlib():
    code = (
        "import sys, numpy as np\n"
        "import promptprism, promptprism.report, promptprism.cli\n"
        "from promptprism import PromptSplit, PairedSet\n"
        "a, b = PairedSet(np.eye(4), np.eye(4)), PairedSet(np.eye(4), np.eye(4)[::-1])\n"
        "r = PromptSplit(n_modes=1).fit(a, b)\n"
        "r._repr_html_()\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------------------------------ big results
@pytest.mark.slow  # ~2-3 s: kept out of the fast loop, run by CI
def test_report_of_a_100k_result_stays_light():
    result, _, images = big_run()
    path, elapsed = big_report()
    size = path.stat().st_size
    doc = path.read_text()
    assert size < 20 * 1024**2, f"{size / 1e6:.1f} MB"
    assert_self_contained(doc)
    # every listed sample has its thumbnail, downscaled; the map says how it subsampled
    listed = sum(min(8, len(m.top_samples)) + min(8, len(m.top_samples_other)) for m in result.modes)
    sizes = [s for _, s in embedded_images(doc)]
    assert sum(1 for s in sizes if s == (64, 64)) == listed and max(max(s) for s in sizes) <= 1200
    rate = f"{MAP_POINTS:,} of {2 * BIG_N:,} samples ({MAP_POINTS / (2 * BIG_N):.1%}"
    assert rate + ", a random subsample seeded with 0" in doc
    # only the listed samples' images and the views' thumbnails (within their byte budget) were read
    from promptprism.report.explore import THUMB_BUDGET

    data = json.loads(re.search(r'<script type="application/json" id="pp-data">(.*?)</script>', doc).group(1))
    thumbs = data["view"]["thumbs"]
    assert sum(map(len, thumbs)) < THUMB_BUDGET + 40_000
    assert len(images["test"].requested) + len(images["reference"].requested) == listed + len(thumbs)
    assert elapsed < 60, elapsed


# -------------------------------------------------------------------------------------------- commands
@pytest.mark.slow
def test_demo_writes_report_and_report_dir_rebuilds_it(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--per-prompt", "3", "--quiet"]) == 0
    assert f"report: {out / 'report.html'}" in " ".join(capsys.readouterr().out.split())
    doc = (out / "report.html").read_text()
    assert_self_contained(doc)
    assert len(re.findall(r'<img\b[^>]*class="px"', doc)) > 0
    assert n_imgs_with_alt(doc, "kernel PCA map of the samples coloured by mode") == 1
    with np.load(out / "data" / "test.npz") as z:
        assert z["images"].shape == (60, 8, 8, 3)
    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0
    again = (out / "report.html").read_text()  # inputs and images found again in data/
    assert n_imgs_with_alt(again, "kernel PCA map of the samples coloured by mode") == 1
    assert len(re.findall(r'<img\b[^>]*class="px"', again)) == len(re.findall(r'<img\b[^>]*class="px"', doc))


@pytest.mark.slow
def test_split_report_no_report_and_moved_inputs(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for name, shift in (("t", 0.0), ("r", 0.7)):
        np.savez(
            tmp_path / f"{name}.npz",
            prompt_embeddings=np.eye(3)[np.arange(30) % 3],
            output_embeddings=rng.standard_normal((30, 4)) + shift,
            prompts=np.array([f"p{i % 3}" for i in range(30)]),
            outputs=np.array([f"o{i}" for i in range(30)]),
        )
    args = ["split", str(tmp_path / "t.npz"), str(tmp_path / "r.npz"), "--modes", "2", "-q"]
    assert main([*args, "--out", str(tmp_path / "a"), "--no-report"]) == 0
    assert not (tmp_path / "a" / "report.html").exists()
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    doc = (tmp_path / "b" / "report.html").read_text()
    assert n_imgs_with_alt(doc, "kernel PCA map of the samples coloured by mode") == 1
    assert load_result(tmp_path / "b").n_test == 30
    (tmp_path / "t.npz").rename(tmp_path / "moved.npz")
    assert main(["report", str(tmp_path / "b")]) == 0
    doc = (tmp_path / "b" / "report.html").read_text()
    assert "not found; the map and array thumbnails are left out" in doc
    # the map is computed once and kept in result.json (issue 39): drawn even when an input moved
    assert n_imgs_with_alt(doc, "kernel PCA map of the samples coloured by mode") == 1


def test_report_command_bad_input_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "no such results folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert "result.json: no such file" in capsys.readouterr().err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "result.json").write_text('{"kind": "promptsplit"}')
    assert main(["report", str(tmp_path / "bad")]) == 2
    assert "not a valid promptsplit result" in capsys.readouterr().err
    result, _ = regions_run()
    result.save(tmp_path / "ok")
    assert main(["report", str(tmp_path / "ok"), "--map-points", "3"]) == 2
    assert not (tmp_path / "ok" / "report.html").exists()


def test_regions_command_writes_report_and_report_dir_finds_the_images(tmp_path):
    _, inputs = regions_run()
    np.save(tmp_path / "real.npy", inputs["real"])
    np.save(tmp_path / "e1.npy", inputs["generated"][0])
    np.save(tmp_path / "e2.npy", inputs["generated"][1])
    out = tmp_path / "out"
    assert (
        main(
            [
                "regions",
                "--real",
                str(tmp_path / "real.npy"),
                "-g",
                str(tmp_path / "e1.npy"),
                str(tmp_path / "e2.npy"),
                "--regions",
                "3",
                "--out",
                str(out),
                "-q",
            ]
        )
        == 0
    )
    doc = (out / "report.html").read_text()
    assert_self_contained(doc)
    assert n_imgs_with_alt(doc, "region map over the pixel grid") == 1
    assert len(re.findall(r'<img\b[^>]*class="px"', doc)) == 24
    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0
    assert len(re.findall(r'<img\b[^>]*class="px"', (out / "report.html").read_text())) == 24


# ---------------------------------------------------------------------------------------------- Scendi
def test_scendi_page_table_side_by_side_and_cluster_galleries(tmp_path):
    from promptprism.methods.scendi import Scendi, ScendiComparison

    rng = np.random.default_rng(0)
    which = np.arange(40) % 4
    paths = []
    for i in range(40):
        Image.fromarray((rng.random((20, 20, 3)) * 255).astype(np.uint8)).save(tmp_path / f"o{i}.png")
        paths.append(str(tmp_path / f"o{i}.png"))
    bank = rng.standard_normal((4, 5))
    sets = [
        PairedSet(
            bank[which],
            bank[which] @ rng.standard_normal((5, 7)) + rng.standard_normal((40, 7)),
            prompts=[f"prompt {w}" for w in which],
            outputs=outs,
            name=name,
        )
        for name, outs in (("with images", paths), ("with text", [f"caption <{i}>" for i in range(40)]))
    ]
    est = Scendi(n_clusters=2, top_k=4)
    comparison = ScendiComparison(models=[est.fit(s, name=s.name) for s in sets], seed=0)
    doc = render_report(comparison)
    assert_self_contained(doc)
    assert n_imgs_with_alt(doc, "Scendi, Vendi and RKE per model") == 1
    for m in comparison.models:
        assert (
            m.name in doc and f"{m.scendi:.4g}" in doc and f"{m.vendi:.4g}" in doc and f"{m.rke:.4g}" in doc
        )
    listed = sum(
        min(6, len(c.top_samples))
        for c in comparison.models[0].clusters + comparison.models[0].clusters_unconditioned
    )
    assert len([s for _, s in embedded_images(doc) if s == (20, 20)]) == listed
    assert "caption &lt;" in doc and "Model-driven clusters" in doc and "Unconditioned clusters" in doc
    single = render_report(comparison.models[1])
    assert_self_contained(single)
    assert "Scendi result" in comparison.models[1]._repr_html_()
    assert "with text" in single


def test_a_map_that_cannot_be_drawn_leaves_a_note(monkeypatch):
    import promptprism.report.map as rp

    def fail(*args, **kwargs):
        raise ValueError("degenerate subsample")

    monkeypatch.setattr(rp, "embed_2d", fail)
    result, inputs, images = digits_run()
    doc = render_report(result, inputs=inputs, images=images, map_points=100)
    assert "map not drawn: ValueError: degenerate subsample" in doc
    assert n_imgs_with_alt(doc, "kernel PCA map of the samples coloured by mode") == 0
    assert len(re.findall(r'<img\b[^>]*class="px"', doc)) > 0  # the rest of the page is there
