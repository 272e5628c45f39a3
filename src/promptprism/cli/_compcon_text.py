"""The parts of ``promptprism compcon --text``: language models A and B (answer tables or chat models) and
the verifier of attributes on answers (a chat judge or a text encoder)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import OptionError

if TYPE_CHECKING:  # (the method's modules are imported when a command runs: the CLI starts without them)
    from ..llm.client import ChatClient
    from ..methods.compcon.modality import TextModality

#: how a chat model is named as model A or B
CHAT_PREFIX = "chat:"


def chat_client(base_url: str, model: str, *, api_key_env: str, timeout: float, retries: int, seed: int,
                cache: Path | None, temperature: float | None = None, max_tokens: int | None = None
                ) -> ChatClient:
    """The chat client of an endpoint option group (``--llm-url`` / ``--vlm-url`` / a judge's)."""
    from ..llm.client import ChatClient

    return ChatClient(
        base_url=base_url,
        model=model,
        api_key_env=api_key_env or None,
        timeout=timeout,
        retries=retries,
        seed=seed,
        cache_dir=cache,
        temperature=temperature,
        max_tokens=max_tokens,
    )


def text_source(spec: str, name: str, *, system: str, endpoint: str, samples: int, temperature: float,
                max_tokens: int, seed: int, link: dict) -> Any:
    """Model ``name`` from its argument: ``chat:MODEL`` (answered at ``endpoint``) or an answer table."""
    from ..methods.compcon.text_sources import AnswerTable, ChatAnswers

    if spec.startswith(CHAT_PREFIX):
        model = spec[len(CHAT_PREFIX):].strip()
        if not model:
            raise OptionError(f"model {name}: {spec!r} names no model; write chat:MODEL")
        client = chat_client(endpoint, model, api_key_env=link["api_key_env"], timeout=link["timeout"],
                             retries=link["retries"], seed=seed, cache=link["cache"], temperature=temperature,
                             max_tokens=max_tokens)
        return ChatAnswers(client, system_prompt=system, answers_per_prompt=samples, seed=seed,
                           name=f"{name} ({model})")
    if system:
        raise OptionError(f"--system-{name.lower()} applies to a chat model; model {name} is the answer "
                          f"table {spec}")
    return AnswerTable.load(Path(spec), name=name)


def text_parts(*, endpoint: str, systems: dict, samples: int, temperature: float, max_tokens: int, judge: str,
               judge_base_url: str, judge_model: str, text_model: str, seed: int, link: dict) -> tuple:
    """(how models A and B are read from their arguments, the verifier): ``compcon --text``'s parts."""
    how = {"endpoint": endpoint, "samples": samples, "temperature": temperature, "max_tokens": max_tokens,
           "seed": seed, "link": link}
    resolve = {side: partial(text_source, name=side, system=systems[side], **how) for side in ("A", "B")}
    return resolve, text_modality(judge, judge_base_url, judge_model, text_model, seed=seed, link=link)


def text_modality(judge: str, judge_base_url: str, judge_model: str, text_model: str, *, seed: int,
                  link: dict) -> TextModality:
    """The verifier ``--judge`` names: a chat judge (the naming module's) or a text encoder."""
    from ..methods.compcon.modality import TextModality

    if judge == "chat":
        from ..methods.naming import ChatJudge

        return TextModality(judge=ChatJudge(chat_client(judge_base_url, judge_model, seed=seed, **link)),
                            name=f"chat ({judge_model})")
    from ..embed.registry import get_encoder

    encoder = get_encoder(text_model, modality="text")
    return TextModality(encode=lambda texts: encoder.encode_texts(list(texts)), name=text_model)
