"""The odd values issue 42 named, one by one: each refused up front in one line naming its flag, or handled.

(The sweep over every numeric option of every command is tests/test_cli_odd_values.py.)
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from _cli_run import run_cli
from promptprism.errors import OptionError


def _npz(path, *, n=60, d=8, scale=1.0, seed=0, **extra):
    rng = np.random.default_rng(seed)
    bank = rng.standard_normal((6, d))  # one embedding per prompt string
    np.savez(path, prompt_embeddings=bank[np.arange(n) % 6],
             output_embeddings=scale * rng.standard_normal((n, d)),
             prompts=np.array([f"prompt {i % 6}" for i in range(n)]), **extra)
    return path


def _one_error(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------------------------------------------------------------ generate
def test_generate_refuses_an_image_the_readers_would_refuse(tmp_path, monkeypatch):
    """A generated image over the readers' pixel limit is not written (``embed`` would refuse it later)."""
    from PIL import Image

    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 200)  # the painter's images are 16 x 16 = 256 pixels
    prompts = tmp_path / "p.txt"
    prompts.write_text("a\n")
    code, _, err = run_cli("generate", prompts, "--out", tmp_path / "m.jsonl", "--generator",
                           "test_generate:painter", "-q")
    assert code == 2
    assert "image is 16 x 16 = 256 pixels, over the limit of 200 pixels" in _one_error(err)
    assert not list(tmp_path.glob("m_images/*.png")) and not (tmp_path / "m.jsonl").exists()
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 256)  # at the limit: written
    code, _, err = run_cli("generate", prompts, "--out", tmp_path / "m.jsonl", "--generator",
                           "test_generate:painter", "-q")
    assert code == 0 and len(list(tmp_path.glob("m_images/*.png"))) == 1, err


@pytest.mark.slow
def test_a_guidance_scale_that_overflows_the_sample_is_refused(tmp_path):
    """--guide-scale 1e308 made every sample NaN, written as black images with exit 0; now one line."""
    pytest.importorskip("diffusers")
    from _odd_values_env import open_env

    with open_env(tmp_path) as env:
        out = tmp_path / "g.jsonl"
        argv = ["generate", tmp_path / "bag.txt", "--out", out, "--generator",
                "promptprism.models.fashion:generate", "--guide-reference", tmp_path / "ref.jsonl", "-q"]
        assert env.guided is not None
        code, _, err = run_cli(*argv, "--guide-scale", "1e308")
        line = _one_error(err)
        assert code == 2 and "the guided sample is not finite after step 1 of 2" in line
        assert "use a smaller --guide-scale" in line
        assert not list(tmp_path.glob("g_images/*.png")) and not out.exists()
        code, _, err = run_cli(*argv, "--guide-scale", "200")  # a large finite step still works
        assert code == 0, err


@pytest.mark.slow
def test_split_at_the_largest_eta_finishes(tmp_path):
    """``split --method rff --eta 1e6`` (the largest eta accepted; 1e308 is refused) ran for over 5 minutes in
    Lanczos on C_test - 1e6 C_ref; now the budgeted run falls back to the dense decomposition: exit 0."""
    a, b = _npz(tmp_path / "a.npz", seed=1), _npz(tmp_path / "b.npz", seed=2)
    code, _, err = run_cli("split", a, b, "--method", "rff", "--eta", "1e6", "--out", tmp_path / "o", "-q",
                           "--no-report")
    assert code == 0, err
    res = json.loads((tmp_path / "o" / "result.json").read_text())
    assert res["eigenvalues"] and np.isfinite(res["eigenvalues"]).all() and np.isfinite(res["distance"])


