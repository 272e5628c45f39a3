"""The inline SVG charts of the PromptSplit page (report/svg.py): what they draw, checked on the markup."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np

from promptprism.report.canvas import NEG_COLOR, POS_COLOR
from promptprism.report.references import check_self_contained
from promptprism.report.svg import (
    NULL_GREY,
    bandwidth_scan_svg,
    eigenvalue_bars_svg,
    nice_ticks,
    scatter_svg,
)


def parse(markup: str) -> ET.Element:
    check_self_contained(markup)
    return ET.fromstring(markup)


def bars(root: ET.Element, fill: str) -> list[dict]:
    return [r.attrib for r in root.iter("rect") if r.get("fill") == fill]


def test_eigenvalue_bars_are_proportional_and_signed():
    vals = [0.5, 0.25, 0.1, -0.4, -0.05, 0.0]
    root = parse(eigenvalue_bars_svg(vals, 10, label="eig"))
    assert root.get("aria-label") == "eig" and root.find("title").text == "eig"
    pos, neg = bars(root, POS_COLOR), bars(root, NEG_COLOR)
    assert len(pos) == 3 and len(neg) == 2  # zero is neither sign
    heights = np.array([float(b["height"]) for b in pos + neg])
    np.testing.assert_allclose(heights / heights[0], np.abs([0.5, 0.25, 0.1, -0.4, -0.05]) / 0.5, atol=0.01)
    # positive bars end at the zero line from above, negative ones start there
    ends = {round(float(b["y"]) + float(b["height"]), 1) for b in pos}
    zero = ends | {round(float(b["y"]), 1) for b in neg}
    assert len(zero) == 1
    labels = [t.text for t in root.iter("text")]
    assert {"+1", "+2", "+3", "−1", "−2"} <= set(labels)


def test_eigenvalue_bars_draw_the_null_band_and_pale_unsignificant_modes():
    root = parse(eigenvalue_bars_svg([0.5, 0.2, -0.3], 10, null_top={"test": [0.3, 0.3], "reference": [0.25]},
                                     significant={"test": [True, False], "reference": [True]}, label="x"))
    band = bars(root, NULL_GREY)
    assert len(band) == 3 + 1  # one band per bar, and the legend's swatch
    pale = [b for b in bars(root, POS_COLOR) + bars(root, NEG_COLOR) if b.get("fill-opacity")]
    assert len(pale) == 1 and len([r for r in root.iter("rect") if r.get("fill") == "url(#pp-hatch)"]) == 1
    assert any("permutation null" in (t.text or "") for t in root.iter("text"))


def test_eigenvalue_bars_without_null_have_no_band():
    root = parse(eigenvalue_bars_svg([0.5, -0.3], 10, label="x"))
    assert not bars(root, NULL_GREY)


def markers(path_d: str) -> int:
    return len(re.findall(r"M", path_d))


def test_scatter_draws_every_point_once_in_its_colour_and_shape_inside_the_frame():
    rng = np.random.default_rng(0)
    xy = rng.standard_normal((300, 2)) * [5.0, 0.01]
    labels = np.array(["+1", "−1", "weak (models agree)"])[rng.integers(0, 3, 300)]
    groups = np.array(["A", "B"])[rng.integers(0, 2, 300)]
    colors = {"+1": "#111111", "−1": "#222222", "weak (models agree)": "#333333", "unused": "#444444"}
    root = parse(scatter_svg(xy, labels, groups, colors, {"A": "o", "B": "^"}, "map", label="m"))
    paths = [p for p in root.iter("path") if p.get("fill") in colors.values() and p.get("fill-opacity")]
    assert sum(markers(p.get("d")) for p in paths) == 300
    for name in ("+1", "−1"):
        for group, shape in (("A", "a"), ("B", "l")):
            want = int(((labels == name) & (groups == group)).sum())
            drawn = [p for p in paths if p.get("fill") == colors[name] and (shape in p.get("d"))]
            assert sum(markers(p.get("d")) for p in drawn) == want
    _, _, w, h = map(float, root.get("viewBox").split())
    starts = np.array([tuple(map(float, m)) for p in paths for m in re.findall(r"M([-\d.]+) ([-\d.]+)",
                                                                             p.get("d"))])
    assert starts[:, 0].min() > 0 and starts[:, 0].max() < w - 150 and starts[:, 1].min() > 0
    assert starts[:, 1].max() < h
    legend = [t.text for t in root.iter("text")]
    assert "unused" not in legend and {"+1", "A", "B"} <= set(legend)


def test_scatter_subsamples_above_its_cap_and_says_so():
    xy = np.random.default_rng(1).standard_normal((5000, 2))
    root = parse(scatter_svg(xy, ["+1"] * 5000, ["A"] * 5000, {"+1": "#111111"}, {"A": "o"}, "map",
                             label="m", max_points=800))
    drawn = sum(markers(p.get("d")) for p in root.iter("path") if p.get("fill-opacity"))
    assert drawn == 800
    assert any("800 drawn" in (t.text or "") for t in root.iter("text"))


def test_bandwidth_scan_draws_one_line_per_rank_and_marks_the_choice():
    scan = {"prompt": {"multipliers": [0.5, 1.0, 2.0], "sigmas": [1.0, 2.0, 4.0], "chosen": 2.0,
                       "plateau": True, "top_eigenvalues": [[0.3, -0.1], [0.4, -0.2], [0.41, -0.2]]},
            "output": {"multipliers": [0.5, 1.0], "sigmas": [1.0, 2.0], "chosen": 1.0, "plateau": False,
                       "top_eigenvalues": [[0.1], [0.2]]}}
    root = parse(bandwidth_scan_svg(scan, label="scan"))
    assert len(list(root.iter("polyline"))) == 2 + 1
    assert len([ln for ln in root.iter("line") if ln.get("stroke-dasharray")]) == 2
    texts = [t.text for t in root.iter("text")]
    assert "σ_prompt: plateau found" in texts and "σ_output: no plateau: median kept" in texts


def test_nice_ticks_cover_the_range_in_round_steps():
    ticks = nice_ticks(-0.043, 0.051)
    assert ticks[0] >= -0.043 and ticks[-1] <= 0.051 and 0.0 in np.round(ticks, 12)
    steps = np.diff(ticks)
    np.testing.assert_allclose(steps, steps[0])
    assert round(steps[0] / 10 ** np.floor(np.log10(steps[0])), 6) in (1.0, 2.0, 5.0)
