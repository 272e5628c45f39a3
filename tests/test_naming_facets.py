"""Names scored by log-probability (methods/naming/facets.py, verify.rank_separation): the rank test against
brute force, its calibration under judges that cannot tell the sides apart (ties included) and its power,
the facet namer and completion judge with scripted endpoints (malformed, empty, cached, unreachable), the
packaged server's log-probabilities, and SmolLM2-135M's recorded facet answers replayed.

The endpoints here are scripted, except the replay of the recorded answers (tests/data/smollm2_facets.json,
written by ``benchmarks/naming_llm.py --record``) and the slow test of the real server.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from promptprism.errors import OptionError
from promptprism.methods.naming import (
    FACETS,
    CompletionJudge,
    FacetNamer,
    NamingOptions,
    Sample,
    name_contrast,
    rank_separation,
)
from promptprism.methods.naming.facets import by_facet_turns, value_logprobs
from promptprism.methods.naming.judges import clip_text
from promptprism.methods.naming.verify import auc_interval

DATA = Path(__file__).parent / "data"


def content_of(alternatives):
    """OpenAI's ``logprobs.content`` of a one-token answer whose alternatives are [(token, logprob)]."""
    if not alternatives:
        return []
    top = [{"token": t, "logprob": lp} for t, lp in alternatives]
    return [{"token": alternatives[0][0], "logprob": alternatives[0][1], "top_logprobs": top}]


def split_request(messages):
    """(question, text, prefix) of a facet request."""
    user = messages[0]["content"]
    text = user.split('Text: """', 1)[1].rsplit('"""', 1)[0]
    return user.rsplit("\n\n", 1)[1], text, messages[1]["content"]


class LogprobScript:
    """A scripted endpoint with log-probabilities: ``alternatives(question, text) -> [(token, logprob)]``."""

    model = "scripted"

    def __init__(self, alternatives):
        self.alternatives, self.requests = alternatives, []

    def complete_logprobs(self, messages, *, top_logprobs=20, params=None):
        self.requests.append(messages)
        question, text, _ = split_request(messages)
        alts = self.alternatives(question, text)
        return (alts[0][0] if alts else ""), content_of(alts)


def bonjour_is_french(question, text):
    if "language" not in question:
        return [(" plain", -1.0), (" short", -1.5), (" the", -2.0)]
    if "Bonjour" in text:
        return [(" French", -0.2), (" English", -2.0), (" the", -3.0)]
    return [(" English", -0.3), (" the", -2.5), (" French", -3.5)]


def pools(n_a=20, n_b=20, french=1.0, seed=0):
    rng = np.random.default_rng(seed)
    a = [Sample(f"q{i % 10}", ("Bonjour, la réponse est" if rng.random() < french else "The answer is")
                + f" {i}", i) for i in range(n_a)]
    b = [Sample(f"q{i % 10}", f"The answer is {i}", i) for i in range(n_b)]
    return a, b


class FixedNames:
    model = "fixed"

    def __init__(self, *names):
        self.names = list(names)

    def propose(self, shown_a, shown_b, *, count=3):
        return self.names[:count]


class ScoreJudge:
    """Scores from ``draw(rng, text)``; seeded."""

    name = "scripted-scores"

    def __init__(self, draw, seed=0):
        self.draw, self.rng = draw, np.random.default_rng(seed)

    def score(self, description, texts, *, shown_a=(), shown_b=()):
        return [float(self.draw(self.rng, t)) for t in texts]