def test_chat_timeouts_and_retries_have_documented_bounds():
    from promptprism.methods.compcon.clients import MAX_RETRIES, MAX_TIMEOUT, ChatClient

    for bad in (float("inf"), 1e308, float("nan"), 0.0, -1.0, MAX_TIMEOUT * 1.01):
        with pytest.raises(OptionError, match="timeout must be > 0 and at most 86,400 seconds") as err:
            ChatClient("http://127.0.0.1:9/v1", "m", timeout=bad)
        assert err.value.parameter == "timeout"
    assert ChatClient("http://127.0.0.1:9/v1", "m", timeout=MAX_TIMEOUT).timeout == MAX_TIMEOUT
    for bad in (-1, MAX_RETRIES + 1, float("nan"), 1.5):
        with pytest.raises(OptionError, match=f"retries must be an integer from 0 to {MAX_RETRIES}"):
            ChatClient("http://127.0.0.1:9/v1", "m", retries=bad)
    assert ChatClient("http://127.0.0.1:9/v1", "m", retries=MAX_RETRIES).retries == MAX_RETRIES


# ------------------------------------------------------------------------------------------------- metrics
def _metrics(tmp_path, a, ref, *extra):
    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
    code, _, err = run_cli("metrics", a, "--reference", ref, "--out", out, "--bootstrap", "0", "--subsets",
                           "3", "--subset-size", "20", "-q", "--no-report", *extra)
    return code, err, (json.loads((out / "result.json").read_text()) if code == 0 else None)


def test_clipscore_only_for_a_declared_joint_space(tmp_path):
    """Unrelated random embeddings whose widths match: no CLIPScore unless the encoder declares one joint
    text-image space (as ``promptprism embed`` writes it) or the user asserts it (then a note says so)."""
    a, ref = _npz(tmp_path / "a.npz", seed=1), _npz(tmp_path / "ref.npz", seed=2)
    code, err, res = _metrics(tmp_path, a, ref)
    m = res["models"][0]
    assert code == 0 and m["clip_score"] is None and m["cosine"] is None, err
    assert any(n.startswith("no CLIPScore: the prompt and output embeddings are not declared")
               for n in m["notes"])

    code, err, res = _metrics(tmp_path, a, ref, "--alignment", "on")
    m = res["models"][0]
    assert code == 0 and m["clip_score"] is not None, err
    assert any(n.startswith("CLIPScore computed because alignment='on' asserts a joint space")
               for n in m["notes"])

    clip = np.array("clip-tiny-0123-l2")
    joint = _npz(tmp_path / "joint.npz", seed=1, prompt_encoder=clip, output_encoder=clip, joint_space=True)
    code, err, res = _metrics(tmp_path, joint, ref)
    m = res["models"][0]
    assert code == 0 and m["clip_score"] is not None, err
    assert not any("CLIPScore" in n and ("asserts" in n or "no CLIPScore" in n) for n in m["notes"])

    # a joint flag with two different encoders declares nothing
    mixed = _npz(tmp_path / "mixed.npz", seed=1, prompt_encoder=clip, output_encoder=np.array("dinov2-x-l2"),
                 joint_space=True)
    code, err, res = _metrics(tmp_path, mixed, ref)
    m = res["models"][0]
    assert code == 0 and m["clip_score"] is None
    assert any("the prompts come from clip-tiny-0123-l2 and the outputs from dinov2-x-l2" in n
               for n in m["notes"])
    code, err, _ = _metrics(tmp_path, mixed, ref, "--alignment", "on")  # known to differ: refused
    assert code == 2 and "one joint model" in _one_error(err)


def test_kid_on_embeddings_too_large_for_its_kernel_is_refused(tmp_path):
    """Values of 1e30 gave KID -3.3e177 with an overflow warning; now one line, before any overflow."""
    a = _npz(tmp_path / "a.npz", seed=1, scale=1e30)
    ref = _npz(tmp_path / "ref.npz", seed=2, scale=1e30)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, err, _ = _metrics(tmp_path, a, ref)
    line = _one_error(err)
    assert code == 2 and "KID: output values up to" in line and "(<a, b>/d + 1)^3 to about 1e18" in line
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    code, err, res = _metrics(tmp_path, _npz(tmp_path / "b.npz", seed=1, scale=1e12),
                              _npz(tmp_path / "r2.npz", seed=2, scale=1e12))  # large, still in range
    assert code == 0 and np.isfinite(res["models"][0]["kid"]), err


