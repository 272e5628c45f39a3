"""The thread budget of a command (scale/threads.py): usable CPUs from affinity and cgroup quotas, the
choice under load, the user's overrides, and that the budget holds inside a command and is undone after it."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_info

from promptprism.errors import OptionError
from promptprism.scale.threads import (
    ThreadChoice,
    auto_threads,
    budget_threads,
    cgroup_cpu_limit,
    choose_threads,
    thread_budget,
)


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]


@pytest.mark.parametrize(("cpus", "load", "expected"), [
    (2, 0.0, 2), (2, 0.5, 2), (2, 0.6, 1), (2, 1.4, 1), (2, 24.0, 1), (16, 4.0, 12), (16, 3.6, 12),
    (16, 3.4, 13), (1, 0.9, 1),
])
def test_auto_threads_leaves_the_busy_cpus_to_their_work(cpus, load, expected):
    assert auto_threads(cpus, load) == expected


def test_busy_cpus_from_proc_stat(tmp_path, monkeypatch):
    from promptprism.scale import threads

    stat = tmp_path / "stat"
    lines = iter(["cpu 100 0 100 800 0 0 0 0 0 0\n", "cpu 150 0 150 900 0 0 0 0 0 0\n"])
    monkeypatch.setattr(threads.Path, "read_text", lambda self: next(lines))
    # no per-CPU lines: the machine's. 200 ticks passed, 100 of them idle: half busy = 2 of 4 usable CPUs
    assert threads.busy_cpus(window=0.0, stat=stat, cpus=4) == pytest.approx(2.0)
    monkeypatch.undo()
    assert threads.busy_cpus(window=0.0, stat=tmp_path / "missing") is None


def test_busy_cpus_counts_only_the_cpus_this_process_may_run_on(tmp_path, monkeypatch):
    """A node whose cpu2 and cpu3 are busy with other jobs, this process pinned to the idle cpu0 and cpu1:
    nothing is busy for it (the whole machine's share would say half of its CPUs)."""
    from promptprism.scale import threads

    def stat(ticks: int) -> str:  # after ``ticks``: cpu0, cpu1 idle all along, cpu2, cpu3 busy all along
        return "".join([f"cpu {2 * ticks} 0 0 {2 * ticks} 0 0 0 0\n",
                        *(f"cpu{i} 0 0 0 {ticks} 0 0 0 0\n" for i in (0, 1)),
                        *(f"cpu{i} {ticks} 0 0 0 0 0 0 0\n" for i in (2, 3))])

    samples = iter([stat(0), stat(100)])
    monkeypatch.setattr(threads.Path, "read_text", lambda self: next(samples))
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert threads.busy_cpus(window=0.0, stat=tmp_path / "stat", cpus=2) == pytest.approx(0.0)
    samples = iter([stat(0), stat(100)])
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {2, 3}, raising=False)
    assert threads.busy_cpus(window=0.0, stat=tmp_path / "stat", cpus=2) == pytest.approx(2.0)


