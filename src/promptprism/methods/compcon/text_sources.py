"""Text-to-text models as text CompCon sees them: something that gives answers for a prompt.

* :class:`AnswerTable`: answers already generated for a prompt bank, a ``.jsonl`` / ``.csv`` / ``.parquet``
  table (read by :func:`promptprism.data.tables.read_table`) with a ``prompt`` column and an ``answer`` (or
  ``output``, as ``promptprism generate`` writes it) column, one row per answer. Cannot answer new prompts.
* :class:`ChatAnswers`: a chat model behind any OpenAI-compatible endpoint (the shared
  :class:`~promptprism.llm.ChatClient`: cache, retries), optionally with a system prompt; it answers every
  prompt, the new ones each CompCon iteration writes included. Answer ``i`` of a prompt carries its own
  seed, a hash of (run seed, prompt, i), so answers differ and a re-run asks the same requests (answered by
  the cache).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..._validation import check_positive_number, check_seed
from ...errors import InputError, OptionError
from ...llm.client import request_key
from .image_sources import PromptFiles

#: the answer column, in the order looked for
ANSWER_COLUMNS = ("answer", "output", "response", "text")


class AnswerTable(PromptFiles):
    """Answers per prompt from a table (see the module docstring); prompts looked up exactly, then
    whitespace/case-normalised."""

    default_name = "answers"

    @classmethod
    def load(cls, path: str | os.PathLike, name: str | None = None) -> AnswerTable:
        """The answers of a table file; a missing column or an empty answer names the file and row."""
        from ...data.tables import check_text, read_table

        path = Path(path)
        label = name or path.stem
        if not path.is_file():
            raise InputError(f"{path}: no such answer table (.jsonl/.csv with prompt and answer columns) "
                             f"for model {label}")
        table = read_table(path)
        column = next((c for c in ANSWER_COLUMNS if c in table.columns), None)
        if "prompt" not in table.columns or column is None:
            raise InputError(f"{path}: an answer table needs a 'prompt' column and one of "
                             f"{', '.join(repr(c) for c in ANSWER_COLUMNS)}; found {table.columns}")
        mapping: dict[str, list[str]] = {}
        for rec in table.records:
            prompt, answer = rec.values.get("prompt"), rec.values.get(column)
            if not isinstance(prompt, str) or not prompt.strip():
                raise InputError(f"{rec.where}: empty or missing 'prompt'")
            if not isinstance(answer, str) or not answer.strip():
                raise InputError(f"{rec.where}: empty or missing {column!r} (an answer must be text)")
            check_text(prompt, rec.where, "prompt")
            mapping.setdefault(prompt.strip(), []).append(check_text(answer, rec.where, column))
        if not mapping:
            raise InputError(f"{path}: the answer table has no rows")
        return cls(mapping, label, str(path))

    def samples(self, prompt: str) -> list[str]:
        """The answers to ``prompt`` (empty when the table has none)."""
        key = self.lookup(prompt)
        return [] if key is None else list(self.mapping[key])

    def n_samples(self, prompt: str) -> int:
        """How many answers the table holds for ``prompt``."""
        return len(self.samples(prompt))

    def describe(self) -> dict:
        """What the source is, for ``result.json``."""
        return {"type": "answer table", "name": self.name, "source": self.source,
                "n_prompts": len(self.mapping)}


#: the most answers a chat model gives per prompt (each is a request)
MAX_ANSWERS_PER_PROMPT = 1000


class ChatAnswers:
    """A chat model's answers (``answers_per_prompt`` per prompt), memoised; see the module docstring."""

    can_generate = True

    def __init__(self, client: Any, *, system_prompt: str | None = None, answers_per_prompt: int = 1,
                 seed: int = 0, name: str = "") -> None:
        check_positive_number(answers_per_prompt, "answers_per_prompt", integer=True)
        if answers_per_prompt > MAX_ANSWERS_PER_PROMPT:
            raise OptionError(f"answers_per_prompt must be at most {MAX_ANSWERS_PER_PROMPT:,} (each is one "
                              f"request per prompt of the bank), got {answers_per_prompt}",
                              parameter="answers_per_prompt")
        self.client = client
        self.system_prompt = (system_prompt or "").strip() or None
        self.answers_per_prompt = int(answers_per_prompt)
        self.seed = check_seed(seed)
        self.name = name or getattr(client, "model", "chat model")
        self._memo: dict[str, list[str]] = {}

    def samples(self, prompt: str) -> list[str]:
        """The model's answers to ``prompt`` (an empty answer is left out)."""
        if prompt not in self._memo:
            messages = ([{"role": "system", "content": self.system_prompt}] if self.system_prompt else []) + [
                {"role": "user", "content": prompt}]
            answers = []
            for i in range(self.answers_per_prompt):
                key = request_key("answer", {"seed": self.seed, "prompt": prompt, "i": i})
                seed = int(key[:8], 16) & 0x7FFFFFFF
                text, _ = self.client.complete(messages, {"seed": seed})
                if text.strip():
                    answers.append(text.strip())
            self._memo[prompt] = answers
        return self._memo[prompt]

    def describe(self) -> dict:
        """What the source is, for ``result.json`` (the endpoint, the model, the system prompt)."""
        client = self.client.describe() if hasattr(self.client, "describe") else {}
        return {"type": "chat", "name": self.name, "client": client, "system_prompt": self.system_prompt,
                "answers_per_prompt": self.answers_per_prompt, "seed": self.seed}