# ------------------------------------------------------------------------------------------ the rank test
def test_rank_separation_is_the_mann_whitney_auc_and_its_permutation_p_value_by_brute_force():
    a, b = [3.0, 1.0, 4.0, 1.5], [0.0, 2.0, 1.0, -1.0, 0.5]
    pairs = [(x > y) + 0.5 * (x == y) for x in a for y in b]
    auc = sum(pairs) / len(pairs)
    pooled = a + b

    def u_of(idx):
        chosen = [pooled[i] for i in idx]
        rest = [pooled[i] for i in range(len(pooled)) if i not in idx]
        return sum((x > y) + 0.5 * (x == y) for x in chosen for y in rest)

    u_obs = u_of(range(4))
    subsets = list(itertools.combinations(range(9), 4))
    exact = sum(u_of(s) >= u_obs - 1e-9 for s in subsets) / len(subsets)
    sep = rank_separation(a, b, seed=0, permutations=20000)
    assert sep.accuracy == pytest.approx(auc) and sep.statistic == "auc"
    assert sep.p_value == pytest.approx(exact, abs=0.01)
    assert sep.mean_a == pytest.approx(np.mean(a)) and (sep.n_a, sep.n_b) == (4, 5)
    assert rank_separation(a, b, seed=0, permutations=500) == rank_separation(a, b, seed=0, permutations=500)


def test_auc_interval_is_hanley_mcneil_by_hand():
    # AUC 0.5, 10 + 10: Q1 = Q2 = 1/3, var = (0.25 + 9 (1/3 - 1/4) * 2) / 100 = 0.0175
    lo, hi = auc_interval(0.5, 10, 10, 0.95)
    half = 1.959964 * math.sqrt(0.0175)
    assert (lo, hi) == (pytest.approx(0.5 - half, abs=1e-5), pytest.approx(0.5 + half, abs=1e-5))
    assert auc_interval(1.0, 10, 10, 0.95)[1] == 1.0


def test_constant_scores_are_never_significant_and_bad_scores_are_refused():
    sep = rank_separation([0.0] * 12, [0.0] * 12, seed=0, permutations=999)
    assert sep.p_value == 1.0 and sep.accuracy == 0.5
    a, b = pools()
    out = name_contrast(a, b, namer=FixedNames("x", "y"), judge=ScoreJudge(lambda rng, t: 1.0))
    assert out.status == "no description held up"
    assert [c["p_adjusted"] for c in out.candidates] == [1.0, 1.0]
    with pytest.raises(OptionError, match="finite"):
        rank_separation([0.0, float("nan")], [1.0], seed=0)
    with pytest.raises(OptionError, match="both sides"):
        rank_separation([], [1.0], seed=0)


@pytest.mark.slow  # 300 contrasts; the test by brute force: test_rank_separation_is_the_mann_whitney...
@pytest.mark.parametrize("draw", [lambda rng, t: rng.normal(), lambda rng, t: rng.integers(0, 3)],
                         ids=["continuous", "tied"])
def test_calibration_random_scores_accept_names_at_most_at_alpha(draw):
    """A judge whose scores ignore the text: over 300 contrasts of three candidates each (Holm), a name is
    accepted at most at alpha (+ 2.5 standard errors); the permutation test stays exact with ties."""
    runs, alpha = 300, 0.05
    accepted = 0
    for seed in range(runs):
        a, b = pools(seed=seed)
        out = name_contrast(a, b, namer=FixedNames("x", "y", "z"), judge=ScoreJudge(draw, seed=seed),
                            options=NamingOptions(seed=seed, permutations=999))
        accepted += out.status == "named"
    assert accepted / runs <= alpha + 2.5 * math.sqrt(alpha * (1 - alpha) / runs), accepted


def test_power_scores_shifted_by_one_sd_on_side_a_name_it():
    named = 0
    for seed in range(40):
        a, b = pools(n_a=40, n_b=40, seed=seed)
        judge = ScoreJudge(lambda rng, t: rng.normal() + ("Bonjour" in t), seed=seed)
        out = name_contrast(a, b, namer=FixedNames("answers in French"), judge=judge,
                            options=NamingOptions(seed=seed, permutations=999))
        named += out.status == "named"
        if out.status == "named":
            assert out.measure == "auc" and out.accuracy > 0.5 and out.interval[0] < out.accuracy
    assert named >= 32, named


