"""The reference-set metrics restricted to a finding (issue 43 item 1, ``quality --metrics``): precision,
recall, density and coverage of each model's samples on the finding's prompts against the real samples of
those prompts equal their definitions (brute force), with intervals; FD where the sizes allow; the cards and
the command carry them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _cli_run import run_cli
from promptprism.data.save import save_paired
from promptprism.methods.metrics import FindingQuality, FindingRanking
from test_quality_facets import FAMILY, make


def brute_prdc(real: np.ndarray, fake: np.ndarray, k: int) -> dict[str, float]:
    """Precision, recall (Kynkäänniemi et al. 2019), density and coverage (Naeem et al. 2020) from their
    definitions: open k-NN balls, the k-th nearest other sample's distance as the radius."""
    d_rr = np.linalg.norm(real[:, None] - real[None], axis=2)
    d_ff = np.linalg.norm(fake[:, None] - fake[None], axis=2)
    d_fr = np.linalg.norm(fake[:, None] - real[None], axis=2)  # (fake, real)
    r_real, r_fake = np.sort(d_rr, axis=1)[:, k], np.sort(d_ff, axis=1)[:, k]
    inside_real = d_fr < r_real[None]  # fake j inside real i's ball
    return {"precision": inside_real.any(axis=1).mean(),
            "recall": (d_fr < r_fake[:, None]).any(axis=0).mean(),
            "density": inside_real.sum() / (k * fake.shape[0]),
            "coverage": (d_fr.min(axis=0) < r_real).mean()}


def test_the_restricted_metrics_are_their_definitions_on_the_findings_rows():
    a = make("A", 1, bad=np.arange(144) < 36)  # half of family 1 shifted away
    b, real = make("B", 2), make("real data", 3)
    findings = [{"id": "family 1", "prompts": FAMILY[1]}, {"id": "family 2", "prompts": FAMILY[2]}]
    record = FindingQuality(permutations=199, bootstrap=100, metrics=True).fit(findings, {"A": a, "B": b},
                                                                                real)
    for entry, family in zip(record["findings"], (1, 2), strict=True):
        ref = real.output_embeddings[np.isin(real.prompts, FAMILY[family])]
        for name, s in (("A", a), ("B", b)):
            got = entry["metrics"][name]
            expected = brute_prdc(ref, s.output_embeddings[np.isin(s.prompts, FAMILY[family])], 5)
            for key, value in expected.items():
                assert got[key] == pytest.approx(value), (family, name, key)
                iv = got["intervals"][key]
                assert iv["low"] <= iv["high"]
            assert got["n"] == 72 and "fd" in got
    shifted, right = record["findings"][0]["metrics"]["A"], record["findings"][0]["metrics"]["B"]
    assert shifted["precision"] < right["precision"] - 0.3 and shifted["density"] < right["density"]
    assert "metrics" not in FindingQuality(permutations=199, bootstrap=50).fit(
        findings, {"A": a, "B": b}, real)["findings"][0]


def test_k_models_get_the_restricted_metrics_too():
    models = {n: make(n, k) for k, n in enumerate("ABC")}
    record = FindingRanking(permutations=199, bootstrap=50, metrics=True).fit(
        [{"id": "family 1", "prompts": FAMILY[1]}], models, make("real data", 9))
    assert set(record["findings"][0]["metrics"]) == {"A", "B", "C"}
    assert set(record["overall"]["metrics"]["A"]) >= {"precision", "recall", "density", "coverage", "fd"}


@pytest.mark.slow  # the command and its report (~1.5 s quiet)
def test_the_command_prints_and_shows_the_restricted_metrics(tmp_path):
    """``quality --metrics --json``: the summary on stdout carries the verdicts and the metrics; the mode
    cards show them."""
    a = make("A", 1, bad=np.arange(144) < 72)  # wrong on family 1
    for s, name in ((a, "a"), (make("B", 2), "b"), (make("real data", 3), "real")):
        save_paired(tmp_path / f"{name}.npz", s)
    code, _, err = run_cli("split", tmp_path / "a.npz", tmp_path / "b.npz", "--out", tmp_path / "s",
                           "--quiet", "--permutations", "100")
    assert code == 0, err
    code, out, err = run_cli("quality", tmp_path / "s", "--real", tmp_path / "real.npz", "--metrics",
                             "--permutations", "199", "--bootstrap", "50", "--json")
    assert code == 0, err
    printed = json.loads(out)
    assert printed["quality"]["findings"] == json.loads((tmp_path / "s" / "result.json").read_text())[
        "quality"]["findings"]
    entry = printed["quality"]["findings"][0]
    assert entry["closer"] == "reference" and entry["metrics"]["test"]["precision"] < 0.5
    html = (tmp_path / "s" / "report.html").read_text(encoding="utf-8")
    assert "Reference metrics on these prompts" in html and "coverage" in html
