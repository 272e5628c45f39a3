"""Where a result's input sets lie and what they held: records that survive moving the results folder.

Each input is recorded in result.json's ``inputs`` as ``{'path': relative to the results folder,
'absolute': the resolved path, 'bytes', 'sha256'}`` (a folder: the sizes and hashes of its files, by
relative name) plus, for paired sets, ``'rows'`` and ``'prompts_sha256'``. Commands that read a results
folder's inputs again (``describe``, ``report``) find them from any working directory (:func:`locate`) and
refuse a set whose content differs from the record (:func:`verify`), naming the set and why: swapped with
another recorded set, other prompts, or an edited file. A result read from one folder and written to another
(``describe --out``) has its records re-expressed for the new folder (:func:`rebase_inputs`).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from .errors import InputError

_BLOCK = 1 << 20


def _file_digest(path: Path, digest: Any) -> int:
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_BLOCK):
            digest.update(chunk)
            size += len(chunk)
    return size


#: files whose fingerprints are being computed ahead (:func:`prefetch_fingerprint`): resolved path ->
#: (the file's stamp when it started, the future fingerprint)
_AHEAD: dict[Path, tuple[tuple[int, int, int], Future]] = {}
_AHEAD_LOCK = threading.Lock()


def _stamp(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ino


def _file_fingerprint(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    return {"bytes": _file_digest(path, digest), "sha256": digest.hexdigest()}


def prefetch_fingerprint(path: str | os.PathLike) -> None:
    """Start :func:`fingerprint` of an input file on a thread of its own (hashing releases the GIL), for
    the record written with the result to pick up: the hash of a large input (184 MB: 0.13 s) then runs
    beside the command's work instead of after it. Not a file: nothing (the record hashes it then)."""
    path = Path(path)
    if not path.is_file():
        return
    path, future = path.resolve(), Future()
    stamp = _stamp(path)
    with _AHEAD_LOCK:
        if path in _AHEAD and _AHEAD[path][0] == stamp:
            return
        _AHEAD[path] = (stamp, future)

    def run() -> None:
        try:
            future.set_result(_file_fingerprint(path))
        except BaseException as exc:  # (read again by fingerprint itself)
            future.set_exception(exc)

    threading.Thread(target=run, name="promptprism-fingerprint", daemon=True).start()


def _prefetched(path: Path) -> dict[str, Any] | None:
    """The fingerprint :func:`prefetch_fingerprint` computed, when the file is unchanged since it began."""
    entry = _AHEAD.get(path.resolve())
    if entry is None or entry[0] != _stamp(path):
        return None
    try:
        return dict(entry[1].result())
    except Exception:  # (hashed again by the caller, which then reports the error itself)
        return None


#: a folder input's files that no loader reads, left out of its fingerprint (rule 2): notes and pages
NOT_DATA_SUFFIXES = (".txt", ".md", ".rst", ".html", ".htm", ".pdf", ".log", ".py", ".ipynb", ".sh")
#: the folder rule new records are made with (recorded as ``folder_rule``; records without one: rule 1)
FOLDER_RULE = 2


def _folder_files(path: Path, rule: int) -> list[Path]:
    """The files of a folder input its fingerprint covers: rule 1, every file not hidden; rule 2, also not
    a note or page (:data:`NOT_DATA_SUFFIXES`) nor inside a results folder written there (one holding a
    result.json), so that notes and results kept beside the data do not read as an edited input."""
    files = []
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        parts = file.relative_to(path).parts
        if any(part.startswith(".") for part in parts):
            continue
        if rule >= 2 and (file.suffix.lower() in NOT_DATA_SUFFIXES or any(
                (path.joinpath(*parts[:i]) / "result.json").is_file() for i in range(1, len(parts)))):
            continue
        files.append(file)
    return files


def fingerprint(path: str | os.PathLike, *, rule: int = FOLDER_RULE) -> dict[str, Any]:
    """``{'bytes', 'sha256'}`` of a file, or of a folder's files (names relative to it, sorted; the files
    :func:`_folder_files` keeps under ``rule``)."""
    path = Path(path)
    if path.is_file():
        return _prefetched(path) or _file_fingerprint(path)
    digest, total = hashlib.sha256(), 0
    for file in _folder_files(path, rule):
        rel = file.relative_to(path).as_posix()
        inner = hashlib.sha256()
        total += _file_digest(file, inner)
        digest.update(rel.encode("utf-8") + b"\0" + inner.digest())
    return {"bytes": total, "sha256": digest.hexdigest()}


def prompts_digest(prompts: Sequence[str] | None) -> str | None:
    """sha256 of the prompts in row order (None without prompt strings)."""
    if prompts is None:
        return None
    digest = hashlib.sha256()
    for p in prompts:
        digest.update(str(p).encode("utf-8") + b"\0")
    return digest.hexdigest()


def input_record(path: str | os.PathLike, results_dir: str | os.PathLike, *, content: Any = None,
                 stored_at: str | os.PathLike | None = None) -> dict[str, Any]:
    """The record of one input: where it lies relative to ``results_dir`` (and absolutely), its fingerprint,
    and for a paired set ``content`` its rows and prompts' digest. ``stored_at``: where the file is now when
    it is being written into the folder (a staging copy), ``path`` being its final place."""
    final = Path(path).resolve()
    record: dict[str, Any] = {"path": Path(os.path.relpath(final, Path(results_dir).resolve())).as_posix(),
                              "absolute": str(final), **fingerprint(stored_at or final)}
    if Path(stored_at or final).is_dir():
        record["folder_rule"] = FOLDER_RULE
    if content is not None and hasattr(content, "prompt_embeddings"):
        record["rows"] = len(content)
        record["prompts_sha256"] = prompts_digest(getattr(content, "prompts", None))
    return record


