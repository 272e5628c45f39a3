"""``promptprism quality`` with a judge endpoint (a scripted loopback server) and on a compare result: the
verdicts reach result.json, a re-run costs no call, bad input is one line and exit 2; the K-model ranking
with ties on a planted three-model case (issue 43 items 2-3)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _cli_run import run_cli
from promptprism.data import PairedSet
from promptprism.data.save import save_paired
from promptprism.datasets import colored_digits
from promptprism.io import atomic_save_npz
from promptprism.methods.metrics import FindingRanking


def _french_sets(per_prompt: int = 6, seed: int = 0, others: int = 1):
    """10 topics x 4 questions; the test model answers topic 0 in French (outputs shifted in embedding), the
    ``others`` (reference, then other2, other3...) in English."""
    rng = np.random.default_rng(seed)
    topics = np.repeat(np.arange(10), 4 * per_prompt)
    questions = [f"topic {t} question {(i // per_prompt) % 4}" for i, t in enumerate(topics)]
    centers_t, centers_z = rng.normal(size=(10, 8)), rng.normal(size=(10, 8))

    def build(french: bool, name: str) -> PairedSet:
        pe = centers_t[topics] + 0.1 * rng.normal(size=(topics.size, 8))
        oe = centers_z[topics] + 0.3 * rng.normal(size=(topics.size, 8))
        outs = []
        for i, t in enumerate(topics):
            if french and t == 0:
                oe[i] += 3.0
                outs.append(f"Bonjour, voici la réponse {i}")
            else:
                outs.append(f"Here is the answer {i}")
        return PairedSet(pe, oe, prompts=questions, outputs=outs, name=name)

    return (build(True, "test"), *(build(False, "reference" if k == 0 else f"other{k + 1}")
                                   for k in range(others)))


def _prefers_english(body, stage, n):
    """The judge: the English answer over the French one, a tie between two of one language."""
    text = body["messages"][0]["content"]
    first = "Bonjour" in text.split('First answer: """', 1)[1].split('"""', 1)[0]
    second = "Bonjour" in text.split('Second answer: """', 1)[1].split('"""', 1)[0]
    return "tie" if first == second else "second" if first else "first"


def _split(folder):
    test, ref = _french_sets()
    save_paired(folder / "test.npz", test)
    save_paired(folder / "ref.npz", ref)
    out = folder / "run"
    code, _, err = run_cli("split", folder / "test.npz", folder / "ref.npz", "--out", out,
                           "--permutations", "100", "--modes", "2", "--quiet", "--no-report")
    assert code == 0, err
    return out


@pytest.fixture()
def split_dir(tmp_path):
    return _split(tmp_path)


@pytest.fixture(scope="module")
def shared_split_dir(tmp_path_factory):
    """One split for the tests that only read it (bad input writes nothing)."""
    return _split(tmp_path_factory.mktemp("judge"))


@pytest.mark.slow  # the command run twice (~1.5 s quiet)
def test_the_judge_verdict_reaches_result_json_and_a_rerun_makes_no_call(tmp_path, split_dir):
    from compcon_fakes import ScriptedServer

    rubric = tmp_path / "rubric.txt"
    rubric.write_text("Prefer answers written in English.", encoding="utf-8")
    with ScriptedServer(_prefers_english) as server:
        args = ("quality", split_dir, "--judge-base-url", server.base_url, "--judge-model", "fake",
                "--rubric", f"@{rubric}", "--judge-pairs", "12", "--chat-cache", tmp_path / "cache",
                "--api-key-env", "")
        code, printed, err = run_cli(*args)
        assert code == 0, err
        sent = len(server.requests)
        asked = [r["messages"][0]["content"] for r in server.requests]
        assert all("Prefer answers written in English." in text for text in asked)
        judge = json.loads((split_dir / "result.json").read_text())["quality"]["judge"]
        entry = judge["findings"][0]
        c = entry["comparisons"][0]
        assert entry["preferred"] == "reference" and c["losses"] == c["pairs"] == 12 and c["win_rate"] == 0.0
        calls = judge["calls"]  # both orders of every pair; a pair drawn again for another finding is cached
        assert sent == calls["requests"] and sent + calls["cache_hits"] == 2 * 12 * len(judge["findings"])
        assert judge["seed"] == 0 and judge["endpoint"]["model"] == "fake"
        assert "the judge prefers reference" in printed
        assert "Judge:" in (split_dir / "report.html").read_text(encoding="utf-8")
        code, printed, err = run_cli(*args)
        assert code == 0 and len(server.requests) == sent, err  # every answer from the cache
        assert "judge calls: 0 sent" in printed


@pytest.mark.parametrize("argv, needle", [
    ((), "--real"),
    (("--judge-base-url", "not a url"), "--judge-base-url"),
    (("--judge-base-url", "http://127.0.0.1:9/v1", "--rubric", "@/nonexistent/rubric.txt"), "--rubric"),
    (("--judge-base-url", "http://127.0.0.1:9/v1", "--judge-pairs", "0"), "--judge-pairs"),
    (("--judge-base-url", "http://127.0.0.1:9/v1", "--judge-pairs", "1000000"), "--judge-pairs must be"),
    (("--judge-base-url", "http://127.0.0.1:9/v1", "--retries", "0", "--api-key-env", ""), "unreachable"),
])
def test_bad_input_is_one_line_and_exit_2(shared_split_dir, argv, needle):
    before = (shared_split_dir / "result.json").read_bytes()
    code, _, err = run_cli("quality", shared_split_dir, *argv, "--no-report")
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert (shared_split_dir / "result.json").read_bytes() == before  # nothing written


@pytest.mark.slow
def test_the_judge_ranks_the_models_of_a_compare_result(tmp_path):
    """Three models, one answering topic 0 in French: on its deviation the judge ranks it last, the two
    English ones share rank 1; the K-way page shows the judge's order."""
    from compcon_fakes import ScriptedServer

    paths = []
    for s in _french_sets(others=2):
        paths.append(save_paired(tmp_path / f"{s.name}.npz", s))
    out = tmp_path / "k"
    code, _, err = run_cli("compare", *paths, "--out", out, "--permutations", "100", "--quiet", "--no-report")
    assert code == 0, err
    with ScriptedServer(_prefers_english) as server:
        code, printed, err = run_cli("quality", out, "--judge-base-url", server.base_url, "--judge-model",
                                     "fake", "--judge-pairs", "10", "--api-key-env", "")
    assert code == 0, err
    judge = json.loads((out / "result.json").read_text())["quality"]["judge"]
    entry = next(e for e in judge["findings"] if e["id"] == "test vs rest")
    ranks = {r["name"]: r["rank"] for r in entry["ranking"]["rows"]}
    assert ranks == {"reference": 1, "other2": 1, "test": 3}
    assert len(entry["comparisons"]) == 3 and "test vs rest, judge:" in printed
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Judge: reference = other2 &gt; test" in html or "Judge: other2 = reference &gt; test" in html


