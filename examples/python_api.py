"""The Python API end to end on the bundled demo data: build paired sets, fit, inspect, save, reload, report.

    python examples/python_api.py [--per-prompt 40] [--out results/python_api] [--no-report]

Only numpy and scikit-learn's bundled digits: no model, no download.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import promptprism as pp
from promptprism.datasets import colored_digits


def main(argv: list[str] | None = None) -> pp.PromptSplitResult:
    """Fit PromptSplit on the coloured digits, print the top modes and prompts, save, reload, report."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-prompt", type=int, default=40)
    ap.add_argument("--out", type=Path, default=Path("results/python_api"))
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args(argv)

    data = colored_digits(per_prompt=args.per_prompt, seed=0)  # two PairedSets over 20 prompts
    test, reference = data.test, data.reference
    print(test)  # PairedSet('test', n=..., prompt dims=20, output dims=192, 20 prompts)

    # any (n x d) arrays work the same: pp.PairedSet(prompt_embeddings, output_embeddings, prompts=[...])
    result = pp.PromptSplit(kernel="gaussian", n_modes=6, seed=0).fit(test, reference)
    top = result.positive_modes[0]
    print(f"top mode: eigenvalue {top.eigenvalue:.4f}, what the test model does more")
    for sample in top.top_samples[:3]:
        print(f"  {sample.prompt!r} -> {sample.output!r}")
    print("prompts where the models disagree most:")
    for row in result.prompt_ranking[:5]:
        print(f"  {row['prompt']}")

    result.save(args.out)  # result.json
    again = pp.load_result(args.out)
    print(f"reloaded: {type(again).__name__} with {len(again.eigenvalues)} eigenvalues")
    if not args.no_report:
        from promptprism.report import write_report

        write_report(result, args.out, inputs={"test": test, "reference": reference})
        print(f"report: {args.out / 'report.html'}")
    return result


if __name__ == "__main__":
    main()
