"""The shared checks (tests/method_tester.py) on the two methods that read models' answers: CompCon (text,
on the scripted endpoint of :mod:`compcon_text_fakes`) and the naming of PromptSplit's modes
(:mod:`promptprism.methods.naming`: a scripted namer with a deterministic keyword judge, and the model-free
word namer and lexical judge through ``describe``). PROTOCOL AND STATISTICS TESTS: the answers are scripted.

Each case: the same seed gives the same result, result.json matches its schema and reads back equal, a bad
parameter is refused naming it, the command line (where the case has one) gives the library's result and
refuses bad flags in one line, and the reference slot: CompCon's attribute scores and held-out sign test,
naming's acceptance statistics (Fisher's exact test, Holm, the accuracy), recomputed from the definitions.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import math
import shutil
import tempfile
import types
from pathlib import Path

import numpy as np
import pytest

from compcon_fakes import ScriptedServer
from compcon_text_fakes import BANK, HISTORY_PROMPTS, script
from method_tester import MethodCase, MethodTester

pytest.importorskip("PIL")  # (compcon_fakes draws images)

# every case runs its method end to end through a scripted HTTP endpoint, most of them twice (~6 s in all):
# the full suite's; the fast subset keeps each method's own protocol tests (test_compcon_text.py,
# test_compcon_protocol.py, test_naming_*.py)
pytestmark = pytest.mark.slow


# ------------------------------------------------------------------------------------------------ CompCon
@functools.cache
def _server(french: bool) -> ScriptedServer:
    """One scripted endpoint per script for the whole session (its threads are daemons)."""
    return ScriptedServer(script(french=french)).__enter__()


def _client(model: str, **kw):
    from promptprism.llm import ChatClient

    return ChatClient(_server(True).base_url, model, api_key_env=None, timeout=5, retries=0, **kw)


def _compcon(**options):
    from promptprism.methods.compcon import CompCon
    from promptprism.methods.compcon.modality import TextModality
    from promptprism.methods.naming import ChatJudge

    seed = options.get("seed", 0)
    judge = TextModality(judge=ChatJudge(_client("judge", seed=seed)), name="chat (judge)")
    return CompCon(**{"llm": _client("llm", seed=seed), "modality": judge, "n_discovery_prompts": 10,
                      "iterations": 1, "n_generated": 10, "seed": seed, **options})


def _compcon_fit(est, bank):
    """Models A and B answer through the endpoint as the command's ``chat:MODEL`` arguments do."""
    from promptprism.methods.compcon import ChatAnswers

    answers = [ChatAnswers(_client(m, temperature=0.7, max_tokens=128, seed=est.seed), seed=est.seed,
                           name=f"{side} ({m})") for side, m in (("A", "model-a"), ("B", "model-b"))]
    return est.fit(*answers, bank)


def _compcon_data(folder: Path):
    """The prompt bank, and for the command line: the two chat models, the bank's file, the endpoint."""
    folder.mkdir(parents=True, exist_ok=True)
    bank = folder / "bank.txt"
    bank.write_text("\n".join(BANK) + "\n", encoding="utf-8")
    return list(BANK), ["chat:model-a", "chat:model-b", "--prompt-bank", str(bank),
                        "--base-url", _server(True).base_url]


def _compcon_truth(bank) -> dict:
    """From the scripted models' definition: model A answers exactly the history prompts in French, so the
    top attribute diverges on those prompts and its score (SPEC: the share of the bank's prompts where it
    diverges, fraction_A >= min_fraction > fraction_B) is their share of the bank."""
    history = [p for p in bank if p in HISTORY_PROMPTS]
    return {"attributes[0].attribute": "answers in French", "attributes[0].diverging_prompts": history,
            "attributes[0].n_diverging": len(history), "attributes[0].score": len(history) / len(bank)}


def _sign_test_brute(a_only: int, b_only: int) -> float:
    """One-sided exact sign test: P(X >= a_only) for X ~ Binomial(a_only + b_only, 1/2), summed term by
    term."""
    n = a_only + b_only
    return sum(math.comb(n, k) for k in range(a_only, n + 1)) / 2 ** n if n else 1.0


