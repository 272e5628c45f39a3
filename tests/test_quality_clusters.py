"""Quality verdicts on Scendi's model-driven clusters (issue 43 item 1): one model's cluster against its other
samples of the same prompts, K models ranked on a cluster's prompts, both planted signs, brute force of the
restricted metric, calibration, and the command on a diversity result."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _cli_run import run_cli
from promptprism.data import PairedSet
from promptprism.data.save import save_paired
from promptprism.methods.metrics import ClusterQuality, FindingRanking
from promptprism.methods.metrics.findings import precision_scores

FAMILY = {f: [f"family {f} prompt {q}" for q in range(6)] for f in (1, 2)}


def planted_with_mask(bad_family: int, name: str, seed: int, per_prompt: int = 8, off: float = 0.5
                      ) -> tuple[PairedSet, np.ndarray]:
    """12 prompts (two families of 6), ``per_prompt`` samples each; on ``bad_family`` (0: none) a share
    ``off`` of the samples is shifted away from where real data lies; the set and the shifted rows."""
    rng = np.random.default_rng(seed)
    cz = np.random.default_rng(123).normal(size=(12, 6))
    idx = np.repeat(np.arange(12), per_prompt)
    prompts = [f"family {1 + i // 6} prompt {i % 6}" for i in idx]
    pe = 2 * np.eye(12)[idx] + 0.05 * rng.normal(size=(idx.size, 12))
    oe = 0.3 * cz[idx] + 0.15 * rng.normal(size=(idx.size, 6))
    shifted = (idx // 6 == bad_family - 1) & (rng.random(idx.size) < off) if bad_family else np.zeros(
        idx.size, bool)
    oe[shifted, 0] += 3.0
    return PairedSet(pe, oe, prompts=prompts, outputs=[f"{name} {i}" for i in range(idx.size)],
                     name=name), shifted


def planted(bad_family: int, name: str, seed: int, **kw) -> PairedSet:
    """:func:`planted_with_mask`'s set."""
    return planted_with_mask(bad_family, name, seed, **kw)[0]


def _brute_precision(gen, ref, k):
    d_rr = np.linalg.norm(ref[:, None] - ref[None], axis=2)
    radii = np.sort(d_rr, axis=1)[:, k]
    return (np.linalg.norm(gen[:, None] - ref[None], axis=2) < radii[None]).any(axis=1).astype(float)


@pytest.fixture(scope="module")
def case():
    return planted(1, "B", 1), planted(0, "real data", 9)


def test_a_cluster_gets_both_planted_signs_against_the_models_other_samples(case):
    """On family 1, B's shifted samples (a cluster) are farther from real data than B's other samples there;
    a cluster of B's right samples of family 1 is closer than the others (which hold the shifted ones)."""
    model, real = case
    shifted = planted_with_mask(1, "B", 1)[1]
    on_family = np.isin(model.prompts, FAMILY[1])
    bad, good = np.flatnonzero(shifted & on_family)[:10], np.flatnonzero(~shifted & on_family)[:10]
    findings = [{"id": "cluster 1", "rank": 1, "prompts": FAMILY[1], "rows": bad.tolist()},
                {"id": "cluster 2", "rank": 2, "prompts": FAMILY[1], "rows": good.tolist()}]
    record = ClusterQuality(permutations=499, bootstrap=100).fit(findings, model, real)
    by_id = {e["id"]: e for e in record["findings"]}
    assert by_id["cluster 1"]["closer"] == "other samples" and by_id["cluster 2"]["closer"] == "cluster 2"
    means = {k: by_id[k]["models"][k]["mean"] for k in by_id}
    assert means["cluster 1"] < 0.2 < means["cluster 2"]
    # brute force: the cluster's mean is the definition's indicator against the real samples of its prompts
    ref = real.output_embeddings[np.isin(real.prompts, FAMILY[1])]
    expected = _brute_precision(model.output_embeddings[good], ref, 5).mean()
    assert by_id["cluster 2"]["models"]["cluster 2"]["pooled_mean"] == pytest.approx(expected)
    others = np.setdiff1d(np.flatnonzero(on_family), good)
    other_scores = precision_scores(model.output_embeddings[others], ref, 5)
    assert by_id["cluster 2"]["models"]["other samples"]["pooled_mean"] == pytest.approx(other_scores.mean())
    # the means compared: per prompt both hold, each side's mean at weight n_c n_o / (n_c + n_o)
    good_scores = _brute_precision(model.output_embeddings[good], ref, 5)
    prompts = np.asarray(model.prompts)
    w = {q: (prompts[good] == q).sum() * (prompts[others] == q).sum()
         / ((prompts[good] == q).sum() + (prompts[others] == q).sum())
         for q in set(prompts[good]) & set(prompts[others])}
    for name, scores, rows in (("cluster 2", good_scores, good), ("other samples", other_scores, others)):
        brute = sum(w[q] * scores[prompts[rows] == q].mean() for q in w) / sum(w.values())
        assert by_id["cluster 2"]["models"][name]["mean"] == pytest.approx(brute)


