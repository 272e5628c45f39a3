"""Several models at once: prompt-aware diversity (Scendi) of three models, and PromptSplit between pairs.

Three synthetic "models" answer the same 12 prompts. Each output embedding is what its prompt asks for
plus the model's own variation: the "faithful" model adds little, the "creative" one a lot, the "mode
collapsed" one adds nothing and ignores half of the prompts. Scendi's model-driven diversity ranks them;
Vendi, which cannot tell prompt-driven from model-driven variety, ranks them differently.

    python examples/several_models.py [--per-prompt 20] [--out results/several_models]

Only numpy arrays: no model, no extra.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import promptprism as pp


def make_models(per_prompt: int, seed: int = 0) -> dict[str, pp.PairedSet]:
    """Three paired sets over the same prompts (prompt embeddings 16-d, output embeddings 24-d)."""
    rng = np.random.default_rng(seed)
    n_prompts, d_t, d_z = 12, 16, 24
    prompt_vecs = rng.standard_normal((n_prompts, d_t))
    mapping = rng.standard_normal((d_t, d_z)) / np.sqrt(d_t)  # what a prompt asks of the output
    labels = np.repeat(np.arange(n_prompts), per_prompt)
    prompts = [f"prompt {p}" for p in labels]
    asked = prompt_vecs[labels] @ mapping
    models = {}
    for name, spread in (("faithful", 0.2), ("creative", 1.0), ("collapsed", 0.0)):
        own = spread * rng.standard_normal(asked.shape)
        out = asked + own
        if name == "collapsed":
            out = np.where((labels % 2 == 0)[:, None], asked[0], out)  # half the prompts: one output
        models[name] = pp.PairedSet(prompt_vecs[labels], out, prompts=prompts, name=name)
    return models


def main(argv: list[str] | None = None) -> dict:
    """Scendi per model, PromptSplit distance per pair; prints two tables, saves the Scendi results."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-prompt", type=int, default=20)
    ap.add_argument("--out", type=Path, default=Path("results/several_models"))
    args = ap.parse_args(argv)
    models = make_models(args.per_prompt)
    scores = {}
    print(f"{'model':<10} {'scendi':>8} {'vendi':>8} {'model share':>12}")
    for name, data in models.items():
        res = pp.Scendi(kernel="cosine", seed=0).fit(data, name=name)
        res.save(args.out / name)
        scores[name] = res
        print(f"{name:<10} {res.scendi:8.2f} {res.vendi:8.2f} {res.model_share:12.2f}")
    names = list(models)
    print("PromptSplit distance (larger: more different)")
    distances = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            res = pp.PromptSplit(kernel="gaussian", n_modes=2, seed=0).fit(models[a], models[b])
            distances[(a, b)] = res.distance
            print(f"  {a} vs {b}: {res.distance:.4f}")
    return {"scendi": scores, "distances": distances}


if __name__ == "__main__":
    main()
