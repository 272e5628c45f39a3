"""Shared fixtures: a 2-process dask LocalCluster for the cluster tests, a worker-killing helper, the order
the test processes take the modules in."""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

from backends import DEVICES


def _leave_without_teardown() -> None:
    """The end of a test process of ``make test``, once every library's own exit handler has run: its
    streams flushed, then out without the interpreter's teardown (freeing the heap of torch, dask and the
    rest object by object took each test process ~1.7 s after its last test, while the controlling process
    waited). Not under coverage, whose data is written by its own exit handler."""
    if "coverage" in sys.modules:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if os.environ.get("PYTEST_XDIST_WORKER"):
    # exit handlers run last-registered first: registered before the libraries the tests import, this one
    # runs after theirs (dask's, multiprocessing's clean-up of child processes, the thread pools' joins)
    atexit.register(_leave_without_teardown)

#: dask settings of the test clusters: no profiler, slower monitors (left at their defaults, an idle 2-worker
#: cluster kept 11 % of a core busy, 0.015 with these)
QUIET_DASK = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s",
              "distributed.admin.system-monitor.interval": "5s",
              "distributed.worker.memory.monitor-interval": "1s",
              "distributed.scheduler.work-stealing-interval": "1s"}


@contextlib.contextmanager
def local_cluster():
    """A LocalCluster of 2 worker processes (one thread each) and its Client, open while the block runs."""
    distributed = pytest.importorskip("distributed")
    import dask

    with dask.config.set(QUIET_DASK):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=":0")
        with cluster, distributed.Client(cluster) as client:
            yield client


def pytest_collection_modifyitems(config, items):
    """The modules with the most tests marked slow (mostly the long ones) first, each module's tests in their
    own order.

    ``make test`` runs each module in one test process (``--dist loadscope``: a module fixture is built
    once) and hands the modules out in this order (``--no-loadscope-reorder``): the long ones first, the
    quick ones last, where they fill in while the other process finishes."""

    def module(item):
        return item.nodeid.split("::")[0]

    slow = collections.Counter(module(item) for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: -slow[module(item)])


@pytest.fixture(autouse=True, scope="module")
def _torch_threads_as_given():
    """A module that leaves torch on other threads than OMP_NUM_THREADS gives the test process fails: its
    later tests (and the other modules of the process) would run torch on them, beside the other test
    process (one such leak tripled the CPU time of the Fashion training module)."""
    yield
    torch, given = sys.modules.get("torch"), os.environ.get("OMP_NUM_THREADS", "")
    if torch is not None and given.isdigit():
        assert torch.get_num_threads() == int(given), (
            f"torch left on {torch.get_num_threads()} threads (OMP_NUM_THREADS={given})")


@pytest.fixture(scope="module")
def dask_client():
    """One cluster for the tests of a module that only need a working one (tests that kill workers start
    their own); gone with the module (a cluster kept for the session idled on through the rest of it)."""
    with local_cluster() as client:
        yield client


def run_killing_a_worker(run: Callable[[Any], Any], min_finished: int = 3) -> Any:
    """``run(client)`` on a fresh 2-worker cluster while one worker process is SIGKILLed mid-run.

    The kill comes once ``min_finished`` tasks hold results; asserts that it happened while ``run`` was
    running and that the victim really left the cluster. Returns what ``run`` returned.
    """
    with local_cluster() as client:
        victim = sorted(client.scheduler_info()["workers"])[0]
        pid = client.run(os.getpid, workers=[victim])[victim]
        done, running = threading.Event(), threading.Event()
        killed_during_run: list[bool] = []

        def kill_when_busy() -> None:
            for _ in range(4000):
                if client.run_on_scheduler(lambda dask_scheduler: sum(
                        ts.state == "memory" for ts in dask_scheduler.tasks.values())) >= min_finished:
                    break
                done.wait(0.005)
            killed_during_run.append(running.is_set())
            os.kill(pid, signal.SIGKILL)
            done.set()

        threading.Thread(target=kill_when_busy, daemon=True).start()
        running.set()
        result = run(client)
        running.clear()
        assert done.wait(30)
        assert killed_during_run == [True]
        assert victim not in client.scheduler_info()["workers"]  # the killed worker really went away
    return result


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    """The array backend a test runs PromptSplit on; the same test passes on both (promptprism.backend)."""
    return request.param


@pytest.fixture(autouse=True, scope="session")
def _every_result_matches_its_schema():
    """Every result.json the suite writes (``Result.save``) and every ``--json`` summary (``summary_of``) is
    validated against the schema the package ships for its kind; a mismatch fails the test that wrote it."""
    import json

    from jsonschema import Draft202012Validator

    from promptprism.cli import _output
    from promptprism.results import Result
    from promptprism.schema import shipped_schema

    validators: dict = {}

    def check(data: dict, kind: str, summary: bool, where: str) -> None:
        key = (kind, summary)
        if key not in validators:
            validators[key] = Draft202012Validator(shipped_schema(kind, summary=summary))
        error = next(iter(validators[key].iter_errors(data)), None)
        if error is not None:
            raise AssertionError(f"{where} does not match the shipped {kind} schema: {error.message} at "
                                 f"{'/'.join(map(str, error.absolute_path))}")

    save, summary_of = Result.save, _output.summary_of

    def checked_save(self, out_dir):
        path = save(self, out_dir)
        check(json.loads(path.read_text(encoding="utf-8")), self.kind, False, str(path))
        return path

    def checked_summary(result, written):
        summary = summary_of(result, written)
        if getattr(result, "kind", None):
            check(json.loads(json.dumps(summary)), result.kind, True, "the --json summary")
        return summary

    Result.save, _output.summary_of = checked_save, checked_summary
    yield
    Result.save, _output.summary_of = save, summary_of
