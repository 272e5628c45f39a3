"""Resumable generation keyed by content: a task per (prompt, sample), a journal of finished rows, a manifest.

A row is identified by its **content key**: a hash of what the generator is given (the prompt text, and for
text a row's own system prompt), the occurrence of that text in the prompts file (the 2nd identical line is
its own row) and the sample number; the run's settings (model, sampling, seed...) are the ``generation``
hash every row carries. Never by row number: after any edit of the prompts file (lines inserted, deleted,
reordered or duplicated) a resumed run generates exactly the rows whose key it has not seen and keeps the
others. Each sample's seed is derived from its key, so a row has the same seed whatever its position.

Each finished row is appended (and flushed to disk) to ``<manifest>.partial`` as soon as it exists, so an
interrupted or failed run loses nothing that was generated. When every row is done the manifest is written
atomically, in prompts-file order; the journal is removed, or keeps only finished rows whose prompt is no
longer in the file (put back, they are not generated again). Rows written with other settings are never
mixed in: the run stops and says so. One run at a time writes a manifest (:func:`promptprism.io.
exclusive_lock`); a second gets one line naming the first. A run plans at most :data:`MAX_ROWS` rows.

Rows carry ``id`` (``<prompt id>_<sample>``, unique per row), ``prompt_id``, ``prompt``, ``sample``
(0-based), ``seed``, ``generation`` (a hash of the settings), ``content_key`` and the prompt row's extra
columns, plus ``output`` (text) or ``image`` (a path relative to the manifest): the manifest every other
command reads (:mod:`promptprism.data.manifest`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._progress import progress_bar, progress_enabled
from ..data.tables import text_lines
from ..errors import InputError, Interrupted, OptionError, PromptPrismError, Terminated
from ..io import atomic_write_text, content_hash, exclusive_lock
from .prompts import PromptRow

#: the most rows (prompts x samples) one run plans; larger plans are refused before anything starts
MAX_ROWS = 1_000_000
#: the version of the content keys (part of every run's settings: rows keyed otherwise are never reused)
KEYS = "content-v2"
_IDENTITY = ("id", "prompt_id", "prompt", "sample", "seed", "generation", "content_key")


@dataclass(frozen=True)
class Task:
    """One generation to make: a prompt, the sample number, its content key and the seed of that sample."""

    prompt: PromptRow
    sample: int
    seed: int
    key: str


@dataclass
class GenerateResult:
    """What a run did: the manifest written, rows in it, rows generated now and rows reused."""

    manifest: Path
    n_rows: int
    n_generated: int
    n_reused: int
    seconds: float
    settings: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)


def content_key(content: Any, occurrence: int, sample: int) -> str:
    """The key of one row: a hash of what the generator is given, its occurrence and the sample number."""
    return content_hash([content, occurrence, sample], sort_keys=False, length=32)


def sample_seed(seed: int, key: str) -> int:
    """The seed of one sample: a hash of (run seed, content key), so it does not depend on order."""
    digest = hashlib.sha256(f"{seed}\x1f{key}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def settings_id(settings: dict) -> str:
    """A short hash of everything that changes what is generated."""
    return content_hash(dict(settings, keys=KEYS), length=16)


def plan(prompts: Sequence[PromptRow], *, samples: int, seed: int,
         content: Callable[[PromptRow], Any] | None = None) -> list[Task]:
    """Every (prompt, sample) row in manifest order, keyed by ``content(prompt)`` (default: its text).

    Refused before anything is built when prompts x samples exceeds :data:`MAX_ROWS`."""
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise OptionError(f"samples must be a positive integer, got {samples!r}")
    total = len(prompts) * samples
    if total > MAX_ROWS:
        raise OptionError(f"samples {samples} x {len(prompts)} prompts = {total:,} rows, over the "
                          f"{MAX_ROWS:,} rows one run writes; use fewer samples or split the prompts file",
                          parameter="samples")
    content = content or (lambda p: p.prompt)
    seen: dict[str, int] = {}
    tasks = []
    for p in prompts:
        what = content(p)
        canon = json.dumps(what, ensure_ascii=False, default=str)
        occurrence = seen.get(canon, 0)
        seen[canon] = occurrence + 1
        for k in range(samples):
            key = content_key(what, occurrence, k)
            tasks.append(Task(p, k, sample_seed(seed, key), key))
    return tasks


def journal_path(manifest: Path) -> Path:
    """Where the finished rows of an unfinished run are kept."""
    return manifest.with_name(manifest.name + ".partial")


def read_journal(path: Path, sid: str) -> dict[str, dict]:
    """Finished rows' generated fields by content key; a torn last line (killed mid-write) is ignored."""
    if not path.is_file():
        return {}
    done: dict[str, dict] = {}
    lines = text_lines(path.read_text(encoding="utf-8"))
    for i, line in enumerate(lines):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                continue
            raise PromptPrismError(f"{path}: line {i + 1} is damaged; delete the file to start "
                                   f"over") from None
        if not isinstance(rec, dict) or rec.get("settings") != sid or not isinstance(rec.get("fields"), dict):
            raise PromptPrismError(f"{path}: holds rows generated with other settings (model, system prompt, "
                                   f"sampling, seed or an older promptprism); write to another manifest or "
                                   f"delete it to start over")
        done[rec["key"]] = rec["fields"]
    return done


