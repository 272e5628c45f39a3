"""Test doubles for text CompCon: two scripted language models, a scripted namer and a scripted judge, all
behind one local OpenAI-compatible server (:class:`compcon_fakes.ScriptedServer`).

PROTOCOL AND STATISTICS TESTS ONLY: the answers are scripted; they say nothing about what a real model does.

* ``model-b`` answers every prompt in English; ``model-a`` answers the history prompts in French and the rest
  as ``model-b`` does (``french=True``), or exactly like ``model-b`` (a same-distribution pair). Whether an
  answer mentions a number is a fair coin drawn from the request's seed, independently for A and B: an
  attribute both models show equally often.
* The namer (``llm``) proposes "answers in French" when A's answers shown to it are French, and always
  "mentions a number"; on a same-distribution pair it still proposes both (a namer that hallucinates).
* The judge says yes to "answers in French" for French text, to "mentions a number" for text holding a
  digit, and no otherwise.
"""

from __future__ import annotations

import hashlib
import re

from compcon_fakes import description_answer

HISTORY_WORDS = ("history", "empire", "revolution", "medieval", "ancient")
HISTORY_PROMPTS = [f"Tell me about the history of {t}" for t in
                   ("Rome", "Egypt", "China", "Peru", "Japan", "Mali")] + [
    f"What caused the {t} revolution?" for t in ("French", "Russian", "Haitian")] + [
    f"Describe daily life in the medieval {t}" for t in ("village", "castle", "monastery")]
OTHER_PROMPTS = [f"How do I {t}?" for t in (
    "bake bread", "fix a bike tyre", "tie a tie", "plant tomatoes", "brew tea", "start running",
    "learn to swim", "clean a kettle", "sharpen a knife", "fold a shirt", "boil an egg", "wash wool")] + [
    f"What is a {t}?" for t in ("prime number", "black hole", "virus", "glacier", "volcano", "neuron",
                                "protein", "comet", "tide", "rainbow", "magnet", "lens", "battery",
                                "cloud", "fossil", "molecule")]
BANK = HISTORY_PROMPTS + OTHER_PROMPTS


def is_history(prompt: str) -> bool:
    low = prompt.lower()
    return any(w in low for w in HISTORY_WORDS)


def coin(*parts) -> bool:
    return hashlib.sha256("|".join(map(str, parts)).encode()).digest()[0] % 2 == 0


def answer(prompt: str, model: str, seed: int, french: bool = True) -> str:
    number = " It takes about 3 steps." if coin(model, prompt, seed) else " It is simple."
    if french and model == "model-a" and is_history(prompt):
        return f"Voici la réponse en français : c'est une longue histoire.{number}"
    return f"Here is an answer to your question about {prompt.lower()}.{number}"


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    j = text.find(end, i + len(start))
    return text[i + len(start): j if j >= 0 else None] if i >= 0 else ""


def discovery(text: str) -> str:
    shown_a = _between(text, "Answers from Model A:", "Answers from Model B:")
    names = (["answers in French"] if "français" in shown_a else []) + ["mentions a number",
                                                                         "answers in French"]
    items = "\n".join(f"* {n}" for n in dict.fromkeys(names))
    return f"Model A contains:\n{items}\n\nModel B contains:\n"


def judge(text: str) -> str:
    statement = _between(text, 'Statement: "', '"')
    shown = _between(text, 'Text: """', '"""')
    if statement == "answers in French":
        return "yes" if "français" in shown else "no"
    if statement == "mentions a number":
        return "Yes." if re.search(r"\d", shown) else "No."
    return "no"


def generated_prompts(n: int = 25) -> str:
    lines = [f"{i + 1}. " + (f"Tell me about the history of city {i}" if i % 2 == 0
                             else f"How do I cook dish {i}?") for i in range(n)]
    return "Prompts:\n" + "\n".join(lines)


def script(french: bool = True, namer=None):
    """The server's ``respond``: A, B, the namer (``namer(text)`` overrides discovery) and the judge."""

    def respond(body, stage, n):
        first = body["messages"][0]["content"]
        if stage == "answer":
            prompt = body["messages"][-1]["content"]
            return answer(prompt, body["model"], body.get("seed", 0), french=french)
        if stage in ("attributes", "reask-attributes"):
            return (namer or discovery)(first)
        if stage == "yes-no":
            return judge(first)
        if stage == "describe":
            return description_answer("history")
        if stage == "generate":
            return generated_prompts()
        return "?"

    return respond
