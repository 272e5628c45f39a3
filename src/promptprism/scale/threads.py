"""How many threads the numerical libraries of this process use: the CPUs it may really run on, less the ones
other work keeps busy.

A BLAS (OpenBLAS, MKL) starts one thread per core and its threads wait for each other at every step of a
factorisation; on a machine whose cores are busy with other processes, those waits stretch to whole
scheduler time slices. Measured on a 2-core machine at load average 24: a 2000 x 2000 ``eigh`` took 55 s with
two BLAS threads and 5.3 s with one. So each command runs under a thread budget chosen once, at its start:

* ``PROMPTPRISM_THREADS=N`` (N >= 1) fixes it; ``PROMPTPRISM_THREADS=auto`` (the default) chooses;
* a user who set ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` or ``MKL_NUM_THREADS`` keeps that setting;
* ``auto``: the usable CPUs (the affinity mask, capped by a cgroup CPU quota) less the CPUs other work keeps
  busy, rounded, at least 1 (:func:`auto_threads`): a quiet machine uses every usable CPU. Busy CPUs are
  measured at the start on the CPUs of the affinity mask (``/proc/stat``), over the command's own imports
  (the CLI) or 50 ms of sleep, less this process's own CPU time (so a pipeline of commands does not count
  its own earlier steps, nor this process its own threads), or read from the one-minute load average where
  there is no ``/proc/stat``. A reading that would cost threads is taken again over
  :data:`CONFIRM_WINDOW` seconds, and the lower of the two counts: only load that lasts gives threads up.

The budget applies to the BLAS and OpenMP pools (``threadpoolctl``) and to torch's intra-op pool when torch
is loaded, for the duration of the command (:func:`thread_budget`).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import OptionError

ENV = "PROMPTPRISM_THREADS"
#: seconds of the second window that must confirm a busy reading before ``auto`` gives threads up (measured:
#: a program's 2-thread BLAS call that ended as a command started read as one busy CPU of two and ran the
#: whole command, 5 s, on one thread)
CONFIRM_WINDOW = 0.15
#: variables through which a user already sized the thread pools (then promptprism does not)
USER_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class ThreadChoice:
    """The thread budget of a run and why: 'PROMPTPRISM_THREADS', 'auto (N CPUs, load L)', or the user's
    own variable (``threads`` None: left as it is)."""

    threads: int | None
    reason: str


def cgroup_cpu_limit(root: str | os.PathLike = "/sys/fs/cgroup") -> float | None:
    """The CPUs a cgroup quota allows this process (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` /
    ``cpu.cfs_period_us``), None when there is no quota or it cannot be read."""
    root = Path(root)
    with contextlib.suppress(OSError, ValueError, IndexError):
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else float(quota) / float(period)
    with contextlib.suppress(OSError, ValueError):
        quota = float((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = float((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota <= 0 or period <= 0 else quota / period
    return None


def usable_cpus(cgroup_root: str | os.PathLike = "/sys/fs/cgroup") -> int:
    """The CPUs this process may run on: its affinity mask, capped by a cgroup quota (at least 1)."""
    mask = _affinity()
    cpus = len(mask) if mask is not None else (os.cpu_count() or 1)
    quota = cgroup_cpu_limit(cgroup_root)
    if quota is not None:
        cpus = min(cpus, max(1, math.floor(quota)))
    return max(1, cpus)


def _affinity() -> set[int] | None:
    """The CPU ids this process may run on, None where the platform does not say."""
    return set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def cpu_sample(stat: str | os.PathLike = "/proc/stat") -> tuple[float, float, int, int]:
    """(wall clock, this process's CPU time, total ticks, idle + iowait ticks) of the CPUs this process may
    run on (the per-CPU lines of ``/proc/stat`` for its affinity mask; the whole machine's line where those
    are missing). OSError / ValueError where it cannot be read."""
    mask = _affinity()
    rows = {}
    for line in Path(stat).read_text().splitlines():
        if line.startswith("cpu"):
            name, *fields = line.split()
            rows[name] = [int(x) for x in fields[:8]]
    names = [f"cpu{i}" for i in sorted(mask or ()) if f"cpu{i}" in rows] or ["cpu"]
    mine = [rows[name] for name in names]
    return time.perf_counter(), time.process_time(), sum(map(sum, mine)), sum(f[3] + f[4] for f in mine)


def busy_cpus(window: float = 0.05, stat: str | os.PathLike = "/proc/stat", cpus: int | None = None, *,
              since: tuple | None = None) -> float | None:
    """CPUs kept busy by other work: the non-idle share of the CPUs this process may run on
    (:func:`cpu_sample`) over ``window`` seconds, less the CPU time this process's own threads took in it
    (a BLAS pool that was just started spins for a while before it sleeps: measured, 1.0 of 2 CPUs right
    after numpy's import), times ``cpus`` (default :func:`usable_cpus`). The window: from ``since`` (a
    :func:`cpu_sample` taken at least ``window`` seconds earlier: the CLI takes one as it starts, so its
    imports are the window) to now, or ``window`` seconds of sleep. On a large node whose other cores are
    busy with jobs pinned elsewhere, the cores of this process count as free. None without ``/proc/stat``."""
    try:
        first = since if since is not None and time.perf_counter() - since[0] >= window else None
        if first is None:
            first = cpu_sample(stat)
            time.sleep(window)
        last = cpu_sample(stat)
    except (OSError, ValueError, IndexError, KeyError):
        return None
    (wall0, own0, total0, idle0), (wall1, own1, total1, idle1) = first, last
    if total1 <= total0:
        return 0.0
    busy = (1.0 - (idle1 - idle0) / (total1 - total0)) * (usable_cpus() if cpus is None else cpus)
    elapsed = wall1 - wall0 if since is not None and first is since else window
    return max(0.0, busy - ((own1 - own0) / elapsed if elapsed > 0 else 0.0))


def auto_threads(cpus: int, busy: float) -> int:
    """Threads for ``cpus`` usable CPUs when other work keeps ``busy`` CPUs busy: every CPU when the
    machine is quiet (busy <= 0.5), else the CPUs left free, rounded, at least 1."""
    if busy <= 0.5:
        return cpus
    return max(1, min(cpus, math.floor(cpus - busy + 0.5)))


def choose_threads(env: Mapping[str, str] | None = None, *, since: tuple | None = None) -> ThreadChoice:
    """The thread budget for this run, from ``PROMPTPRISM_THREADS``, the user's own variables, or ``auto``
    (busy CPUs measured from the :func:`cpu_sample` ``since``, when given: :func:`busy_cpus`)."""
    env = os.environ if env is None else env
    value = env.get(ENV, "auto").strip().lower() or "auto"
    if value != "auto":
        try:
            threads = int(value)
        except ValueError:
            threads = 0
        if threads < 1:
            raise OptionError(f"{ENV} must be 'auto' or an integer >= 1, got {env.get(ENV)!r}")
        return ThreadChoice(threads, ENV)
    mine = [v for v in USER_VARIABLES if env.get(v)]
    if mine:
        return ThreadChoice(None, f"{mine[0]}={env[mine[0]]} (yours)")
    cpus = usable_cpus()
    busy = busy_cpus(cpus=cpus, since=since)
    if busy is not None and auto_threads(cpus, busy) < cpus:
        # a reading that would cost threads must hold over a second window: a burst just ending (another
        # program's BLAS threads spin ~0.1 s after each call) would otherwise set the budget of the whole run
        again = busy_cpus(window=CONFIRM_WINDOW, cpus=cpus)
        busy = busy if again is None else min(busy, again)
    if busy is None:
        busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    why = f"auto ({cpus} usable CPUs, {busy:.1f} busy with other work)"
    return ThreadChoice(auto_threads(cpus, busy), why)


def budget_threads(env: Mapping[str, str] | None = None) -> int:
    """The thread budget as a number, for a pool promptprism starts itself (the local LLM server): that of
    :func:`choose_threads`, or where the user sized the pools, the value of the first of
    :data:`USER_VARIABLES` set (at least 1; the usable CPUs where it is not a whole number)."""
    env = os.environ if env is None else env
    choice = choose_threads(env)
    if choice.threads is not None:
        return choice.threads
    with contextlib.suppress(ValueError):
        return max(1, int(next(env[v] for v in USER_VARIABLES if env.get(v))))
    return usable_cpus()


@contextlib.contextmanager
def thread_budget(choice: ThreadChoice) -> Iterator[ThreadChoice]:
    """Hold the BLAS/OpenMP pools (and torch's, when loaded) to ``choice.threads`` for the block.

    Afterwards torch keeps the threads it had, or, when the block first imported it, those the
    ``OMP_NUM_THREADS`` of before the block gives (else the budget: torch's own default would be every
    core); a process that runs several commands keeps its own setting."""
    if choice.threads is None:
        yield choice
        return
    import sys

    from threadpoolctl import threadpool_limits

    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    omp = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = str(choice.threads)  # torch, if first imported inside the block
    try:
        with threadpool_limits(limits=choice.threads):
            if torch is not None:
                torch.set_num_threads(choice.threads)
            yield choice
    finally:
        if omp is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = omp
        torch = sys.modules.get("torch")
        if before is None and omp is not None and omp.strip().isdigit() and int(omp) > 0:
            before = int(omp)
        if torch is not None and before is not None:
            torch.set_num_threads(before)


@contextlib.contextmanager
def openmp_threads(limit: int = 4) -> Iterator[None]:
    """Hold the OpenMP pools to at most ``limit`` threads (and half the CPUs) for the block: loops such as
    t-SNE's Barnes-Hut slow down 10x or more when their threads compete with other work for the cores."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(max(1, min(limit, (os.cpu_count() or 2) // 2)), user_api="openmp"):
        yield