def test_cgroup_quotas_v2_and_v1(tmp_path):
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpu_limit(v2) == pytest.approx(1.5)
    (v2 / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_limit(v2) is None
    v1 = tmp_path / "v1" / "cpu"
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("300000")
    (v1 / "cpu.cfs_period_us").write_text("100000")
    assert cgroup_cpu_limit(tmp_path / "v1") == pytest.approx(3.0)
    (v1 / "cpu.cfs_quota_us").write_text("-1")
    assert cgroup_cpu_limit(tmp_path / "v1") is None
    assert cgroup_cpu_limit(tmp_path / "nothing") is None


def test_overrides_and_bad_values():
    assert choose_threads({"PROMPTPRISM_THREADS": "3"}) == ThreadChoice(3, "PROMPTPRISM_THREADS")
    mine = choose_threads({"OPENBLAS_NUM_THREADS": "1"})
    assert mine.threads is None and "OPENBLAS_NUM_THREADS=1" in mine.reason
    auto = choose_threads({})
    assert auto.threads >= 1 and auto.reason.startswith("auto (")
    for bad in ("0", "-2", "many", "1.5"):
        with pytest.raises(OptionError, match="PROMPTPRISM_THREADS must be 'auto' or an integer >= 1"):
            choose_threads({"PROMPTPRISM_THREADS": bad})


def test_a_pool_promptprism_starts_itself_gets_a_number():
    """The local LLM server's threads: PROMPTPRISM_THREADS, else the user's own variable's value, else the
    usable CPUs (a variable that is not a whole number)."""
    from promptprism.scale.threads import usable_cpus

    assert budget_threads({"PROMPTPRISM_THREADS": "3", "OMP_NUM_THREADS": "1"}) == 3
    assert budget_threads({"OMP_NUM_THREADS": "1"}) == 1
    assert budget_threads({"OPENBLAS_NUM_THREADS": "2"}) == 2
    assert budget_threads({"OMP_NUM_THREADS": "four"}) == usable_cpus()
    assert 1 <= budget_threads({}) <= usable_cpus()


def test_budget_holds_inside_the_block_and_is_undone_after():
    import numpy as np

    np.ones((2, 2)) @ np.ones((2, 2))  # the BLAS is loaded
    before = _blas_threads()
    with thread_budget(ThreadChoice(1, "test")):
        assert _blas_threads() and set(_blas_threads()) == {1}
        from promptprism.scale.runner import usable_cores

        assert usable_cores() == 1  # the local runner then runs one task at a time
    assert _blas_threads() == before
    with thread_budget(ThreadChoice(None, "yours")):
        assert _blas_threads() == before


def test_the_cli_runs_under_the_budget_and_refuses_a_bad_one(monkeypatch):
    import promptprism.cli as cli_module
    from _cli_run import run_cli

    seen = []
    original = cli_module.thread_budget

    def spy(choice):
        seen.append(choice)
        return original(choice)

    monkeypatch.setattr(cli_module, "thread_budget", spy)
    monkeypatch.setenv("PROMPTPRISM_THREADS", "1")
    assert run_cli("version")[0] == 0 and seen == [ThreadChoice(1, "PROMPTPRISM_THREADS")]
    monkeypatch.setenv("PROMPTPRISM_THREADS", "zero")
    code, _, err = run_cli("version")
    assert code == 2 and err.startswith("error: PROMPTPRISM_THREADS must be") and err.count("\n") == 1


def test_the_local_runner_counts_the_cgroup_quota_not_only_the_affinity(monkeypatch):
    """Two CPUs in the affinity mask but a quota of one: one task at a time, each with the BLAS as it is."""
    from promptprism.scale import runner, threads

    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(threads, "cgroup_cpu_limit", lambda root="/sys/fs/cgroup": 1.0)
    with thread_budget(ThreadChoice(2, "test")):
        assert runner.usable_cores() == 1
        assert runner.LocalRunner().workers == 1
    monkeypatch.setattr(threads, "cgroup_cpu_limit", lambda root="/sys/fs/cgroup": None)
    with thread_budget(ThreadChoice(2, "test")):
        assert runner.usable_cores() == 2


def test_busy_cpus_leaves_out_this_processs_own_threads(tmp_path, monkeypatch):
    """Half of 2 CPUs busy in /proc/stat over the window, all of it this process's own CPU time (a BLAS
    pool spinning after its start, say): no other work is keeping a CPU busy."""
    lines = iter(["cpu 100 0 100 800 0 0 0 0 0 0\n", "cpu 150 0 150 900 0 0 0 0 0 0\n"] * 2)
    import time

    from promptprism.scale import threads

    monkeypatch.setattr(threads.Path, "read_text", lambda self: next(lines))
    own = iter([10.0, 10.05])  # 0.05 CPU seconds of this process over a 0.05 s window: one CPU
    monkeypatch.setattr(time, "process_time", lambda: next(own))
    assert threads.busy_cpus(window=0.05, stat=tmp_path / "stat", cpus=2) == pytest.approx(0.0)
    own = iter([10.0, 10.0])  # this process idle: the busy CPU is someone else's
    assert threads.busy_cpus(window=0.05, stat=tmp_path / "stat", cpus=2) == pytest.approx(1.0)


def test_busy_cpus_measures_from_an_earlier_sample_without_sleeping(tmp_path, monkeypatch):
    """The CLI samples /proc/stat as it starts; the window is then its imports: no sleep, the same rule
    (other work's share of the CPUs, this process's own CPU time left out)."""
    import time

    from promptprism.scale import threads

    monkeypatch.setattr(threads.Path, "read_text", lambda self: "cpu 150 0 150 900 0 0 0 0 0 0\n")
    monkeypatch.setattr(time, "sleep", lambda s: (_ for _ in ()).throw(AssertionError("slept")))
    now = time.perf_counter()
    since = (now - 0.2, time.process_time(), 1000, 800)  # then: 200 ticks later, 100 of them idle
    assert threads.busy_cpus(stat=tmp_path / "stat", cpus=2, since=since) == pytest.approx(1.0, abs=0.05)
    # a sample too recent for the window is not used: the measurement sleeps instead
    with pytest.raises(AssertionError, match="slept"):
        threads.busy_cpus(window=5.0, stat=tmp_path / "stat", cpus=2, since=since)


@pytest.mark.parametrize(("readings", "expected"), [
    ([1.6, 0.1], 2),    # a burst that ended as the command started: every CPU
    ([1.6, 1.4], 1),    # load that lasts: the busy CPU is left to its work
    ([0.2], 2),         # quiet at once: no second window is taken
    ([1.6, None], 1),   # the second window unreadable: the first reading stands
])
def test_auto_gives_threads_up_only_for_load_that_lasts(monkeypatch, readings, expected):
    import promptprism.scale.threads as threads

    calls = []

    def fake_busy(window=0.05, stat="/proc/stat", cpus=None, *, since=None):
        calls.append(window)
        return readings[len(calls) - 1]

    monkeypatch.setattr(threads, "busy_cpus", fake_busy)
    monkeypatch.setattr(threads, "usable_cpus", lambda: 2)
    choice = choose_threads({})
    assert choice.threads == expected
    assert len(calls) == len(readings)
    if len(readings) > 1:
        assert calls[1] == threads.CONFIRM_WINDOW


@pytest.mark.slow  # a fresh interpreter importing torch (~2 s)
def test_torch_first_imported_inside_the_budget_gets_the_callers_threads_back():
    """A command that first imports torch under a budget of 2 leaves the process's torch at the
    OMP_NUM_THREADS of before (a test process of one thread, or a notebook, would otherwise run every later
    torch call on 2 threads)."""
    import os
    import subprocess
    import sys

    code = ("import sys\n"
            "from promptprism.scale.threads import ThreadChoice, thread_budget\n"
            "assert 'torch' not in sys.modules\n"
            "with thread_budget(ThreadChoice(2, 'test')):\n"
            "    import torch\n"
            "    torch.set_num_threads(2)\n"  # (as the OMP_NUM_THREADS=2 of the block gives it, mostly)
            "print(torch.get_num_threads())\n")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["1"], out.stdout + out.stderr
