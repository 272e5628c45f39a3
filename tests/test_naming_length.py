"""The length namer and judge (``--namer length --judge length``): a model-free name for answers cut short or
drawn out, tested on held-out samples by rank like any scoring judge."""

from __future__ import annotations

import json

import numpy as np
import pytest

from promptprism.errors import OptionError
from promptprism.methods.naming import (
    LengthJudge,
    LengthNamer,
    NamingOptions,
    Sample,
    length_name,
    name_contrast,
)
from promptprism.methods.naming.words import word_count


def words(n: int, seed: int = 0) -> str:
    return " ".join(f"w{(seed + i) % 97}" for i in range(n))


def pools(lengths_a, lengths_b):
    a = [Sample(f"q{i % 10}", words(n, i), i) for i, n in enumerate(lengths_a)]
    b = [Sample(f"q{i % 10}", words(n, i), i) for i, n in enumerate(lengths_b)]
    return a, b


def test_word_count_and_length_name_by_hand():
    assert word_count("Hydrogen.") == 1 and word_count("It is, in fact, H2O!") == 5
    assert length_name(["a", "b c", "d"], ["x y z w", "x y z", "x y z w v"]) == \
        "answers are shorter (median 1 word against 4 words)"
    assert length_name(["x y z w"] * 3, ["a"] * 4) == "answers are longer (median 4 words against 1 word)"
    assert length_name(["a b", "c"], ["d", "e f"]) is None  # equal medians (1.5): nothing to propose


def test_length_judge_scores_word_counts_in_the_named_direction_and_refuses_other_names():
    judge = LengthJudge()
    texts = ["one", "one two three", ""]
    assert judge.score("answers are shorter (median 1 word against 9 words)", texts) == [-1.0, -3.0, -0.0]
    assert judge.score("answers are longer (median 9 words against 1 word)", texts) == [1.0, 3.0, 0.0]
    with pytest.raises(OptionError, match="length judge scores length names"):
        judge.score("uses words such as \"la\"", texts)


def test_answers_cut_short_are_named_shorter_on_held_out_samples():
    rng = np.random.default_rng(0)
    a, b = pools(rng.integers(1, 4, 30), rng.integers(20, 60, 30))
    out = name_contrast(a, b, namer=LengthNamer(), judge=LengthJudge(), options=NamingOptions(seed=0))
    assert out.status == "named" and out.name.startswith("answers are shorter (median ")
    assert out.measure == "auc" and out.accuracy == 1.0 and out.p_value < 0.001


def test_calibration_same_length_distributions_accept_at_most_alpha():
    """Both sides' word counts from one distribution, 300 contrasts: the length name (proposed whenever the
    shown medians differ) is accepted at most at alpha + 2.5 standard errors."""
    runs, accepted, proposed = 300, 0, 0
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        a, b = pools(rng.integers(1, 60, 20), rng.integers(1, 60, 20))
        out = name_contrast(a, b, namer=LengthNamer(), judge=LengthJudge(),
                            options=NamingOptions(seed=seed, permutations=499))
        proposed += out.status != "no description held up" or bool(out.candidates)
        accepted += out.status == "named"
    assert proposed >= 0.9 * runs
    assert accepted / runs <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / runs), accepted


def test_power_answers_half_as_long_are_named():
    named = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        a, b = pools(rng.integers(10, 30, 20), rng.integers(20, 60, 20))
        out = name_contrast(a, b, namer=LengthNamer(), judge=LengthJudge(),
                            options=NamingOptions(seed=seed, permutations=499))
        named += out.status == "named" and out.name.startswith("answers are shorter")
    assert named >= 32, named


def test_cli_describe_names_a_mode_of_answers_cut_short_without_a_model(tmp_path):
    """A split whose test model answers topic 0 in one word: `describe --namer length --judge length` names
    that mode 'answers are shorter', writes it to result.json, and makes no model call."""
    from _cli_run import run_cli
    from promptprism.data import PairedSet
    from promptprism.data.save import save_paired

    rng = np.random.default_rng(0)
    topics = np.repeat(np.arange(10), 24)
    prompts = [f"topic {t} question {(i // 6) % 4}" for i, t in enumerate(topics)]
    centres_t, centres_z = rng.normal(size=(10, 8)), rng.normal(size=(10, 8))
    for name, terse in (("test", True), ("ref", False)):
        pe = centres_t[topics] + 0.1 * rng.normal(size=(topics.size, 8))
        oe = centres_z[topics] + 0.3 * rng.normal(size=(topics.size, 8))
        oe[terse & (topics == 0)] += 3.0
        outs = [words(1 if terse and t == 0 else int(rng.integers(15, 40)), i) for i, t in enumerate(topics)]
        save_paired(tmp_path / f"{name}.npz", PairedSet(pe, oe, prompts=prompts, outputs=outs, name=name))
    out = tmp_path / "run"
    code, _, err = run_cli("split", tmp_path / "test.npz", tmp_path / "ref.npz", "--out", out,
                           "--permutations", "100", "--modes", "2", "--quiet", "--no-report")
    assert code == 0, err
    code, printed, err = run_cli("describe", out, "--namer", "length", "--judge", "length", "--no-report")
    assert code == 0, err
    entry = json.loads((out / "result.json").read_text())["descriptions"]["modes"][0]
    assert entry["status"] == "named" and entry["name"].startswith("answers are shorter (median 1 word")
    assert entry["p_value"] < 0.05 and "model calls: 0 sent" in printed
