"""The odd-values sweep's machinery (tests/test_cli_odd_values.py): the numeric options found by
introspection, the tiny run of each command in which an option takes effect, the run itself (in this
process, with the demos' models stubbed, a time limit, stray thread exceptions and numerical warnings
caught) and the check of its outcome. The inputs and the local chat server: :mod:`_odd_values_env`."""

from __future__ import annotations

import json
import math
import signal
from pathlib import Path

import numpy as np

from _cli_run import option_annotation, run_cli
from _odd_values_env import Env
from promptprism.cli import cli

VALUES = ("0", "-1", "nan", "inf", "1e308", "1e-308")
#: integer options refuse 1e308 as not an integer, so they also get a huge value written as one
HUGE_INTEGER = "1000000000"
#: a run longer than this is stopped and fails the case (an odd value must be refused or finish quickly)
RUN_SECONDS = 60


# ------------------------------------------------------------------------------------ the numeric options
def _is_numeric(param) -> bool:
    if getattr(param, "param_type_name", "") != "option" or getattr(param, "is_flag", False):
        return False
    if option_annotation(param) in (int, float):
        return True
    metavar = str(getattr(param, "metavar", "") or "").strip("<>").split("|")
    return "int" in metavar or "float" in metavar


def _is_integer(param) -> bool:
    return option_annotation(param) is int or str(getattr(param, "metavar", "") or "").startswith("<int")


def numeric_options() -> list[tuple[str, str, bool]]:
    """(command, flag, whether it takes integers) of every numeric option of every sub-command."""
    found = []
    for name, command in cli().commands.items():
        for param in command.params:
            if _is_numeric(param):
                flag = next(o for o in param.opts if o.startswith("--"))
                found.append((name, flag, _is_integer(param)))
    return found


NUMERIC = numeric_options()
OPTIONS = [(c, f) for c, f, _ in NUMERIC]


def _chat(env: Env) -> list:
    return ["--base-url", env.url, "--model", "llm", "--api-key-env", "", "--timeout", "5", "--retries", "0"]


def base_argv(env: Env, command: str, flag: str) -> list | None:
    """The tiny run of ``command`` in which ``flag`` takes effect (None: not run offline)."""
    quick = ["-q", "--no-report"]
    context = CONTEXTS.get((command, flag), [])
    if context is None:
        return None
    if command == "generate":
        if flag in ("--guide-scale", "--guide-rho"):
            if env.guided is None:
                return None
            return ["generate", env.root / "bag.txt", "--out", env.fresh(".jsonl"), "--generator",
                    "promptprism.models.fashion:generate", "--guide-reference", env.root / "ref.jsonl",
                    "-q"]
        if flag == "--steps":
            return ["generate", env.prompts, "--out", env.fresh(".jsonl"), "--generator",
                    "test_generate:painter", "-q"]
        return ["generate", env.prompts, "--out", env.fresh(".jsonl"), "--base-url", env.url, "--model", "m",
                "--api-key-env", "", "--timeout", "5", "--retries", "0", "-q"]
    if command == "embed":
        return ["embed", env.manifest, "--image-model", "pixels:8", "--no-cache", "-q", "--out",
                env.fresh(".npz")]
    if command == "split":
        return ["split", env.a, env.b, "--out", env.fresh(), "--permutations", "20", *quick, *context]
    if command == "compare":
        return ["compare", env.a, env.b, env.c, "--out", env.fresh(), "--permutations", "20", *quick,
                *context]
    if command == "diversity":
        return ["diversity", env.a, "--out", env.fresh(), "--bootstrap", "0", "--features", "64", *quick,
                *context]
    if command == "metrics":
        return ["metrics", env.a, "--reference", env.b, "--out", env.fresh(), "--subsets", "3",
                "--subset-size", "10", "--bootstrap", "20", *quick]
    if command == "regions":
        return ["regions", "--real", env.root / "real.npy", "--generated", env.root / "gen.npy", "--out",
                env.fresh(), *quick, *context]
    if command == "describe":
        return ["describe", env.split_dir, "--out", env.fresh(), "--namer", "words", "--judge", "lexical",
                "--all-modes", *quick, *context]
    if command == "compcon":
        if context and context[0] == "--text":
            return ["compcon", "chat:model-a", "chat:model-b", "--text", "--prompt-bank", env.text_bank,
                    "--out", env.fresh(), *_chat(env), "--judge-model", "judge", "--iterations", "1",
                    "--generated-prompts", "6", "--discovery-prompts", "3", *quick]
        return ["compcon", env.dirs["A"], env.dirs["B"], "--prompt-bank", env.bank, "--out", env.fresh(),
                *_chat(env), "--clip-model", "compcon_fakes:FakeClip", "--discovery-prompts", "3",
                "--iterations", "1", *quick, *context]
    if command == "compcon-eval":
        judge = ["--judge-base-url", env.url, "--judge-model", "llm", *_chat(env)[4:]]
        return ["compcon-eval", env.preds, "--out", env.fresh(), *judge, *quick]
    if command == "quality":
        split, real = env.quality_case
        return ["quality", split, "--real", real, "--out", env.fresh(), "--permutations", "99", "--bootstrap",
                "50", *quick]
    if command == "report":
        return ["report", env.split_dir, "--out", env.fresh(".html")]
    if command == "demo":
        return ["demo", "--out", env.fresh(), "--per-prompt", "2", *quick, *context]
    raise AssertionError(f"no tiny run for {command}: add one")  # a new command needs its base run


