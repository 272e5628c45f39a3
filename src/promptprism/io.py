"""Atomic file writes: a file the user asked for is either complete or absent, never half-written.

Results folders are replaced as one transaction: :func:`staged_outputs` builds every file of a run
(``result.json``, ``report.html``, arrays, tables) in a hidden staging folder beside the results, and only
when all of them were written moves them over the earlier ones; a failure on the way leaves the earlier
result and report as they were. :func:`check_out_dir` is the guard every command runs before any work.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from .errors import OptionError

#: name prefix of the staging folders (and of atomic temporary files, which are ``.NAME.*.tmp``)
STAGING_PREFIX = ".promptprism-staging-"


@contextlib.contextmanager
def replace_on_success(tmp: str | os.PathLike, path: str | os.PathLike) -> Iterator[None]:
    """Around the code that writes ``tmp``: rename ``tmp`` over ``path`` when it succeeds; on any failure
    remove ``tmp`` and re-raise, leaving ``path`` as it was."""
    try:
        yield
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def flush_to_disk(fh: IO) -> None:
    """Flush ``fh`` and make the operating system write it to disk (before it is renamed into place)."""
    fh.flush()
    os.fsync(fh.fileno())


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and rename it over ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with replace_on_success(tmp, path):
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
        binary = "b" in mode
        with os.fdopen(fd, mode, encoding=None if binary else encoding) as fh:
            yield fh
            flush_to_disk(fh)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_open(path, "w") as fh:
        fh.write(text)
    return Path(path)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def atomic_save_npz(path: str | os.PathLike, **arrays) -> Path:
    """np.savez_compressed, atomically (the name is kept exactly: no '.npz' is appended)."""
    import numpy as np

    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return atomic_write_bytes(path, buf.getvalue())


# ------------------------------------------------------------------------------------- results folders
def _cannot(what: Path, why: str, *, parameter: str) -> OptionError:
    return OptionError(f"{parameter} {str(what)!r}: {why}")


def remove_stale_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Delete what killed runs left in ``folder``: hidden ``.NAME.*.tmp`` files and staging folders."""
    folder = Path(folder)
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if entry.name.startswith(STAGING_PREFIX) and entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
            elif entry.name.startswith(".") and entry.name.endswith(".tmp") and entry.is_file():
                with contextlib.suppress(OSError):
                    entry.unlink()
                    removed.append(entry)
    return removed


