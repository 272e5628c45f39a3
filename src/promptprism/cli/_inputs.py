"""Options every sub-command that reads paired sets shares: encoders, cache, device (see ``load_input``).

A sub-command adds them with the option objects below, then calls :func:`load_cli_input` for each input;
``--columns`` (added to those commands by :mod:`._options`) reaches the loaders through the run's state.
"""

from __future__ import annotations

import contextlib
import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .._validation import check_memory
from ..errors import InputError, OptionError
from ._app import err_console, run_state
from ._options import Integer, typed

if TYPE_CHECKING:  # (the loaders are imported when a command reads its inputs)
    from ..data.paired import PairedSet

INPUT_HELP = ("a manifest (.jsonl/.csv/.parquet: prompt or prompt_image, output or image; other column "
              "names with --columns), a folder of images with prompts.jsonl|csv|parquet (id, prompt; image "
              "stem = id), or embeddings (.npz, .parquet, folder of .npy)")

TEXT_MODEL = typer.Option("minilm", "--text-model",
                          help="Text encoder: minilm (bundled all-MiniLM-L6-v2), clip, open_clip:X, or a "
                               "local model folder.")
IMAGE_MODEL = typer.Option("auto", "--image-model",
                           help="Image encoder: clip, efficientnet-lite0 (efficientnet-lite0:N), pixels "
                                "(pixels:N), inception (FID Inception-v3; inception:PATH), open_clip:X, "
                                "dinov2:X, siglip:X (X a local folder or a cached hub name), a local folder, "
                                "or auto (clip if --clip-model, else efficientnet-lite0 when installed, "
                                "else pixels).")
CLIP_MODEL = typer.Option(None, "--clip-model", help="CLIP checkpoint: a local folder or a hub name already "
                                                     "in the local cache, or open_clip:FOLDER_OR_HUB_ID "
                                                     "(never downloaded).")
PROMPTS = typer.Option(None, "--prompts", help="Prompts file (id, prompt) for image-folder inputs (default: "
                                               "prompts.jsonl|csv|parquet inside the folder).")
CACHE = typer.Option(None, "--cache", help="Embedding cache folder (default: $PROMPTPRISM_CACHE or "
                                           "~/.cache/promptprism).")
NO_CACHE = typer.Option(False, "--no-cache", help="Do not read or write the on-disk embedding cache.")
DEVICE = typer.Option("auto", "--device", help="Where the work runs, the encoder and the array core alike: "
                                                "auto (cuda when present, else cpu), cpu (numpy: the "
                                                "reference), torch (torch on the CPU), cuda, cuda:N, mps.")
BATCH_SIZE = typed(64, Integer(minimum=1), "--batch-size", help="Items per encoder batch (>= 1).")
SCHEDULER = typer.Option(None, "--scheduler", help="Run on this dask scheduler (tcp://host:8786); its "
                                                   "workers must read the inputs and the cache folder.")
WORKERS = typed(None, Integer(minimum=1), "--workers",
                help="Start a local dask cluster of this many worker processes (>= 1) for the run.")
QUIET = typer.Option(False, "--quiet", "-q", help="No progress bars and no table.")


def cluster_for(method: str, scheduler: str | None, workers: int | None) -> tuple[str | None, int | None]:
    """(scheduler, workers) for :func:`~promptprism.scale.execution`: none for the exact route, which runs
    in this process whatever the cluster (a warning says the flag is unused, and no cluster is started)."""
    if method == "exact" and (scheduler or workers):
        import warnings

        flag = "--scheduler" if scheduler else "--workers"
        warnings.warn(f"{flag} is not used by --method exact (the joint Gram matrix is built and solved in "
                      "this process); no cluster is started", UserWarning, stacklevel=2)
        return None, None
    return scheduler, workers


def check_pixel_model(image_model: str, batch_size: int) -> None:
    """``pixels:N`` resizes every image to N x N x 3 (float32): refuse an N whose batch cannot fit."""
    name, _, size = str(image_model).partition(":")
    if name == "pixels" and size.strip().isdigit():
        n = int(size)
        check_memory(4.0 * 3 * n * n * 2, what=f"image_model pixels:{n} ({n} x {n} x 3 floats per image)")
        check_memory(4.0 * 3 * n * n * max(int(batch_size), 1) * 2,
                     what=f"batch_size {batch_size} (batches of pixels:{n} images, {n} x {n} x 3 floats "
                          "each)")


def note(msg: str) -> None:
    """A note on stderr (one line: "note: ...")."""
    err_console.print(f"note: {msg}", markup=False, highlight=False, soft_wrap=True)


def _with_columns(fn: Any, options: dict[str, Any], path: Any) -> dict[str, Any]:
    """Add the run's ``--columns`` mapping of the input ``path`` as ``columns=`` (loaders that do not take
    it yet refuse it)."""
    columns = run_state().columns_for(path)
    if columns is None:
        return options
    if "columns" not in inspect.signature(fn).parameters:
        raise OptionError("columns: the manifest loaders of this version cannot map columns; rename the "
                          "columns to prompt/output (or prompt_image/image)")
    return dict(options, columns=columns)


