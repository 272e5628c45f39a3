"""Names for findings, checked on held-out data (methods/naming): the statistics against brute force, the
calibration of the name test under judges that cannot tell the sides apart, its power, the namer's failure
modes, the PromptSplit wiring and the CLI with a scripted chat endpoint (its cache: a re-run makes no call).

The chat models here are scripted: nothing says how a real model names or judges.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import hypergeom

from promptprism.errors import OptionError
from promptprism.methods.naming import (
    NamingOptions,
    Sample,
    describe_modes,
    holm,
    name_contrast,
    parse_yes_no,
    propose,
    separation,
)
from promptprism.methods.naming.judges import best_threshold, namer_messages, parse_names


class Namer:
    """A scripted namer: ``answer(messages) -> str``; counts calls."""

    model = "scripted-namer"

    def __init__(self, answer):
        self.answer, self.calls = answer, 0

    def chat(self, messages):
        self.calls += 1
        self.last = messages[0]["content"]
        return self.answer(messages)


def fixed_names(*names):
    return Namer(lambda _: "Model A contains:\n" + "\n".join(f"- {n}" for n in names))


class KeywordJudge:
    """Says a description applies when the text holds the description's keyword (imperfect by design)."""

    name = "keyword"

    def __init__(self, keyword_of, flip=0.0, seed=0):
        self.keyword_of, self.flip, self.rng = keyword_of, flip, np.random.default_rng(seed)

    def decide(self, description, texts, *, shown_a, shown_b):
        key = self.keyword_of(description)
        out = [key is not None and key in t for t in texts]
        return [(not v) if self.rng.random() < self.flip else v for v in out]


class RandomJudge:
    name = "random"

    def __init__(self, p, seed):
        self.p, self.rng = p, np.random.default_rng(seed)

    def decide(self, description, texts, *, shown_a, shown_b):
        return (self.rng.random(len(texts)) < self.p).tolist()


def pools(n_a=40, n_b=40, french=1.0, seed=0):
    rng = np.random.default_rng(seed)
    a = [Sample(f"q{i % 10}", ("Bonjour, la réponse est" if rng.random() < french else "The answer is")
                + f" {i}", i) for i in range(n_a)]
    b = [Sample(f"q{i % 10}", f"The answer is {i}", i) for i in range(n_b)]
    return a, b


def french_keyword(description):
    return "Bonjour" if "French" in description else None


# ----------------------------------------------------------------------------------- the statistics
def test_separation_is_fishers_exact_test_by_brute_force():
    applies_a = [True] * 9 + [False] * 3
    applies_b = [True] * 4 + [False] * 10
    s = separation(applies_a, applies_b)
    # P(X >= 9) for X ~ hypergeometric(total 26, 13 "applies", 12 drawn as side A)
    total, k, drawn = 26, 13, 12
    tail = sum(math.comb(k, x) * math.comb(total - k, drawn - x) for x in range(9, 13))
    brute = tail / math.comb(total, drawn)
    assert s.p_value == pytest.approx(brute, rel=1e-12)
    assert s.p_value == pytest.approx(hypergeom.sf(8, total, k, drawn), rel=1e-12)
    assert s.accuracy == pytest.approx((9 + 10) / 26)
    lo, hi = s.interval
    assert lo < s.accuracy < hi and 0 <= lo and hi <= 1


def test_separation_of_a_judge_that_always_says_yes_is_not_significant():
    s = separation([True] * 30, [True] * 30)
    assert s.p_value == 1.0 and s.accuracy == 0.5


def test_separation_needs_both_sides():
    with pytest.raises(OptionError, match="held-out samples of both sides"):
        separation([True], [])


def test_holm_by_hand():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert holm([0.6, 0.9, 0.9]) == pytest.approx([1.0, 1.0, 1.0])


def test_best_threshold_uses_only_the_shown_scores():
    assert best_threshold(np.array([0.8, 0.9]), np.array([0.1, 0.2])) == pytest.approx(0.5)
    assert best_threshold(np.array([0.1]), np.array([0.9])) == math.inf  # nothing beats chance


