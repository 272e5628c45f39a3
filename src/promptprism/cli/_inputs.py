"""Options every sub-command that reads paired sets shares: encoders, cache, device (see ``load_input``).

A sub-command adds them with ``**input_options()``-style parameters copied from ``split``, then calls
:func:`load_cli_input` for each input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ..data.inputs import load_input
from ..data.paired import PairedSet
from ..errors import OptionError
from ._app import err_console

INPUT_HELP = ("a manifest (.jsonl/.csv/.parquet: prompt or prompt_image, output or image), a folder of "
              "images with prompts.jsonl|csv|parquet (id, prompt; image stem = id), or embeddings (.npz, "
              ".parquet, folder of .npy)")

TEXT_MODEL = typer.Option("minilm", "--text-model",
                          help="Text encoder: minilm (bundled all-MiniLM-L6-v2), clip, or a local model "
                               "folder.")
IMAGE_MODEL = typer.Option("auto", "--image-model",
                           help="Image encoder: clip, efficientnet-lite0, pixels (pixels:N), a local folder, "
                                "or auto (clip if --clip-model, else efficientnet-lite0 when installed, "
                                "else pixels).")
CLIP_MODEL = typer.Option(None, "--clip-model", help="CLIP checkpoint: a local folder or a hub name already "
                                                     "in the local cache (never downloaded).")
PROMPTS = typer.Option(None, "--prompts", help="Prompts file (id, prompt) for image-folder inputs (default: "
                                               "prompts.jsonl|csv|parquet inside the folder).")
CACHE = typer.Option(None, "--cache", help="Embedding cache folder (default: $PROMPTPRISM_CACHE or "
                                           "~/.cache/promptprism).")
NO_CACHE = typer.Option(False, "--no-cache", help="Do not read or write the on-disk embedding cache.")
DEVICE = typer.Option("auto", "--device", help="auto (cuda when present, else cpu), cpu, cuda, cuda:N, mps.")
BATCH_SIZE = typer.Option(64, "--batch-size", help="Items per encoder batch.")
SCHEDULER = typer.Option(None, "--scheduler", help="Run on this dask scheduler (tcp://host:8786); its "
                                                   "workers must read the inputs and the cache folder.")
WORKERS = typer.Option(None, "--workers", help="Start a local dask cluster of this many worker processes "
                                               "for the run.")


def int_option(value: str, name: str) -> int:
    """An integer option read as text, so that a bad value gets our one-line error (exit 2)."""
    try:
        return int(value)
    except ValueError:
        raise OptionError(f"{name} must be an integer, got {value!r}") from None


def load_cli_input(path: Path, *, name: str, prompts: Path | None, text_model: str, image_model: str,
                   clip_model: str | None, cache: Path | None, no_cache: bool, device: str, batch_size: int,
                   quiet: bool, client: Any = None, columns: dict[str, str] | None = None) -> PairedSet:
    """``load_input`` with the CLI's options; notes go to stderr. ``columns``: the manifest's own column
    names by role (see :func:`promptprism.data.read_manifest`)."""
    return load_input(path, prompts=prompts, text_model=text_model, image_model=image_model,
                      clip_model=clip_model, cache=None if no_cache else (cache or "default"), device=device,
                      batch_size=batch_size, progress=False if quiet else None, name=name,
                      notes=lambda msg: err_console.print(f"[yellow]note:[/] {msg}", highlight=False,
                                                          soft_wrap=True), client=client, columns=columns)