def _holm_brute(p: list[float]) -> list[float]:
    """Holm's step-down adjustment by its definition: p_(i) -> max over j <= i of
    min(1, (m - j + 1) p_(j))."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    out = [0.0] * len(p)
    for rank, i in enumerate(order):
        out[i] = max(min(1.0, (len(p) - r) * p[order[r]]) for r in range(rank + 1))
    return out


def _compcon_statistics(bank, result: dict) -> dict:
    """Every attribute's score (n_diverging / n_prompts) and held-out test (the sign test of its A-only
    against B-only prompts, Holm over the attributes), recomputed from the result's own counts."""
    attrs = result["attributes"]
    raw = [_sign_test_brute(a["held_out"]["a_only"], a["held_out"]["b_only"]) for a in attrs]
    out = {}
    for k, (a, q) in enumerate(zip(attrs, _holm_brute(raw), strict=True)):
        out[f"attributes[{k}].score"] = len(a["diverging_prompts"]) / a["n_prompts"]
        out[f"attributes[{k}].held_out.p_value"] = raw[k]
        out[f"attributes[{k}].held_out.p_adjusted"] = q
        out[f"attributes[{k}].held_out.verified"] = q < result["config"]["alpha"]
    return out


COMPCON = MethodCase(
    name="compcon-text",
    estimator=_compcon,
    fit=_compcon_fit,
    write=_compcon_data,
    command=["compcon", "--text", "--model", "llm", "--judge-model", "judge", "--api-key-env", "",
             "--timeout", "5", "--retries", "0", "--discovery-prompts", "10", "--iterations", "1",
             "--generated-prompts", "10", "--seed", "0"],
    bad_options={"--discovery-prompts": "0", "--alpha": "2", "--iterations": "-1"},
    reference=_compcon_truth,
    statistic_reference=_compcon_statistics,
    bad_parameters={"n_discovery_prompts": 0, "alpha": 2.0, "iterations": -1},
)


# ------------------------------------------------------------------------------------------------- naming
class ScriptedNamer:
    """Proposes the same names whatever it is shown (a chat model's answer, scripted)."""

    model = "scripted-namer"

    def chat(self, messages):
        return "Model A contains:\n- answers in French\n- uses numbers"


class KeywordJudge:
    """Deterministic: a description applies when the text holds its keyword."""

    name = "keyword"

    def decide(self, description, texts, *, shown_a, shown_b):
        key = "Bonjour" if "French" in description else None
        return [key is not None and key in t for t in texts]


def _naming_data(folder: Path, per_prompt: int = 4):
    """10 topics x 4 questions; the test model answers topic 0 in French (its outputs shifted), and the
    PromptSplit result of the two sets whose modes are named."""
    from promptprism import PromptSplit
    from promptprism.data import PairedSet

    rng = np.random.default_rng(0)
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

    test, ref = build(True, "test"), build(False, "reference")
    result = PromptSplit(kernel="gaussian", method="exact", n_modes=3, permutations=50, seed=0).fit(test, ref)
    return (result, test, ref), []


_naming_fixture = functools.cache(lambda: _naming_data(None))


def _naming(**options):
    from promptprism.methods.naming import NamingOptions

    return types.SimpleNamespace(namer=ScriptedNamer(), judge=KeywordJudge(),
                                 options=NamingOptions(**{"permutations": 99, **options}))


def _naming_fit(est, data):
    """The PromptSplit result with its modes named (what ``describe`` stores as ``descriptions``)."""
    from promptprism.methods.naming import describe_modes

    result, test, ref = data
    record = describe_modes(result, test, ref, namer=est.namer, judge=est.judge, options=est.options)
    return dataclasses.replace(result, descriptions=record)


def _naming_statistics(data, result: dict) -> dict:
    """Each candidate's acceptance statistics from its 2 x 2 table by the definitions: Fisher's one-sided
    p-value as the hypergeometric tail summed term by term, the judge's accuracy as a side classifier,
    Holm over the mode's candidates, accepted when the adjusted p-value is below alpha."""
    alpha = result["descriptions"]["config"]["alpha"]
    out = {}
    modes = result["descriptions"]["modes"]
    assert any(m["candidates"] for m in modes), "no mode reached the held-out test"
    for i, mode in enumerate(modes):
        raw = []
        for j, c in enumerate(mode["candidates"]):
            ka, na, kb, nb = c["matches_a"], c["n_a"], c["matches_b"], c["n_b"]
            total, applies = na + nb, ka + kb
            tail = sum(math.comb(applies, x) * math.comb(total - applies, na - x)
                       for x in range(ka, min(na, applies) + 1))
            raw.append(min(1.0, tail / math.comb(total, na)))
            out[f"descriptions.modes[{i}].candidates[{j}].p_value"] = raw[-1]
            out[f"descriptions.modes[{i}].candidates[{j}].accuracy"] = (ka + nb - kb) / total
        for j, q in enumerate(_holm_brute(raw)):
            out[f"descriptions.modes[{i}].candidates[{j}].p_adjusted"] = q
            out[f"descriptions.modes[{i}].candidates[{j}].accepted"] = q < alpha
    return out


