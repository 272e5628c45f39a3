"""Report hardening and the pages' statements: extreme inputs, hostile names, bad result.json files,
significance and intervals (new result fields) and old results without them, and the page fixes."""

from __future__ import annotations

import json
import re
from html import unescape

import numpy as np
import pytest
from PIL import Image

from _cli_run import listed
from _report_data import (
    digits_run,
    old_promptsplit_result,
    regions_run,
    scan_record,
    significance_result,
    with_fields,
)
from promptprism import InputError, PairedSet, load_result
from promptprism.cli import main
from promptprism.methods.promptsplit import SampleScore
from promptprism.methods.regions.result import lowest_regions
from promptprism.report import render_report, render_report_dir, write_report
from promptprism.report.references import check_self_contained, external_references
from promptprism.report.summary import lowest_text
from test_report import assert_self_contained, n_imgs_with_alt

MAP_ALT = "kernel PCA map of the samples coloured by mode"


# ------------------------------------------------------------------------------------------- robustness
def _scaled_set(s: PairedSet, row: int, factor: float) -> PairedSet:
    z = np.array(s.output_embeddings, dtype=np.float64)
    z[row] *= factor
    return PairedSet(s.prompt_embeddings, z, prompts=s.prompts, outputs=s.outputs, name=s.name)


@pytest.mark.parametrize("factor", [pytest.param(1e300, marks=pytest.mark.slow), 1e150])  # (1e300: ~2 s)
def test_a_row_scaled_by_1e300_leaves_it_out_of_the_map(factor):
    result, inputs, images = digits_run()
    bad = {"test": _scaled_set(inputs["test"], 3, factor), "reference": inputs["reference"]}
    doc = render_report(result, inputs=bad, images=images, map_points=10_000)
    assert_self_contained(doc)
    assert n_imgs_with_alt(doc, MAP_ALT) == 1
    total = result.n_test + result.n_reference
    assert f"{total - 1:,} of {total:,} samples" in doc
    assert "1 sampled rows with non-finite or extreme embeddings are left out of the map" in doc


def test_every_row_extreme_skips_the_map_with_a_note():
    result, inputs, images = digits_run()
    bad = {
        s: PairedSet(v.prompt_embeddings, np.asarray(v.output_embeddings) * 1e250, prompts=v.prompts)
        for s, v in inputs.items()
    }
    doc = render_report(result, inputs=bad, images=images)
    assert "map not drawn:" in doc and n_imgs_with_alt(doc, MAP_ALT) == 0


def test_hostile_file_names_render_escaped_and_pass_the_guard(tmp_path):
    name = '"><img src=x>.npz'
    folder = tmp_path / '"><img src=x onerror=alert(1)>'
    folder.mkdir()
    png = folder / '"><img src=x>.png'
    Image.fromarray(np.zeros((12, 12, 3), np.uint8)).save(png)
    result, _, _ = digits_run()
    m = result.modes[0]
    sample = SampleScore("test", 0, 'prompt "><script>x</script>', str(png), 1.0)
    hostile = with_fields(
        result,
        config={**result.config, "test": name, "reference": str(folder / name)},
        modes=[with_fields(m, top_samples=[sample, *m.top_samples[1:]]), *result.modes[1:]],
    )
    path = write_report(hostile, folder)
    doc = path.read_text()
    assert_self_contained(doc)  # this test's own check: no src/href outside the page
    assert external_references(doc) == []
    assert "<script>" not in doc and "&lt;script&gt;" in doc
    assert '"><img src=x>' not in doc and "&quot;&gt;&lt;img src=x&gt;" in doc
    assert '<div class="thumb"><img' in doc  # the image with that name is shown as a thumbnail