def _writable_dir(folder: Path) -> str | None:
    """None when a file can be created in ``folder``; else why not."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".promptprism-probe-", suffix=".tmp", dir=folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)
    return None


def check_out_dir(out: str | os.PathLike, *, parameter: str = "out",
                  names: tuple[str, ...] = ("result.json", "report.html"), clean: bool = True) -> Path:
    """Fail before any work when ``out`` cannot become (or be replaced as) a results folder.

    ``out`` must be a folder or not exist; every existing ancestor must be a folder; the nearest existing one
    must be writable; ``names`` inside ``out`` must not be folders. With ``clean``, stale temporaries of
    killed runs are removed (call it so only while holding :func:`exclusive_lock` on ``out``: a running
    run's staging folder looks the same). The message names ``parameter`` (the CLI turns it into its flag).
    """
    out = Path(out)
    for parent in (out, *out.parents):
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                where = "exists and is not a folder" if parent == out else f"{parent} is not a folder"
                raise _cannot(out, where, parameter=parameter)
            why = _writable_dir(parent)
            if why is not None:
                raise _cannot(out, f"cannot write in {parent} ({why})", parameter=parameter)
            break
    for name in names:
        target = out / name
        if target.is_dir():
            raise _cannot(out, f"{name} is a folder; remove it or choose another folder",
                          parameter=parameter)
    if clean:
        remove_stale_temporaries(out)
    return out


def check_out_file(out: str | os.PathLike, *, parameter: str = "out", suffix: str | None = None) -> Path:
    """Fail before any work when the file ``out`` cannot be written (a folder, under a file, read-only)."""
    out = Path(out)
    if suffix is not None and out.suffix.lower() != suffix:
        raise _cannot(out, f"must end in {suffix}", parameter=parameter)
    if out.is_dir():
        raise _cannot(out, f"is a folder; expected a {suffix or 'file'} name", parameter=parameter)
    check_out_dir(out.parent, parameter=parameter, names=())
    return out


@contextlib.contextmanager
def staged_outputs(out: str | os.PathLike, *, parameter: str = "out") -> Iterator[Path]:
    """Yield a hidden staging folder; on success move everything written there into ``out``.

    Files are moved only after the block finished: an exception inside it leaves ``out`` exactly as it was.
    ``result.json`` is moved last, so a folder never holds a new result beside an older report that
    contradicts it for longer than the renames take. ``out`` is locked (:func:`exclusive_lock`) throughout:
    a second run on it is refused instead of mixing its files in.
    """
    out = check_out_dir(out, parameter=parameter, clean=False)
    with exclusive_lock(out, parameter=parameter):
        remove_stale_temporaries(out)
        created = not out.exists()
        try:
            out.mkdir(parents=True, exist_ok=True)
            stage = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out))
        except OSError as exc:
            raise _cannot(out, f"cannot be created ({exc.strerror or exc})", parameter=parameter) from None
        ok = False
        try:
            yield stage
            _move_into(stage, out, parameter)
            ok = True
        finally:
            shutil.rmtree(stage, ignore_errors=True)
            if created and not ok:
                with contextlib.suppress(OSError):
                    out.rmdir()  # only when empty: a folder this run created and left nothing in


def _move_into(stage: Path, out: Path, parameter: str) -> None:
    files = sorted((p for p in stage.rglob("*") if p.is_file()), key=lambda p: p.name == "result.json")
    for f in files:
        target = out / f.relative_to(stage)
        if target.is_dir():
            raise _cannot(out, f"{target.name} is a folder; nothing was replaced", parameter=parameter)
    try:
        for f in files:
            target = out / f.relative_to(stage)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(f, target)
    except OSError as exc:
        raise _cannot(out, f"cannot write ({exc.strerror or exc})", parameter=parameter) from None


def write_outputs(out: str | os.PathLike, files: Mapping[str, str | bytes], *, parameter: str = "out"
                  ) -> dict[str, Path]:
    """Write ``{name: text or bytes}`` into the folder ``out`` as one transaction (:func:`staged_outputs`)."""
    with staged_outputs(out, parameter=parameter) as stage:
        for name, content in files.items():
            path = stage / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
    return {name: Path(out) / name for name in files}


# ------------------------------------------------------------------------------------------------- locks
#: name suffix of the lock file kept beside a results folder or manifest while a run writes it
LOCK_SUFFIX = ".promptprism-lock"
_HELD: set[str] = set()


def lock_path(target: str | os.PathLike) -> Path:
    """The lock file of ``target``: hidden, beside it (``.NAME.promptprism-lock``; inside a folder whose
    parent is read-only)."""
    target = Path(target)
    return target.parent / f".{target.name}{LOCK_SUFFIX}"


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _owner(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        os.lseek(fd, 0, os.SEEK_SET)
        pid = int(os.read(fd, 32).decode("ascii").strip() or "x")
        return f" (pid {pid})"
    return ""


@contextlib.contextmanager
def exclusive_lock(target: str | os.PathLike, *, parameter: str = "out") -> Iterator[Path]:
    """Hold the lock of ``target`` (a results folder, a manifest) for the block, or fail at once.

    The lock is an operating-system lock (``flock``; ``msvcrt.locking`` on Windows) on the file
    :func:`lock_path`, which holds the owner's pid: it is released when the block ends or the process dies
    (even by ``kill -9``), so a crashed run never leaves a stale lock. A second run on the same target gets
    one line naming the owner. Re-entrant within a process.
    """
    path = lock_path(target)
    key = str(path.resolve())
    if key in _HELD:
        yield path
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if Path(target).is_dir() and not os.access(path.parent, os.W_OK):  # a writable folder in a read-only one
        path = Path(target) / path.name
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        if not _try_lock(fd):
            owner = _owner(fd)
            os.close(fd)
            raise _cannot(Path(target), f"another promptprism run{owner} is writing it now; wait for that "
                          "run to end or choose another path", parameter=parameter)
        try:  # the previous owner may have removed the file between our open and our lock: retry
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"{os.getpid()}\n".encode("ascii"))
    _HELD.add(key)
    try:
        yield path
    finally:
        _HELD.discard(key)
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)  # closing releases the lock


def content_hash(value: Any, *, sort_keys: bool = True, length: int = 64) -> str:
    """The one content key: sha256 (hex, first ``length`` digits) of ``value``'s canonical JSON (compact
    separators, UTF-8, keys sorted unless ``sort_keys`` is False, anything else by ``str``)."""
    canon = json.dumps(value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:length]
