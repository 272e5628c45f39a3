"""``promptprism embed``: embed a manifest or an image folder once, write the .npz every method reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import typer

from ..data.inputs import read_input
from ..errors import OptionError
from ..io import atomic_save_npz
from ..scale import open_client
from . import _inputs as inp
from ._app import app, console, err_console


@app.command("embed")
def embed(
    input: Path = typer.Argument(..., help=f"What to embed: {inp.INPUT_HELP}."),
    out: Path = typer.Option(..., "--out", "-o", help="The .npz to write (prompt_embeddings, "
                                                      "output_embeddings, prompts, outputs[, ids])."),
    text_model: str = inp.TEXT_MODEL, image_model: str = inp.IMAGE_MODEL, clip_model: str = inp.CLIP_MODEL,
    prompts: Path = inp.PROMPTS, cache: Path = inp.CACHE, no_cache: bool = inp.NO_CACHE,
    device: str = inp.DEVICE, batch_size: int = inp.BATCH_SIZE,
    scheduler: str = inp.SCHEDULER, workers: int = inp.WORKERS,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars and no summary."),
) -> None:
    """Embed prompts and outputs once (through the cache) and write them as a reusable .npz.

    The file has the layout every method reads: prompt_embeddings, output_embeddings, prompts, outputs.
    """
    if out.suffix.lower() != ".npz":
        raise OptionError(f"--out {str(out)!r}: must end in .npz")
    if out.exists() and out.is_dir():
        raise OptionError(f"--out {str(out)!r}: is a folder; expected a .npz file name")
    with open_client(scheduler, workers) as client:
        loaded = read_input(input, prompts=prompts, text_model=text_model, image_model=image_model,
                            clip_model=clip_model, cache=None if no_cache else (cache or "default"),
                            device=device, batch_size=batch_size, progress=False if quiet else None,
                            name=input.stem, client=client,
                            notes=lambda msg: err_console.print(f"[yellow]note:[/] {msg}", highlight=False,
                                                                soft_wrap=True))
    s = loaded.paired
    arrays = dict(prompt_embeddings=np.asarray(s.prompt_embeddings, dtype=np.float32),
                  output_embeddings=np.asarray(s.output_embeddings, dtype=np.float32))
    if s.prompts is not None:
        arrays["prompts"] = np.array(s.prompts, dtype=str)
    if s.outputs is not None:
        arrays["outputs"] = np.array(s.outputs, dtype=str)
    if loaded.ids is not None:
        arrays["ids"] = np.array(loaded.ids, dtype=str)
    for side, identity in loaded.encoders.items():
        arrays[f"{side}_encoder"] = np.array(identity)
    atomic_save_npz(out, **arrays)
    if not quiet:
        hits = sum(st["hits"] for st in loaded.stats.values())
        unique = sum(st["unique"] for st in loaded.stats.values())
        enc = ", ".join(f"{k}s: {v}" for k, v in loaded.encoders.items()) or "none (already embeddings)"
        console.print(f"{len(s)} pairs, prompts {s.dim_prompt}-d, outputs {s.dim_output}-d; encoders: {enc}; "
                      f"cache hits {hits}/{unique} unique items")
        console.print(f"wrote {out}")
