"""Print the fuzz suite's outcome table: cases, exit 0, exit 2 (and any other status) per command and kind.

    PROMPTPRISM_FUZZ_TABLE=fuzz.json python -m pytest -q tests/test_fuzz_cli.py
    python benchmarks/fuzz_table.py fuzz.json

The JSON maps ``"command|kind: detail"`` to ``[exit status, last stderr line]``; the table groups rows by
command and by the kind before the colon (``data``, ``option``, ``endpoint``, ``concurrency``...).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict


def tally(outcomes: dict[str, list]) -> dict[tuple[str, str], Counter]:
    """(command, kind) -> Counter of exit statuses."""
    table: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for case, (code, _line) in outcomes.items():
        command, _, rest = case.partition("|")
        kind = rest.split(":", 1)[0].split(" (")[0].strip()
        table[(command, kind)][int(code)] += 1
        table[(command, "all")][int(code)] += 1
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", help="the JSON written with PROMPTPRISM_FUZZ_TABLE")
    parser.add_argument("--by-kind", action="store_true", help="one row per command and kind")
    args = parser.parse_args()
    with open(args.table, encoding="utf-8") as fh:
        outcomes = json.load(fh)
    counts = tally(outcomes)
    others = sorted({c for counter in counts.values() for c in counter if c not in (0, 2)})
    head = ["command", "kind", "cases", "exit 0", "exit 2"] + [f"exit {c}" for c in others]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    total: Counter = Counter()
    for (command, kind), counter in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1] != "all",
                                                                            kv[0][1])):
        if kind != "all" and not args.by_kind:
            continue
        if kind == "all":
            total.update(counter)
        row = [command, kind, sum(counter.values()), counter[0], counter[2]] + [counter[c] for c in others]
        print("| " + " | ".join(str(v) for v in row) + " |")
    row = ["total", "", sum(total.values()), total[0], total[2]] + [total[c] for c in others]
    print("| " + " | ".join(str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
