"""The seeded training recipe of the text-conditioned Fashion-MNIST generator (28 px, MiniLM prompts).

Run it as::

    python -m promptprism.models.fashion_text_train --out runs/fashion-text --max-steps 1200 --seed 0

Captions come from :mod:`promptprism.models.fashion_captions` (thresholds measured on the training set,
rare cells thinned to 10 %); every distinct caption is encoded once by the bundled MiniLM
(:func:`promptprism.models.fashion_text.prompt_states`). DDPM loss on the noise, caption dropout to the empty
prompt (classifier-free guidance), AdamW, EMA with warm-up, as :mod:`promptprism.models.fashion_train`.
Writes ``<out>/step-N/`` checkpoints every ``--save-every`` steps and ``<out>/train.log``. ``--swap
CLASS:ATTRIBUTE`` flips that attribute's word in that class's captions (with ``--init``, a short fine-tune:
the second generator with a planted disagreement).
"""

from __future__ import annotations

import argparse
import copy
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_seed
from ..backend import torch_threads
from ..errors import OptionError
from . import fashion_captions as fc
from .fashion_text import PAD, TextUNetShape, load_checkpoint, prompt_states, save_text_checkpoint


def caption_table(seed: int, swap: tuple[str, str] | None = None) -> dict:
    """The training set's images (kept after thinning the rare cells), labels, attributes, captions and the
    frozen thresholds."""
    from ..datasets import fashion_mnist

    x, y = fashion_mnist("train")
    thresholds = fc.class_thresholds(x, y)
    attrs = fc.attribute_table(x, y, thresholds)
    keep = fc.rare_mask(y, attrs, seed)
    texts = fc.captions(y[keep], attrs[keep], seed, swap=swap)
    return {"images": x[keep], "labels": y[keep], "attrs": attrs[keep], "captions": texts,
            "thresholds": thresholds, "n_dropped": int((~keep).sum())}


def parse_swap(spec: str | None) -> tuple[str, str] | None:
    """"bag:brightness" -> ("bag", "brightness"); None stays None."""
    if spec is None:
        return None
    cls, _, attr = spec.partition(":")
    if cls.strip().lower() not in fc.class_words() or attr.strip() not in fc.ATTRIBUTES:
        raise OptionError(f"swap must be CLASS:ATTRIBUTE over {', '.join(fc.class_words())} and "
                          f"{', '.join(fc.ATTRIBUTES)}, got {spec!r}", parameter="swap")
    return cls.strip().lower(), attr.strip()


def _training_meta(*, table: dict, swap: tuple[str, str] | None, **recorded: Any) -> dict:
    """What a checkpoint records of its training: the arguments, the caption rules and frozen thresholds."""
    return {**recorded, "n_rare_dropped": table["n_dropped"], "swap": list(swap) if swap else None,
            "thresholds": table["thresholds"].tolist(),
            "rules": {"ink": fc.INK, "values": fc.VALUES, "rare_cells": [list(c) for c in fc.RARE_CELLS],
                      "rare_keep": fc.RARE_KEEP, "templates": list(fc.TEMPLATES)},
            "image_size": 28, "pad": PAD, "text_encoder": "all-MiniLM-L6-v2 token states",
            "weights": "EMA of the training weights, stored in fp16"}


