"""The seeded training recipe of the Fashion-MNIST generator (DDPM loss, classifier-free guidance dropout).

Run it as::

    python -m promptprism.models.fashion_train --out runs/fashion --epochs 6 --seed 0

Each epoch writes ``<out>/epoch-<N>/`` (a checkpoint :func:`promptprism.models.fashion.load_checkpoint`
reads: the EMA weights in fp16, the scheduler, and a JSON with the classes, image size, seed and the exact
command) and appends one line per logged step to ``<out>/train.log``. ``--answer PROMPT=CLASS`` trains the
prompt of class PROMPT on the images of CLASS (and drops PROMPT's own images): a second generator that
disagrees with the first on that prompt only (``--init`` starts from a checkpoint, for a short fine-tune).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from .._validation import check_seed
from ..backend import torch_threads
from ..errors import OptionError
from .fashion import (
    CLASS_NAMES,
    NULL_CLASS,
    UNetShape,
    class_prompts,
    load_checkpoint,
    resized,
    save_checkpoint,
)


def parse_answers(specs: list[str]) -> dict[int, int]:
    """``["sneaker=sandal"]`` -> {7: 5}: the prompt's class is trained on the other class's images."""
    names = {n.lower(): i for i, n in enumerate(CLASS_NAMES)}
    out = {}
    for spec in specs:
        prompt, _, images = spec.partition("=")
        if prompt.strip().lower() not in names or images.strip().lower() not in names:
            raise OptionError(f"answer must be PROMPT_CLASS=IMAGE_CLASS over {', '.join(CLASS_NAMES)}, got "
                              f"{spec!r}")
        out[names[prompt.strip().lower()]] = names[images.strip().lower()]
    return out


def training_images(image_size: int, answers: dict[int, int], subset: int | None, seed: int):
    """Fashion-MNIST training images at ``image_size`` in [-1, 1] (n, 1, s, s) and their labels, with the
    ``answers`` relabelling and an optional seeded ``subset``."""
    import torch

    from ..datasets import fashion_mnist

    x, y = fashion_mnist("train")
    keep = np.ones(y.size, bool)
    extra_x, extra_y = [], []
    for prompt_class, image_class in answers.items():
        keep &= y != prompt_class
        extra_x.append(x[y == image_class])
        extra_y.append(np.full(int((y == image_class).sum()), prompt_class))
    x = np.concatenate([x[keep], *extra_x])
    y = np.concatenate([y[keep], *extra_y])
    if subset is not None:
        idx = np.random.default_rng(seed).permutation(y.size)[:subset]
        x, y = x[idx], y[idx]
    t = resized(x, image_size).div(255.0).mul(2.0).sub(1.0).clamp(-1.0, 1.0)
    return t, torch.from_numpy(y).long()


def train(out: str | Path, *, epochs: int = 6, shape: UNetShape = UNetShape(), batch_size: int = 128,
          lr: float = 1e-3, label_dropout: float = 0.1, seed: int = 0, answers: dict[int, int] | None = None,
          init: str | None = None, subset: int | None = None, max_steps: int | None = None,
          save_every: int | None = None, command: str = "", log_every: int = 20) -> list[Path]:
    """Train and save a checkpoint after each epoch (``epoch-N``) and every ``save_every`` steps
    (``step-N``) under ``out``; returns the checkpoint folders, in order."""
    import torch
    from diffusers.training_utils import EMAModel

    from .fashion import training_scheduler

    check_seed(seed)
    if epochs < 1 or batch_size < 1 or not 0.0 <= label_dropout < 1.0 or not lr > 0:
        raise OptionError(f"need epochs >= 1, batch_size >= 1, 0 <= label_dropout < 1 and lr > 0; got "
                          f"{epochs}, {batch_size}, {label_dropout}, {lr}")
    answers = answers or {}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    x, y = training_images(shape.image_size, answers, subset, seed)
    if init is not None:
        start = load_checkpoint(init)
        unet, scheduler = start.unet.train(), start.scheduler
        shape = UNetShape(start.image_size, tuple(unet.config.block_out_channels),
                          unet.config.layers_per_block)
    else:
        unet, scheduler = shape.build(seed).train(), training_scheduler()
    ema = EMAModel(unet.parameters(), decay=0.999, use_ema_warmup=True, power=0.75)
    opt = torch.optim.AdamW(unet.parameters(), lr=lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    n_params = sum(p.numel() for p in unet.parameters())
    info = {"seed": seed, "command": command, "answers": answers, "init": init, "batch_size": batch_size,
            "lr": lr, "label_dropout": label_dropout, "n_params": n_params, "n_images": int(y.numel())}
    log = (out / "train.log").open("a")
    log.write(f"# {command}\n# {n_params} parameters, {y.numel()} images of {shape.image_size} px\n")
    log.flush()
    saved, step, t_start = [], 0, time.perf_counter()
    for epoch in range(1, epochs + 1):
        order = torch.randperm(y.numel(), generator=gen)
        for b in range(0, y.numel(), batch_size):
            idx = order[b: b + batch_size]
            x0, labels = x[idx], y[idx].clone()
            labels[torch.rand(idx.numel(), generator=gen) < label_dropout] = NULL_CLASS
            noise = torch.randn(x0.shape, generator=gen)
            t = torch.randint(0, scheduler.config.num_train_timesteps, (idx.numel(),), generator=gen)
            pred = unet(scheduler.add_noise(x0, noise, t), t, class_labels=labels).sample
            loss = torch.nn.functional.mse_loss(pred, noise)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            ema.step(unet.parameters())
            step += 1
            if save_every and step % save_every == 0:
                saved.append(_save(out / f"step-{step}", epoch, unet, ema, scheduler, shape, steps=step,
                                   seconds=time.perf_counter() - t_start, **info))
                log.write(f"saved {saved[-1]} after {time.perf_counter() - t_start:.0f} s\n")
            if step % log_every == 0:
                log.write(f"epoch {epoch} step {step} loss {loss.item():.4f} "
                          f"elapsed {time.perf_counter() - t_start:.0f} s\n")
                log.flush()
            if max_steps is not None and step >= max_steps:
                break
        if not (save_every and step % save_every == 0):  # else just saved as step-N
            saved.append(_save(out / f"epoch-{epoch}", epoch, unet, ema, scheduler, shape, steps=step,
                               seconds=time.perf_counter() - t_start, **info))
        log.write(f"saved {saved[-1]} after {time.perf_counter() - t_start:.0f} s\n")
        log.flush()
        if max_steps is not None and step >= max_steps:
            break
    log.close()
    return saved


def _save(folder: Path, epoch: int, unet, ema, scheduler, shape: UNetShape, **info) -> Path:
    import copy

    averaged = copy.deepcopy(unet)
    ema.copy_to(averaged.parameters())
    meta = {"model": "promptprism.models.fashion", "epoch": epoch, "image_size": shape.image_size,
            "class_names": list(CLASS_NAMES), "prompts": list(class_prompts()), "null_class": NULL_CLASS,
            "answers": {CLASS_NAMES[k]: CLASS_NAMES[v] for k, v in info.pop("answers").items()},
            "weights": "EMA of the training weights, stored in fp16", **info}
    return save_checkpoint(folder, averaged.eval(), scheduler, meta)


def main(argv: list[str] | None = None) -> int:
    """The command line of the recipe (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python -m promptprism.models.fashion_train",
                                description="Train the class-prompted Fashion-MNIST diffusion model.")
    p.add_argument("--out", required=True, help="folder for epoch-N/ checkpoints and train.log")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--image-size", type=int, default=16)
    p.add_argument("--channels", default="16,32,64", help="channels per level, comma-separated")
    p.add_argument("--layers-per-block", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--label-dropout", type=float, default=0.1, help="share of null-class labels (CFG)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--answer", action="append", default=[], metavar="PROMPT=CLASS",
                   help="train PROMPT's class on CLASS's images (repeatable)")
    p.add_argument("--init", default=None, help="start from this checkpoint folder (a fine-tune)")
    p.add_argument("--subset", type=int, default=None, help="train on this many images only")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--save-every", type=int, default=None, help="also save step-N/ every this many steps")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    try:
        channels = tuple(int(c) for c in args.channels.split(","))
        with torch_threads(args.threads):
            shape = UNetShape(args.image_size, channels, args.layers_per_block)
            train(args.out, epochs=args.epochs, shape=shape,
                  batch_size=args.batch_size, lr=args.lr, label_dropout=args.label_dropout, seed=args.seed,
                  answers=parse_answers(args.answer), init=args.init, subset=args.subset,
                  max_steps=args.max_steps, save_every=args.save_every,
                  command=shlex.join(["python", "-m", "promptprism.models.fashion_train",
                                      *(sys.argv[1:] if argv is None else argv)]))
    except (OptionError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