# ------------------------------------------------------------------------- the facet namer and its judge
def test_value_logprobs_keeps_words_merges_variants_and_bounds_the_rest():
    values, floor = value_logprobs(content_of([(" French", -0.5), ("French", -1.0), (" the", -2.0),
                                               (" 12", -3.0), (" an", -4.0)]))
    assert values == {"French": pytest.approx(float(np.logaddexp(-0.5, -1.0)))} and floor == -4.0
    for bad in ([], [{"token": "x"}], content_of([(" French", float("nan"))])):
        with pytest.raises(ValueError):
            value_logprobs(bad)


def test_facet_namer_and_completion_judge_name_the_french_side_without_naming_it_first():
    endpoint = LogprobScript(bonjour_is_french)
    a, b = pools()
    out = name_contrast(a, b, namer=FacetNamer(endpoint), judge=CompletionJudge(endpoint))
    assert out.status == "named" and out.name == "This text is written in French"
    assert out.measure == "auc" and out.accuracy == 1.0 and out.p_value < 0.01
    held = sum(out.n_held_out)
    # the namer: every facet on every shown sample; the judge: the language facet on every held-out one
    assert len(endpoint.requests) == len(FACETS) * sum(out.n_shown) + held
    for messages in endpoint.requests:  # no value is put in the model's mouth
        question, _, prefix = split_request(messages)
        assert "French" not in question and "French" not in prefix


def test_facets_take_turns_so_one_noisy_facet_cannot_crowd_out_the_others():
    ranked = [{"name": "This text is formatted as a x", "t": 5.0},
              {"name": "This text is formatted as a y", "t": 4.0},
              {"name": "This text is written in French", "t": 2.0}]
    assert [r["name"] for r in by_facet_turns(ranked, FACETS)][:2] == [
        "This text is formatted as a x", "This text is written in French"]


def test_malformed_empty_and_uninformative_facet_answers():
    a, b = pools()
    judge = CompletionJudge(LogprobScript(bonjour_is_french))
    out = name_contrast(a, b, namer=FacetNamer(LogprobScript(lambda q, t: [])), judge=judge)
    assert out.status == "namer failed" and "top_logprobs" in out.note
    same = LogprobScript(lambda q, t: [(" English", -0.3), (" French", -2.0)])
    out = name_contrast(a, b, namer=FacetNamer(same), judge=judge)
    assert out.status == "no description held up" and out.note == "the namer proposed no description"
    with pytest.raises(OptionError, match="facet names"):
        judge.score("answers in French", ["x"])


def test_too_few_held_out_samples_means_no_name_and_no_call():
    endpoint = LogprobScript(bonjour_is_french)
    a, b = pools(n_a=6, n_b=20)
    out = name_contrast(a, b, namer=FacetNamer(endpoint), judge=CompletionJudge(endpoint))
    assert out.status == "too few held-out samples" and out.name is None and endpoint.requests == []


# ------------------------------------------------------------------------- the client, the CLI, the server
def _respond_with_logprobs(body, stage, n):
    if not body.get("logprobs"):
        return "no"
    question, text, _ = split_request(body["messages"])
    alts = bonjour_is_french(question, text)
    return {"content": alts[0][0], "logprobs": {"content": content_of(alts[: body["top_logprobs"]])}}


def test_client_reads_and_caches_logprobs_and_refuses_a_server_without_them(tmp_path):
    from compcon_fakes import ScriptedServer
    from promptprism.methods.compcon.clients import ChatClient, EndpointError

    messages = [{"role": "user", "content": 'Text: """Bonjour"""\n\nIn which language is this text written?'},
                {"role": "assistant", "content": "This text is written in"}]
    with ScriptedServer(_respond_with_logprobs) as server:
        client = ChatClient(server.base_url, "m", api_key_env=None, cache_dir=tmp_path)
        text, content = client.complete_logprobs(messages, top_logprobs=2)
        assert text == " French"
        assert [x["token"] for x in content[0]["top_logprobs"]] == [" French", " English"]
        assert server.requests[0]["logprobs"] is True and server.requests[0]["top_logprobs"] == 2
        assert client.complete_logprobs(messages, top_logprobs=2) == (text, content)
        assert (client.n_requests, client.n_cache_hits) == (1, 1)
        assert client.chat(messages) == "no"  # a plain request is another cache entry
    with ScriptedServer(lambda body, stage, n: "yes") as server:
        client = ChatClient(server.base_url, "m", api_key_env=None)
        with pytest.raises(EndpointError, match="log-probabilities"):
            client.complete_logprobs(messages)