def test_parse_yes_no():
    assert parse_yes_no("Yes, it is.") is True and parse_yes_no("**No**") is False
    with pytest.raises(ValueError):
        parse_yes_no("maybe")


# ------------------------------------------------------------------------------------- naming a contrast
def test_a_description_that_separates_held_out_samples_is_kept():
    a, b = pools()
    namer = fixed_names("answers in French", "longer answers")
    out = name_contrast(a, b, namer=namer, judge=KeywordJudge(french_keyword, flip=0.1),
                        options=NamingOptions(seed=3))
    assert out.status == "named" and out.name == "answers in French"
    assert out.accuracy > 0.75 and out.p_value < 0.05
    rejected = [c for c in out.candidates if not c["accepted"]]
    assert [c["description"] for c in rejected] == ["longer answers"]
    assert out.n_shown[0] + out.n_held_out[0] == 40
    assert namer.calls == 2  # two names, asked once more for a third: none new


def test_the_namer_never_sees_the_held_out_samples():
    a, b = pools()
    seen = []
    namer = Namer(lambda m: seen.append(m[0]["content"]) or "Model A contains:\n- answers in French")
    judged = []

    class Recorder(KeywordJudge):
        def decide(self, description, texts, *, shown_a, shown_b):
            judged.extend(texts)
            return super().decide(description, texts, shown_a=shown_a, shown_b=shown_b)

    name_contrast(a, b, namer=namer, judge=Recorder(french_keyword), options=NamingOptions(seed=1))
    shown_text = seen[0]
    assert judged and not any(f" {t}\n" in shown_text + "\n" for t in judged)


def test_a_judge_that_says_yes_to_everything_names_nothing():
    a, b = pools()
    out = name_contrast(a, b, namer=fixed_names("answers in French"), judge=RandomJudge(1.0, 0))
    assert out.status == "no description held up" and out.name is None
    assert out.candidates[0]["p_value"] == 1.0


def test_too_few_held_out_samples_means_no_name_and_no_call():
    a, b = pools(n_a=6, n_b=40)
    namer = fixed_names("answers in French")
    out = name_contrast(a, b, namer=namer, judge=KeywordJudge(french_keyword))
    assert out.status == "too few held-out samples" and namer.calls == 0
    assert "4 held-out samples of this side" in out.note


def test_malformed_and_empty_namer_answers():
    a, b = pools()
    garbled = Namer(lambda _: "   \n" + "word " * 40)
    out = name_contrast(a, b, namer=garbled, judge=KeywordJudge(french_keyword))
    assert out.status == "namer failed" and "unreadable format" in out.note and garbled.calls == 3
    empty = Namer(lambda _: "Model A contains:\n")
    out = name_contrast(a, b, namer=empty, judge=KeywordJudge(french_keyword))
    assert out.status == "no description held up" and "no description" in out.note


@pytest.mark.slow
def test_calibration_random_judges_accept_names_at_most_at_alpha():
    """300 runs with judges that flip coins (at several rates): false acceptance of a name <= alpha."""
    a, b = pools(n_a=60, n_b=60)
    accepted = 0
    runs = 300
    for r in range(runs):
        judge = RandomJudge(p=[0.2, 0.5, 0.8][r % 3], seed=r)
        out = name_contrast(a, b, namer=fixed_names("x one", "x two", "x three"), judge=judge,
                            options=NamingOptions(seed=r, max_held_out=30))
        accepted += out.status == "named"
    rate = accepted / runs
    assert rate <= 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / runs), rate


def test_power_an_imperfect_judge_of_a_real_difference_names_it():
    named = 0
    for r in range(40):
        a, b = pools(french=0.8, seed=r)
        judge = KeywordJudge(french_keyword, flip=0.15, seed=r)
        out = name_contrast(a, b, namer=fixed_names("answers in French", "x", "y"), judge=judge,
                            options=NamingOptions(seed=r))
        named += out.status == "named" and out.name == "answers in French"
    assert named >= 36, named