def _correct(seed: int, per_prompt: int = 20) -> PairedSet:
    """Digits drawn as every prompt asks."""
    other = colored_digits(per_prompt=per_prompt, seed=seed)
    wrong = set(other.altered_test)
    take_ref = np.array([p in wrong for p in other.reference.prompts])
    take_test = ~np.array([p in wrong for p in other.test.prompts])
    return PairedSet(np.vstack([other.test.prompt_embeddings[take_test],
                                other.reference.prompt_embeddings[take_ref]]),
                     np.vstack([other.test.output_embeddings[take_test],
                                other.reference.output_embeddings[take_ref]]),
                     prompts=[p for p, t in zip(other.test.prompts, take_test, strict=True) if t]
                     + [p for p, t in zip(other.reference.prompts, take_ref, strict=True) if t], name="real")


def test_three_models_are_ranked_per_finding_with_honest_ties():
    """gray5-9 draws grayscale digits for the colored prompts 5-9; right1 and right2 draw every prompt as
    asked: on those prompts both right models share rank 1 and gray5-9 ranks 3; elsewhere all share rank 1."""
    data = colored_digits(per_prompt=20, seed=0)
    models = {"gray5-9": data.test, "right1": _correct(7), "right2": _correct(9)}
    wrong = list(data.altered_test)
    findings = [{"id": "colored 5-9", "prompts": wrong},
                {"id": "the rest", "prompts": [p for p in data.prompt_names if p not in wrong]}]
    record = FindingRanking(permutations=499, bootstrap=100, seed=0).fit(findings, models, _correct(5))
    by_id = {e["id"]: {r["name"]: r["rank"] for r in e["ranking"]["rows"]} for e in record["findings"]}
    assert by_id["colored 5-9"] == {"right1": 1, "right2": 1, "gray5-9": 3}
    assert set(by_id["the rest"].values()) == {1}
    assert record["findings"][0]["closer"] is None  # two models share the first rank
    assert record["overall"]["id"] == "all prompts" and record["seed"] == 0
    assert "share rank 1" in record["findings"][1]["verdict"]


