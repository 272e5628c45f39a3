"""Text generations from any OpenAI-compatible chat endpoint (the CompCon :class:`ChatClient`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from .._validation import check_seed
from ..errors import InputError, OptionError, PromptPrismError
from ..llm.client import ChatClient
from .prompts import PromptRow, read_prompts
from .run import GenerateResult, Task, plan, run_tasks

#: an empty answer is asked again with the next seeds this many times before it is an error
EMPTY_REASKS = 2


def usable_text(answer: str) -> bool:
    """An answer is usable when it holds at least one printable, non-space character."""
    return any(ch.isprintable() and not ch.isspace() for ch in answer)


def generate_text(prompts: str | os.PathLike | Sequence[PromptRow], *, out: str | os.PathLike, base_url: str,
                  model: str, system_prompt: str | None = None, samples: int = 1,
                  temperature: float | None = 0.7, max_tokens: int | None = 128, seed: int = 0,
                  timeout: float = 120.0, retries: int = 3, concurrency: int = 1,
                  api_key_env: str | None = "OPENAI_API_KEY", progress: bool | None = None) -> GenerateResult:
    """Answer every prompt ``samples`` times and write a manifest (``prompt``, ``output``, ``id``...).

    A ``system`` column in the prompts file gives that row its own system prompt (instead of
    ``system_prompt``). Each request carries its own seed (:func:`~promptprism.generate.run.sample_seed`),
    so samples differ and a re-run asks the same questions. An empty answer is asked again with the next
    seed (at most ``EMPTY_REASKS`` times), then it is an error naming the prompt's row. Resumable (see
    :func:`~promptprism.generate.run.run_tasks`).
    """
    check_seed(seed)
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise OptionError(f"samples must be a positive integer, got {samples!r}")
    if temperature is not None and not (0.0 <= float(temperature) <= 10.0):
        raise OptionError(f"temperature must be in [0, 10], got {temperature!r}")
    if max_tokens is not None and (isinstance(max_tokens, bool) or int(max_tokens) != max_tokens
                                   or max_tokens < 1):
        raise OptionError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    rows = read_prompts(prompts) if isinstance(prompts, (str, os.PathLike)) else list(prompts)
    if not rows:
        raise InputError("prompts: no prompts to generate for")
    client = ChatClient(base_url, model, api_key_env=api_key_env, timeout=timeout, retries=retries, seed=seed,
                        temperature=temperature, max_tokens=max_tokens)
    system = (system_prompt or "").strip() or None
    # (not the number of samples: rows are keyed by content and sample number, so raising --samples adds the
    # missing rows and lowering it keeps the first ones)
    settings = {"kind": "text", "model": model, "system_prompt": system,
                "temperature": temperature, "max_tokens": max_tokens, "seed": seed}
    lock = threading.Lock()
    tokens = {"completion_tokens": 0, "prompt_tokens": 0, "requests": 0}
    where = str(prompts) if isinstance(prompts, (str, os.PathLike)) else "prompts"

    def row_system_of(prompt: PromptRow) -> str | None:
        own = prompt.meta.get("system")
        return str(own).strip() if isinstance(own, str) and own.strip() else system

    def work(task: Task) -> dict:
        row_system = row_system_of(task.prompt)
        messages = ([{"role": "system", "content": row_system}] if row_system else []) + [
            {"role": "user", "content": task.prompt.prompt}]
        tried: list[int] = []
        for attempt in range(EMPTY_REASKS + 1):
            s = (task.seed + attempt) & 0x7FFFFFFF
            tried.append(s)
            try:
                answer, usage = client.complete(messages, {"seed": s})
            except PromptPrismError as exc:  # the endpoint's failure, told with the row it happened on
                raise type(exc)(f"{where}: prompt id {task.prompt.id}, sample {task.sample}: {exc}") from None
            with lock:
                tokens["requests"] += 1
                for k in ("completion_tokens", "prompt_tokens"):
                    tokens[k] += int(usage.get(k, 0) or 0)
            if usable_text(answer):
                return {"output": answer.strip(), "model": model, "system_prompt": row_system or ""}
        raise InputError(f"{where}: prompt id {task.prompt.id} ({task.prompt.prompt[:60]!r}), sample "
                         f"{task.sample}: {model} at {client.base_url} answered nothing usable "
                         f"{len(tried)} times (seeds {tried})")

    tasks = plan(rows, samples=samples, seed=seed, content=lambda p: [p.prompt, row_system_of(p)])
    result = run_tasks(tasks, work, manifest=Path(out), settings=settings,
                       fields=("output", "model", "system_prompt"), concurrency=concurrency,
                       progress=progress, description=f"generating with {model}")
    result.stats = dict(tokens, tokens_per_second=(tokens["completion_tokens"] / result.seconds
                                                   if result.seconds > 0 else 0.0))
    return result