def test_the_guard_still_refuses_real_references():
    assert external_references('<div title="src=http://x"><img src="http://x/a.png"></div>') == [
        "src=http://x/a.png"
    ]
    assert external_references("<p style=\"background:url('f.png')\">x</p>") == ["url(f.png)"]
    assert external_references("<p>src=http://x href=file:///etc</p>") == []
    with pytest.raises(ValueError, match="refer outside"):
        check_self_contained('<a href="https://example.org">x</a>')


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d.update(modes="abc"), "modes: expected a list"),
        (lambda d: d["modes"][0].update(top_samples=[{"set": 1}]), "modes[0].top_samples[0].set"),
        (lambda d: d["modes"][1]["top_prompts"][0].update(n_test="7"), "modes[1].top_prompts[0].n_test"),
        (lambda d: d.update(distance="far"), "distance: expected a number, got a string"),
        (lambda d: d.update(config=[1, 2]), "config: expected an object"),
        (lambda d: d.update(prompt_ranking={"a": 1}), "prompt_ranking: expected a list"),
        (lambda d: d.pop("n_test"), "n_test: missing"),
    ],
)
def test_result_json_with_wrong_types_is_an_input_error_naming_the_field(tmp_path, change, field):
    result, _, _ = digits_run()
    data = json.loads(result.to_json())
    change(data)
    (tmp_path / "result.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=re.escape(field)) as info:
        load_result(tmp_path)
    assert "result.json" in str(info.value)


def test_regions_result_json_with_wrong_element_types(tmp_path):
    result, _ = regions_run()
    data = json.loads(result.to_json())
    data["region_cms"][1][0] = "low"
    (tmp_path / "result.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=re.escape("region_cms[1][0]: expected a number")):
        load_result(tmp_path)


def test_binary_result_json_is_an_input_error_and_report_exits_2(tmp_path, capsys):
    (tmp_path / "result.json").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe binary")
    with pytest.raises(InputError, match="not UTF-8"):
        load_result(tmp_path)
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "not UTF-8" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "report.html").exists()


def test_wrong_types_through_the_report_command_exit_2(tmp_path, capsys):
    result, _, _ = digits_run()
    data = json.loads(result.to_json())
    data["modes"] = [1, 2, 3]
    (tmp_path / "result.json").write_text(json.dumps(data))
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "modes[0]: expected an object (Mode), got an integer" in err and "Traceback" not in err


def test_decompression_bomb_thumbnail_becomes_a_placeholder(tmp_path, monkeypatch):
    png = tmp_path / "huge.png"
    Image.fromarray(np.zeros((60, 60, 3), np.uint8)).save(png)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # 3,600 pixels > 2 x the limit: a bomb
    result, _, _ = digits_run()
    m = result.modes[0]
    sample = SampleScore("test", 0, "a prompt", str(png), 1.0)
    page = render_report(with_fields(result, modes=[with_fields(m, top_samples=[sample]), *result.modes[1:]]))
    assert "image not shown: huge.png: too many pixels for a thumbnail" in unescape(page)


def test_rendering_writes_nothing_and_write_report_is_the_writer(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result, inputs, images = digits_run()
    result.save(tmp_path / "run")
    before = listed(tmp_path / "run")
    page = render_report(result, inputs=inputs, images=images, base_dir=tmp_path / "run", map_points=60)
    folder, again = render_report_dir(tmp_path / "run", map_points=60)
    assert isinstance(page, str) and isinstance(again, str) and folder == tmp_path / "run"
    assert listed(tmp_path / "run") == before == ["result.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    path = write_report(result, tmp_path / "run", inputs=inputs, images=images, map_points=60)
    assert path.read_text() == page


def test_progress_reports_each_slow_step():
    from promptprism.report.promptsplit import render_promptsplit

    result, inputs, images = digits_run()
    steps: list[str] = []
    render_promptsplit(result, inputs=inputs, images=images, map_points=60, step=steps.append)
    assert steps == [
        "map: mode scores of the sampled points",
        "map: kernel PCA embedding",
        "map: drawing",
        "report: data of the views",
        "report: eigenvalue chart",
        "report: mode galleries",
    ]
    # and the progress display itself runs (forced on, as on a terminal)
    assert render_report(result, inputs=inputs, images=images, map_points=60, progress=True)


def test_compcon_eval_has_a_page():
    from promptprism.methods.compcon.evaluation import CompConEvaluation

    ev = CompConEvaluation(
        summary={"n_splits": 2, "attribute_top1": 0.5, "attribute_top5": 1.0, "description_top1": 0.25,
                 "description_top5": 0.75},
        per_split=[
            {"split": 0, "truth_attribute": "blue <tint>", "truth_concepts": ["sea"],
             "attribute_ratings": [2, 3], "description_ratings": [1], "attribute_top1": 0.5,
             "attribute_top5": 1.0, "description_top1": 0.0, "description_top5": 0.0},
            {"split": 1, "truth_attribute": "fog", "truth_concepts": ["city"], "attribute_ratings": [],
             "description_ratings": [], "attribute_top1": 0.0, "attribute_top5": 0.0,
             "description_top1": 0.0, "description_top5": 0.0},
        ],
        judge={"model": "judge-x"},
        config={"k": 5, "rating_to_score": "(rating - 1) / 2", "reasks": 2},
        failures=[{"split": 1, "error": "no rating in the answer"}],
    )
    doc = render_report(ev)
    assert_self_contained(doc)
    assert "CompCon evaluation" in doc and "blue &lt;tint&gt;" in doc and "judge-x" in doc
    assert "no rating in the answer" in doc and "best of top 5" in doc


# ----------------------------------------------------------------------------------------- significance
def test_significant_and_not_significant_modes_are_marked_with_p_values():
    result = significance_result([0.002, 0.3, 0.6, 0.01, 0.4, 0.9], scan=scan_record())
    _, inputs, images = digits_run()
    doc = unescape(render_report(result, inputs=inputs, images=images, map_points=60))
    assert doc.count("significant · p = 0.002") == 1 and doc.count("significant · p = 0.01") == 1
    assert doc.count("not significant · p = ") == 4
    assert "2 significant" in doc and "of 3 + 3 reported (alpha = 0.05)" in doc
    assert "2 significant mode(s) at alpha = 0.05" in doc  # the verdict, at the top
    assert "Ranked from: significant modes" in doc
    assert "Grey band: what the permutation null" in doc
    assert n_imgs_with_alt(doc, "bandwidth scan: top eigenvalues against the bandwidth") == 1
    assert "σ_output: chosen 6 (plateau found" in doc
    assert "positive / negative modes" not in doc and "main modes" not in doc


def test_nothing_significant_says_so_in_one_sentence_and_ranks_no_prompt():
    result = significance_result([0.41, 0.5, 0.7, 0.6, 0.8, 0.9])
    doc = unescape(render_report(result))
    # (the sets' names, as the title and headings call them: the page names them one way)
    first = doc.index("no significant difference between test model and reference model at alpha = 0.05")
    assert first < doc.index("Prompts where the models disagree most")
    assert "No prompt ranking: no mode is significant" in doc
    assert "0 significant" in doc


def test_identical_sets_say_they_are_identical():
    result = significance_result([1.0] * 6, identical=True, basis="none: the sets are identical")
    doc = unescape(render_report(result))
    assert "they are identical" in doc and "No prompt ranking" in doc
    assert "modes · the sets are identical" in doc and "identical" in repr(result)


def test_old_results_without_the_new_fields_render():
    old = old_promptsplit_result()
    _, inputs, images = digits_run()
    doc = unescape(render_report(old, inputs=inputs, images=images, map_points=60))
    assert_self_contained(doc)
    assert "No significance test in this result" in doc
    assert "3 + 3" in doc and "modes reported (+ / −) · no significance test" in doc
    assert "Ranked from: all reported modes (no significance test)" in doc
    assert "significant ·" not in doc and "Bandwidth scan" not in doc


def test_sample_lists_never_mix_signs_unlabelled():
    result, _, _ = digits_run()
    m = result.modes[0]
    mixed = [with_fields(s, score=s.score if i % 2 else -abs(s.score)) for i, s in enumerate(m.top_samples)]
    changed = with_fields(result, modes=[with_fields(m, top_samples=mixed), *result.modes[1:]])
    doc = unescape(render_report(changed))
    n_neg = sum(s.score < 0 for s in mixed[:8])
    assert f"negative scores ({n_neg}): the other end of the mode's direction" in doc
    assert f"positive scores ({min(8, len(mixed)) - n_neg}): in the mode's direction" in doc


def test_ranking_column_names_each_prompts_characteristic_mode():
    result, _, _ = digits_run()
    doc = unescape(render_report(result))
    cells = re.findall(r'class="tag(?: neg)?">([+−]\d)</span> (\d+)% here, (\d+)% overall · ', doc)
    plain = doc.count('<span class="muted">none stands out</span>')
    assert len(cells) + plain == min(10, len(result.prompt_ranking))
    assert all(int(here) >= int(overall) + 4 for _, here, overall in cells)  # 5 points, rounded
    # planted: prompt 'a' draws its disagreement from the small mode +1, while -1 dominates every prompt
    from promptprism.methods.promptsplit import PromptLoading
    from promptprism.report.significance import _main_mode

    small, big = result.positive_modes[0], result.negative_modes[0]
    small = with_fields(small, eigenvalue=0.1, top_prompts=[PromptLoading("a", 0.09, None, 4, 4)])
    loads = [PromptLoading(q, -0.1, None, 4, 4) for q in ("a", "b", "c")]
    big = with_fields(big, eigenvalue=-0.3, top_prompts=loads)
    main = _main_mode(with_fields(result, modes=[small, big]), None)
    assert main["a"][0] is small and main["b"][0] is big and main["c"][0] is big
    assert main["a"][1:] == pytest.approx((0.009 / 0.039, 0.01 / 0.1))


def test_map_marker_legend_and_caption_agree_on_the_weak_class():
    result, inputs, images = digits_run()
    page = render_report(result, inputs=inputs, images=images, map_points=60)
    doc = unescape(page.split('<script type="application/json"')[0])  # the static page, not its data
    assert "'weak'" not in doc  # the old caption's name, which the legend lacked
    from promptprism.report.map import WEAK_NAME

    if WEAK_NAME in doc:
        assert f"grey, '{WEAK_NAME}'" in doc


# ------------------------------------------------------------------------------------ Scendi and regions
def test_scendi_intervals_differences_and_a_warning_once():
    from promptprism.methods.scendi import Scendi, ScendiComparison

    rng = np.random.default_rng(0)
    which = np.arange(40) % 4
    bank = rng.standard_normal((4, 5))
    models = []
    for name in ("faithful", "varied"):
        s = PairedSet(bank[which], rng.standard_normal((40, 7)), prompts=[f"p{w}" for w in which], name=name)
        r = Scendi(n_clusters=2, top_k=3).fit(s, name=name)
        iv = {k: {"low": getattr(r, k) * 0.9, "high": getattr(r, k) * 1.1}
              for k in ("scendi", "scendi_prompt", "vendi", "rke", "model_share", "prompt_share")}
        models.append(with_fields(r, intervals=iv, bootstrap={"replicates": 200, "level": 0.95, "seed": 0,
                                                               "resample": "prompts"},
                                  gamma_estimator="cross-fit (5 folds)",
                                  warnings=["the prompt kernel has nearly full rank"] * 2))
    diffs = [{"a": "faithful", "b": "varied", "metric": "scendi", "difference": -0.5, "low": -0.8,
              "high": -0.2, "separated": True},
             {"a": "faithful", "b": "varied", "metric": "vendi", "difference": 0.1, "low": -0.3,
              "high": 0.4, "separated": False}]
    comparison = with_fields(ScendiComparison(models=models, seed=0), differences=diffs)
    doc = unescape(render_report(comparison))
    m = models[0]
    assert f"{m.scendi:.4g} [{m.scendi * 0.9:.4g}, {m.scendi * 1.1:.4g}]" in doc
    assert "0.95 intervals (bootstrap: 200 replicates, prompts resampled" in doc
    assert "cross-fit (5 folds)" in doc
    static = doc.split('<script type="application/json"')[0]  # the page, not its embedded result.json
    assert static.count("the prompt kernel has nearly full rank") == 1
    assert "1 of 2 differences are larger than their bootstrap intervals" in doc
    assert "no: within the noise" in doc
    # without a differences record: the intervals' overlap says it
    alone = unescape(render_report(ScendiComparison(models=models, seed=0)))
    a, b = (_interval_of(m) for m in models)
    apart = a[1] < b[0] or b[1] < a[0]
    verdict = "do not overlap" if apart else "overlap: the difference is within the resampling noise"
    assert f"faithful vs varied: Scendi intervals {verdict}" in alone


def _interval_of(m):
    return m.intervals["scendi"]["low"], m.intervals["scendi"]["high"]


def test_old_scendi_result_says_no_intervals():
    from promptprism.methods.scendi import Scendi

    rng = np.random.default_rng(1)
    t, z = rng.standard_normal((30, 4)), rng.standard_normal((30, 5))
    s = PairedSet(t, z, prompts=[str(i) for i in range(30)])
    doc = unescape(render_report(Scendi(n_clusters=2, top_k=3).fit(s, name="m")))
    assert "No bootstrap intervals in this result" in doc


def test_region_near_tie_is_named_not_hidden():
    assert lowest_regions([0.9384, 0.95, 0.9382]) == [2, 0]
    assert lowest_text([0.9384, 0.95, 0.9382]) == "2 (0.9382), tied within 0.001 with 0 (0.9384)"
    assert lowest_regions([0.90, 0.95, 0.80]) == [2]
    ivs = [{"low": 0.85, "high": 0.95}, {"low": 0.96, "high": 0.99}, {"low": 0.7, "high": 0.86}]
    assert lowest_text([0.90, 0.97, 0.80], ivs) == "2 (0.8), tied within their intervals with 0 (0.9)"


def test_regions_page_shows_intervals_and_ties():
    result, inputs = regions_run()
    row0 = [0.9384, 0.95, 0.9382]
    regions_iv = [{"low": 0.93, "high": 0.94}, {"low": 0.94, "high": 0.96}, {"low": 0.93, "high": 0.94}]
    first = {"cms": {"low": 0.6, "high": 0.65}, "product_cms": {"low": 0.5, "high": 0.7}}
    ivs = [{**first, "region_cms": regions_iv}, {}]
    tied = with_fields(
        result,
        region_cms=[row0, list(result.region_cms[1])],
        intervals=ivs,
        bootstrap={"replicates": 100, "level": 0.95, "seed": 0},
        block_bias="block estimator (b = 150): bias-corrected",
    )
    doc = unescape(render_report(tied, inputs=inputs))
    assert "epoch 1: lowest region 2 (0.9382), tied within their intervals with 0 (0.9384)" in doc
    assert "0.9384 · U-form [0.93, 0.94]" in doc and "[0.6, 0.65]" in doc  # (an interval without its U form)
    assert "block estimator (b = 150): bias-corrected" in doc
    assert "tied within" in repr(tied)


# ----------------------------------------------------------------------------------------------- repr
@pytest.mark.slow
def test_repr_is_compact_and_html_repr_stays():
    from _report_data import big_run

    result, _, _ = big_run()
    text = repr(result)
    assert text.startswith("PromptSplitResult") and len(text.splitlines()) <= 8 and len(text) < 800
    assert "100,000 test · 100,000 reference" in text
    assert "0.0999" not in text  # not every eigenvalue
    assert "<table" in result._repr_html_()
    regions, _ = regions_run()
    assert repr(regions).startswith("RegionsResult") and len(repr(regions).splitlines()) <= 8


# ------------------------------------------------------------------------- nulls (non-finite numbers)
def _nullify(x):
    if isinstance(x, float):
        return None
    if isinstance(x, list):
        return [_nullify(v) for v in x]
    if isinstance(x, dict):
        return {k: _nullify(v) for k, v in x.items()}
    return x


def _scendi_result():
    from promptprism.methods.scendi import Scendi

    rng = np.random.default_rng(0)
    t, z = rng.standard_normal((30, 4)), rng.standard_normal((30, 5))
    data = PairedSet(t, z, prompts=[str(i % 5) for i in range(30)])
    return Scendi(n_clusters=2, top_k=3).fit(data, name="m")


@pytest.mark.parametrize("kind", ["promptsplit", "regions", "compcon", "scendi", "scendi_comparison"])
def test_every_number_null_in_result_json_still_renders(tmp_path, kind):
    """Non-finite numbers are written as null: a result.json whose every float is null loads and renders
    (numbers shown as '–'), with its inputs where the page uses them."""
    from _report_data import compcon_result
    from promptprism.methods.scendi import ScendiComparison

    inputs = None
    if kind == "promptsplit":
        result, inputs, _ = digits_run()
    elif kind == "regions":
        result, inputs = regions_run()
    elif kind == "compcon":
        result = compcon_result(tmp_path / "a", tmp_path / "b")
    elif kind == "scendi":
        result = _scendi_result()
    else:
        result = ScendiComparison(models=[_scendi_result(), _scendi_result()], seed=0)
    (tmp_path / "result.json").write_text(json.dumps(_nullify(json.loads(result.to_json()))))
    loaded = load_result(tmp_path)
    doc = render_report(loaded, inputs=inputs)
    assert_self_contained(doc)
    assert "–" in doc
    assert repr(loaded) and loaded._repr_html_()
