"""Shared fixtures: one 2-process dask LocalCluster for the cluster tests, and a worker-killing helper."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

import pytest

from backends import DEVICES


def local_cluster():
    """A LocalCluster of 2 worker processes (one thread each) and its Client, as a context manager pair."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")
    return cluster, distributed.Client(cluster)


@pytest.fixture(scope="session")
def dask_client():
    """One cluster for every test that only needs a working one (tests that kill workers start their own)."""
    cluster, client = local_cluster()
    with cluster, client:
        yield client


def run_killing_a_worker(run: Callable[[Any], Any], min_finished: int = 3) -> Any:
    """``run(client)`` on a fresh 2-worker cluster while one worker process is SIGKILLed mid-run.

    The kill comes once ``min_finished`` tasks hold results; asserts that it happened while ``run`` was
    running and that the victim really left the cluster. Returns what ``run`` returned.
    """
    cluster, client = local_cluster()
    with cluster, client:
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
