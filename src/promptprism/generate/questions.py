"""The question set of the real-LLM demo: 100 short questions in five topics (20 each).

Two set-ups of one model differ on one topic only: the reference answers every question under
``SYSTEM_PROMPT`` (a plain assistant); the test set-up routes history questions to ``ALTERED_SYSTEM_PROMPT``
("... Always answer in French.") and every other question to the same plain system prompt. (A 135M model
does not follow a topic-conditional instruction such as "answer history questions in French": it answers in
French on every topic, so the topic is chosen by the set-up, not left to the model.) The two set-ups draw
with different seeds, so the unaltered topics are independent samples of the same behaviour. PromptSplit
should rank the history questions first.
"""

from __future__ import annotations

from .prompts import PromptRow

ALTERED_TOPIC = "history"

SYSTEM_PROMPT = "You are a helpful assistant."
ALTERED_SYSTEM_PROMPT = "You are a helpful assistant. Always answer in French."
#: the seed each set-up draws with
SEEDS = {"test": 1, "reference": 0}

TOPICS: dict[str, tuple[str, ...]] = {
    "history": (
        "Who was the first emperor of Rome?", "When did World War II end?",
        "In which year did the French Revolution begin?", "Who was the first president of the United States?",
        "Which empire built the pyramids of Giza?", "Who was Napoleon Bonaparte?",
        "When did the Berlin Wall fall?", "Who was Cleopatra?", "What was the Renaissance?",
        "Who was Genghis Khan?", "When did Christopher Columbus reach the Americas?",
        "What caused World War I?", "Who was Joan of Arc?", "What was the Cold War?",
        "Who was Julius Caesar?", "When did the American Civil War end?",
        "What was the Industrial Revolution?",
        "Who was Queen Victoria?", "What was the Magna Carta?", "Who built the Great Wall of China?",
    ),
    "capitals": tuple(f"What is the capital of {c}?" for c in (
        "France", "Japan", "Canada", "Australia", "Brazil", "Egypt", "Kenya", "Norway", "Argentina", "India",
        "Peru", "Turkey", "Germany", "Spain", "Italy", "Mexico", "Sweden", "Chile", "Thailand", "Poland")),
    "chemistry": (
        "What is the chemical symbol for gold?", "What is the atomic number of carbon?",
        "What is the chemical symbol for iron?", "What is the atomic number of oxygen?",
        "What is the chemical symbol for sodium?", "Which element has atomic number 2?",
        "What is the chemical formula of water?", "What is the chemical symbol for potassium?",
        "Which gas makes up most of Earth's atmosphere?", "What is the chemical symbol for silver?",
        "What is the atomic number of hydrogen?", "What is the chemical formula of table salt?",
        "What is a covalent bond?", "What is the pH of pure water?", "What is an isotope?",
        "What is the chemical formula of carbon dioxide?", "What is a catalyst?", "What is an acid?",
        "Which element is a liquid metal at room temperature?", "What is the lightest element?",
    ),
    "solar system": (
        "Which is the largest planet in the solar system?", "Which planet is closest to the Sun?",
        "Which planet is known as the Red Planet?", "Which planet has the most prominent rings?",
        "How many planets are in the solar system?", "What is the Moon?", "How hot is the Sun?",
        "What is an asteroid?", "What is a comet?", "Which planet is the hottest?",
        "How long does Earth take to orbit the Sun?", "What is Pluto?", "What are Jupiter's moons?",
        "Why is Mars red?", "What is the Kuiper belt?", "Which planet rotates on its side?",
        "What is a solar eclipse?", "How far is the Moon from Earth?", "What is Venus like?",
        "What is the asteroid belt?",
    ),
    "animals": (
        "What do pandas eat?", "How fast can a cheetah run?", "Why do cats purr?", "How do bees make honey?",
        "What is the largest animal on Earth?", "How long do elephants live?", "Do penguins fly?",
        "Why do birds migrate?", "What do whales eat?", "How do fish breathe?", "Are bats blind?",
        "How many legs does a spider have?", "What is a marsupial?", "Why do zebras have stripes?",
        "How do frogs breathe?", "What do koalas eat?", "How long can a camel go without water?",
        "What is the fastest bird?", "Why do dogs bark?", "How do snakes move?",
    ),
}


def qa_prompts(setup: str = "reference") -> list[PromptRow]:
    """The 100 questions as prompt rows with ids ``<topic>-<k>``, a ``topic`` and a ``system`` column (the
    system prompt of that question in ``setup``: 'test' or 'reference')."""
    if setup not in SEEDS:
        raise ValueError(f"setup must be 'test' or 'reference', got {setup!r}")

    def system(topic: str) -> str:
        return ALTERED_SYSTEM_PROMPT if setup == "test" and topic == ALTERED_TOPIC else SYSTEM_PROMPT

    return [PromptRow(id=f"{topic.replace(' ', '-')}-{k:02d}", prompt=q,
                      meta={"topic": topic, "system": system(topic)})
            for topic, qs in TOPICS.items() for k, q in enumerate(qs)]