def train(out: str | Path, *, max_steps: int = 1200, shape: TextUNetShape = TextUNetShape(),
          batch_size: int = 32, lr: float = 1e-3, caption_dropout: float = 0.1, seed: int = 0,
          swap: tuple[str, str] | None = None, init: str | None = None, save_every: int = 200,
          command: str = "", log_every: int = 20, lr_schedule: str = "constant") -> list[Path]:
    """Train for ``max_steps`` steps, saving ``step-N`` every ``save_every`` steps; returns the folders.
    ``lr_schedule``: ``"constant"`` or ``"cosine"`` (from ``lr`` to 0 over ``max_steps``)."""
    import torch
    from diffusers.training_utils import EMAModel

    from .fashion import training_scheduler

    check_seed(seed)
    if max_steps < 1 or batch_size < 1 or not 0.0 <= caption_dropout < 1.0 or not lr > 0:
        raise OptionError(f"need max_steps >= 1, batch_size >= 1, 0 <= caption_dropout < 1 and lr > 0; got "
                          f"{max_steps}, {batch_size}, {caption_dropout}, {lr}")
    if lr_schedule not in ("constant", "cosine"):
        raise OptionError(f"lr_schedule must be 'constant' or 'cosine', got {lr_schedule!r}",
                          parameter="lr_schedule")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table = caption_table(seed, swap)
    distinct = sorted(set(table["captions"]))
    states = torch.from_numpy(prompt_states(distinct + [""]).astype(np.float32))
    index = {c: i for i, c in enumerate(distinct)}
    cap = torch.tensor([index[c] for c in table["captions"]])
    null = len(distinct)
    x = torch.from_numpy(table["images"].astype(np.float32)).div(127.5).sub(1.0)[:, None]
    x = torch.nn.functional.pad(x, (PAD,) * 4, value=-1.0)
    if init is not None:
        start = load_checkpoint(init)
        unet, scheduler = start.unet.train(), start.scheduler
    else:
        unet, scheduler = shape.build(seed).train(), training_scheduler()
    ema = EMAModel(unet.parameters(), decay=0.999, use_ema_warmup=True, power=0.75)
    opt = torch.optim.AdamW(unet.parameters(), lr=lr, weight_decay=0.0)
    cosine = lr_schedule == "cosine"
    decay = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max_steps) if cosine else None
    gen = torch.Generator().manual_seed(seed)
    meta = _training_meta(seed=seed, command=command, init=init, batch_size=batch_size, lr=lr,
                          lr_schedule=lr_schedule, caption_dropout=caption_dropout,
                          n_params=sum(p.numel() for p in unet.parameters()), n_images=int(cap.numel()),
                          table=table, n_captions=len(distinct), swap=swap)
    log = (out / "train.log").open("a")
    log.write(f"# {command}\n# {meta['n_params']} parameters, {cap.numel()} images, "
              f"{len(distinct)} captions\n")
    saved, step, t0 = [], 0, time.perf_counter()
    while step < max_steps:
        order = torch.randperm(cap.numel(), generator=gen)
        for b in range(0, cap.numel() - batch_size + 1, batch_size):
            idx = order[b: b + batch_size]
            c = cap[idx].clone()
            c[torch.rand(idx.numel(), generator=gen) < caption_dropout] = null
            noise = torch.randn((idx.numel(), 1, 28 + 2 * PAD, 28 + 2 * PAD), generator=gen)
            t = torch.randint(0, scheduler.config.num_train_timesteps, (idx.numel(),), generator=gen)
            pred = unet(scheduler.add_noise(x[idx], noise, t), t, encoder_hidden_states=states[c]).sample
            loss = torch.nn.functional.mse_loss(pred, noise)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if decay is not None:
                decay.step()
            ema.step(unet.parameters())
            step += 1
            if step % log_every == 0:
                log.write(f"step {step} loss {loss.item():.4f} elapsed {time.perf_counter() - t0:.0f} s\n")
                log.flush()
            if step % save_every == 0 or step == max_steps:
                averaged = copy.deepcopy(unet)
                ema.copy_to(averaged.parameters())
                saved.append(save_text_checkpoint(out / f"step-{step}", averaged.eval(), scheduler,
                                                  {**meta, "steps": step,
                                                   "seconds": round(time.perf_counter() - t0, 1)}))
                log.write(f"saved {saved[-1]} after {time.perf_counter() - t0:.0f} s\n")
                log.flush()
            if step >= max_steps:
                break
    log.close()
    return saved


def main(argv: list[str] | None = None) -> int:
    """The command line of the recipe (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python -m promptprism.models.fashion_text_train",
                                description="Train the text-prompted 28 px Fashion-MNIST diffusion model.")
    p.add_argument("--out", required=True, help="folder for step-N/ checkpoints and train.log")
    p.add_argument("--max-steps", type=int, default=1200)
    p.add_argument("--channels", default="24,48,64", help="channels per level, comma-separated")
    p.add_argument("--layers-per-block", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--lr-schedule", choices=("constant", "cosine"), default="constant")
    p.add_argument("--caption-dropout", type=float, default=0.1, help="share of empty prompts (CFG)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--swap", default=None, metavar="CLASS:ATTRIBUTE", help="flip ATTRIBUTE in CLASS captions")
    p.add_argument("--init", default=None, help="start from this checkpoint folder (a fine-tune)")
    p.add_argument("--save-every", type=int, default=200)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    try:
        with torch_threads(args.threads):
            train(args.out, max_steps=args.max_steps,
                  shape=TextUNetShape(tuple(int(c) for c in args.channels.split(",")),
                                      args.layers_per_block),
                  batch_size=args.batch_size, lr=args.lr, caption_dropout=args.caption_dropout,
                  seed=args.seed, swap=parse_swap(args.swap), init=args.init, save_every=args.save_every,
                  lr_schedule=args.lr_schedule,
                  command=shlex.join(["python", "-m", "promptprism.models.fashion_text_train",
                                      *(sys.argv[1:] if argv is None else argv)]))
    except (OptionError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