def test_k_models_are_ranked_on_each_models_cluster_prompts_with_both_signs(case):
    """A is wrong on family 2, B on family 1, C nowhere: on B's cluster (family 1) B ranks last with A and
    C tied first; on A's cluster (family 2) A ranks last."""
    b, real = case
    models = {"A": planted(2, "A", 2), "B": b, "C": planted(0, "C", 3)}
    findings = [{"id": "B cluster 1", "model": "B", "prompts": FAMILY[1]},
                {"id": "A cluster 1", "model": "A", "prompts": FAMILY[2]}]
    record = FindingRanking(permutations=499, bootstrap=100).fit(findings, models, real)
    ranks = {e["id"]: {r["name"]: r["rank"] for r in e["ranking"]["rows"]} for e in record["findings"]}
    assert ranks["B cluster 1"] == {"A": 1, "C": 1, "B": 3}
    assert ranks["A cluster 1"] == {"B": 1, "C": 1, "A": 3}
    assert record["findings"][0]["model"] == "B"


@pytest.mark.slow
def test_a_cluster_of_same_quality_samples_gets_no_verdict_over_200_sets():
    """Every sample of the model equally close to real data, a cluster of 10 random rows of one family:
    the cluster-vs-others test at 0.05 rejects at most alpha + 2 s.e. of 200 sets."""
    alpha, runs, hits = 0.05, 200, 0
    real = planted(0, "real data", 99)
    for r in range(runs):
        model = planted(1, "M", 1000 + r, off=0.3)  # a third shifted on family 1, at random
        rows = np.random.default_rng(r).choice(np.flatnonzero(np.isin(model.prompts, FAMILY[1])), 10,
                                               replace=False)
        record = ClusterQuality(permutations=199, bootstrap=50, seed=r).fit(
            [{"id": "cluster 1", "prompts": FAMILY[1], "rows": rows.tolist()}], model, real)
        hits += record["findings"][0]["p_value"] <= alpha
    assert hits / runs <= alpha + 2 * np.sqrt(alpha * (1 - alpha) / runs), hits


@pytest.mark.slow
def test_the_command_adds_verdicts_to_one_and_to_several_diversity_results(tmp_path, case):
    model, real = case
    for s, name in ((model, "b"), (planted(2, "A", 2), "a"), (real, "real")):
        save_paired(tmp_path / f"{name}.npz", s)
    one, two = tmp_path / "one", tmp_path / "two"
    for out, inputs in ((one, ["b.npz"]), (two, ["a.npz", "b.npz"])):
        code, _, err = run_cli("diversity", *[tmp_path / p for p in inputs], "--out", out, "--quiet",
                               "--no-report")
        assert code == 0, err
        code, printed, err = run_cli("quality", out, "--real", tmp_path / "real.npz", "--permutations", "199",
                                     "--bootstrap", "50")
        assert code == 0, err
        html = (out / "report.html").read_text(encoding="utf-8")  # the verdicts on the cluster cards
        assert html.count("Closer to real data") == len(json.loads((out / "result.json").read_text())[
            "quality"]["findings"])
    data = json.loads((one / "result.json").read_text())
    record = data["quality"]
    assert record["compared"] == "cluster vs other samples"
    scored = {e["id"]: e for e in record["findings"]}
    assert set(scored) | {s["id"] for s in record["skipped"]} == {f"cluster {c['rank']}"
                                                                  for c in data["clusters"]}
    for cluster in data["clusters"]:  # brute force: each scored cluster's mean from its rows
        entry = scored.get(f"cluster {cluster['rank']}")
        if entry is None:
            continue
        rows = [s["index"] for s in cluster["top_samples"]]
        prompts = {s["prompt"] for s in cluster["top_samples"]}
        ref = real.output_embeddings[np.isin(real.prompts, list(prompts))]
        assert entry["models"][entry["id"]]["pooled_mean"] == pytest.approx(
            _brute_precision(model.output_embeddings[rows], ref, 5).mean())
    kway = json.loads((two / "result.json").read_text())["quality"]
    assert {e["model"] for e in kway["findings"]} <= {"a", "b"} and kway["findings"]
    assert all({r["name"] for r in e["ranking"]["rows"]} == {"a", "b"} for e in kway["findings"])
    assert kway["overall"]["ranking"]["rows"]