@pytest.mark.slow
def test_cli_describe_with_facets_names_the_mode_and_a_rerun_makes_no_call(tmp_path):
    from _cli_run import run_cli
    from compcon_fakes import ScriptedServer
    from test_naming import _write_sets

    t, r = _write_sets(tmp_path)
    out = tmp_path / "run"
    assert run_cli("split", t, r, "--out", out, "--permutations", "100", "--modes", "2", "--quiet",
                   "--no-report")[0] == 0
    with ScriptedServer(_respond_with_logprobs) as server:
        args = ("describe", out, "--base-url", server.base_url, "--model", "fake", "--namer", "facets",
                "--judge", "completion", "--chat-cache", tmp_path / "cache", "--api-key-env", "")
        code, printed, err = run_cli(*args)
        assert code == 0, err
        first = len(server.requests)
        assert "test mode 1: 'This text is written in French' (held-out AUC 1.00" in printed
        entry = json.loads((out / "result.json").read_text())["descriptions"]["modes"][0]
        assert entry["measure"] == "auc" and entry["candidates"][0]["statistic"] == "auc"
        report = (out / "report.html").read_text()
        assert "held out, the judge tells the two sides apart with AUC 1.00" in report
        code, printed, err = run_cli(*args)
        assert code == 0 and len(server.requests) == first, err
        assert "model calls: 0 sent," in printed
    code, _, err = run_cli("describe", out, "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--namer",
                           "facets", "--judge", "completion", "--retries", "0", "--timeout", "2",
                           "--api-key-env", "")
    assert code == 2 and err.count("\n") == 1 and "unreachable" in err
    code, _, err = run_cli("describe", out, "--namer", "words", "--judge", "completion")
    assert code == 2 and err.count("\n") == 1 and "--namer facets" in err


def test_serve_leaves_a_final_assistant_message_open_and_ranks_logprobs():
    from types import SimpleNamespace as M

    from promptprism.generate._serve import chatml, top_logprobs

    assert chatml([M(role="user", content="Q")]) == "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n"
    assert chatml([M(role="user", content="Q"), M(role="assistant", content="It is")]).endswith(
        "<|im_start|>assistant\nIt is")
    ids, logps = top_logprobs([0.0, 2.0, 1.0], 2)
    z = math.log(1 + math.e + math.e ** 2)
    assert ids == [1, 2] and logps == [pytest.approx(2 - z), pytest.approx(1 - z)]


@pytest.mark.slow
def test_the_packaged_server_answers_logprobs_consistent_with_its_greedy_answer():
    pytest.importorskip("cyllama")
    from promptprism.generate.llm_server import local_llm_server, server_available
    from promptprism.methods.compcon.clients import ChatClient

    if server_available() is not None:
        pytest.skip(server_available())
    messages = [{"role": "user", "content": 'Text: """Bonjour, je suis content."""\n\nIn which language is '
                                            "this text written?"},
                {"role": "assistant", "content": "This text is written in"}]
    with local_llm_server() as server:
        client = ChatClient(server.base_url, server.model, api_key_env=None)
        text, content = client.complete_logprobs(messages, top_logprobs=5,
                                                 params={"temperature": 0.0, "max_tokens": 2})
        plain = client.chat([{"role": "user", "content": "Say yes."}])
    assert len(content) == 2 and text == content[0]["token"] + content[1]["token"]
    top = [x["logprob"] for x in content[0]["top_logprobs"]]
    assert len(top) == 5 and top == sorted(top, reverse=True) and sum(math.exp(x) for x in top) <= 1 + 1e-9
    assert content[0]["token"] == content[0]["top_logprobs"][0]["token"]  # greedy: the likeliest token
    assert content[0]["logprob"] == top[0] and isinstance(plain, str)


