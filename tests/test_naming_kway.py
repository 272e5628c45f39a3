"""Names for the deviating models of a K-way comparison (methods/naming/deviations.py, ``promptprism
describe`` on a ``compare`` folder): a planted deviation named by the model-free namer on real SmolLM2
answers and by a scripted chat endpoint, nothing named where no model deviates, too few held-out samples,
the report.

The chat models here are scripted: nothing says how a real model names or judges.
"""

from __future__ import annotations

import functools
import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from promptprism.methods.naming import (
    LexicalJudge,
    NamingOptions,
    WordNamer,
    describe_deviations,
    deviation_pools,
)
from test_naming import _respond  # the scripted endpoint's answers, shared

DATA = Path(__file__).parent / "data"


def trigram_embedding(text: str, dim: int = 256) -> np.ndarray:
    """A model-free text embedding: hashed character trigrams, unit norm (deterministic)."""
    v = np.zeros(dim)
    t = f"  {text.lower()} "
    for i in range(len(t) - 2):
        v[zlib.crc32(t[i:i + 3].encode()) % dim] += 1
    return v / max(np.linalg.norm(v), 1e-12)


def _paired(rows, name, seed):
    from promptprism.data import PairedSet

    pe = np.array([trigram_embedding(r["prompt"]) for r in rows])
    oe = np.array([trigram_embedding(r["output"]) for r in rows])
    oe += 0.01 * np.random.default_rng(seed).normal(size=oe.shape)  # the echo's texts equal faithful's words
    return PairedSet(pe, oe, prompts=[r["prompt"] for r in rows], outputs=[r["output"] for r in rows],
                     name=name)


@functools.lru_cache(maxsize=1)
def recorded_three():
    """SmolLM2-135M's recorded answers to 100 questions as three models: ``french`` (history asked with
    'Always answer in French'), ``faithful`` (an independent draw, plain set-up) and a fake ``echo`` (the
    faithful answers on one line). K-way PromptSplit on trigram embeddings, 100 permutations."""
    from promptprism.methods.promptsplit.kway import KWaySplit

    rows = {s: [json.loads(x) for x in (DATA / f"smollm2_qa_{s}.jsonl").read_text("utf-8").splitlines()]
            for s in ("test", "reference")}
    setups = {"french": rows["test"], "faithful": rows["reference"],
              "echo": [dict(r, output=" ".join(r["output"].split())) for r in rows["reference"]]}
    sets = {name: _paired(rs, name, k) for k, (name, rs) in enumerate(setups.items())}
    result = KWaySplit(kernel="gaussian", n_modes=3, permutations=100, seed=0).fit(list(sets.values()),
                                                                                    list(sets))
    topic = {r["prompt"]: r["topic"] for r in rows["test"]}
    return result, sets, topic


@pytest.mark.slow
def test_the_french_model_is_the_one_named_and_by_french_words():
    result, sets, topic = recorded_three()
    assert [d["model"] for d in result.deviations if d["deviates"]] == ["french"]
    named = 0
    for seed in range(5):
        record = describe_deviations(result, sets, namer=WordNamer(), judge=LexicalJudge(),
                                     options=NamingOptions(seed=seed))
        assert {e["model"] for e in record["deviations"]} == {"french"}
        top = record["deviations"][0]
        assert top["against"].startswith("rest") and top["mode_p_value"] <= 0.05
        if top["status"] == "named":
            named += 1
            assert top["accuracy"] > 0.7 and top["p_value"] < 0.05
            assert top["name"].startswith("uses words such as")
    assert named >= 4, named


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_deviation_pools_compare_every_other_model_on_the_same_prompts():
    from promptprism.methods.naming import deviation_modes

    result, sets, topic = recorded_three()
    mode = deviation_modes(result, "french")[0]
    a, b = deviation_pools(mode, "french", sets)
    prompts = {s.prompt for s in a}
    assert prompts == {s.prompt for s in b} and len(b) == 2 * len(a)
    assert sum(topic[q] == "history" for q in prompts) >= 0.8 * len(prompts)
    assert [s.output for s in a] == [sets["french"].outputs[s.index] for s in a]


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_too_few_held_out_samples_means_no_name_and_no_call():
    from test_naming import fixed_names

    result, sets, _ = recorded_three()
    namer = fixed_names("answers in French")
    record = describe_deviations(result, sets, namer=namer, judge=LexicalJudge(),
                                 options=NamingOptions(min_held_out=40, max_held_out=40))
    top = record["deviations"][0]
    assert top["status"] == "too few held-out samples" and top["name"] is None and namer.calls == 0
    assert "at least 40 of each are needed" in top["note"]


@pytest.mark.slow  # (over 0.5 s)
def test_a_missing_model_set_is_refused():
    from promptprism.errors import InputError

    result, sets, _ = recorded_three()
    with pytest.raises(InputError, match="missing: echo"):
        describe_deviations(result, {k: v for k, v in sets.items() if k != "echo"}, namer=WordNamer(),
                            judge=LexicalJudge())