def test_a_small_model_that_ignores_the_format_still_gives_one_name_per_answer():
    answers = iter(["D: They answer in French. B answers in English.", "They answer in French.",
                    "Their answers are longer than B's"])
    namer = Namer(lambda m: next(answers))
    assert propose(namer, [("q", "a", "b")], count=3) == ["They answer in French"]
    assert "Do not repeat these descriptions: They answer in French." in namer.last
    assert parse_names("Model A contains:\n- x\n- y") == ["x", "y"]


def test_namer_request_pairs_outputs_of_the_same_prompt_and_clips_long_text():
    msgs = namer_messages([("q1", "x" * 5000, "short")], count=3)
    text = msgs[0]["content"]
    assert "Question: q1\nA: " in text and "B: short" in text and "x" * 700 not in text
    assert "Model A contains:" in text


# ------------------------------------------------------------------------------- PromptSplit modes
def _french_history_sets(per_prompt=6, seed=0):
    """10 topics x 4 questions; the test model answers topic 0 in French (outputs shifted in embedding)."""
    from promptprism.data import PairedSet

    rng = np.random.default_rng(seed)
    topics = np.repeat(np.arange(10), 4 * per_prompt)
    questions = [f"topic {t} question {(i // per_prompt) % 4}" for i, t in enumerate(topics)]
    centers_t, centers_z = rng.normal(size=(10, 8)), rng.normal(size=(10, 8))

    def build(french: bool, name: str):
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

    return build(True, "test"), build(False, "reference")


@pytest.mark.slow
def test_describe_modes_names_the_planted_mode_and_only_significant_ones():
    from promptprism import PromptSplit

    test, ref = _french_history_sets()
    result = PromptSplit(kernel="gaussian", n_modes=3, permutations=100, seed=0).fit(test, ref)
    assert any(m.significant for m in result.modes)
    record = describe_modes(result, test, ref, namer=fixed_names("answers in French", "uses numbers"),
                            judge=KeywordJudge(french_keyword))
    assert len(record["modes"]) == sum(bool(m.significant) for m in result.modes)
    top = record["modes"][0]
    assert top["side"] == "test" and top["status"] == "named" and top["name"] == "answers in French"
    assert record["config"]["namer"] == "scripted-namer" and record["config"]["alpha"] == 0.05
    named = result.__class__.from_dict({**json.loads(result.to_json()), "descriptions": record,
                                        "kind": "promptsplit"})
    assert named.name_of(named.modes[0]) == "answers in French"
    assert not any("embedding judge" in n for n in record["notes"])
    # a judge that checks separation only (the embedding judge): the names carry that caveat
    judge = KeywordJudge(french_keyword)
    judge.name = "embedding"
    record = describe_modes(result, test, ref, namer=fixed_names("answers in French"), judge=judge)
    assert any(n.startswith("the embedding judge kept each name because its embedding separates")
               for n in record["notes"])


def test_a_mode_of_the_reference_side_is_named_from_its_own_prompts():
    """Swapped sets: the French answers are the reference's, a negative-eigenvalue mode whose prompts
    contribute negative amounts; its pools are the reference's topic-0 answers against the test's."""
    from promptprism import PromptSplit
    from promptprism.methods.naming import mode_pools

    test, ref = _french_history_sets()
    result = PromptSplit(kernel="gaussian", n_modes=3, permutations=100, seed=0).fit(ref, test)
    mode = next(m for m in result.modes if m.significant and m.side == "reference")
    a, b = mode_pools(mode, {"test": ref, "reference": test})
    assert a and all(s.output.startswith("Bonjour") for s in a)
    assert {s.prompt for s in a} == {s.prompt for s in b}
    record = describe_modes(result, ref, test, namer=fixed_names("answers in French"),
                            judge=KeywordJudge(french_keyword))
    entry = next(e for e in record["modes"] if e["side"] == "reference" and e["rank"] == mode.rank)
    assert entry["status"] == "named" and entry["name"] == "answers in French"


