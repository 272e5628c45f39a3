"""``promptprism demo --llm``: a real language model, offline, end to end (generate -> split -> diversity)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from rich.markup import escape

from .._validation import check_positive_number, check_seed
from ..errors import OptionError, PromptPrismError
from ..generate.llm_demo import generate_qa, topic_summary
from ..generate.questions import ALTERED_TOPIC, TOPICS, qa_prompts
from ..generate.run import MAX_ROWS
from ..io import check_out_dir
from ._app import console, run_command


def run_llm_demo(out: Path, *, questions: int, samples: int, seed: int, quiet: bool, no_report: bool) -> None:
    """Generate both set-ups' answers with the bundled model, then run ``split`` and ``diversity`` on them."""
    check_out_dir(out)
    check_positive_number(questions, "--questions", integer=True)
    check_positive_number(samples, "--samples", integer=True)
    check_seed(seed)
    most = min(len(q) for q in TOPICS.values())
    if questions > most:
        raise OptionError(f"--questions must be at most {most}, got {questions}")
    t0 = time.perf_counter()
    prompts = {s: [r for r in qa_prompts(s) if int(r.id.rsplit("-", 1)[1]) < questions]
               for s in ("test", "reference")}
    rows = len(prompts["test"]) * samples
    if rows > MAX_ROWS:  # refused here, before the model is loaded
        raise OptionError(f"--samples {samples} x {len(prompts['test'])} questions = {rows:,} answers per "
                          f"set-up, over the {MAX_ROWS:,} rows one run writes; use fewer --samples")
    if not quiet:
        console.print(f"[bold]LLM demo[/]: {len(prompts['test'])} questions x {samples} answers x 2 set-ups "
                      f"from SmolLM2-135M-Instruct (local, offline); the test set-up answers "
                      f"{ALTERED_TOPIC} questions in French")
    gen = generate_qa(out / "data", prompts=prompts, samples=samples, progress=False if quiet else None)
    t_gen = time.perf_counter() - t0
    test, ref = (str(gen[s].manifest) for s in ("test", "reference"))
    flags = ["--cache", str(out / "cache"), "--device", "cpu", "-q"] + (["--no-report"] if no_report else [])
    for argv in (["split", test, ref, "--out", str(out / "split"), "--seed", str(seed), *flags],
                 ["diversity", test, ref, "--out", str(out / "diversity"), "--seed", str(seed), *flags]):
        if run_command(argv) != 0:
            raise PromptPrismError(f"the LLM demo stopped at '{argv[0]}' (see the message above)")
    total = time.perf_counter() - t0
    split = json.loads((out / "split" / "result.json").read_text(encoding="utf-8"))
    topic_of = {r.prompt: r.meta["topic"] for r in prompts["test"]}
    summary = topic_summary(split["prompt_ranking"], topic_of)
    stats = [gen[s].stats for s in ("test", "reference")]
    tokens = sum(s.get("completion_tokens", 0) for s in stats)
    gen_s = sum(gen[s].seconds for s in ("test", "reference"))
    console.print("topics by share of the disagreement (PromptSplit): " + ", ".join(
        f"{t} {share:.0%} ({k} in its top)" for t, share, k in summary))
    diversity = json.loads((out / "diversity" / "result.json").read_text(encoding="utf-8"))
    models = diversity.get("models", [diversity])
    console.print("Scendi (model-driven diversity): " + ", ".join(
        f"{m.get('name')} {m.get('scendi', float('nan')):.3g}" for m in models))
    console.print(f"generation {t_gen:.0f} s ({tokens} answer tokens, "
                  f"{tokens / gen_s if gen_s else 0:.1f} tokens/s), total {total:.0f} s")
    console.print(f"results: {escape(str(out))}/split, /diversity; answers in {escape(str(out / 'data'))}/")