def test_kid_scale_bound_by_hand():
    """The bound (d max|a| max|b| / d + 1)^3 against KID_MAX_KERNEL, computed in logarithms."""
    from promptprism.errors import InputError
    from promptprism.methods.metrics.kid import KID_MAX_KERNEL, check_kid_scale

    d = 4
    edge = (KID_MAX_KERNEL ** (1 / 3) / 2) ** 0.5  # (edge^2 + edge^2)^3 = KID_MAX_KERNEL, the bound's form
    x = np.full((3, d), edge * 0.99)
    check_kid_scale(x, x, degree=3, gamma=1 / d, coef=1.0)
    with pytest.raises(InputError, match="KID: output values up to"):
        check_kid_scale(x * 1.02, x * 1.02, degree=3, gamma=1 / d, coef=1.0)
    check_kid_scale(np.zeros((3, d)), x, degree=3, gamma=1 / d, coef=1.0)  # all-zero rows: k = coef^3
    # one set huge, the other small: its kernel with itself is what overflows (the cross one stays small)
    with pytest.raises(InputError, match="KID: output values up to 1e"):
        check_kid_scale(np.full((3, d), 1e30), np.ones((3, d)), degree=3, gamma=1 / d, coef=1.0)
    with pytest.raises(InputError, match="KID: output values up to 1e"):
        check_kid_scale(np.zeros((3, d)), np.full((3, d), 1e30), degree=3, gamma=1 / d, coef=1.0)


def test_kid_refuses_values_too_small_to_move_its_kernel_and_the_command_says_so(tmp_path):
    """Embeddings scaled by 1e-30: (<a, b>/d + 1)^3 rounds to 1 in float64 and KID read "0 [0, 0]" (as if
    identical to the reference), exit 0. Below KID_MIN_LOG_INNER the command stops in one line; just above
    it, KID still moves with the sets."""
    from promptprism.errors import InputError
    from promptprism.methods.metrics.kid import KID_MIN_LOG_INNER, check_kid_scale

    d = 4
    edge = 10 ** (KID_MIN_LOG_INNER / 2)  # gamma d edge^2 = 10^KID_MIN_LOG_INNER
    check_kid_scale(np.full((3, d), edge * 1.01), np.ones((3, d)) * edge, degree=3, gamma=1 / d, coef=1.0)
    with pytest.raises(InputError, match="the kernel rounds to a constant"):
        check_kid_scale(np.full((3, d), edge * 0.99), np.full((3, d), edge * 0.5), degree=3, gamma=1 / d,
                        coef=1.0)
    from promptprism.errors import OptionError
    from promptprism.methods.metrics.kid import kernel_inception_distance

    for gamma in (0.0, -1.0, float("nan")):  # (0 read as embeddings too small; a negative one passed)
        with pytest.raises(OptionError, match="gamma must be a finite number > 0"):
            kernel_inception_distance(np.ones((5, d)), np.ones((5, d)), gamma=gamma)
    code, err, _ = _metrics(tmp_path, _npz(tmp_path / "b.npz", seed=1, scale=1e-30),
                            _npz(tmp_path / "r2.npz", seed=2, scale=1e-30))
    assert code == 2 and err.count("\n") == 1 and "rounds to a constant" in err, err


@pytest.mark.parametrize("command", ["metrics", "diversity", "regions"])
def test_a_bootstrap_too_large_for_memory_is_refused_up_front(tmp_path, command):
    """--bootstrap 1e9 failed with 'not enough memory ... 74.5 GiB' after starting; now refused before any
    work, with the estimate of what it would need: 16 bytes per replicate and row (and prompt)."""
    from promptprism._validation import _size

    a, ref = _npz(tmp_path / "a.npz", seed=1), _npz(tmp_path / "ref.npz", seed=2)
    if command == "regions":
        np.save(tmp_path / "real.npy", np.random.default_rng(0).random((12, 6, 6)))
        np.save(tmp_path / "gen.npy", np.random.default_rng(1).random((12, 6, 6)))
        argv = ["regions", "--real", tmp_path / "real.npy", "--generated", tmp_path / "gen.npy"]
        per_replicate = 24
    elif command == "metrics":  # both sets' rows, and at most as many prompts
        argv, per_replicate = ["metrics", a, "--reference", ref], 2 * (60 + 60)
    else:  # 60 rows of 6 prompts
        argv, per_replicate = ["diversity", a], 60 + 6
    code, _, err = run_cli(*argv, "--out", tmp_path / "o", "--bootstrap", "1000000000", "-q", "--no-report")
    line = _one_error(err)
    assert code == 2 and line.startswith("error: --bootstrap 1000000000 (1,000,000,000 replicates over ")
    assert f"needs about {_size(16.0 * 1e9 * per_replicate)} of memory, but " in line
    assert not (tmp_path / "o" / "result.json").exists()