@pytest.mark.slow
def test_the_same_name_for_every_mode_is_noted():
    import dataclasses

    from promptprism import PromptSplit

    test, ref = _french_history_sets()
    result = PromptSplit(kernel="gaussian", n_modes=3, permutations=100, seed=0).fit(test, ref)
    top = result.modes[0]
    twin = dataclasses.replace(top, rank=2)  # a second mode on the same prompts
    doubled = dataclasses.replace(result, modes=[top, twin])
    record = describe_modes(doubled, test, ref, namer=fixed_names("answers in French"),
                            judge=KeywordJudge(french_keyword))
    assert [e["status"] for e in record["modes"]] == ["named", "named"]
    assert any("same name was kept for several modes (answers in french)" in n for n in record["notes"])


def test_without_significant_modes_nothing_is_named_and_the_notes_say_why():
    from promptprism import PromptSplit

    test, _ = _french_history_sets()
    result = PromptSplit(kernel="gaussian", n_modes=2, permutations=50, seed=0).fit(test, test)
    namer = fixed_names("answers in French")
    record = describe_modes(result, test, test, namer=namer, judge=KeywordJudge(french_keyword))
    assert record["modes"] == [] and namer.calls == 0
    assert record["notes"] == ["no mode was significant, so none was named"]


# ------------------------------------------------------------------------------------------------ the CLI
def _write_sets(tmp_path):
    from promptprism.data.save import save_paired

    test, ref = _french_history_sets()
    save_paired(tmp_path / "test.npz", test)
    save_paired(tmp_path / "ref.npz", ref)
    return tmp_path / "test.npz", tmp_path / "ref.npz"


def _respond(body, stage, n):
    text = body["messages"][0]["content"]
    if text.startswith("Two assistants"):
        return "Model A contains:\n- answers in French\n- mentions a number"
    sample = text.split('Text: """', 1)[1]
    if "in French" in text:
        return "Yes." if "Bonjour" in sample else "No."
    return "yes"  # 'mentions a number': true of every answer, so it cannot separate the sides


@pytest.mark.slow
def test_cli_describe_names_the_mode_writes_it_and_a_rerun_makes_no_call(tmp_path):
    from _cli_run import run_cli
    from compcon_fakes import ScriptedServer

    t, r = _write_sets(tmp_path)
    out = tmp_path / "run"
    code, _, err = run_cli("split", t, r, "--out", out, "--permutations", "100", "--modes", "2", "--quiet",
                           "--no-report")
    assert code == 0, err
    with ScriptedServer(_respond) as server:
        args = ("describe", out, "--base-url", server.base_url, "--model", "fake", "--chat-cache",
                tmp_path / "cache", "--api-key-env", "", "--no-report")
        code, printed, err = run_cli(*args)
        assert code == 0, err
        first = len(server.requests)
        assert "test mode 1: 'answers in French' (held-out accuracy" in printed
        saved = json.loads((out / "result.json").read_text())
        entry = saved["descriptions"]["modes"][0]
        assert entry["name"] == "answers in French" and entry["p_value"] < 0.05
        rejected = [c for c in entry["candidates"] if not c["accepted"]]
        assert [c["description"] for c in rejected] == ["mentions a number"]
        listing = json.loads((out / ".promptprism-outputs.json").read_text())
        assert listing["command"] == "split"  # describe amends split's folder: its owner and files stay
        code, printed, err = run_cli(*args)
        assert code == 0 and len(server.requests) == first, err  # all from the cache
        assert "model calls: 0 sent," in printed


