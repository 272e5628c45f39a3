"""Naming PromptSplit's modes with a real language model: the packaged SmolLM2-135M-Instruct as namer and
judge, on the recorded SmolLM2 answers of the LLM demo (tests/data/smollm2_qa_*.jsonl: five topics, the test
set-up answers history questions in French).

    python benchmarks/naming_llm.py --seeds 0 1 2          # the French-history pair, several seeds
    python benchmarks/naming_llm.py --null                 # the four other topics: one set-up, two runs
    python benchmarks/naming_llm.py --pairs words:lexical  # namer:judge pairs (chat, words, facets; chat,
                                                           # embedding, lexical, completion); default: the
                                                           # four useful pairs of the first round
    python benchmarks/naming_llm.py --pairs facets:completion --seeds 0 1 2 3 4
    python benchmarks/naming_llm.py --record tests/data/smollm2_facets.json   # the model's facet answers
    python benchmarks/naming_llm.py --yes-no-scores   # why not a yes/no judge read as a score (AUCs)
    python benchmarks/naming_llm.py --kway --pairs facets:completion   # K = 3: the deviating models named

Per seed it prints each significant mode, the candidates SmolLM2 proposed, which held up (Fisher exact
test on held-out answers, Holm over candidates), their held-out accuracy, the model calls and the wall time;
then the same with the embedding judge (no judge calls). ``--null`` keeps the four topics whose set-ups are
the same, names every reported mode (``all_modes``) and counts names that pass: there should be none
beyond the test's level. The chat cache lives in a temporary folder, so each run calls the model afresh.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def load(null: bool):
    from promptprism.data.inputs import load_input

    sets = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("test", "reference"):
            rows = [json.loads(line) for line in (DATA / f"smollm2_qa_{name}.jsonl").read_text().splitlines()]
            if null:
                rows = [r for r in rows if r["topic"] != "history"]
            path = Path(tmp) / f"{name}.jsonl"
            lines = [json.dumps({"prompt": r["prompt"], "output": r["output"]}) for r in rows]
            path.write_text("\n".join(lines))
            sets.append(load_input(path, text_model="minilm"))
    return sets


def naming_pair(pair: str, client):
    """(namer, judge) of a ``namer:judge`` pair; ``client(temperature, max_tokens)`` makes a chat client."""
    from promptprism.methods.naming import (
        ChatJudge,
        ChatNamer,
        CompletionJudge,
        EmbeddingJudge,
        FacetNamer,
        LengthJudge,
        LengthNamer,
        LexicalJudge,
        WordNamer,
    )

    namer_kind, judge_kind = pair.split(":")
    namers = {"chat": lambda: ChatNamer(client(0.7, 60)), "facets": lambda: FacetNamer(client(0.0, 1)),
              "length": LengthNamer, "words": WordNamer}

    def embedding_judge():
        from promptprism.embed.registry import get_encoder

        enc = get_encoder("minilm", modality="text")
        return EmbeddingJudge(encode=lambda t: enc.encode_texts(list(t)))

    judges = {"chat": lambda: ChatJudge(client(0.0, 4)),
              "completion": lambda: CompletionJudge(client(0.0, 1)),
              "embedding": embedding_judge, "length": LengthJudge, "lexical": LexicalJudge}
    return namers[namer_kind](), judges[judge_kind]()


def chat_clients(server, seed: int, cache: str):
    """A maker of cached, seeded chat clients of the local server: ``make(temperature, max_tokens)``."""
    from promptprism.llm import ChatClient

    def make(temperature, max_tokens):
        return ChatClient(server.base_url, server.model, api_key_env=None, seed=seed, cache_dir=cache,
                          temperature=temperature, max_tokens=max_tokens)
    return make


def calls_of(namer, judge) -> int:
    """Requests the namer's and the judge's chat clients sent (a shared client counted once)."""
    clients = {id(c): c for c in (getattr(namer, "client", None), getattr(judge, "client", None)) if c}
    return sum(c.n_requests for c in clients.values())


def run(seed: int, null: bool, server, pair: str) -> dict:
    from promptprism import PromptSplit
    from promptprism.methods.naming import NamingOptions, describe_modes

    test, ref = load(null)
    split = PromptSplit(kernel="cosine", n_modes=3, permutations=200, top_prompts=20, seed=seed)
    result = split.fit(test, ref)
    with tempfile.TemporaryDirectory() as cache:
        namer, judge = naming_pair(pair, chat_clients(server, seed, cache))
        start = time.perf_counter()
        record = describe_modes(result, test, ref, namer=namer, judge=judge, all_modes=null,
                                options=NamingOptions(seed=seed, candidates=3))
        seconds, calls = time.perf_counter() - start, calls_of(namer, judge)
    return {"seed": seed, "judge": pair, "seconds": round(seconds, 1), "calls": calls,
            "significant": [(m.side, m.rank, m.p_value) for m in result.modes if m.significant],
            "modes": record["modes"], "notes": record["notes"]}


def load_three():
    """The recorded answers as three models sharing their prompts: ``french`` (history asked with 'Always
    answer in French'), ``faithful`` (the plain set-up) and ``terse`` (the faithful answers, chemistry cut to
    its first word: a difference by absence)."""
    from promptprism.data.inputs import load_input

    rows = {name: [json.loads(line) for line in (DATA / f"smollm2_qa_{name}.jsonl").read_text().splitlines()]
            for name in ("test", "reference")}
    setups = {"french": rows["test"], "faithful": rows["reference"],
              "terse": [dict(r, output=r["output"].split()[0]) if r["topic"] == "chemistry" else r
                        for r in rows["reference"]]}
    sets = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, rs in setups.items():
            path = Path(tmp) / f"{name}.jsonl"
            path.write_text("\n".join(json.dumps({"prompt": r["prompt"], "output": r["output"]}) for r in rs))
            sets[name] = load_input(path, text_model="minilm")
    return sets


def run_kway(seed: int, server, pair: str) -> dict:
    """K-way PromptSplit over the three models, then each deviation named (``describe_deviations``) by the
    namer:judge ``pair`` (e.g. facets:completion, length:length or words:lexical)."""
    from promptprism.methods.naming import NamingOptions
    from promptprism.methods.naming.deviations import describe_deviations
    from promptprism.methods.promptsplit.kway import KWaySplit

    sets = load_three()
    result = KWaySplit(kernel="cosine", n_modes=3, permutations=200, seed=seed).fit(list(sets.values()),
                                                                                   list(sets))
    with tempfile.TemporaryDirectory() as cache:
        namer, judge = naming_pair(pair, chat_clients(server, seed, cache))
        start = time.perf_counter()
        record = describe_deviations(result, sets, namer=namer, judge=judge,
                                     options=NamingOptions(seed=seed, candidates=3))
        seconds, calls = time.perf_counter() - start, calls_of(namer, judge)
    return {"seed": seed, "judge": pair, "seconds": round(seconds, 1), "calls": calls,
            "deviating": [d["model"] for d in result.deviations if d["deviates"]],
            "modes": record["deviations"], "notes": record["notes"]}


def record_facets(server, path: Path) -> None:
    """Every recorded answer's facet distributions (the top 20 first tokens after each facet's start), as
    {facet question: {sha256 of the clipped text, first 16 hex: [[token, logprob], ...]}}, and the prompts of
    the French-history mode (PromptSplit as in :func:`run`; the mode's prompts do not depend on the seed)."""
    import hashlib

    from promptprism.llm import ChatClient
    from promptprism.methods.naming.facets import FACETS, TOP_LOGPROBS, facet_messages
    from promptprism.methods.naming.judges import clip_text

    client = ChatClient(server.base_url, server.model, api_key_env=None)
    texts = sorted({json.loads(line)["output"] for name in ("test", "reference")
                    for line in (DATA / f"smollm2_qa_{name}.jsonl").read_text().splitlines()})
    start, table = time.perf_counter(), {}
    for facet in FACETS:
        rows = table.setdefault(facet.question, {})
        for text in texts:
            _, content = client.complete_logprobs(facet_messages(facet, text), top_logprobs=TOP_LOGPROBS,
                                                  params={"temperature": 0.0, "max_tokens": 1})
            key = hashlib.sha256(clip_text(text).encode("utf-8")).hexdigest()[:16]
            rows[key] = [[a["token"], round(a["logprob"], 4)] for a in content[0]["top_logprobs"]]
    seconds = time.perf_counter() - start
    from promptprism import PromptSplit
    from promptprism.methods.naming.modes import mode_prompts

    test, ref = load(False)
    result = PromptSplit(kernel="cosine", n_modes=3, permutations=200, top_prompts=20, seed=0).fit(test, ref)
    prompts = mode_prompts(next(m for m in result.modes if m.significant))
    path.write_text(json.dumps({"model": server.model, "mode_prompts": prompts, "facets": table},
                               ensure_ascii=False) + "\n")
    print(f"{client.n_requests} requests in {seconds:.0f} s -> {path}")


YES_NO_STATEMENTS = ("The text is written in French.", "The text is written in English.",
                     "The text is not written in French.", "The text contains words.")


def yes_no_scores(server) -> None:
    """SmolLM2 as a yes/no judge read as a score, s = log P(yes) - log P(no) of its first answer token, on
    the 20 + 20 recorded history answers: the AUC of each statement, and of French minus a control."""
    import numpy as np
    from scipy.stats import mannwhitneyu

    from promptprism.llm import ChatClient
    from promptprism.methods.naming.judges import JUDGE_PROMPT, clip_text

    client = ChatClient(server.base_url, server.model, api_key_env=None)
    rows = {name: [json.loads(line) for line in (DATA / f"smollm2_qa_{name}.jsonl").read_text().splitlines()]
            for name in ("test", "reference")}
    sides = [[r["output"] for r in rows[name] if r["topic"] == "history"] for name in ("test", "reference")]

    def score(statement: str, text: str) -> float:
        msg = [{"role": "user", "content": JUDGE_PROMPT.format(description=statement, text=clip_text(text))}]
        _, content = client.complete_logprobs(msg, top_logprobs=20,
                                              params={"temperature": 0.0, "max_tokens": 1})
        mass = {"yes": [], "no": []}
        for alt in content[0]["top_logprobs"]:
            word = alt["token"].strip().lower().rstrip(".")
            if word in mass:
                mass[word].append(alt["logprob"])
        return float(np.logaddexp.reduce(mass["yes"] or [-30.0]) - np.logaddexp.reduce(mass["no"] or [-30.0]))

    def auc(a, b) -> float:
        return float(mannwhitneyu(a, b, alternative="greater").statistic / (len(a) * len(b)))

    start = time.perf_counter()
    scores = {s: [np.array([score(s, t) for t in side]) for side in sides] for s in YES_NO_STATEMENTS}
    for s, (a, b) in scores.items():
        print(f"AUC {auc(a, b):.2f}  yes-minus-no score {a.mean():+.2f} (French-prompted) vs "
              f"{b.mean():+.2f}: {s}")
    french, english = YES_NO_STATEMENTS[0], YES_NO_STATEMENTS[1]
    for control in YES_NO_STATEMENTS[2:]:
        for s in (french, english):
            a, b = (scores[s][k] - scores[control][k] for k in (0, 1))
            print(f"AUC {auc(a, b):.2f}: '{s}' minus '{control}'")
    print(f"{client.n_requests} requests in {time.perf_counter() - start:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--null", action="store_true")
    parser.add_argument("--pairs", nargs="+", default=["chat:chat", "chat:embedding", "words:lexical",
                                                         "words:chat"])
    parser.add_argument("--record", type=Path, help="write the model's facet answers for every recorded "
                                                        "answer to this JSON file (and run nothing else)")
    parser.add_argument("--kway", action="store_true", help="three models (French, plain, terse): "
                                                            "K-way PromptSplit, each deviation named")
    parser.add_argument("--yes-no-scores", action="store_true", help="the yes/no judge read as a score: "
                                                                     "AUCs of a few statements and controls")
    args = parser.parse_args()
    from promptprism.generate.llm_server import local_llm_server

    print(f"cpu: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    with local_llm_server() as server:
        if args.record:
            record_facets(server, args.record)
            return
        if args.yes_no_scores:
            yes_no_scores(server)
            return
        for judge in args.pairs:
            for seed in args.seeds:
                out = run_kway(seed, server, judge) if args.kway else run(seed, args.null, server, judge)
                found = (f"deviating models {out['deviating']}" if args.kway
                         else f"significant modes {out['significant']}")
                print(f"\n== seed {seed}, namer:judge {judge}: {out['seconds']} s, {out['calls']} model "
                      f"calls, {found}")
                for e in out["modes"]:
                    print_entry(e, f"{e['model']} (against {e['against']})" if args.kway else e["side"])
                for note in out["notes"]:
                    print(f"  note: {note}")


def print_entry(e: dict, label: str) -> None:
    """One named (or unnamed) mode or deviation and its tested candidates."""
    kept = f" -> {e['name']!r} acc {e['accuracy']:.2f} p {e['p_value']:.3g}" if e["name"] else ""
    print(f"  {label} mode {e['rank']}: {e['status']}{kept}")
    for c in e["candidates"]:
        how = (f"AUC {c['accuracy']:.2f}, mean score {c['mean_a']:.2f} vs {c['mean_b']:.2f}" if "mean_a" in c
               else f"{c['matches_a']}/{c['n_a']} vs {c['matches_b']}/{c['n_b']}")
        print(f"     [{'kept' if c['accepted'] else 'rejected'}] {c['description']!r}: {how}, "
              f"p_adj {c['p_adjusted']:.3g}")
    if e.get("note"):
        print(f"     note: {e['note']}")


if __name__ == "__main__":
    main()