# --------------------------------------------------------------------- SmolLM2-135M's facet answers, replayed
class Replay:
    """The recorded facet answers of SmolLM2-135M-Instruct (``benchmarks/naming_llm.py --record``)."""

    def __init__(self):
        recorded = json.loads((DATA / "smollm2_facets.json").read_text(encoding="utf-8"))
        self.model, self.table, self.calls = recorded["model"], recorded["facets"], 0

    def complete_logprobs(self, messages, *, top_logprobs=20, params=None):
        self.calls += 1
        question, text, _ = split_request(messages)
        key = hashlib.sha256(clip_text(text).encode("utf-8")).hexdigest()[:16]
        alts = [tuple(x) for x in self.table[question][key]][:top_logprobs]
        return alts[0][0], content_of(alts)


def _recorded(history: bool):
    """Side A, side B: the French-history mode's pools (its prompts as PromptSplit found them, recorded
    beside the answers), or every answer of the four other topics."""
    recorded = json.loads((DATA / "smollm2_facets.json").read_text(encoding="utf-8"))
    wanted = set(recorded["mode_prompts"])
    pools = []
    for name in ("test", "reference"):
        rows = [json.loads(x) for x in (DATA / f"smollm2_qa_{name}.jsonl").read_text().splitlines()]
        pools.append([Sample(r["prompt"], r["output"], i) for i, r in enumerate(rows)
                      if (r["prompt"] in wanted if history else r["topic"] != "history")])
    return pools


def smollm2_outcomes(history: bool, seeds=range(5)):
    a, b = _recorded(history)
    endpoint = Replay()
    return [name_contrast(a, b, namer=FacetNamer(endpoint), judge=CompletionJudge(endpoint),
                          options=NamingOptions(seed=seed)) for seed in seeds]


def test_smollm2_names_its_french_history_mode_from_its_recorded_facet_answers():
    """SmolLM2-135M as namer and judge, on its own recorded answers on the French-history mode's 13 prompts
    (history under 'Always answer in French' vs the plain set-up): the kept name mentions French on at
    least 3 of seeds 0-4 (measured: 4 of 5, 7 of 10 over seeds 0-9; see docs/naming.md)."""
    outcomes = smollm2_outcomes(True)
    french = [o for o in outcomes if o.status == "named" and "French" in o.name]
    assert len(french) >= 3, [(o.status, o.name) for o in outcomes]
    assert all(o.p_value < 0.05 and o.accuracy > 0.8 and o.measure == "auc" for o in french)


def test_smollm2_names_nothing_between_two_runs_of_one_set_up():
    """The four other topics, answered under the same set-up in both files: no facet name holds up."""
    outcomes = smollm2_outcomes(False)
    assert all(o.status == "no description held up" for o in outcomes), [(o.status, o.name) for o in outcomes]


@pytest.mark.parametrize("namer, judge, expected", [
    ("words", "completion", "--judge completion scores the facet names of --namer facets"),
    ("facets", "lexical", "--judge lexical tests the word lists of --namer words"),
    ("words", "length", "--judge length scores the names of --namer length"),
    ("length", "lexical", "length names need --judge length, chat or embedding"),
    ("length", "completion", "--judge completion scores the facet names of --namer facets"),
])
def test_describe_refuses_a_judge_that_cannot_read_the_namers_names(namer, judge, expected):
    from promptprism.cli.describe import _namer_and_judge
    from promptprism.errors import OptionError

    link = {"api_key_env": "", "timeout": 2.0, "retries": 0, "cache": None, "seed": 0}
    with pytest.raises(OptionError, match=expected):
        _namer_and_judge(namer, judge, base_url="http://127.0.0.1:9/v1", model="m", judge_base_url="",
                         judge_model="", text_model="minilm", link=link)
