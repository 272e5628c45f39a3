"""Text CompCon end to end with a real language model: the packaged SmolLM2-135M-Instruct as the discovery
model, the describer and (with ``--judge chat``) the judge, on the recorded SmolLM2 answers of the LLM demo
(tests/data/smollm2_qa_*.jsonl: model A is the set-up that answers history questions in French, model B the
plain one), read as answer tables.

    python benchmarks/compcon_text_llm.py --seeds 0 1 2               # French-history pair, chat judge
    python benchmarks/compcon_text_llm.py --judge embedding           # MiniLM verifies (no judge calls)
    python benchmarks/compcon_text_llm.py --null                      # same set-up on both sides
    python benchmarks/compcon_text_llm.py --generate                  # A and B answered live by SmolLM2
    python benchmarks/compcon_text_llm.py --propose "answers in French"   # a fixed candidate: the judge alone

The bank is ``--history`` history questions and as many of the other topics (``--null``: other topics
only; the test set-up's non-history answers and the reference's are two draws of the same set-up). With
``--generate`` both models are SmolLM2 behind the same server, A with the French system prompt, so new
prompts are answered and descriptions are scored. Per seed it prints the attributes proposed, each one's
held-out check, the best description, the model calls and the wall time; ``--record FILE`` writes it all
(the model's actual answers included) as JSON. The chat cache lives in a temporary folder, so every run
calls the model afresh.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
FRENCH = "You are a helpful assistant. Always answer in French."
PLAIN = "You are a helpful assistant."


def bank(history: int, null: bool) -> tuple[list[str], dict[str, list[dict]]]:
    """The bank's prompts and both set-ups' recorded rows."""
    rows = {name: [json.loads(x) for x in (DATA / f"smollm2_qa_{name}.jsonl").read_text().splitlines()]
            for name in ("test", "reference")}
    topics = [r["topic"] for r in rows["test"]]
    hist = [r["prompt"] for r in rows["test"] if r["topic"] == "history"][: 0 if null else history]
    others = [r["prompt"] for r, t in zip(rows["test"], topics, strict=True) if t != "history"]
    step = max(1, len(others) // max(history, 1))
    return hist + others[::step][:history], rows


def sources(prompts: list[str], rows: dict, tmp: Path, server, generate: bool, seed: int, cache: Path):
    from promptprism.llm import ChatClient
    from promptprism.methods.compcon.text_sources import AnswerTable, ChatAnswers

    if generate:
        def chat(system: str, name: str) -> ChatAnswers:
            client = ChatClient(server.base_url, server.model, api_key_env=None, timeout=300, retries=1,
                                temperature=0.7, max_tokens=48, cache_dir=cache)
            return ChatAnswers(client, system_prompt=system, seed=seed, name=name)

        return chat(FRENCH, "A (French history)"), chat(PLAIN, "B (plain)")
    keep = set(prompts)
    tables = []
    for name in ("test", "reference"):
        path = tmp / f"{name}.jsonl"
        path.write_text("\n".join(json.dumps({"prompt": r["prompt"], "answer": r["output"]})
                                  for r in rows[name] if r["prompt"] in keep) + "\n")
        tables.append(AnswerTable.load(path, name=name))
    return tables[0], tables[1]


class Recorder:
    """A chat client that keeps every (request's last message, answer) it sees: the model's actual words."""

    def __init__(self, client, log: list) -> None:
        self.client, self.log = client, log

    def chat(self, messages: list[dict]) -> str:
        text = self.client.chat(messages)
        last = messages[-1]["content"]
        self.log.append({"model_role": self.role, "asked": last[-300:] if isinstance(last, str) else "?",
                         "answer": text})
        return text

    def __getattr__(self, name):
        return getattr(self.client, name)


class FixedProposal:
    """A stand-in discovery model that always proposes one attribute (to test the verifier alone)."""

    model = "fixed proposal"
    n_requests = 0

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def chat(self, messages: list[dict]) -> str:
        return f"Model A contains:\n* {self.attribute}\n\nModel B contains:\n"


def run(args, seed: int, server) -> dict:
    from promptprism.embed.registry import get_encoder
    from promptprism.errors import PromptPrismError
    from promptprism.methods.compcon import ChatClient, CompCon
    from promptprism.methods.compcon.modality import TextModality
    from promptprism.methods.naming import ChatJudge

    prompts, rows = bank(args.history, args.null)
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        llm = ChatClient(server.base_url, server.model, api_key_env=None, timeout=300, retries=1,
                         max_tokens=160, cache_dir=cache)
        log: list[dict] = []
        llm = Recorder(llm, log)
        llm.role = "llm"
        if args.judge == "chat":
            judge_client = Recorder(ChatClient(server.base_url, server.model, api_key_env=None, timeout=300,
                                               retries=1, max_tokens=4, cache_dir=cache), log)
            judge_client.role = "judge"
            modality = TextModality(judge=ChatJudge(judge_client), name="SmolLM2 chat judge")
        else:
            judge_client = None
            enc = get_encoder("minilm", modality="text")
            modality = TextModality(encode=lambda t: enc.encode_texts(list(t)), name="minilm")
        a, b = sources(prompts, rows, Path(tmp), server, args.generate, seed, cache)
        vlm = FixedProposal(args.propose) if args.propose else None
        est = CompCon(llm=llm, vlm=vlm, modality=modality, n_discovery_prompts=args.discovery,
                      iterations=args.iterations, n_generated=args.generated, n_attributes=1, seed=seed)
        start = time.perf_counter()
        try:
            result, error = est.fit(a, b, prompts), None
        except PromptPrismError as exc:  # e.g. no readable attribute at all: recorded, the next seed runs
            result, error = None, f"{type(exc).__name__}: {exc}"
        wall = time.perf_counter() - start
        clients = [llm, judge_client] + ([a.client, b.client] if args.generate else [])
        calls = sum(c.n_requests for c in clients if c is not None)
    record = {"seed": seed, "wall_s": wall, "model_calls": calls, "n_prompts": len(prompts), "error": error,
              "answers": log}
    if result is not None:
        record |= {"discovery": result.discovery, "attributes": result.attributes,
                   "descriptions": result.descriptions, "failures": result.failures,
                   "timings": result.timings}
    return record


def show(rec: dict) -> None:
    print(f"seed {rec['seed']}: {rec['n_prompts']} prompts, {rec['model_calls']} model calls, "
          f"{rec['wall_s']:.0f} s")
    if rec["error"]:
        print(f"  stopped: {rec['error']}")
        for a in rec["answers"][:6]:
            print(f"  {a['model_role']} answered: {a['answer'][:160]!r}")
        return
    for d in rec["discovery"]:
        print(f"  discovery on {d['prompt'][:50]!r}: {d['attributes'] or d.get('error')}")
    for a in rec["attributes"]:
        h = a["held_out"]
        print(f"  #{a['rank']} {a['attribute']!r}: diverging {a['n_diverging']}/{a['n_prompts']}; held out "
              f"A-only {h['a_only']} B-only {h['b_only']} of {h['n_prompts']}, p adj {h['p_adjusted']:.3g}"
              f"{'  VERIFIED' if h['verified'] else ''}")
    for d in rec["descriptions"]:
        best = d.get("best") or {}
        print(f"  description of {d['attribute']!r}: {best.get('description')!r} score {best.get('score')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--judge", choices=("chat", "embedding"), default="chat")
    parser.add_argument("--null", action="store_true")
    parser.add_argument("--generate", action="store_true")
    parser.add_argument("--history", type=int, default=10, help="history questions in the bank")
    parser.add_argument("--discovery", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument("--generated", type=int, default=4)
    parser.add_argument("--propose", default="", help="a fixed candidate instead of SmolLM2's proposals")
    parser.add_argument("--record", type=Path)
    args = parser.parse_args()
    from promptprism.generate import local_llm_server

    records = []
    with local_llm_server() as server:
        for seed in args.seeds:
            rec = run(args, seed, server)
            show(rec)
            records.append(rec)
            if args.record:
                args.record.write_text(json.dumps({"args": vars(args) | {"record": str(args.record)},
                                                   "runs": records}, indent=1, default=str))


if __name__ == "__main__":
    main()