#: (command, flag) -> extra arguments under which the flag takes effect (None: not run offline, see above)
CONTEXTS: dict[tuple[str, str], list | None] = {
    ("split", "--features"): ["--method", "rff"],
    ("split", "--eta"): ["--method", "rff"],
    ("split", "--chunk-size"): ["--method", "rff"],
    ("split", "--partition-rows"): ["--method", "rff"],
    ("compare", "--features"): ["--method", "rff"],
    ("compare", "--chunk-size"): ["--method", "rff"],
    ("diversity", "--features"): ["--kernel", "gaussian"],
    ("diversity", "--sigma-prompt"): ["--kernel", "gaussian"],
    ("diversity", "--sigma-output"): ["--kernel", "gaussian"],
    ("diversity", "--ridge"): ["--gamma-estimator", "cross-fit"],
    ("diversity", "--folds"): ["--gamma-estimator", "cross-fit"],
    ("diversity", "--confidence"): ["--bootstrap", "20"],
    ("regions", "--cka-block-size"): ["--block-size", "4"],
    ("compcon", "--samples"): ["--text"],
    ("compcon", "--temperature"): ["--text"],
    ("compcon", "--max-tokens"): ["--text"],
    ("compcon", "--mode"): ["--from-split", "BANK_SPLIT"],
    ("demo", "--questions"): ["--llm"],
    ("demo", "--samples"): ["--llm"],
    ("demo", "--steps"): ["--trained-generator", "--per-prompt", "10"],
    ("demo", "--guide-per-prompt"): ["--trained-generator", "--per-prompt", "10"],
    ("demo", "--guide-seeds"): ["--trained-generator", "--per-prompt", "10"],
}


# --------------------------------------------------------------------------------------------- the checks
def _reject_constant(name):
    raise ValueError(f"non-finite number {name} in JSON")


def check_outcome(label: str, code: int, out: str, err: str, folder: Path | None) -> None:
    """Exit 0 with finite headline numbers (and no black image, what a NaN sample becomes), or exit 2 with
    one error line and nothing but notes beside it; a value too large for memory is refused up front, not
    when an allocation fails (the CLI's 'not enough memory' line)."""
    assert code in (0, 2), f"{label}: exit {code}\n{err}"
    assert "Traceback" not in out + err, f"{label}: a traceback\n{err}"
    lines = [x for x in err.splitlines() if x.strip()]
    if code == 2:
        errors = [x for x in lines if x.startswith("error:")]
        others = [x for x in lines if not x.startswith(("error:", "note:"))]
        assert len(errors) == 1 and not others, f"{label}: exit 2 needs exactly one error line\n{err}"
        assert errors[0][len("error:"):].strip(), f"{label}: an empty error line"
        assert not errors[0].startswith("error: not enough memory:"), f"{label}: not refused up front\n{err}"
        return
    if folder is not None and folder.suffix == ".jsonl" and folder.is_file():
        _check_images(label, folder)
    if folder is not None and (folder / "result.json").is_file():
        from promptprism.cli._output import HEADLINE_FIELDS

        data = json.loads((folder / "result.json").read_text(encoding="utf-8"),
                          parse_constant=_reject_constant)
        parts = data.get("models") if isinstance(data.get("models"), list) else [data]
        for part in parts:
            if not isinstance(part, dict):
                continue
            for name in HEADLINE_FIELDS.get(part.get("kind", data.get("kind", "")), ()):
                value = part.get(name)
                for v in np.ravel(np.asarray(value, dtype=object)) if value is not None else ():
                    assert v is not None and math.isfinite(float(v)), f"{label}: {name} = {value!r}"


