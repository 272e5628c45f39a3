"""A small question-answering data set with a known answer, for the end-to-end text-to-text test.

48 questions in four topics (12 each), written for this test from well-known, checkable facts: world
capitals, chemical elements, the solar system, inventions and discoveries. Two "models" answer them:

* ``model_a`` answers every question with the fact, in one or two plain sentences;
* ``model_b`` gives the same answers on capitals and chemistry, but refuses every solar-system question
  and deflects every inventions question with a vague non-answer (varied wordings).

So the models differ exactly on the 24 questions of ``ALTERED_TOPICS``; PromptSplit should rank those 24
first.
"""

from __future__ import annotations

TOPICS: dict[str, list[tuple[str, str]]] = {
    "capitals": [
        ("What is the capital of France?", "The capital of France is Paris."),
        ("What is the capital of Japan?", "Tokyo is the capital of Japan."),
        ("What is the capital of Canada?", "The capital of Canada is Ottawa, in Ontario."),
        ("What is the capital of Australia?", "Canberra is Australia's capital, not Sydney."),
        ("What is the capital of Brazil?", "The capital of Brazil is Brasília."),
        ("What is the capital of Egypt?", "Cairo is the capital of Egypt."),
        ("What is the capital of Kenya?", "The capital of Kenya is Nairobi."),
        ("What is the capital of Norway?", "Oslo is the capital of Norway."),
        ("What is the capital of Argentina?", "The capital of Argentina is Buenos Aires."),
        ("What is the capital of India?", "New Delhi is the capital of India."),
        ("What is the capital of Peru?", "The capital of Peru is Lima."),
        ("What is the capital of Turkey?", "Ankara is the capital of Turkey, not Istanbul."),
    ],
    "chemistry": [
        ("What is the chemical symbol for gold?", "The chemical symbol for gold is Au."),
        ("What is the atomic number of carbon?", "Carbon has atomic number 6."),
        ("What is the chemical symbol for iron?", "Iron's symbol is Fe."),
        ("What is the atomic number of oxygen?", "Oxygen has atomic number 8."),
        ("What is the chemical symbol for sodium?", "The symbol for sodium is Na."),
        ("Which element has atomic number 2?", "Helium is element number 2."),
        ("What is the chemical formula of water?", "Water is H2O: two hydrogen atoms and one oxygen atom."),
        ("What is the chemical symbol for potassium?", "Potassium's symbol is K."),
        ("Which gas makes up most of Earth's atmosphere?", "Nitrogen, about 78 percent of the air."),
        ("What is the chemical symbol for silver?", "The chemical symbol for silver is Ag."),
        ("What is the atomic number of hydrogen?", "Hydrogen has atomic number 1."),
        ("What is the chemical formula of table salt?", "Table salt is sodium chloride, NaCl."),
    ],
    "solar system": [
        ("Which is the largest planet in the solar system?", "Jupiter is the largest planet."),
        ("Which planet is closest to the Sun?", "Mercury is the planet closest to the Sun."),
        ("Which planet is known as the Red Planet?", "Mars is called the Red Planet."),
        ("Which planet has the most prominent rings?", "Saturn has the most prominent ring system."),
        ("How many planets are in the solar system?", "There are eight planets."),
        ("Which is the hottest planet in the solar system?", "Venus is the hottest planet."),
        ("Which planet rotates on its side?", "Uranus rotates on its side, tilted about 98 degrees."),
        ("Which planet is farthest from the Sun?", "Neptune is the farthest planet from the Sun."),
        ("What is the largest moon in the solar system?", "Ganymede, a moon of Jupiter, is the largest."),
        ("When was Pluto reclassified as a dwarf planet?", "Pluto was reclassified in 2006."),
        ("On which planet is Olympus Mons?", "Olympus Mons is on Mars."),
        ("How long does light from the Sun take to reach Earth?", "About eight minutes and twenty seconds."),
    ],
    "inventions": [
        ("Who patented the telephone?", "Alexander Graham Bell patented the telephone in 1876."),
        ("Who developed a practical incandescent light bulb?", "Thomas Edison, in 1879."),
        ("Who invented the movable-type printing press in Europe?", "Johannes Gutenberg, around 1440."),
        ("Who invented the World Wide Web?", "Tim Berners-Lee proposed it in 1989 at CERN."),
        ("Who discovered penicillin?", "Alexander Fleming discovered penicillin in 1928."),
        ("Who made the first powered airplane flight?", "The Wright brothers flew at Kitty Hawk in 1903."),
        ("Who invented dynamite?", "Alfred Nobel invented dynamite in 1867."),
        ("Who created the periodic table?", "Dmitri Mendeleev published it in 1869."),
        ("Who developed the first smallpox vaccine?", "Edward Jenner, in 1796."),
        ("Who improved the steam engine with a separate condenser?", "James Watt, in 1769."),
        ("Who discovered X-rays?", "Wilhelm Röntgen discovered X-rays in 1895."),
        ("Who proposed the theory of evolution by natural selection?",
         "Charles Darwin, in On the Origin of Species (1859)."),
    ],
}

ALTERED_TOPICS = ("solar system", "inventions")

REFUSALS = [
    "I'm sorry, but I can't help with questions about that.",
    "Sorry, I am not able to answer that question.",
    "I can't provide an answer to this request.",
    "Unfortunately I cannot assist with that question.",
]
DEFLECTIONS = [
    "That is a complicated story and historians still debate it.",
    "Many people contributed to that over the years, so there is no simple answer.",
    "It depends on how you define it; the history is disputed.",
    "There is no single person who can be credited with it.",
]


def model_rows(model: str) -> list[dict]:
    """Manifest rows (id, topic, prompt, output) of ``model`` ('a' or 'b')."""
    rows = []
    for topic, pairs in TOPICS.items():
        for k, (q, a) in enumerate(pairs):
            answer = a
            if model == "b" and topic == "solar system":
                answer = REFUSALS[k % len(REFUSALS)]
            elif model == "b" and topic == "inventions":
                answer = DEFLECTIONS[k % len(DEFLECTIONS)]
            rows.append({"id": f"{topic[:4]}-{k:02d}", "topic": topic, "prompt": q, "output": answer})
    return rows


def altered_prompts() -> set[str]:
    return {q for t in ALTERED_TOPICS for q, _ in TOPICS[t]}
