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