def _check_images(label: str, manifest: Path) -> None:
    """No image a run of ``generate`` wrote is entirely black."""
    from PIL import Image

    for line in manifest.read_text(encoding="utf-8").splitlines():
        image = json.loads(line).get("image")
        if image:
            pixels = np.asarray(Image.open(manifest.parent / image))
            assert pixels.any(), f"{label}: {image} is black"


def _folder(argv: list) -> Path | None:
    items = [str(a) for a in argv]
    return Path(items[items.index("--out") + 1]) if "--out" in items else None


class HeavyWork(BaseException):
    """Raised where a demo would load a real model: an odd value must be refused before that."""


def _heavy(*args, **kwargs):
    raise HeavyWork


class TooSlow(BaseException):
    """A run outlived :data:`RUN_SECONDS` (not an Exception: the command cannot catch it)."""


def _too_slow(signum, frame):
    raise TooSlow(f"still running after {RUN_SECONDS} s")


#: the stand-ins for work that cannot run in this test: (module, attribute)
HEAVY = (("promptprism.demos.llm", "generate_qa"), ("promptprism.models.fashion", "packaged_weights"))


def run_argv(argv: list) -> tuple[int, str, str, list[str]]:
    """``run_cli(*argv)`` with the demos' models stubbed; also what went wrong outside the command's own
    output: exceptions in other threads, and numerical RuntimeWarnings (overflow, invalid value)."""
    import importlib
    import threading
    import warnings

    stray: list[str] = []
    hook = threading.excepthook
    saved = []
    for module, name in HEAVY:
        mod = importlib.import_module(module)
        saved.append((mod, name, getattr(mod, name)))
        setattr(mod, name, _heavy)
    threading.excepthook = lambda a: stray.append(f"{a.exc_type.__name__} in a thread: {a.exc_value}")
    previous = signal.signal(signal.SIGALRM, _too_slow)
    signal.alarm(RUN_SECONDS)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                code, out, err = run_cli(*argv)
            except HeavyWork:
                code, out, err = -1, "", "HEAVY"
            except TooSlow as exc:
                code, out, err = -2, "", str(exc)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        threading.excepthook = hook
        for mod, name, value in saved:
            setattr(mod, name, value)
    stray += [f"RuntimeWarning: {w.message}" for w in caught if issubclass(w.category, RuntimeWarning)]
    return code, out, err, stray


def case_argv(env: Env, command: str, flag: str, value: str | None) -> list | None:
    argv = base_argv(env, command, flag)
    if argv is None:
        return None
    argv = [env.split_dir / "result.json" if a == "SPLIT" else env.bank_split if a == "BANK_SPLIT" else a
            for a in argv]
    return argv if value is None else [*argv, flag, value]


def run_case(env: Env, command: str, flag: str, value: str) -> tuple[int, str] | None:
    argv = case_argv(env, command, flag, value)
    if argv is None:
        return None
    label = f"{command} {flag} {value}"
    code, out, err, stray = run_argv(argv)
    assert code != -1, f"{label}: accepted, and the demo went on to load its model"
    assert code != -2, f"{label}: {err}"
    assert not stray, f"{label}: exit {code}, but {stray}"
    check_outcome(label, code, out, err, _folder(argv))
    return code, err.strip()
