"""``promptprism embed``: embed a manifest or an image folder once, write the .npz every method reads."""

from __future__ import annotations

from pathlib import Path

import typer

from ..scale import execution
from . import _inputs as inp
from ._app import app, console, run_state


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
    from ..data.save import save_paired

    with execution(scheduler=scheduler, workers=workers):
        loaded = inp.read_cli_input(input, name=input.stem, prompts=prompts, text_model=text_model,
                                    image_model=image_model, clip_model=clip_model, cache=cache,
                                    no_cache=no_cache, device=device, batch_size=batch_size, quiet=quiet)
    s = loaded.paired
    save_paired(out, s, ids=loaded.ids, encoders=loaded.encoders,
                **({"joint_space": True} if loaded.joint_space else {}))
    hits = sum(st["hits"] for st in loaded.stats.values())
    unique = sum(st["unique"] for st in loaded.stats.values())
    run_state().summary = {"n": len(s), "dim_prompt": s.dim_prompt, "dim_output": s.dim_output,
                           "encoders": dict(loaded.encoders), "joint_space": loaded.joint_space,
                           "cache_hits": hits, "unique_items": unique,
                           "files": {"npz": str(out)}}
    if not quiet:
        enc = ", ".join(f"{k}s: {v}" for k, v in loaded.encoders.items()) or "none (already embeddings)"
        console.print(f"{len(s)} pairs, prompts {s.dim_prompt}-d, outputs {s.dim_output}-d; encoders: {enc}; "
                      f"cache hits {hits}/{unique} unique items", markup=False)
        console.print(f"wrote {out}", markup=False, soft_wrap=True)
