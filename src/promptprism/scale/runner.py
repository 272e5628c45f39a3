"""Runners: map partition tasks and merge their accumulators (locally, or on dask.distributed)."""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from .._execution import RUNNER as _RUNNER
from .._execution import current_client as current_client  # re-exported: the scale API
from .._validation import check_memory
from ..errors import OptionError


def partition_rows(s: Any, a: int, b: int) -> tuple[Any, Any, int, int]:
    """What a task needs to read rows [a, b) of a PairedSet: (prompts, outputs, start, stop).

    Row-streamed ``.npy`` inputs travel as their file reference (the worker reads its rows itself); arrays
    held in memory are sliced here and shipped.
    """
    from ..data.npy import RowSource

    if isinstance(s.prompt_embeddings, RowSource) and isinstance(s.output_embeddings, RowSource):
        return s.prompt_embeddings, s.output_embeddings, a, b
    import numpy as np

    return np.asarray(s.prompt_embeddings[a:b]), np.asarray(s.output_embeddings[a:b]), 0, b - a


def partition_size(partition_rows: int, chunk_size: int) -> int:
    """Rows per cluster task: a whole number of chunks, so the sums match the single-process run."""
    return max(1, -(-partition_rows // chunk_size)) * chunk_size


def balanced_blocks(lengths: Sequence[int], chunk_size: int, workers: int
                    ) -> list[list[tuple[int, int, int]]]:
    """Whole chunks of several sets dealt to ``workers`` so that each gets about as many rows: per worker,
    its blocks (set index, start, stop), consecutive chunks of a set joined into one block.

    Chunks start at multiples of ``chunk_size`` in each set (the sums match any other split of the same rows
    into workers up to the order of the final additions); the largest chunks are dealt first, each to the
    worker with the fewest rows so far. Two sets of 30,000 rows in chunks of 8,192 give 30,000 rows to each
    of two workers, where one block of each set per worker gives them 32,768 and 27,232. As many sets as
    workers, of sizes within a chunk of each other: a set per worker (a keyed running sum per worker is
    then a single one: measured at r = 3000, 144 MB less memory to map and no sum to add at the merge).
    """
    if len(lengths) == workers > 1 and max(lengths) - min(lengths) <= chunk_size:
        # a set per worker is as even, and each worker then keeps one running sum, not one per set
        return [[(i, 0, n)] for i, n in enumerate(lengths) if n]
    pieces = sorted(((min(n, a + chunk_size) - a, i, a) for i, n in enumerate(lengths)
                     for a in range(0, n, chunk_size)), key=lambda p: -p[0])
    load, dealt = [0] * max(1, workers), [[] for _ in range(max(1, workers))]
    for rows, i, a in pieces:
        w = load.index(min(load))
        load[w] += rows
        dealt[w].append((i, a, a + rows))
    blocks = []
    for mine in dealt:
        joined: list[tuple[int, int, int]] = []
        for i, a, b in sorted(mine):
            if joined and joined[-1][0] == i and joined[-1][2] == a:
                joined[-1] = (i, joined[-1][1], b)
            else:
                joined.append((i, a, b))
        if joined:
            blocks.append(joined)
    return blocks


def merge_copy(a: Any, b: Any) -> Any:
    """a.merge(b) on a copy of a: a task re-run by the scheduler never sees a half-merged input."""
    return copy.deepcopy(a).merge(b)


class Runner(Protocol):
    """How a method runs its per-partition tasks: map, then merge the parts."""
    def map_reduce(self, func: Callable[..., Any], tasks: Sequence[tuple], *, description: str = "",
                   progress: bool = False, threads: bool = False, pairwise: bool = False) -> Any:
        """``func(*args)`` for every task, the returned parts combined with ``part.merge(other)``.

        ``threads``: the caller's word that the tasks are large numpy work, safe to run side by side in one
        process (the local runner then uses threads; a cluster runs tasks in parallel anyway).
        ``pairwise``: merge in the cluster's pairwise tree (:func:`merge_pairwise`) instead of one running
        sum, so that the same tasks give the same floating-point sums in one process and on a cluster."""


def usable_cores() -> int:
    """The CPU cores this process may run on (:func:`.threads.usable_cpus`: its affinity mask, capped by a
    cgroup CPU quota), and no more than the BLAS is allowed to use (a user who set ``OPENBLAS_NUM_THREADS=1``,
    a ``threadpool_limits`` block or a command's thread budget asked for fewer)."""
    from ..array_ops import blas_thread_counts
    from .threads import usable_cpus

    return max(1, min([usable_cpus(), *blas_thread_counts()]))  # (no BLAS threadpoolctl knows: the CPUs)


class LocalRunner:
    """Run the tasks in this process and merge the parts in task order.

    With ``workers`` > 1 (default: :func:`usable_cores`, at most :data:`MAX_LOCAL_WORKERS`) and a call
    that says ``threads`` (large numpy tasks: small ones, or torch ones with their own thread pool, lose
    more to thread hand-offs and oversubscription than they gain), that many tasks run at once on threads,
    the BLAS threads shared out among them (at least one each): the BLAS calls and NumPy's element-wise
    functions release the GIL, so the single-threaded parts of one task (cos, sin, bookkeeping) run beside
    another's products instead of leaving cores idle. At most ``workers`` tasks are in flight and their
    parts are merged in task order as they finish, so the result is the same whatever the timing and at
    most ``workers + 1`` parts are held at once.
    """

    def __init__(self, workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise OptionError(f"workers must be >= 1, got {workers}")
        self.cores = usable_cores()
        self.workers = workers or min(self.cores, MAX_LOCAL_WORKERS)

    def map_reduce(self, func, tasks, *, description="", progress=False, threads=False, pairwise=False):
        """Run ``func(*args)`` for each task and merge the parts in task order (on threads when the caller
        says ``threads``; in the cluster's pairwise tree when it says ``pairwise``)."""
        from .._progress import track

        merge = merge_pairwise if pairwise else _merge_in_order
        workers = min(self.workers, len(tasks)) if threads else 1
        if workers <= 1:
            parts = (func(*args) for args in tasks)
            return merge(track(parts, total=len(tasks), description=description, enabled=progress))
        from concurrent.futures import ThreadPoolExecutor

        from ..array_ops import blas_limits

        with blas_limits(max(1, self.cores // workers)), ThreadPoolExecutor(workers) as pool:
            return merge(track(_in_order(pool, func, tasks, workers), total=len(tasks),
                               description=description, enabled=progress))


#: most threads a LocalRunner runs tasks on (each task's accumulator is held until merged)
MAX_LOCAL_WORKERS = 4


def _in_order(pool: Any, func: Callable[..., Any], tasks: Sequence[tuple], window: int) -> Iterator[Any]:
    """The results of ``func(*args)`` for ``tasks``, in task order, with at most ``window`` in flight."""
    from collections import deque

    pending: deque = deque()
    queue = iter(tasks)
    for args in queue:
        pending.append(pool.submit(func, *args))
        if len(pending) == window:
            break
    while pending:
        part = pending.popleft().result()
        nxt = next(queue, None)
        if nxt is not None:
            pending.append(pool.submit(func, *nxt))
        yield part


def _merge_in_order(parts: Any) -> Any:
    result = None
    for part in parts:
        result = part if result is None else result.merge(part)
    return result


def merge_pairwise(parts: Any) -> Any:
    """The parts merged as :class:`DaskRunner` merges them (neighbours pairwise, level by level, an odd
    last one carried up), as they arrive: a stack of merged runs of 1, 2, 4, ... parts, joined from the
    right at the end; at most log2(len(parts)) + 1 parts are held."""
    stack: list[tuple[int, Any]] = []
    for part in parts:
        level = 0
        while stack and stack[-1][0] == level:
            part, level = stack.pop()[1].merge(part), level + 1
        stack.append((level, part))
    result = stack.pop()[1] if stack else None
    while stack:
        result = stack.pop()[1].merge(result)
    return result


class DaskRunner:
    """Submit one task per partition to a dask ``Client`` and merge the results with a tree reduction."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def map_reduce(self, func, tasks, *, description="", progress=False, threads=False, pairwise=True):
        """Run ``func(*args)`` per task on the cluster, merge the parts pairwise there (always); the merged
        part."""
        from distributed import as_completed

        from .._progress import track

        futures = [self.client.submit(func, *args, pure=False, retries=3) for args in tasks]
        # wait with a progress bar (results stay on the workers until merged there)
        for _ in track(as_completed(futures), total=len(futures), description=description,
                       enabled=progress):
            pass
        while len(futures) > 1:
            merged = [self.client.submit(merge_copy, futures[i], futures[i + 1], pure=False, retries=3)
                      for i in range(0, len(futures) - 1, 2)]
            if len(futures) % 2:
                merged.append(futures[-1])
            futures = merged
        return futures[0].result()


#: seconds to connect to a dask scheduler (and for it to greet us) before giving up
CONNECT_SECONDS = 10.0
#: memory one local dask worker process takes before it holds any data (a generous bound): ``workers=N``
#: is refused up front when N of them cannot fit
LOCAL_WORKER_BYTES = 256 * 2**20
_SCHEMES = ("tcp", "tls", "ws", "wss")


def check_scheduler(address: str, timeout: float | None = None) -> str:
    """``address`` as ``scheme://host:port`` once it names a dask scheduler, else an OptionError in one line.

    ``host:port`` means tcp. For tcp the scheduler must greet within ``timeout`` seconds with dask's
    handshake (it speaks first), so a port held by another program is refused instead of waited on."""
    from urllib.parse import urlsplit

    timeout = CONNECT_SECONDS if timeout is None else timeout

    def bad(why: str) -> OptionError:
        return OptionError(f"scheduler {address!r}: {why}; expected a dask scheduler address such as "
                           "tcp://HOST:8786")

    text = address.strip()
    text = text if "://" in text else f"tcp://{text}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise bad(f"not an address ({exc})") from None
    if parts.scheme not in _SCHEMES:
        why = "an inproc:// address exists only inside one process" if parts.scheme == "inproc" else \
            f"the protocol {parts.scheme!r} is not one of {', '.join(_SCHEMES)}"
        raise bad(why)
    if not parts.hostname or port is None or parts.path not in ("", "/"):
        raise bad("no host and port")
    if parts.scheme == "tcp":
        _greeted(parts.hostname, port, timeout, bad)
    return f"{parts.scheme}://{parts.netloc}"


def _greeted(host: str, port: int, timeout: float, bad: Callable[[str], OptionError]) -> None:
    """A dask scheduler sends its handshake (a msgpack map naming ``compression``) as soon as we connect."""
    import socket

    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            data = b""
            while b"compression" not in data and len(data) < 4096:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise bad(f"nothing answered on port {port} within {timeout:g} s (not a dask scheduler?)")
                sock.settimeout(left)
                chunk = sock.recv(4096)
                if not chunk:
                    raise bad(f"port {port} closed the connection without a dask handshake")
                data += chunk
                if len(data) >= 16 and (int.from_bytes(data[:8], "little") > 2**32
                                        or int.from_bytes(data[8:16], "little") > 2**16):
                    break  # not dask's framing (two little-endian lengths): another protocol
    except TimeoutError:
        raise bad(f"nothing answered on port {port} within {timeout:g} s (not a dask scheduler?)") from None
    except OSError as exc:
        raise bad(f"cannot connect ({exc.strerror or exc})") from None
    if b"compression" not in data:
        raise bad(f"port {port} answered, but not with a dask handshake ({data[:24]!r})")


@contextlib.contextmanager
def open_client(scheduler: str | None = None, workers: int | None = None) -> Iterator[Any]:
    """A dask Client: connected to ``scheduler`` (any address), or to a LocalCluster of ``workers``
    processes started for the run and stopped after it; ``None`` when neither is given."""
    if scheduler and workers:
        raise OptionError("give either scheduler= (an existing cluster) or workers= (a local one), "
                          "not both")
    if not scheduler and not workers:
        yield None
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - depends on the environment
        raise OptionError("running on a cluster needs dask.distributed: "
                          "pip install 'dask[distributed]'") from None
    if scheduler:
        address = check_scheduler(scheduler)
        try:
            client = Client(address, timeout=f"{CONNECT_SECONDS}s")
        except Exception as exc:  # noqa: BLE001 - dask raises many types for a peer that is not a scheduler
            raise OptionError(f"cannot reach the dask scheduler at {scheduler}: "
                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        with client:
            yield client
        return
    if workers is not None and workers < 1:
        raise OptionError(f"workers must be >= 1, got {workers}")
    check_memory(workers * LOCAL_WORKER_BYTES, what=f"workers {workers} (local dask worker processes, about "
                                                    f"{LOCAL_WORKER_BYTES // 2**20} MiB each)")
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client


# ------------------------------------------------------------------------------ execution, chosen once
def current_runner() -> Runner:
    """The runner set by the innermost :func:`execution` block; :class:`LocalRunner` outside any."""
    runner = _RUNNER.get()
    return LocalRunner() if runner is None else runner


@contextlib.contextmanager
def execution(client: Any = None, *, scheduler: str | None = None,
              workers: int | None = None) -> Iterator[Runner]:
    """Choose where the accumulating passes run, once, for everything inside the block.

    ``execution()`` runs locally; ``execution(client)`` runs on an existing dask ``Client``;
    ``execution(scheduler=ADDRESS)`` connects to a cluster and ``execution(workers=N)`` starts a local one
    for the block (see :func:`open_client`). In the manner of scikit-learn's ``parallel_backend``: methods
    take no ``client`` argument, they ask :func:`current_runner`.

    >>> from promptprism.scale import execution
    >>> with execution():            # doctest: +SKIP
    ...     result = PromptSplit().fit(test, reference)
    """
    if client is not None and (scheduler or workers):
        raise OptionError("give either client, or scheduler/workers, not both")
    with contextlib.ExitStack() as stack:
        if client is None and (scheduler or workers):
            client = stack.enter_context(open_client(scheduler, workers))
        runner: Runner = LocalRunner() if client is None else DaskRunner(client)
        token = _RUNNER.set(runner)
        try:
            yield runner
        finally:
            _RUNNER.reset(token)