# ----------------------------------------------------------------------- planted, with a scripted endpoint
def three_models(french_model: str | None = "b", seed: int = 0):
    """Three models, 8 topics x 3 questions x 4 answers; ``french_model`` answers topic 0 in French (its
    outputs shifted in embedding); None: three draws of one model."""
    from promptprism.data import PairedSet

    rng = np.random.default_rng(seed)
    topics = np.repeat(np.arange(8), 12)
    questions = [f"topic {t} question {(i // 4) % 3}" for i, t in enumerate(topics)]
    centers_t, centers_z = rng.normal(size=(8, 8)), rng.normal(size=(8, 8))
    sets = {}
    for name in ("a", "b", "c"):
        pe = centers_t[topics] + 0.1 * rng.normal(size=(topics.size, 8))
        oe = centers_z[topics] + 0.3 * rng.normal(size=(topics.size, 8))
        french = (topics == 0) & (name == french_model)
        oe[french] += 3.0
        outs = [f"Bonjour, voici la réponse {i}" if f else f"Here is the answer {i}"
                for i, f in enumerate(french)]
        sets[name] = PairedSet(pe, oe, prompts=questions, outputs=outs, name=name)
    return sets


def _compare(tmp_path, sets):
    from _cli_run import run_cli
    from promptprism.data.save import save_paired

    paths = []
    for name, s in sets.items():
        paths.append(tmp_path / f"{name}.npz")
        save_paired(paths[-1], s)
    out = tmp_path / "kway"
    code, _, err = run_cli("compare", *paths, "--out", out, "--permutations", "100", "--modes", "2",
                           "--quiet", "--no-report")
    assert code == 0, err
    return out, paths


@pytest.mark.slow
def test_cli_describe_names_the_deviating_model_and_a_rerun_makes_no_call(tmp_path):
    from _cli_run import run_cli
    from compcon_fakes import ScriptedServer

    out, _ = _compare(tmp_path, three_models("b"))
    with ScriptedServer(_respond) as server:
        args = ("describe", out, "--base-url", server.base_url, "--model", "fake", "--chat-cache",
                tmp_path / "cache", "--api-key-env", "")
        code, printed, err = run_cli(*args)
        assert code == 0, err
        first = len(server.requests)
        assert "b mode 1: 'answers in French' (held-out accuracy" in printed
        saved = json.loads((out / "result.json").read_text())
        entries = saved["descriptions"]["deviations"]
        assert [e["model"] for e in entries] == ["b"] and entries[0]["p_value"] < 0.05
        rejected = [c["description"] for c in entries[0]["candidates"] if not c["accepted"]]
        assert rejected == ["mentions a number"]
        page = (out / "report.html").read_text()
        assert "In words: “answers in French”" in page and "rejected" in page
        listing = json.loads((out / ".promptprism-outputs.json").read_text())
        assert listing["command"] == "compare"  # describe amends compare's folder
        code, printed, err = run_cli(*args)
        assert code == 0 and len(server.requests) == first, err  # all from the cache
        assert "model calls: 0 sent," in printed


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_cli_describe_without_a_deviating_model_names_nothing(tmp_path):
    from _cli_run import run_cli

    out, _ = _compare(tmp_path, three_models(None))
    code, printed, err = run_cli("describe", out, "--namer", "words", "--judge", "lexical", "--no-report")
    assert code == 0, err
    saved = json.loads((out / "result.json").read_text())
    assert saved["descriptions"]["deviations"] == []
    assert "note: no model deviates from the rest, so none was named" in printed


@pytest.mark.slow
def test_cli_describe_kway_bad_input(tmp_path):
    from _cli_run import run_cli

    out, paths = _compare(tmp_path, three_models("b"))
    code, _, err = run_cli("describe", out, paths[0], paths[1], "--namer", "words", "--judge", "lexical")
    assert code == 2 and err.count("\n") == 1 and "takes one input per model (a, b, c), got 2" in err
    code, _, err = run_cli("describe", out, paths[0], paths[1], tmp_path / "gone.npz", "--namer", "words",
                           "--judge", "lexical")
    assert code == 2 and err.count("\n") == 1 and "gone.npz" in err


def test_two_models_each_side_of_the_planted_mode_is_named_from_its_own_side():
    """K = 2: both models 'deviate' (each against the other): b's French answers on topic 0 are a mode of
    the reference side (a negative eigenvalue, its prompts' contributions negative), a's English answers on
    the same prompts the mirrored mode of the test side. b's is named 'answers in French'; for a that name
    fits the other side, so it cannot pass."""
    from promptprism.methods.promptsplit.kway import KWaySplit
    from test_naming import KeywordJudge, fixed_names, french_keyword

    sets = three_models("b")
    two = {k: sets[k] for k in ("a", "b")}
    result = KWaySplit(kernel="gaussian", n_modes=2, permutations=100, seed=0).fit(list(two.values()),
                                                                                    list(two))
    assert result.pairs[0].config["test"] == "a"
    record = describe_deviations(result, two, namer=fixed_names("answers in French"),
                                 judge=KeywordJudge(french_keyword))
    got = {e["model"]: (e["status"], e["name"], e["against"]) for e in record["deviations"]}
    assert got == {"a": ("no description held up", None, "b"), "b": ("named", "answers in French", "a")}


def test_a_model_deviating_only_by_producing_less_is_said_so(monkeypatch):
    """describe on a compare whose deviating model has modes on the rest's side only printed "no model
    deviates from the rest", contradicting the compare it read."""
    from types import SimpleNamespace

    from promptprism.methods.naming import deviations

    monkeypatch.setattr(deviations, "deviation_modes", lambda result, model, all_modes=False: [])
    result = SimpleNamespace(names=["a", "b", "c"], significance={"test": "permutation"},
                             deviations=[{"model": "a", "deviates": False}, {"model": "b", "deviates": False},
                                         {"model": "c", "deviates": True}])
    record = deviations.describe_deviations(result, {"a": None, "b": None, "c": None}, namer=None,
                                            judge=SimpleNamespace())
    assert record["deviations"] == []
    assert record["notes"][0].startswith("c deviates from the rest only by producing less")
