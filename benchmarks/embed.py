"""Encoder throughput on this machine and the speed-up of a warm embedding cache.

    python benchmarks/embed.py [--texts 512] [--images 512] [--out benchmarks/embed.json]

* texts/s: the bundled sentence model (all-MiniLM-L6-v2), model load timed separately;
* images/s: the pixel encoder (32 x 32) and CLIP, on PNG files of scikit-learn's digits and scikit-image's
  photographs. No real CLIP checkpoint ships offline, so the CLIP row uses a TINY RANDOMLY INITIALISED
  CLIP (2 layers, width 32, 32 px input) as a stand-in: it times the pipeline (decode, preprocess, batch),
  not a real ViT-B/32. Pass --clip-model PATH to time a real local checkpoint instead;
* cache: the same items embedded again through a cache folder read back by a fresh process-like cache
  object (hash the items, read the shards, no model call), against the cold run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))


def texts(n: int) -> list[str]:
    from _qa_topics import TOPICS

    base = [s for pairs in TOPICS.values() for pair in pairs for s in pair]
    return [f"{base[i % len(base)]} (item {i})" for i in range(n)]


def image_files(folder: Path, n: int) -> list[Path]:
    from PIL import Image
    from skimage import data
    from sklearn.datasets import load_digits

    digits = load_digits().images
    photos = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket()]
    out = []
    for i in range(n):
        p = folder / f"img{i:05d}.png"
        if i % 8 == 0:  # one photograph in 8 (512 px), cropped differently each time so every file differs
            ph = photos[(i // 8) % len(photos)]
            s = i % 64
            Image.fromarray(ph[s : s + 256, s : s + 256]).save(p)
        else:
            arr = (digits[i % len(digits)] / 16 * 255).astype(np.uint8)
            Image.fromarray(np.kron(arr, np.ones((4, 4), np.uint8)) ^ np.uint8(i % 7)).save(p)
        out.append(p)
    return out


def rate(fn, n: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    fn()
    dt = time.perf_counter() - t0
    return n / dt, dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=512)
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--clip-model", default=None, help="a real local CLIP checkpoint (default: tiny random)")
    ap.add_argument("--out", type=Path, default=None, help="also write the numbers as JSON here")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    import torch

    from promptprism.embed import EmbeddingCache, embed_items, get_encoder, resolve_device

    device = resolve_device(args.device)
    rows: list[dict] = []
    info = {"python": platform.python_version(), "torch": torch.__version__, "device": device,
            "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "batch_size": args.batch_size}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        T = texts(args.texts)
        files = image_files(tmp / "imgs" if (tmp / "imgs").mkdir() is None else tmp, args.images)

        t0 = time.perf_counter()
        minilm = get_encoder("minilm", modality="text", device=device, batch_size=args.batch_size)
        minilm.encode_texts(["warm-up"])
        load = time.perf_counter() - t0
        r, dt = rate(lambda: minilm.encode_texts(T), len(T))
        rows.append({"encoder": "minilm (all-MiniLM-L6-v2)", "what": "texts", "n": len(T), "per_s": r,
                     "seconds": dt, "load_s": load})

        pix = get_encoder("pixels", modality="image")
        r, dt = rate(lambda: pix.encode_images(files), len(files))
        rows.append({"encoder": "pixels 32x32", "what": "images (PNG files)", "n": len(files), "per_s": r,
                     "seconds": dt})

        if args.clip_model:
            clip_path, label = args.clip_model, f"clip ({Path(args.clip_model).name})"
        else:
            from _tiny_clip import build_tiny_clip

            clip_path = str(build_tiny_clip(tmp / "tiny-clip"))
            label = "clip TINY RANDOM stand-in (not ViT-B/32)"
        t0 = time.perf_counter()
        clip = get_encoder(clip_path, modality="image", device=device, batch_size=args.batch_size)
        clip.encode_images(files[:1])
        load = time.perf_counter() - t0
        r, dt = rate(lambda: clip.encode_images(files), len(files))
        rows.append({"encoder": label, "what": "images (PNG files)", "n": len(files), "per_s": r,
                     "seconds": dt, "load_s": load})
        r, dt = rate(lambda: clip.encode_texts(T), len(T))
        rows.append({"encoder": label, "what": "texts", "n": len(T), "per_s": r, "seconds": dt})

        cache_rows = []
        for label, enc, items, kind in (("minilm texts", minilm, T, "text"),
                                        ("pixels images", pix, files, "image"),
                                        ("clip images (stand-in)" if not args.clip_model else "clip images",
                                         clip, files, "image")):
            folder = tmp / f"cache-{kind}-{len(cache_rows)}"
            cold = rate(lambda: embed_items(items, kind, enc, EmbeddingCache(folder)), len(items))[1]  # noqa: B023
            calls = {"n": 0}
            real = enc.encode_texts if kind == "text" else enc.encode_images

            def counting(x, real=real, calls=calls):
                calls["n"] += 1
                return real(x)

            warm = rate(lambda: embed_items(items, kind, _Wrap(enc, counting, kind), EmbeddingCache(folder)),  # noqa: B023
                        len(items))[1]
            cache_rows.append({"items": label, "n": len(items), "cold_s": cold, "warm_s": warm,
                               "speedup": cold / warm, "encoder_calls_when_warm": calls["n"]})

    print(f"device: {device} | torch {info['torch']} | {info['cpu_count']} CPUs, {info['torch_threads']} "
          f"torch threads | batch {args.batch_size}")
    print(f"{'encoder':44s} {'what':20s} {'n':>6s} {'per s':>10s} {'load s':>8s}")
    for r in rows:
        load = f"{r['load_s']:.2f}" if "load_s" in r else ""
        print(f"{r['encoder']:44s} {r['what']:20s} {r['n']:6d} {r['per_s']:10.1f} {load:>8s}")
    print(f"\n{'cache (cold = encode + write; warm = hash + read)':50s} {'n':>6s} {'cold s':>8s} "
          f"{'warm s':>8s} {'speed-up':>9s} {'calls':>6s}")
    for c in cache_rows:
        print(f"{c['items']:50s} {c['n']:6d} {c['cold_s']:8.3f} {c['warm_s']:8.3f} {c['speedup']:8.1f}x "
              f"{c['encoder_calls_when_warm']:6d}")
    if args.out:
        args.out.write_text(json.dumps({"info": info, "encoders": rows, "cache": cache_rows}, indent=2))


class _Wrap:
    """The same encoder identity, with the encode method replaced by a counting one."""

    def __init__(self, enc, fn, kind):
        self.identity, self.modalities = enc.identity, enc.modalities
        self.encode_texts = fn if kind == "text" else enc.encode_texts
        self.encode_images = fn if kind == "image" else enc.encode_images


if __name__ == "__main__":
    main()
