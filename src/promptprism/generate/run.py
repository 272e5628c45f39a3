"""Resumable generation: a task per (prompt, sample), a journal of finished rows, an atomic manifest.

Each finished row is appended (and flushed to disk) to ``<manifest>.partial`` as soon as it exists, so an
interrupted or failed run loses nothing that was generated; the next run with the same settings reads the
journal and only generates the missing (prompt, sample) pairs. When every pair is done the manifest is
written atomically, in prompts-file order, and the journal is removed. A journal written with other
settings (model, system prompt, temperature, seed, samples...) is never mixed in: the run stops and says so.

Rows carry ``id`` (``<prompt id>_<sample>``, unique per row), ``prompt_id``, ``prompt``, ``sample``
(0-based), ``seed``, ``generation`` (a hash of the settings) and the prompt row's extra columns, plus
``output`` (text) or ``image`` (a path relative to the manifest): the manifest every other command
reads (:mod:`promptprism.data.manifest`).
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

from .._progress import progress_enabled
from ..errors import OptionError, PromptPrismError
from ..io import atomic_write_text
from .prompts import PromptRow


@dataclass(frozen=True)
class Task:
    """One generation to make: a prompt, the sample number and the seed of that sample."""

    prompt: PromptRow
    sample: int
    seed: int

    @property
    def key(self) -> str:
        """The journal key of this (prompt id, sample) pair."""
        return f"{self.prompt.id}\x1f{self.sample}"


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


def sample_seed(seed: int, prompt_id: str, sample: int) -> int:
    """The seed of one sample: a hash of (run seed, prompt id, sample), so it does not depend on order."""
    digest = hashlib.sha256(f"{seed}\x1f{prompt_id}\x1f{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def settings_id(settings: dict) -> str:
    """A short hash of everything that changes what is generated."""
    canon = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:16]


def plan(prompts: Sequence[PromptRow], *, samples: int, seed: int) -> list[Task]:
    """Every (prompt, sample) pair, in manifest order."""
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise OptionError(f"samples must be a positive integer, got {samples!r}")
    return [Task(p, k, sample_seed(seed, p.id, k)) for p in prompts for k in range(samples)]


def journal_path(manifest: Path) -> Path:
    """Where the finished rows of an unfinished run are kept."""
    return manifest.with_name(manifest.name + ".partial")


def read_journal(path: Path, sid: str) -> dict[str, dict]:
    """Finished rows by task key; a torn last line (killed mid-write) is ignored."""
    if not path.is_file():
        return {}
    done: dict[str, dict] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                continue
            raise PromptPrismError(f"{path}: line {i + 1} is damaged; delete the file to start "
                                   f"over") from None
        if rec.get("settings") != sid:
            raise PromptPrismError(f"{path}: holds rows generated with other settings (model, system prompt, "
                                   f"sampling or seed); write to another manifest or delete it to start over")
        done[rec["key"]] = rec["row"]
    return done


def _append(fh, key: str, sid: str, row: dict) -> None:
    fh.write(json.dumps({"key": key, "settings": sid, "row": row}, ensure_ascii=False) + "\n")
    fh.flush()
    os.fsync(fh.fileno())


def run_tasks(tasks: Sequence[Task], work: Callable[[Task], dict], *, manifest: str | os.PathLike,
              settings: dict, concurrency: int = 1, progress: bool | None = None,
              description: str = "generating") -> GenerateResult:
    """Run ``work(task) -> row fields`` for every task not already in the journal; write the manifest.

    At most ``concurrency`` tasks run at once (threads: the work waits on a server or a model). On the
    first failure no new task starts, the ones running finish and are kept, and the error is raised with
    the number of rows kept; a later run continues from there.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise OptionError(f"concurrency must be a positive integer, got {concurrency!r}")
    manifest = Path(manifest)
    if manifest.suffix.lower() not in (".jsonl", ".ndjson"):
        raise OptionError(f"out must be a .jsonl manifest, got {str(manifest)!r}")
    manifest.parent.mkdir(parents=True, exist_ok=True)
    sid = settings_id(settings)
    jpath = journal_path(manifest)
    done = read_journal(jpath, sid)
    if not done and manifest.is_file():
        done = _finished_manifest(manifest, sid)
    todo = [t for t in tasks if t.key not in done]
    reused = len(tasks) - len(todo)
    t0 = time.perf_counter()
    failure: BaseException | None = None
    with open(jpath, "a", encoding="utf-8") as fh, _Bar(len(tasks), reused, description, progress) as bar:
        pool = ThreadPoolExecutor(max_workers=concurrency)
        try:
            pending: set[Future] = set()
            queue = iter(todo)
            running: dict[Future, Task] = {}
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
                    task = running.pop(fut)
                    exc = fut.exception()
                    if exc is not None:
                        failure = failure or exc
                        continue
                    row = _row(task, fut.result(), sid)
                    done[task.key] = row
                    _append(fh, task.key, sid, row)
                    bar.advance()
        except KeyboardInterrupt:
            failure = KeyboardInterrupt()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    seconds = time.perf_counter() - t0
    if failure is not None:
        kept = len(done)
        if isinstance(failure, PromptPrismError):
            note = (f"{failure} [{kept} of {len(tasks)} rows kept in {jpath}; run the same command again "
                    f"to continue]")
            try:
                err = type(failure)(note)
            except TypeError:
                err = PromptPrismError(note)
            raise err from None
        raise failure
    text = "".join(json.dumps(done[t.key], ensure_ascii=False) + "\n" for t in tasks)
    atomic_write_text(manifest, text)
    jpath.unlink(missing_ok=True)
    return GenerateResult(manifest=manifest, n_rows=len(tasks), n_generated=len(todo), n_reused=reused,
                          seconds=seconds, settings=settings)


def _finished_manifest(manifest: Path, sid: str) -> dict[str, dict]:
    """The rows of a manifest this generator wrote earlier with the same settings (else an error)."""
    rows = []
    for line in manifest.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            rows = []
            break
    if not rows or any(not isinstance(r, dict) or r.get("generation") != sid or "prompt_id" not in r
                       for r in rows):
        raise OptionError(f"out {str(manifest)!r} already exists and was not generated with these settings; "
                          f"pass another path or delete it")
    return {f"{r['prompt_id']}\x1f{r['sample']}": r for r in rows}


def _row(task: Task, fields: dict, sid: str) -> dict:
    row: dict[str, Any] = {"id": f"{task.prompt.id}_{task.sample}", "prompt_id": task.prompt.id,
                           "prompt": task.prompt.prompt, "sample": task.sample, "seed": task.seed,
                           "generation": sid}
    row.update({k: v for k, v in task.prompt.meta.items() if k not in row})
    row.update(fields)
    return row


class _Bar:
    """A rich progress bar over tasks (finished rows of a previous run count as done)."""

    def __init__(self, total: int, done: int, description: str, enabled: bool | None) -> None:
        self.total, self.done, self.description = total, done, description
        self.enabled = progress_enabled(enabled)
        self._progress = None

    def __enter__(self) -> _Bar:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeRemainingColumn(), console=Console(stderr=True), transient=True)
            self._progress.__enter__()
            self._task = self._progress.add_task(self.description, total=self.total, completed=self.done)
        return self

    def advance(self) -> None:
        """One more row finished."""
        if self._progress is not None:
            self._progress.advance(self._task)

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
