"""Atomic file writes: a file the user asked for is either complete or absent, never half-written.

Results folders are replaced as one transaction: :func:`staged_outputs` builds every file of a run
(``result.json``, ``report.html``, arrays, tables) in a hidden staging folder beside the results, and only
when all of them were written moves them over the earlier ones; a failure on the way leaves the earlier
result and report as they were. :func:`check_out_dir` is the guard every command runs before any work.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

from .errors import OptionError

#: name prefix of the staging folders (and of atomic temporary files, which are ``.NAME.*.tmp``)
STAGING_PREFIX = ".promptprism-staging-"


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and rename it over ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
        binary = "b" in mode
        with os.fdopen(fd, mode, encoding=None if binary else encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


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
                  names: tuple[str, ...] = ("result.json", "report.html")) -> Path:
    """Fail before any work when ``out`` cannot become (or be replaced as) a results folder.

    ``out`` must be a folder or not exist; every existing ancestor must be a folder; the nearest existing one
    must be writable; ``names`` inside ``out`` must not be folders. Stale temporaries of killed runs are
    removed. The message names ``parameter`` (the CLI turns it into its flag).
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
    contradicts it for longer than the renames take.
    """
    out = check_out_dir(out, parameter=parameter)
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out))
    except OSError as exc:
        raise _cannot(out, f"cannot be created ({exc.strerror or exc})", parameter=parameter) from None
    ok = False
    try:
        yield stage
        files = sorted((p for p in stage.rglob("*") if p.is_file()), key=lambda p: p.name == "result.json")
        for f in files:
            target = out / f.relative_to(stage)
            if target.is_dir():
                raise _cannot(out, f"{target.name} is a folder; nothing was replaced",
                              parameter=parameter)
        try:
            for f in files:
                target = out / f.relative_to(stage)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(f, target)
        except OSError as exc:
            raise _cannot(out, f"cannot write ({exc.strerror or exc})", parameter=parameter) from None
        ok = True
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if created and not ok:
            with contextlib.suppress(OSError):
                out.rmdir()  # only when empty: a folder this run created and left nothing in


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