NAMING = MethodCase(
    name="naming-modes",
    estimator=_naming,
    fit=_naming_fit,
    write=lambda folder: _naming_fixture(),  # one PromptSplit fit, shared
    statistic_reference=_naming_statistics,
    reference_tolerance=(1e-9, 0.0),
    bad_parameters={"alpha": 2.0, "candidates": 0, "min_held_out": 0},
)

@functools.cache
def _words_folder() -> Path:
    """The naming fixture as files, written and split once per process (each test works on a copy)."""
    from _cli_run import run_cli
    from promptprism.data.save import save_paired

    (_, test, ref), _ = _naming_fixture()
    folder = Path(tempfile.mkdtemp(prefix="naming-words-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    paths = [folder / "test.npz", folder / "reference.npz"]
    for path, s in zip(paths, (test, ref), strict=True):
        save_paired(path, s)
    code, _, err = run_cli("split", *paths, "--out", folder / "split", "--kernel", "gaussian", "--method",
                           "exact", "--modes", "3", "--permutations", "50", "--seed", "0", "--quiet",
                           "--no-report")
    assert code == 0, err
    return folder


def _words_data(folder: Path):
    """The naming fixture as files: both sets as .npz (texts included) and their ``split`` results folder,
    which ``describe`` reads; the library reads the same files."""
    from promptprism import load_paired, load_result

    shutil.copytree(_words_folder(), folder, dirs_exist_ok=True)  # the split's inputs sit beside it
    paths = [folder / "test.npz", folder / "reference.npz"]
    split = folder / "split"
    data = (load_result(split), *(load_paired(p) for p in paths))
    return data, [str(split), *map(str, paths)]


def _words(**options):
    from promptprism.methods.naming import LexicalJudge, NamingOptions, WordNamer

    return types.SimpleNamespace(namer=WordNamer(), judge=LexicalJudge(), options=NamingOptions(**options))


#: the model-free namer and judge (word log-odds, word presence): the same run through ``describe``
NAMING_WORDS = MethodCase(
    name="naming-words",
    estimator=_words,
    fit=_naming_fit,
    write=_words_data,
    command=["describe", "--namer", "words", "--judge", "lexical", "--seed", "0"],
    bad_options={"--candidates": "0", "--alpha": "2", "--min-held-out": "0"},
    ignore=(*NAMING.ignore, "calls"),  # the command counts its model calls (none here)
    statistic_reference=_naming_statistics,
    bad_parameters={"candidates": 0},
)

CASES = [COMPCON, NAMING, NAMING_WORDS]


# -------------------------------------------------------------------------------------------------- checks
@pytest.mark.parametrize("case", CASES, ids=str)
def test_numbers_equal_the_reference_implementation(case, tmp_path):
    MethodTester(case).run_reference_test(tmp_path)


@pytest.mark.parametrize("case", [c for c in CASES if c.command is not None], ids=str)
def test_command_line_equals_library(case, tmp_path):
    MethodTester(case).run_cli_test(tmp_path)


@pytest.mark.parametrize(("case", "flag"), [pytest.param(c, f, id=f"{c.name}{f}") for c in CASES
                                            for f in c.bad_options])
def test_each_bad_option_is_one_line_naming_its_flag(case, flag, tmp_path):
    MethodTester(case).run_bad_option_test(tmp_path, flag)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_same_seed_gives_the_same_result(case, tmp_path):
    MethodTester(case).run_determinism_test(tmp_path)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_result_json_matches_its_schema_and_reads_back(case, tmp_path):
    MethodTester(case).run_round_trip_test(tmp_path)


@pytest.mark.parametrize(("case", "name"), [pytest.param(c, n, id=f"{c.name}-{n}") for c in CASES
                                            for n in c.bad_parameters])
def test_each_bad_parameter_is_refused_naming_it(case, name, tmp_path):
    MethodTester(case).run_bad_parameter_test(tmp_path, name)


def test_the_naming_reference_catches_a_wrong_statistic(tmp_path):
    """The reference slot can fail: a result whose kept p-value was not Holm-adjusted is caught."""
    data, _ = NAMING.write(tmp_path)
    good = NAMING.fit(NAMING.estimator(), data).to_dict()
    broken = dataclasses.replace(NAMING, fit=lambda est, d: _halve_adjusted(good))
    with pytest.raises(AssertionError):
        MethodTester(broken).run_reference_test(tmp_path)


def _halve_adjusted(result: dict) -> dict:
    import copy

    out = copy.deepcopy(result)
    for mode in out["descriptions"]["modes"]:
        for c in mode["candidates"]:
            c["p_adjusted"] = c["p_adjusted"] / 2
    return out