def cli_input_options(*, prompts: Path | None, text_model: str, image_model: str, clip_model: str | None,
                      cache: Path | None, no_cache: bool, device: str, batch_size: int, quiet: bool
                      ) -> dict[str, Any]:
    """The keyword arguments of ``read_input``/``load_input`` for the CLI's shared options."""
    check_pixel_model(image_model, batch_size)
    return dict(prompts=prompts, text_model=text_model, image_model=image_model, clip_model=clip_model,
                cache=None if no_cache else (cache or "default"), device=device, batch_size=batch_size,
                progress=False if quiet else None, notes=note)


def results_folder_input(path: Path) -> Path:
    """An input given as a results folder (e.g. last week's run as the baseline): the set its result
    recorded as the test side, or its only input, found and checked against its fingerprint; any other path
    as it is. The file's fingerprint (recorded with the result) starts hashing beside the work."""
    from ..provenance import prefetch_fingerprint, results_folder_set

    found, key = results_folder_set(path)
    if key is not None:
        note(f"{path}: a results folder; its {key} set is read ({found})")
    prefetch_fingerprint(found)
    return found


def read_cli_input(path: Path, *, name: str, **options: Any) -> Any:
    """``read_input`` with the CLI's options (ids, encoders and cache statistics included)."""
    from ..data.inputs import read_input

    path = results_folder_input(path)

    kwargs = _with_columns(read_input, cli_input_options(**options), path)
    return read_input(path, name=name, **kwargs)


def load_cli_input(path: Path, *, name: str, prompts: Path | None, text_model: str, image_model: str,
                   clip_model: str | None, cache: Path | None, no_cache: bool, device: str, batch_size: int,
                   quiet: bool, client: Any = None, columns: dict[str, str] | None = None) -> PairedSet:
    """``load_input`` with the CLI's options; notes go to stderr. ``columns``: the manifest's own column
    names by role (default: the run's ``--columns``). ``client`` (deprecated): run inside
    ``execution(client)`` instead."""
    from ..data.inputs import load_input
    from ..scale import current_client, execution

    kwargs = _with_columns(load_input, cli_input_options(
        prompts=prompts, text_model=text_model, image_model=image_model, clip_model=clip_model, cache=cache,
        no_cache=no_cache, device=device, batch_size=batch_size, quiet=quiet), path)
    if columns is not None:
        kwargs["columns"] = columns
    scope = execution(client) if client is not None and current_client() is None else contextlib.nullcontext()
    with scope:
        return load_input(results_folder_input(path), name=name, **kwargs)


class RecordedSets(dict):
    """:func:`recorded_sets`' sets by name, and in ``given`` the paths of those given on the command line
    (recorded as the result's inputs when it is written again: the file read, not the one first recorded)."""

    def __init__(self) -> None:
        super().__init__()
        self.given: dict[str, Path] = {}


def recorded_sets(result, folder: Path, given_paths: dict, legacy: dict, text_model: str) -> RecordedSets:
    """The input sets of a results folder's ``result``, by name (``describe``, ``quality``): the path given,
    else where result.json's ``inputs`` record it (relative to DIR, then absolute; ``legacy``: the paths an
    older result.json names, as is or under DIR). Every set is checked against its recorded fingerprint
    before anything is written."""
    from ..data.inputs import load_input
    from ..provenance import locate, verify

    records = result.inputs or {}
    sets = RecordedSets()
    for side, given in given_paths.items():
        if given is not None:
            path = Path(given) if Path(given).exists() else None
            where = str(given)
            if path is not None:
                sets.given[side] = path
        elif side in records:
            path, where = locate(records[side], folder), records[side].get("path")
        else:
            where = legacy.get(side)
            candidates = [Path(where), folder / str(where)] if where else []
            path = next((c for c in candidates if c.exists()), None)
        if path is None:
            raise InputError(f"{side} input {where or '(not recorded in result.json)'} not found (looked "
                             f"relative to {folder} and where the run read it); pass the {side} set as an "
                             "argument")
        columns = run_state().columns_for(path)
        sets[side] = load_input(path, text_model=text_model, **({"columns": columns} if columns else {}))
        verify(side, path, records, content=sets[side])
        if "sha256" not in records.get(side, {}):
            _check_unrecorded(result, side, path, sets[side])
    return sets


def _check_unrecorded(result, side: str, path: Path, content) -> None:
    """A set whose fingerprint result.json does not hold (written by an older version): refused when its
    row count is not the result's, else used with a warning that nothing more could be checked."""
    import warnings

    rows = getattr(result, {"test": "n_test", "reference": "n_reference"}.get(side, ""), None)
    if rows is not None and len(content) != int(rows):
        raise InputError(f"{side} input {path}: it has {len(content):,} rows where the result was computed "
                         f"on {int(rows):,}; pass the set the result was computed on (nothing was written)")
    warnings.warn(f"{side} input {path}: result.json records no fingerprint of its inputs (an older "
                  "version wrote it), so only its row count could be checked against the result", UserWarning,
                  stacklevel=2)
