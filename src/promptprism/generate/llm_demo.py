"""The generation half of the real-LLM demo: one local model, two system prompts, the 100 questions.

:func:`generate_qa` starts the bundled SmolLM2 server
(:func:`~promptprism.generate.llm_server.local_llm_server`) unless a ``base_url`` is given, and writes
``test.jsonl`` and ``reference.jsonl`` manifests in ``out``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

from .llm_server import local_llm_server
from .prompts import PromptRow
from .questions import SEEDS, SYSTEM_PROMPT, qa_prompts
from .run import GenerateResult
from .text import generate_text


def generate_qa(out: str | os.PathLike, *, prompts: dict[str, Sequence[PromptRow]] | None = None,
                samples: int = 2, max_tokens: int = 48, temperature: float = 0.7, base_url: str | None = None,
                model: str = "SmolLM2-135M-Instruct",
                progress: bool | None = None) -> dict[str, GenerateResult]:
    """Answer the questions (default: the 100 of :mod:`~promptprism.generate.questions`, per set-up) in
    both set-ups (seeds :data:`~promptprism.generate.questions.SEEDS`); one manifest per set-up."""
    out = Path(out)
    ctx = local_llm_server() if base_url is None else nullcontext(None)
    results: dict[str, GenerateResult] = {}
    with ctx as server:
        url = server.base_url if server is not None else base_url
        name = server.model if server is not None else model
        for setup in ("test", "reference"):
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
