"""A text set-up with a known answer for PromptSplit's power: one of ten topics answered with hedges.

Questions and plain answers come from the test suite's question banks (``tests/_qa_topics.py``: four topics;
``tests/data/smollm2_qa_reference.jsonl``: SmolLM2's English answers, first sentence, five topics) and four
small topics written here; ten topics in all. Each answer is written in ``len(PLAIN)`` plain wordings and
``len(HEDGED)`` hedged ones (the same fact, wrapped in doubt). All texts are embedded once with MiniLM
(all-MiniLM-L6-v2) and stored as float16 in ``tests/data/qa_hedges_minilm.npz`` (``python
benchmarks/text_hedges.py`` rewrites it).

:func:`draw_sets` draws a test and a reference set: a topic uniformly (each holds a tenth of the samples),
then one of its first ``PER_TOPIC`` questions, then a wording; in the test set a share ``hedged`` of the
planted topic's answers is hedged. ``hedged=0`` gives a null pair (both sets from one distribution).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "qa_hedges_minilm.npz"

#: questions asked per topic (ten topics: a 60-question bank)
PER_TOPIC = 6
PLAIN = ("{a}", "Sure. {a}", "{a} I hope that helps.", "Good question! {a}")
HEDGED = ("Honestly, I am not entirely sure about this one, but I believe {a}",
          "{a} Though I might well be wrong about this, so please check it somewhere else.",
          "I think {a} But I am really not certain, so please double-check before relying on it.",
          "It is hard to say for sure and my memory may fail me here; possibly {a}")

EXTRA: dict[str, list[tuple[str, str]]] = {
    "geography": [
        ("What is the longest river in the world?", "The Nile is usually named the longest river."),
        ("What is the highest mountain on Earth?", "Mount Everest is the highest mountain."),
        ("What is the largest ocean?", "The Pacific is the largest ocean."),
        ("What is the largest desert?",
         "Antarctica is the largest desert; the Sahara is the largest hot one."),
        ("Which continent has the most countries?", "Africa has the most countries."),
        ("What is the smallest country in the world?", "Vatican City is the smallest country."),
        ("Which river flows through Cairo?", "The Nile flows through Cairo."),
        ("What is the largest lake in Africa?", "Lake Victoria is the largest lake in Africa."),
    ],
    "human body": [
        ("How many bones are in the adult human body?", "An adult has 206 bones."),
        ("What is the largest organ of the human body?", "The skin is the largest organ."),
        ("Which organ pumps blood through the body?", "The heart pumps blood through the body."),
        ("What carries oxygen in the blood?", "Haemoglobin in red blood cells carries oxygen."),
        ("Where is insulin made?", "Insulin is made in the pancreas."),
        ("What is the smallest bone in the body?", "The stapes, in the middle ear, is the smallest bone."),
        ("How many chambers does the human heart have?", "The heart has four chambers."),
        ("Which organ filters the blood to make urine?", "The kidneys filter the blood and make urine."),
    ],
    "sports": [
        ("How many players are on a football (soccer) team?", "Eleven players per side are on the pitch."),
        ("How often are the Summer Olympics held?", "The Summer Olympics are held every four years."),
        ("How long is a marathon?", "A marathon is 42.195 kilometres long."),
        ("In which sport is a shuttlecock used?", "Badminton is played with a shuttlecock."),
        ("How many rings are on the Olympic flag?", "The Olympic flag has five rings."),
        ("How many points is a touchdown worth?", "A touchdown is worth six points."),
        ("Where were the first modern Olympics held?", "Athens hosted the first modern Olympics in 1896."),
        ("How many players are on a basketball team on court?", "Five players per team are on court."),
    ],
    "mathematics": [
        ("What is the value of pi to two decimals?", "Pi is about 3.14."),
        ("What is the square root of 144?", "The square root of 144 is 12."),
        ("What is a prime number?", "A prime has exactly two divisors: 1 and itself."),
        ("How many degrees are in a triangle?", "The angles of a triangle add up to 180 degrees."),
        ("What is 7 times 8?", "7 times 8 is 56."),
        ("What is the Pythagorean theorem?",
         "In a right triangle, a squared plus b squared equals c squared."),
        ("What is the derivative of x squared?", "The derivative of x squared is 2x."),
        ("How many sides does a hexagon have?", "A hexagon has six sides."),
    ],
}


def _first_sentence(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    head = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    return head[:limit]


def question_bank() -> dict[str, list[tuple[str, str]]]:
    """topic -> [(question, plain answer)]: ten topics."""
    sys.path.insert(0, str(ROOT / "tests"))
    from _qa_topics import TOPICS

    bank = {t: list(pairs) for t, pairs in TOPICS.items()}
    with open(ROOT / "tests" / "data" / "smollm2_qa_reference.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            bank.setdefault(row["topic"], []).append((row["prompt"], _first_sentence(row["output"])))
    bank.update(EXTRA)
    return bank


def embed_bank(path: Path = DATA) -> None:
    """Embed every question and every wording of every answer with MiniLM; write float16 arrays."""
    from promptprism.embed import get_encoder

    bank = question_bank()
    topics = sorted(bank)
    questions = [(ti, q, a) for ti, t in enumerate(topics) for q, a in bank[t]]
    enc = get_encoder("minilm", modality="text", device="cpu")
    prompt = enc.encode_texts([q for _, q, _ in questions])
    wordings = PLAIN + HEDGED
    answers = enc.encode_texts([w.format(a=a) for _, _, a in questions for w in wordings])
    answers = answers.reshape(len(questions), len(wordings), -1)
    np.savez_compressed(path, prompt=prompt.astype(np.float16), answer=answers.astype(np.float16),
                        topic=np.array([ti for ti, _, _ in questions]), topics=np.array(topics),
                        n_plain=len(PLAIN))


def load_bank(path: Path = DATA) -> dict:
    """The stored embeddings as float64 arrays, rows renormalised to unit length."""
    z = np.load(path)
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    return {"prompt": unit(z["prompt"].astype(np.float64)), "answer": unit(z["answer"].astype(np.float64)),
            "topic": z["topic"], "topics": [str(t) for t in z["topics"]], "n_plain": int(z["n_plain"])}


def draw_sets(bank: dict, n: int, m: int, *, planted: int, hedged: float, rng: np.random.Generator,
              per_topic: int = PER_TOPIC) -> tuple[tuple, tuple]:
    """(test, reference) as (prompt embeddings, output embeddings, prompt ids): see the module docstring;
    the first ``per_topic`` questions of each topic are asked."""
    topic, n_plain = bank["topic"], bank["n_plain"]
    members = [np.flatnonzero(topic == t)[:per_topic] for t in range(len(bank["topics"]))]
    n_wordings = bank["answer"].shape[1]

    def draw(size: int, share: float) -> tuple:
        t = rng.integers(0, len(members), size)
        q = np.array([rng.choice(members[i]) for i in t])
        word = rng.integers(0, n_plain, size)
        hedge = (t == planted) & (rng.random(size) < share)
        word[hedge] = rng.integers(n_plain, n_wordings, int(hedge.sum()))
        return bank["prompt"][q], bank["answer"][q, word], q

    return draw(n, hedged), draw(m, 0.0)


if __name__ == "__main__":
    embed_bank()
    b = load_bank()
    print(f"wrote {DATA}: {b['prompt'].shape[0]} questions, {len(b['topics'])} topics, "
          f"{b['answer'].shape[1]} wordings each")