def _append(fh, key: str, sid: str, fields: dict) -> None:
    fh.write(json.dumps({"key": key, "settings": sid, "fields": fields}, ensure_ascii=False) + "\n")
    fh.flush()
    os.fsync(fh.fileno())


def run_tasks(tasks: Sequence[Task], work: Callable[[Task], dict], *, manifest: str | os.PathLike,
              settings: dict, fields: Sequence[str], concurrency: int = 1, progress: bool | None = None,
              description: str = "generating") -> GenerateResult:
    """Run ``work(task) -> {field: value}`` for every task whose key is not finished; write the manifest.

    ``fields`` names the columns ``work`` returns (how finished rows are read back from a manifest). At
    most ``concurrency`` tasks run at once (threads: the work waits on a server or a model). On the first
    failure no new task starts, the ones running finish and are kept, and the error is raised with the
    number of rows kept; a later run continues from there. The manifest is locked for the whole run.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise OptionError(f"concurrency must be a positive integer, got {concurrency!r}")
    manifest = Path(manifest)
    if manifest.suffix.lower() not in (".jsonl", ".ndjson"):
        raise OptionError(f"out must be a .jsonl manifest, got {str(manifest)!r}")
    if len({t.key for t in tasks}) != len(tasks):
        raise OptionError("tasks: two rows share one content key")  # pragma: no cover - plan() prevents it
    with exclusive_lock(manifest, parameter="out"):
        sid = settings_id(settings)
        jpath = journal_path(manifest)
        done = _finished_manifest(manifest, sid, fields) if manifest.is_file() else {}
        done.update(read_journal(jpath, sid))
        todo = [t for t in tasks if t.key not in done]
        t0 = time.perf_counter()
        try:
            failure = _run_todo(todo, work, done, jpath, sid, concurrency,
                                _bar(len(tasks), len(tasks) - len(todo), description, progress))
        except KeyboardInterrupt as exc:
            kept = sum(t.key in done for t in tasks)
            stopped = Terminated if isinstance(exc, Terminated) else Interrupted
            raise stopped(f"{kept} of {len(tasks)} rows kept in {jpath}; run the same command again to "
                          "continue") from None
        seconds = time.perf_counter() - t0
        if failure is not None:
            raise _kept(failure, sum(t.key in done for t in tasks), len(tasks), jpath)
        rows = [_row(t, done[t.key], sid) for t in tasks]
        _check_unique_images(rows, manifest)
        atomic_write_text(manifest, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        planned = {t.key for t in tasks}
        orphans = {k: v for k, v in done.items() if k not in planned}
        if orphans:  # finished rows whose prompt left the file: kept for when it comes back
            kept = [json.dumps({"key": k, "settings": sid, "fields": v}, ensure_ascii=False) + "\n"
                    for k, v in orphans.items()]
            atomic_write_text(jpath, "".join(kept))
        else:
            jpath.unlink(missing_ok=True)
    return GenerateResult(manifest=manifest, n_rows=len(tasks), n_generated=len(todo),
                          n_reused=len(tasks) - len(todo), seconds=seconds, settings=settings)


def pending_tasks(tasks: Sequence[Task], manifest: str | os.PathLike, settings: dict, *,
                  fields: Sequence[str]) -> list[Task]:
    """The tasks :func:`run_tasks` will run: those neither in a finished manifest of these settings nor in
    the journal of an interrupted run (a manifest of other settings: every task, and run_tasks refuses)."""
    manifest = Path(manifest)
    sid = settings_id(settings)
    try:
        done = _finished_manifest(manifest, sid, fields) if manifest.is_file() else {}
        done.update(read_journal(journal_path(manifest), sid))
    except PromptPrismError:
        return list(tasks)
    return [t for t in tasks if t.key not in done]


def _run_todo(todo: Sequence[Task], work: Callable[[Task], dict], done: dict[str, dict], jpath: Path,
              sid: str, concurrency: int, shown: Any) -> BaseException | None:
    """Run ``todo`` on a bounded thread pool, journaling each finished row; the first failure or None."""
    failure: BaseException | None = None
    with open(jpath, "a", encoding="utf-8") as fh, shown as bar:
        pool = ThreadPoolExecutor(max_workers=concurrency)
        pending: set[Future] = set()
        queue = iter(todo)
        running: dict[Future, Task] = {}
        try:
            while True:
                while failure is None and len(pending) < concurrency:
                    task = next(queue, None)
                    if task is None:
                        break
                    fut = pool.submit(work, task)
                    running[fut] = task
                    pending.add(fut)
                if not pending:
                    break
                finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for fut in finished:
                    task = running[fut]
                    exc = fut.exception()
                    if exc is not None:
                        failure = failure or exc
                        del running[fut]
                        continue
                    fields = dict(fut.result(), seed=task.seed)
                    done[task.key] = fields
                    _append(fh, task.key, sid, fields)
                    del running[fut]  # (after its row is journaled: an interrupt in between keeps it)
                    bar.advance()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            for fut, task in running.items():  # (interrupted: the rows that finished meanwhile are kept too)
                if fut.done() and not fut.cancelled() and fut.exception() is None and task.key not in done:
                    done[task.key] = fields = dict(fut.result(), seed=task.seed)
                    _append(fh, task.key, sid, fields)
    return failure


def _kept(failure: BaseException, kept: int, total: int, jpath: Path) -> BaseException:
    """The failure, told how many rows are kept and how to continue (errors of the user's input only)."""
    if not isinstance(failure, PromptPrismError):
        return failure
    note = f"{failure} [{kept} of {total} rows kept in {jpath}; run the same command again to continue]"
    try:
        about = {"parameter": failure.parameter} if failure.parameter else {}  # (the option, for its flag)
        return type(failure)(note, **about)
    except TypeError:  # pragma: no cover - an error type with another signature
        return PromptPrismError(note)


def _finished_manifest(manifest: Path, sid: str, fields: Sequence[str]) -> dict[str, dict]:
    """The generated fields of a manifest this generator wrote earlier with the same settings (else an
    error): what a run reuses after the prompts file was edited."""
    rows = []
    for line in text_lines(manifest.read_text(encoding="utf-8")):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            rows = []
            break
    if not rows or any(not isinstance(r, dict) or r.get("generation") != sid or "content_key" not in r
                       for r in rows):
        raise OptionError(f"out {str(manifest)!r} already exists and was not generated with these settings "
                          f"(model, system prompt, sampling, seed or an older promptprism); pass another "
                          f"path or delete it")
    return {r["content_key"]: dict({k: r[k] for k in fields if k in r}, seed=r.get("seed"))
            for r in rows}


def _row(task: Task, fields: dict, sid: str) -> dict:
    row: dict[str, Any] = {"id": f"{task.prompt.id}_{task.sample}", "prompt_id": task.prompt.id,
                           "prompt": task.prompt.prompt, "sample": task.sample, "seed": task.seed,
                           "generation": sid, "content_key": task.key}
    row.update({k: v for k, v in task.prompt.meta.items() if k not in row})
    row.update({k: v for k, v in fields.items() if k not in _IDENTITY})
    return row


def _check_unique_images(rows: Sequence[dict], manifest: Path) -> None:
    """Two rows never point at one image file (compared as a case-insensitive file system would)."""
    seen: dict[str, str] = {}
    for r in rows:
        image = r.get("image")
        if not isinstance(image, str):
            continue
        name = image.casefold()
        if name in seen:
            raise InputError(f"{manifest}: rows {seen[name]} and {r['id']} would share the image {image!r}; "
                             f"nothing was written")
        seen[name] = r["id"]


def _bar(total: int, done: int, description: str, enabled: bool | None) -> Any:
    """A progress bar over tasks (finished rows of a previous run count as done)."""
    return progress_bar(total, description, enabled=progress_enabled(enabled), completed=done)