def record_inputs(sources: Mapping[str, str | os.PathLike], results_dir: str | os.PathLike, *,
                  contents: Mapping[str, Any] | None = None, stage: str | os.PathLike | None = None
                  ) -> dict[str, dict[str, Any]]:
    """:func:`input_record` of every named source that exists. A relative source that exists under
    ``stage`` (a file the command writes into the results folder, e.g. the demo's data) is recorded at its
    place in ``results_dir``."""
    records = {}
    for name, src in sources.items():
        src = results_folder_set(src)[0]
        staged = Path(stage) / src if stage is not None and not src.is_absolute() else None
        if staged is not None and staged.exists():
            records[name] = input_record(Path(results_dir) / src, results_dir, stored_at=staged,
                                         content=(contents or {}).get(name))
        elif src.exists():
            records[name] = input_record(src, results_dir, content=(contents or {}).get(name))
    return records


def rebase_inputs(records: Mapping[str, Mapping[str, Any]], results_dir: str | os.PathLike, *,
                  origin: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """``records`` (a result's ``inputs``, relative to ``origin``: the results folder it was read from) for
    the result written to ``results_dir``: each input found where it is now (:func:`locate` from ``origin``),
    its ``path`` relative to ``results_dir`` and its ``absolute`` that place, resolved. An input found
    nowhere keeps its ``absolute``; its ``path`` still points where it pointed from ``origin``."""
    out = Path(results_dir).resolve()
    rebased = {}
    for name, record in records.items():
        record = dict(record)
        found = locate(record, origin)
        rel = record.get("path")
        target = found.resolve() if found is not None else (
            (Path(origin) / rel).resolve() if isinstance(rel, str) and rel else None)
        if target is not None:
            record["path"] = Path(os.path.relpath(target, out)).as_posix()
        if found is not None:
            record["absolute"] = str(target)
        rebased[name] = record
    return rebased


def results_folder_set(path: str | os.PathLike) -> tuple[Path, str | None]:
    """A results folder given as an input set (e.g. last week's run as the baseline): (the file of the set
    its result recorded as the test side, or of its only input, checked against its fingerprint; that set's
    name). Any other path: (the path, None)."""
    path = Path(path)
    if not (path.is_dir() and (path / "result.json").is_file()):
        return path, None
    from .results import load_result

    records = load_result(path).inputs
    key = "test" if "test" in records else (next(iter(records)) if len(records) == 1 else None)
    if key is None:
        listed = ", ".join(records) or "none recorded"
        raise InputError(f"{path}: a results folder whose recorded inputs are {listed}; pass the file of "
                         "the set you mean")
    found = locate(records[key], path)
    if found is None:
        raise InputError(f"{path}: its {key} set {records[key].get('path')} is not found (looked relative to "
                         "the folder and where the run read it)")
    verify(key, found, records)
    return found, key


def locate(record: Mapping[str, Any], results_dir: str | os.PathLike) -> Path | None:
    """Where a recorded input is now: relative to the results folder first (a moved folder with its data),
    then its absolute path; None when neither exists. Where both exist and the relative one is another
    file than the one recorded (a folder moved beside an unrelated file of that name), the absolute one
    if it is the recorded file."""
    rel = record.get("path")
    candidates = [Path(results_dir) / rel] if isinstance(rel, str) and rel else []
    if isinstance(record.get("absolute"), str):
        candidates.append(Path(record["absolute"]))
    found = [c for c in candidates if c.exists()]
    if len(found) > 1 and "sha256" in record and found[0].resolve() != found[1].resolve():
        matching = next((c for c in found if _recorded_fingerprint(c, record)["sha256"] == record["sha256"]),
                        None)
        if matching is not None and matching is not found[0]:  # (said: the user may have meant the copy)
            import warnings

            warnings.warn(f"{found[0]} is not the set the result recorded there (edited or another file); "
                          f"the recorded one at {matching} is used", UserWarning, stacklevel=2)
        return matching or found[0]
    return found[0] if found else None


def _recorded_fingerprint(path: str | os.PathLike, record: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`fingerprint` of ``path`` under the folder rule ``record`` was made with (1 when it says none:
    records written before rule 2)."""
    return fingerprint(path, rule=int(record.get("folder_rule", 1)))


def verify(name: str, path: str | os.PathLike, records: Mapping[str, Mapping[str, Any]], *,
           content: Any = None) -> None:
    """Refuse ``path`` as the input ``name`` unless its content is what ``records[name]`` recorded.

    The error names the set and says why: it holds another recorded set (swapped), other prompts or another
    number of rows, or the same prompts with other content (an edited file). No record: nothing to check."""
    record = records.get(name)
    if not record or "sha256" not in record:
        return
    found = _recorded_fingerprint(path, record)
    if found["sha256"] == record["sha256"]:
        return
    other = next((n for n, r in records.items() if n != name and r.get("sha256") == found["sha256"]), None)
    if other is not None:
        raise InputError(f"{name} input {path}: holds the {other} set of this result, not the {name} set "
                         "(swapped?); pass the inputs in the order the result was computed on")
    why = "its content differs (edited since the run?)"
    if content is not None and "rows" in record and len(content) != record["rows"]:
        why = f"it has {len(content):,} rows where the result was computed on {record['rows']:,}"
    elif content is not None and record.get("prompts_sha256") not in (None, prompts_digest(
            getattr(content, "prompts", None))):
        why = "its prompts differ from those the result was computed on"
    raise InputError(f"{name} input {path}: not the set this result was computed on: {why}; restore or "
                     "pass the original set (nothing was written)")