def test_cli_describe_bad_input(tmp_path):
    from _cli_run import run_cli

    t, r = _write_sets(tmp_path)
    out = tmp_path / "run"
    assert run_cli("split", t, r, "--out", out, "--permutations", "50", "--quiet", "--no-report")[0] == 0
    code, _, err = run_cli("describe", out, "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                           "--retries", "0", "--timeout", "2", "--api-key-env", "")
    assert code == 2 and err.count("\n") == 1 and "unreachable" in err
    code, _, err = run_cli("describe", out, "--judge", "oracle")
    assert code == 2 and "--judge must be one of chat, embedding, lexical" in err
    code, _, err = run_cli("describe", out, "--namer", "words", "--judge", "lexical", "--no-report")
    assert code == 0, err  # offline: no endpoint needed
    code, _, err = run_cli("describe", tmp_path / "nowhere")
    assert code == 2 and err.startswith("error:")


# ------------------------------------------------------------------- the model-free namer, on real answers
def test_word_log_odds_by_hand():
    from promptprism.methods.naming import word_log_odds

    z = dict(word_log_odds(["la de", "la x"], ["the x", "the y"], prior=0.5))
    # "la": present in 2 of 2 A outputs, 0 of 2 B outputs
    delta = math.log(2.5 / 0.5) - math.log(0.5 / 2.5)
    var = 1 / 2.5 + 1 / 0.5 + 1 / 0.5 + 1 / 2.5
    assert z["la"] == pytest.approx(delta / math.sqrt(var))
    assert z["x"] == pytest.approx(0.0) and "the" not in z


def _recorded(topic_is_history: bool):
    from pathlib import Path

    data = Path(__file__).parent / "data"
    pools = []
    for name in ("test", "reference"):
        rows = [json.loads(x) for x in (data / f"smollm2_qa_{name}.jsonl").read_text().splitlines()]
        pools.append([Sample(r["prompt"], r["output"], i) for i, r in enumerate(rows)
                      if (r["topic"] == "history") == topic_is_history])
    return pools


def test_words_namer_names_the_french_answers_of_the_real_model():
    """SmolLM2's recorded answers: history questions answered under 'Always answer in French' vs not."""
    from promptprism.methods.naming import LexicalJudge, WordNamer

    a, b = _recorded(True)
    named = 0
    for seed in range(5):
        out = name_contrast(a, b, namer=WordNamer(), judge=LexicalJudge(), options=NamingOptions(seed=seed))
        named += out.status == "named"
        if out.status == "named":
            assert out.accuracy > 0.7 and out.p_value < 0.05 and out.name.startswith("uses words such as")
    assert named >= 4, named


def test_words_namer_names_nothing_between_two_runs_of_one_set_up():
    """The four other topics were answered under the same set-up in both files: no word list holds up."""
    from promptprism.methods.naming import LexicalJudge, WordNamer

    a, b = _recorded(False)
    outcomes = [name_contrast(a, b, namer=WordNamer(), judge=LexicalJudge(),
                              options=NamingOptions(seed=s)).status for s in range(5)]
    assert outcomes.count("named") <= 1, outcomes


def test_lexical_judge_refuses_free_text_names():
    from promptprism.methods.naming import LexicalJudge

    with pytest.raises(OptionError, match="lexical judge tests word-list names"):
        LexicalJudge().decide("answers in French", ["x"])


# ------------------------------------------------------------------------------------- Scendi clusters
def _hedging_model(seed=0):
    """One model, 10 prompts x 12 answers; on every prompt a third of its answers hedge, in words and in a
    direction of the output embedding the prompts do not predict (what the model adds beyond the prompt)."""
    from promptprism.data import PairedSet

    rng = np.random.default_rng(seed)
    n = 120
    topic = np.repeat(np.arange(10), 12)
    hedge = (np.arange(n) % 3) == 0
    pe = np.eye(10)[topic] + 0.05 * rng.normal(size=(n, 10))
    oe = np.concatenate([np.eye(10)[topic], np.zeros((n, 4))], axis=1) + 0.05 * rng.normal(size=(n, 14))
    oe[hedge, 10] += 2.0
    outs = [("Perhaps, it might be " if h else "It is ") + f"answer {i}" for i, h in enumerate(hedge)]
    return PairedSet(pe, oe, prompts=[f"question {t}" for t in topic], outputs=outs, name="m"), hedge


def test_describe_clusters_names_what_the_model_adds_beyond_the_prompt():
    from promptprism import Scendi
    from promptprism.methods.naming import LexicalJudge, WordNamer, cluster_pools, describe_clusters

    paired, hedge = _hedging_model()
    result = Scendi(kernel="cosine", n_clusters=2, top_k=30, seed=0).fit(paired)
    a, b = cluster_pools(result.clusters[0], paired)
    assert {s.prompt for s in b} <= {s.prompt for s in a} and not {s.index for s in a} & {s.index for s in b}
    record = describe_clusters(result, paired, namer=WordNamer(), judge=LexicalJudge())
    top = record["clusters"][0]
    assert top["status"] == "named" and ("perhaps" in top["name"] or "might" in top["name"]), top


@pytest.mark.slow
def test_reports_show_the_verified_names_and_the_rejected_candidates():
    import dataclasses

    from promptprism import PromptSplit, Scendi
    from promptprism.methods.naming import LexicalJudge, WordNamer, describe_clusters
    from promptprism.report import render_report

    test, ref = _french_history_sets()
    result = PromptSplit(kernel="gaussian", n_modes=2, permutations=100, seed=0).fit(test, ref)
    record = describe_modes(result, test, ref, namer=fixed_names("answers in French", "mentions a number"),
                            judge=KeywordJudge(french_keyword))
    page = render_report(dataclasses.replace(result, descriptions=record),
                         inputs={"test": test, "reference": ref}, progress=False)
    assert "In words: “answers in French”" in page and "“mentions a number”" in page and "rejected" in page
    paired, _ = _hedging_model()
    scendi = Scendi(kernel="cosine", n_clusters=2, top_k=30, seed=0).fit(paired)
    named = dataclasses.replace(scendi, descriptions=describe_clusters(scendi, paired, namer=WordNamer(),
                                                                       judge=LexicalJudge()))
    page = render_report(named, progress=False)
    assert "In words: “uses words such as" in page


@pytest.mark.slow
def test_cli_describe_on_a_result_without_fingerprints_checks_the_row_counts(tmp_path):
    """A result.json of an older version records no fingerprints: a 2-row set for a 144-row result was
    described, exit 0. Now its row count is refused; the right count passes with a warning."""
    from _cli_run import run_cli
    from promptprism.data import PairedSet
    from promptprism.data.save import save_paired

    t, r = _write_sets(tmp_path)
    out, old = tmp_path / "run", tmp_path / "old"
    assert run_cli("split", t, r, "--out", out, "--permutations", "50", "--quiet", "--no-report")[0] == 0
    old.mkdir()
    saved = json.loads((out / "result.json").read_text())
    saved.pop("inputs")
    saved.pop("schema_version")
    (old / "result.json").write_text(json.dumps(saved))
    test, _ = _french_history_sets()
    few = PairedSet(test.prompt_embeddings[:2], test.output_embeddings[:2], prompts=test.prompts[:2],
                    outputs=test.outputs[:2] if test.outputs else None, name="few")
    save_paired(tmp_path / "few.npz", few)
    code, _, err = run_cli("describe", old, tmp_path / "few.npz", r, "--namer", "words", "--judge", "lexical",
                           "--no-report", "--out", tmp_path / "d1")
    assert code == 2 and err.count("\n") == 1
    assert f"has 2 rows where the result was computed on {saved['n_test']:,}" in err
    assert not (tmp_path / "d1").exists()
    with pytest.warns(UserWarning, match="records no fingerprint of its inputs"):
        code, _, err = run_cli("describe", old, t, r, "--namer", "words", "--judge", "lexical", "--no-report",
                               "--out", tmp_path / "d2")
    assert code == 0, err


@pytest.mark.slow
def test_compcon_from_split_refuses_sets_the_split_was_not_computed_on(tmp_path):
    """compcon a b --from-split RESULT(c vs b) described c's prompts with a's answers, exit 0."""
    from _cli_run import run_cli
    from promptprism.cli.compcon import _check_split_inputs
    from promptprism.errors import InputError
    from promptprism.results import load_result

    t, r = _write_sets(tmp_path)
    out = tmp_path / "run"
    assert run_cli("split", t, r, "--out", out, "--permutations", "0", "--quiet", "--no-report")[0] == 0
    split = load_result(out)
    _check_split_inputs(split, out, {"test": str(t), "reference": str(r)})
    _check_split_inputs(split, out, {"test": "a model name, not a file", "reference": str(r)})
    with pytest.raises(InputError, match="--from-split .*holds the reference set of this result"):
        _check_split_inputs(split, out, {"test": str(r), "reference": str(t)})
