"""The real-LLM demo (``promptprism demo --llm``): one local model, two system prompts, the 100 questions.

:func:`plan` checks the sizes and picks the questions; :func:`generate_qa` starts the bundled SmolLM2 server
(:func:`~promptprism.generate.llm_server.local_llm_server`) unless a ``base_url`` is given, and writes
``test.jsonl`` and ``reference.jsonl`` manifests in ``out``; PromptSplit (``split/``) and Scendi
(``diversity/``) then run on those manifests (the command line runs its two commands), and
:func:`summarise` reads their results back: the topics by share of the disagreement, each set-up's Scendi,
the generation's speed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from .._validation import check_positive_number, check_seed
from ..errors import OptionError
from ..generate.llm_server import local_llm_server
from ..generate.prompts import PromptRow
from ..generate.questions import ALTERED_TOPIC, SEEDS, SYSTEM_PROMPT, TOPICS, qa_prompts
from ..generate.run import MAX_ROWS, GenerateResult
from ..generate.text import generate_text
from ..io import check_out_dir

SETUPS = ("test", "reference")


@dataclass(frozen=True)
class Plan:
    """What the demo asks: the questions of each set-up (``prompts``), ``samples`` answers to each."""

    prompts: dict[str, list[PromptRow]]
    samples: int
    altered_topic: str = ALTERED_TOPIC

    @property
    def questions(self) -> int:
        """Questions per set-up."""
        return len(self.prompts["test"])

    def topic_of(self) -> dict[str, str]:
        """prompt text -> its topic."""
        return {r.prompt: r.meta["topic"] for r in self.prompts["test"]}


def plan(out: str | os.PathLike, *, questions: int, samples: int, seed: int) -> Plan:
    """The first ``questions`` of each topic, ``samples`` answers each, checked before any model loads
    (``out`` must be a folder that can be written)."""
    check_out_dir(Path(out))
    check_positive_number(questions, "questions", integer=True)
    check_positive_number(samples, "samples", integer=True)
    check_seed(seed)
    most = min(len(q) for q in TOPICS.values())
    if questions > most:
        raise OptionError(f"questions must be at most {most}, got {questions}", parameter="questions")
    prompts = {s: [r for r in qa_prompts(s) if int(r.id.rsplit("-", 1)[1]) < questions] for s in SETUPS}
    rows = len(prompts["test"]) * samples
    if rows > MAX_ROWS:  # refused here, before the model is loaded
        raise OptionError(f"samples={samples} x {len(prompts['test'])} questions = {rows:,} answers per "
                          f"set-up, over the {MAX_ROWS:,} rows one run writes; use fewer samples",
                          parameter="samples")
    return Plan(prompts, samples)


def generate_qa(out: str | os.PathLike, *, prompts: dict[str, Sequence[PromptRow]] | None = None,
                samples: int = 2, max_tokens: int = 48, temperature: float = 0.7, base_url: str | None = None,
                model: str = "SmolLM2-135M-Instruct",
                progress: bool | None = None) -> dict[str, GenerateResult]:
    """Answer the questions (default: the 100 of :mod:`~promptprism.generate.questions`, per set-up; a
    :class:`Plan`'s ``prompts``) in both set-ups (seeds :data:`~promptprism.generate.questions.SEEDS`); one
    manifest per set-up."""
    out = Path(out)
    ctx = local_llm_server() if base_url is None else nullcontext(None)
    results: dict[str, GenerateResult] = {}
    with ctx as server:
        url = server.base_url if server is not None else base_url
        name = server.model if server is not None else model
        for setup in SETUPS:
            rows = list(prompts[setup]) if prompts is not None else qa_prompts(setup)
            results[setup] = generate_text(rows, out=out / f"{setup}.jsonl", base_url=url, model=name,
                                           system_prompt=SYSTEM_PROMPT, samples=samples,
                                           temperature=temperature, max_tokens=max_tokens, seed=SEEDS[setup],
                                           api_key_env=None, progress=progress, timeout=120.0)
    return results


def topic_summary(ranking: Sequence[dict], topic_of: dict[str, str]) -> list[tuple[str, float, int]]:
    """Per topic: (topic, share of the disagreement, how many of its prompts are in the top len(topic))
    from a PromptSplit ``prompt_ranking``, strongest topic first."""
    shares: dict[str, float] = {}
    for row in ranking:
        t = topic_of.get(row["prompt"])
        if t is not None:
            shares[t] = shares.get(t, 0.0) + float(row["share"])
    sizes: dict[str, int] = {}
    for t in topic_of.values():
        sizes[t] = sizes.get(t, 0) + 1
    out = []
    for t, share in sorted(shares.items(), key=lambda kv: -kv[1]):
        top = [topic_of.get(r["prompt"]) for r in ranking[: sizes[t]]]
        out.append((t, share, sum(x == t for x in top)))
    return out


@dataclass(frozen=True)
class Summary:
    """What the demo found: per topic (topic, share of the disagreement, prompts in its top), each set-up's
    Scendi (name, score), the answer tokens and the seconds spent generating them, and what the ranking was
    made from (PromptSplit's ``ranking_basis``: why it is empty when no mode is significant)."""

    topics: list[tuple[str, float, int]]
    scendi: list[tuple[str | None, float]]
    tokens: int
    generation_seconds: float
    ranking_basis: str = ""

    @property
    def tokens_per_second(self) -> float:
        """Answer tokens per second of generation (0 when no time was measured)."""
        return self.tokens / self.generation_seconds if self.generation_seconds else 0.0


def summarise(out: str | os.PathLike, demo: Plan, generated: dict[str, GenerateResult]) -> Summary:
    """Read ``out/split/result.json`` and ``out/diversity/result.json`` (the two methods' results) back."""
    out = Path(out)
    split = json.loads((out / "split" / "result.json").read_text(encoding="utf-8"))
    diversity = json.loads((out / "diversity" / "result.json").read_text(encoding="utf-8"))
    models = diversity.get("models", [diversity])
    stats = [generated[s].stats for s in SETUPS]
    return Summary(topics=topic_summary(split["prompt_ranking"], demo.topic_of()),
                   scendi=[(m.get("name"), m.get("scendi", float("nan"))) for m in models],
                   tokens=sum(s.get("completion_tokens", 0) for s in stats),
                   generation_seconds=sum(generated[s].seconds for s in SETUPS),
                   ranking_basis=str(split.get("ranking_basis") or ""))
