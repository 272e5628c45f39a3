"""Odd values on every numeric option of every command (a generated test), and the odd values issue 42 named.

The options are found by introspection, not listed (:mod:`_odd_values`): every sub-command of the
``promptprism`` click group and every option whose type is a number (an ``int``/``float`` annotation, or a
parser that shows ``int`` or ``float`` in ``--help``: ``<int>``, ``<int|auto>``, ``<float|rule>``). Each gets
0, -1, nan, inf, 1e308 and 1e-308 (integer options also 1000000000, since they refuse 1e308 as no integer),
in this process, on tiny inputs; each run must end in exit 0 with finite headline numbers, or in exit 2 with
exactly one non-empty error line on stderr (notes aside), and never with a traceback, an exception in
another thread, a numerical RuntimeWarning or a run longer than a minute.

A command runs in the context where the option takes effect (``split --features`` with ``--method rff``,
``generate --guide-scale`` with a guided generator, ``compcon --samples`` with chat models...):
``_odd_values.CONTEXTS`` names (command, flag) pairs; an entry for a flag no command has fails the test.
Servers are local fakes (:mod:`compcon_fakes`); nothing reaches a network.

Every base run (the option at its default) is itself checked to succeed, so that a refusal is the odd
value's doing. Two runs cannot finish here, and the test asserts instead that every odd value is refused
before they start: ``demo --llm`` (``--questions``, ``--samples``) loads the real SmolLM2 model and
``demo --trained-generator`` (``--steps``, ``--guide-per-prompt``, ``--guide-seeds``) samples the packaged
diffusion model for minutes; both are stubbed where the model would load. ``generate --steps`` runs with a
``--generator`` (a ``--diffusers`` pipeline is not built here). Skipped: nothing, unless diffusers is
missing (``generate --guide-scale``, ``--guide-rho``).
"""

from __future__ import annotations

import pytest

from _odd_values import (
    CONTEXTS,
    HUGE_INTEGER,
    NUMERIC,
    OPTIONS,
    VALUES,
    case_argv,
    run_argv,
    run_case,
)
from _odd_values_env import open_env


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    with open_env(tmp_path_factory.mktemp("odd-values")) as made:
        yield made


def test_the_options_are_found_and_every_context_names_a_real_option():
    assert len(OPTIONS) >= 80, OPTIONS  # every command's numbers, found by introspection
    commands = {c for c, _ in OPTIONS}
    assert {"split", "compare", "diversity", "metrics", "regions", "generate", "describe",
            "compcon"} <= commands
    assert set(CONTEXTS) <= set(OPTIONS), set(CONTEXTS) - set(OPTIONS)
    flags = dict.fromkeys(f for _, f in OPTIONS)
    for flag in ("--eta", "--bootstrap", "--guide-scale", "--timeout", "--min-held-out", "--sigma-prompt",
                 "--permutations", "--workers", "--mmd-sigma"):
        assert flag in flags


#: the fast part: values the issue reported and a few of the same class, with the outcome each must have
SMOKE = [
    ("split", "--eta", "1e308", "--eta must be in (0, 1e+06], got 1e+308"),
    ("generate", "--timeout", "inf", "--timeout must be > 0 and at most 86,400 seconds (one day), got inf"),
    ("describe", "--min-held-out", "100000", "--min-held-out must be at most 40, the held-out samples judged "
                                            "per side, got 100000"),
    ("metrics", "--bootstrap", HUGE_INTEGER, "--bootstrap 1000000000 (1,000,000,000 replicates over 48 rows) "
                                             "needs about"),
    ("split", "--permutations", HUGE_INTEGER, "--permutations 1000000000 (1,000,000,001 labellings of 48 "
                                              "samples) needs about"),
    ("split", "--sigma-prompt", "1e-308", "--sigma-prompt: a bandwidth must be between 1e-100 and 1e+100"),
    ("split", "--workers", HUGE_INTEGER, "--workers 1000000000 (local dask worker processes"),
    ("split", "--alpha", "nan", "--alpha must lie strictly between 0 and 1, got nan"),
]


@pytest.mark.parametrize("command, flag, value, message", SMOKE, ids=[" ".join(s[:3]) for s in SMOKE])
def test_odd_value_smoke(env, command, flag, value, message):
    code, err = run_case(env, command, flag, value)
    assert code == 2 and err.startswith(f"error: {message}"), err


def test_a_smoke_base_run_succeeds(env):
    code, _, err, stray = run_argv(case_argv(env, "split", "--eta", None))
    assert code == 0 and not stray, err


def _bases() -> list[tuple[str, str]]:
    """One option per distinct base run (command and context)."""
    seen, picked = set(), []
    for command, flag in OPTIONS:
        key = (command, str(CONTEXTS.get((command, flag))),
               flag if command == "generate" and flag in ("--guide-scale", "--steps") else "")
        if key not in seen:
            seen.add(key)
            picked.append((command, flag))
    return picked


BASES = _bases()


@pytest.mark.slow
@pytest.mark.parametrize("command, flag", BASES, ids=[" ".join(b) for b in BASES])
def test_every_base_run_succeeds(env, command, flag):
    """Without the odd value the run works (or reaches the stubbed model), so a refusal is the value's."""
    argv = case_argv(env, command, flag, None)
    if argv is None:
        pytest.skip("needs diffusers")
    code, _, err, stray = run_argv(argv)
    stubbed = CONTEXTS.get((command, flag)) and CONTEXTS[(command, flag)][0] in ("--llm",
                                                                                 "--trained-generator")
    assert code == (-1 if stubbed else 0), err
    assert not stray


CASES = [(c, f, v) for c, f, integer in NUMERIC for v in VALUES + ((HUGE_INTEGER,) if integer else ())]


@pytest.mark.slow
@pytest.mark.parametrize("command, flag, value", CASES, ids=[" ".join(c) for c in CASES])
def test_odd_value(env, command, flag, value):
    if run_case(env, command, flag, value) is None:
        pytest.skip(f"{command} {flag}: not run offline (see the module docstring)")
