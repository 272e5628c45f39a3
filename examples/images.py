"""Text-to-image: two folders of generated images and one prompts file; which prompts does model B draw
differently? Model B draws every circle as a square.

    python examples/images.py --out results/images [--per-prompt 6] [--no-report]

Images are paired with prompts by file name (``<id>_<k>.png`` belongs to prompt ``id``), never by listing
order. Prompts are embedded with MiniLM, images with the ``pixels:16`` encoder (16 x 16 RGB pixels): no
image model is needed for this toy example; pass ``image_model="clip"`` and ``clip_model=...`` for real
images. Needs the ``embed`` extra; ``make demo`` installs it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import promptprism as pp
from promptprism.data import load_input

SHAPES = ["square", "circle"]
COLOURS = {"red": (220, 30, 30), "green": (30, 180, 60), "blue": (40, 60, 220), "yellow": (230, 210, 40)}


def draw(shape: str, colour: tuple[int, int, int], rng: np.random.Generator):
    """A 32 x 32 PIL image: a coloured shape at a random place on white."""
    from PIL import Image, ImageDraw

    im = Image.new("RGB", (32, 32), "white")
    x, y = rng.integers(6, 10, size=2)
    size = int(rng.integers(16, 19))
    box = (int(x), int(y), int(x) + size, int(y) + size)
    (ImageDraw.Draw(im).ellipse if shape == "circle" else ImageDraw.Draw(im).rectangle)(box, fill=colour)
    return im


def write_folders(root: Path, per_prompt: int, seed: int = 0) -> tuple[Path, Path, Path]:
    """model_a/ and model_b/ image folders and prompts.jsonl (id, prompt)."""
    rng = np.random.default_rng(seed)
    prompts = [(f"{c}-{s}", f"a {c} {s}") for c in COLOURS for s in SHAPES]
    root.mkdir(parents=True, exist_ok=True)
    prompts_file = root / "prompts.jsonl"
    prompts_file.write_text("".join(json.dumps({"id": i, "prompt": p}) + "\n" for i, p in prompts))
    folders = []
    for model in ("model_a", "model_b"):
        folder = root / model
        folder.mkdir(exist_ok=True)
        for pid, _ in prompts:
            colour, shape = pid.split("-")
            drawn = "square" if model == "model_b" else shape  # model B cannot draw circles
            for k in range(per_prompt):
                draw(drawn, COLOURS[colour], rng).save(folder / f"{pid}_{k}.png")
        folders.append(folder)
    return folders[0], folders[1], prompts_file


def main(argv: list[str] | None = None) -> pp.PromptSplitResult:
    """Draw the two image folders, embed them, run PromptSplit, print and save the result."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results/images"))
    ap.add_argument("--per-prompt", type=int, default=6)
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args(argv)
    a_dir, b_dir, prompts = write_folders(args.out / "data", args.per_prompt)
    opts = dict(prompts=prompts, text_model="minilm", image_model="pixels:16", cache=args.out / "cache",
                progress=False)
    a = load_input(a_dir, name="model_a", **opts)
    b = load_input(b_dir, name="model_b", **opts)
    print(a)
    result = pp.PromptSplit(kernel="gaussian", n_modes=4, seed=0).fit(a, b)
    print("prompts where the models differ most:")
    for row in result.prompt_ranking[:4]:
        print(f"  {row['prompt']}")
    result.save(args.out)
    if not args.no_report:
        from promptprism.report import write_report

        write_report(result, args.out, inputs={"test": a, "reference": b})
    return result


if __name__ == "__main__":
    main()