# ------------------------------------------------------------------------------------------------ describe
def test_describe_min_held_out_names_only_flags():
    """--min-held-out 100000 named max_held_out, which is no flag."""
    from promptprism.cli._errors import flag_message
    from promptprism.methods.naming import NamingOptions

    with pytest.raises(OptionError) as err:
        NamingOptions(min_held_out=100000)
    message = flag_message(err.value, {"min_held_out": "--min-held-out"})
    assert message == "--min-held-out must be at most 40, the held-out samples judged per side, got 100000"
    for bad in (float("nan"), float("inf"), 0, 2.5):
        with pytest.raises(OptionError, match="candidates must be an integer >= 1"):
            NamingOptions(candidates=bad)


# ------------------------------------------------------------------------------------------------- compare
def test_compare_cost_is_the_number_of_comparisons_times_the_labellings():
    from promptprism.methods.promptsplit.kway import (
        TEST_SECONDS_PER_ENTRY,
        TEST_SECONDS_PER_LABELLING,
        test_cost_seconds,
    )

    for k in range(2, 9):
        # by definition: every unordered pair, and (from K = 3) every model against the pooled rest
        family = {frozenset((a, b)) for a in range(k) for b in range(k) if a != b}
        family |= {("rest", a) for a in range(k)} if k >= 3 else set()
        per = TEST_SECONDS_PER_LABELLING + TEST_SECONDS_PER_ENTRY * 100 * 40
        assert test_cost_seconds(k, 100, 40, 9) == pytest.approx(len(family) * 10 * per)
    assert test_cost_seconds(50, 1000, 1000, 200) > 900  # the 50 sets of 20 rows: over the limit


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_compare_says_and_limits_its_cost(tmp_path, monkeypatch, capsys):
    """50 sets of 20 rows ran for over 20 minutes unannounced: a long test is refused up front without
    --force (50 sets of 120 rows), with the estimate; a shorter but long one is announced on stderr (50 sets
    of 20 rows, now tested from the pairs' own rows); --force lifts the limit."""
    from promptprism.cli import compare
    from promptprism.methods.promptsplit.kway import KWaySplit

    paths = [_npz(tmp_path / f"s{k}.npz", n=120, d=4, seed=k) for k in range(50)]
    code, _, err = run_cli("compare", *paths, "--out", tmp_path / "o", "-q", "--no-report")
    line = _one_error(err)
    assert code == 2 and "the permutation test of 50 sets (1,275 comparisons x 201 labellings of 6,000 " \
                         "samples) takes about" in line
    assert "over the 15 min limit; pass --force to run it" in line and not (tmp_path / "o").exists()
    est = KWaySplit(permutations=200)
    with pytest.raises(OptionError, match="over the 15 min limit"):
        compare.check_cost(est, [120] * 50, force=False)
    compare.check_cost(est, [120] * 50, force=True)  # forced: only said
    assert "note: the permutation test of 50 sets" in capsys.readouterr().err
    compare.check_cost(est, [20] * 50, force=False)  # 50 x 20 rows: said, not refused
    assert "note: the permutation test of 50 sets" in capsys.readouterr().err
    compare.check_cost(est, [20] * 3, force=False)  # cheap: nothing said
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(compare, "COST_NOTE_SECONDS", 0.0)  # any test announced: a tiny run says it, and runs
    code, _, err = run_cli("compare", *paths[:3], "--out", tmp_path / "small", "--permutations", "5", "-q",
                           "--no-report")
    assert code == 0, err
    assert err.startswith("note: the permutation test of 3 sets (6 comparisons x 6 labellings"), err