@pytest.mark.slow
def test_the_command_ranks_the_models_of_a_compare_result(tmp_path):
    data = colored_digits(per_prompt=20, seed=0)

    def save(name, s):
        atomic_save_npz(tmp_path / f"{name}.npz", prompt_embeddings=s.prompt_embeddings,
                        output_embeddings=s.output_embeddings, prompts=np.array(s.prompts))
        return tmp_path / f"{name}.npz"

    paths = [save("gray", data.test), save("right1", _correct(7)), save("right2", _correct(9))]
    real = save("real", _correct(5))
    code, _, err = run_cli("compare", *paths, "--out", tmp_path / "k", "--permutations", "100", "--quiet",
                           "--no-report")
    assert code == 0, err
    code, out, err = run_cli("quality", tmp_path / "k", "--real", real, "--permutations", "299",
                             "--bootstrap", "100")
    assert code == 0, err
    record = json.loads((tmp_path / "k" / "result.json").read_text())["quality"]
    gray = next(e for e in record["findings"] if e["id"] == "gray vs rest")
    assert {r["name"]: r["rank"] for r in gray["ranking"]["rows"]}["gray"] == 3, gray["ranking"]
    assert "gray vs rest" in out and "on all 20 prompts" in out
    html = (tmp_path / "k" / "report.html").read_text(encoding="utf-8")
    assert "Closer to real data: right1 = right2 &gt; gray" in html or \
        "Closer to real data: right2 = right1 &gt; gray" in html


def _same_quality_runs(runs: int, worse: float = 0.0) -> tuple[float, float]:
    """(share of sets with any separated pair, share where model c alone ranks last over all prompts): three
    models drawn around the gold answer of each prompt, c shifted away from it by ``worse``."""
    from types import SimpleNamespace

    rng = np.random.default_rng(0)
    prompts = [f"p{k}" for k in range(6) for _ in range(3)]
    centres = rng.normal(size=(6, 5))
    gold = SimpleNamespace(prompts=[f"p{k}" for k in range(6)], name="gold", output_embeddings=centres)
    finding = [{"id": "half", "prompts": [f"p{k}" for k in range(3)]}]
    any_verdict = c_last = 0
    for r in range(runs):
        models = {m: SimpleNamespace(prompts=prompts, output_embeddings=np.repeat(centres, 3, axis=0)
                                     + (worse if m == "c" else 0.0) + rng.normal(size=(18, 5)))
                  for m in ("a", "b", "c")}
        estimator = FindingRanking(closeness="gold", permutations=299, bootstrap=50, seed=r)
        record = estimator.fit(finding, models, gold)
        entries = [*record["findings"], record["overall"]]
        any_verdict += any(t["p_adjusted"] <= 0.05 for e in entries for t in e["pairs"])
        ranks = {row["name"]: row["rank"] for row in record["overall"]["ranking"]["rows"]}
        c_last += ranks == {"a": 1, "b": 1, "c": 3}
    return any_verdict / runs, c_last / runs


@pytest.mark.slow  # calibration, 200 sets; the ranking: test_three_models_are_ranked_per_finding...
def test_three_same_quality_models_get_no_verdict_at_the_stated_level():
    """Three models of one quality (gold closeness): over 200 simulated sets the share with any separated pair
    (on the finding or over all prompts, Holm over the 6 tests) stays within alpha + 2 s.e.; a model pushed
    away from the gold answers ranks alone last over all prompts in >= 90 % of 20 sets."""
    null, _ = _same_quality_runs(200)
    print("same quality, sets with a verdict:", null)
    assert null <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 200), null
    _, power = _same_quality_runs(20, worse=3.0)
    print("c worse, ranked alone last:", power)
    assert power >= 0.9, power


def test_a_facet_the_inputs_do_not_have_is_one_line_before_any_call(split_dir):
    code, _, err = run_cli("quality", split_dir, "--judge-base-url", "http://127.0.0.1:9/v1", "--facet",
                           "topic", "--api-key-env", "")
    assert code == 2 and "--facet topic: not a facet" in err and len(err.strip().splitlines()) == 1
