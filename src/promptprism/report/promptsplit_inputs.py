"""The PromptSplit page's inputs: the sets and images a caller passed, checked against the result, and
read again from a results folder for ``promptprism report DIR``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from ..data.paired import PairedSet
from .common import mapping
from .core import reloader, warn_missing


def check_sets(result: Any, inputs: Any, notes: list[str]) -> dict[str, PairedSet]:
    """The given sets that match the result (a PairedSet of the result's size per side); notes why not."""
    sets: dict[str, PairedSet] = {}
    for side, n in (("test", result.n_test), ("reference", result.n_reference)):
        s = mapping(inputs).get(side)
        if s is None:
            continue
        if not isinstance(s, PairedSet):
            notes.append(f"inputs['{side}'] is a {type(s).__name__}, not a PairedSet; it is not used")
        elif len(s) != n:
            notes.append(
                f"the {side} input has {len(s):,} samples but the result was computed on {n:,}; "
                "it is not used (the data changed since the run?)"
            )
        else:
            sets[side] = s
    return sets


def check_images(result: Any, images: Any, notes: list[str]) -> dict[str, Any]:
    """The given images that match the sets (one per sample per side); notes why not."""
    out: dict[str, Any] = {}
    for side, n in (("test", result.n_test), ("reference", result.n_reference)):
        arr = mapping(images).get(side)
        if arr is None:
            continue
        try:
            k = len(arr)
        except TypeError:
            notes.append(f"images['{side}'] has no length; not used")
            continue
        if k != n:
            notes.append(
                f"images['{side}'] holds {k:,} images but the {side} set has {n:,} samples; not used"
            )
            continue
        out[side] = arr
    return out


# ------------------------------------------------------------------------------------- inputs, re-read
@reloader("promptsplit")
def reload_promptsplit(result: Any, result_dir: Path) -> tuple[dict, dict, list[str]]:
    """Read the test and reference sets again from where result.json's ``inputs`` records them (relative to
    the results folder, then absolute: :func:`promptprism.provenance.locate`), for older results from
    ``config`` (a path as given, or relative to the results folder), else
    ``result_dir/data/{test,reference}.npz``; an ``images`` array in an .npz is used for the gallery. A set
    whose content differs from its recorded fingerprint is refused (:func:`promptprism.provenance.verify`).
    Inputs that need an encoder (manifests, image folders) are not embedded again: their galleries come from
    result.json and the map is left out, with a note."""
    from ..data.loaders import load_paired
    from ..errors import PromptPrismError
    from ..provenance import locate, verify

    inputs, images, notes = {}, {}, []
    missing: list[str] = []
    records = getattr(result, "inputs", None) or {}
    for side in ("test", "reference"):
        where = result.config.get(side)
        candidates = []
        if side in records:
            found = locate(records[side], result_dir)
            where, candidates = records[side].get("path"), [found] if found is not None else []
        elif where:
            candidates += [Path(where), result_dir / str(where)]
        candidates.append(result_dir / "data" / f"{side}.npz")
        path = next((c for c in candidates if c.exists() and _is_embeddings(c)), None)
        if path is not None:
            verify(side, path, records)
        if path is None:
            if where and any(Path(c).exists() for c in candidates[:2]):
                if not getattr(result, "layout", None):
                    notes.append(
                        f"{side} input {where}: raw generations (not embeddings); the map needs them "
                        "embedded, so it is left out here (the command that ran the method draws it)"
                    )
                found = next(c for c in candidates[:2] if Path(c).exists())
                if _recorded_manifest(side, found, where, records, notes):
                    _manifest_facets(result, side, found, inputs)
                    _manifest_texts(result, side, found, records, inputs, notes)
            else:
                if side in records:  # (where the run read it: the folder moved without it)
                    missing.append(f"{side} {where}")
                notes.append(
                    f"{side} input {where or '(not recorded)'} not found; the map and array "
                    "thumbnails are left out, and the facets of its metadata columns (they are read from "
                    "the input: copy the folder with its inputs, or run report where they are)"
                )
            continue
        try:
            inputs[side] = load_paired(path, name=side)
        except PromptPrismError as exc:
            notes.append(f"{side} input could not be read again: {exc}")
            continue
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as zf:
                if "images" in zf.files:
                    images[side] = zf["images"]
    warn_missing(missing, "the map, the array thumbnails and the facets of their metadata")
    return inputs, images, notes


def _is_embeddings(path: Path) -> bool:
    return path.suffix.lower() == ".npz" or (path.is_dir() and (path / "prompt_embeddings.npy").exists())


@reloader("promptsplit_kway")
def reload_kway(result: Any, result_dir: Path) -> tuple[dict, dict, list[str]]:
    """The K sets of a K-way result, read again from where result.json's ``inputs`` records them (by model
    name; embeddings only, as for a split result) and checked against their fingerprints; notes say which
    models' outputs per prompt are left out."""
    from ..data.loaders import load_paired
    from ..errors import PromptPrismError
    from ..provenance import locate, verify

    inputs, notes, missing = {}, [], []
    records = getattr(result, "inputs", None) or {}
    for name in result.names:
        path = locate(records[name], result_dir) if name in records else None
        if path is None:
            where = (records.get(name) or {}).get("path")
            if where:
                missing.append(f"{name} {where}")
            notes.append(f"input of {name}: " + (f"{where} not found" if where else "not recorded") +
                         "; its outputs per prompt and the facets of its metadata are left out (copy the "
                         "folder with its inputs, or run report where they are)")
            continue
        if not _is_embeddings(path):
            notes.append(f"input of {name}: raw generations (not embeddings): not read again")
            continue
        verify(name, path, records)  # another content than recorded: refused, as for a split result
        try:
            inputs[name] = load_paired(path, name=name)
        except PromptPrismError as exc:
            notes.append(f"input of {name} could not be read again: {exc}")
    warn_missing(missing, "their outputs per prompt and the facets of their metadata")
    return inputs, {}, notes


def _recorded_manifest(side: str, path: Path, where: Any, records: dict, notes: list[str]) -> bool:
    """Whether a manifest input's content is the one recorded; when not, a note in the page and a warning
    on the terminal say that its facets and outputs per prompt are left out."""
    import warnings

    from ..errors import PromptPrismError
    from ..provenance import verify

    try:
        verify(side, path, records)
    except PromptPrismError as exc:
        why = re.split(r"; (?:restore|pass) ", str(exc).split(": ", 1)[-1], maxsplit=1)[0]
        note = (f"{side} manifest {where}: {why}; its facets and outputs per prompt are left out of the page "
                "(restore the file the run read to have them)")
        notes.append(note)
        warnings.warn(note, UserWarning, stacklevel=2)
        return False
    return True


def _manifest_facets(result: Any, side: str, path: Path, inputs: dict) -> None:
    """A manifest input's metadata for the facets (``inputs['facets'][side]``), its content the one recorded
    (:func:`_recorded_manifest`), when its rows are the result's."""
    from .facets import manifest_meta_set

    n = result.n_test if side == "test" else result.n_reference
    meta = manifest_meta_set(Path(path), {r["prompt"] for r in result.prompt_ranking}, n)
    if meta is not None:
        inputs.setdefault("facets", {})[side] = meta


def _manifest_texts(result: Any, side: str, path: Path, records: dict, inputs: dict, notes: list[str]
                    ) -> None:
    """A manifest input's prompts and outputs (texts, or image paths) for the page's views
    (``inputs['texts'][side]``: a :class:`PairedSet` whose embeddings are placeholders, never drawn on the
    map), its content the one recorded (:func:`_recorded_manifest`), when its rows are the result's; nothing
    is embedded again."""
    from ..data.manifest import read_manifest
    from ..errors import PromptPrismError

    n = result.n_test if side == "test" else result.n_reference
    try:
        manifest = read_manifest(path, columns=(records.get(side) or {}).get("columns"))
    except (PromptPrismError, OSError, ValueError) as exc:
        notes.append(f"the {side} manifest's prompts and outputs could not be read again ({exc}); its "
                     "outputs per prompt are left out of the views")
        return
    if len(manifest) != n:
        return
    rows = manifest.rows
    inputs.setdefault("texts", {})[side] = PairedSet(
        np.zeros((n, 1)), np.zeros((n, 1)), prompts=[r.prompt_label for r in rows],
        outputs=[r.output_label for r in rows], name=side, source=str(path))
