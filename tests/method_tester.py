"""The checks every method passes, shared, in the manner of torchmetrics' ``MetricTester``.

A :class:`MethodCase` is one estimator on one fixture: how to build it, fit it and call the same run from the
command line. :class:`MethodTester` runs the shared checks on a case:

* ``run_cluster_test``: the fit inside ``execution(client)`` (dask workers) equals the local fit;
* ``run_backend_test``: ``device='torch'`` equals ``device='cpu'`` (numpy), field for field;
* ``run_cli_test``: the numbers in the command's ``result.json`` equal the library's result;
* ``run_bad_option_test``: a bad option value exits with status 2 and one line that names the flag, and
  writes nothing; ``run_bad_parameter_test``: the library's own refusal of a bad parameter names it;
* ``run_reference_test``: the numbers equal a reference implementation (``reference(data)``, brute force
  from the definitions or a peer package) and the result's statistics equal their definitions recomputed
  from the result's own counts (``statistic_reference(data, result)``);
* ``run_determinism_test``: two fits with the same seed give the same result;
* ``run_order_test``: where a method claims it, the result does not depend on the order of its inputs;
* ``run_round_trip_test``: result.json (``save``) validates against the shipped schema of its kind and
  ``load_result`` gives the same result back.

A case without a command (CompCon and naming run on scripted models in-process) leaves ``command`` None and
skips the command-line checks.

:func:`assert_same_result` is the one comparison of two results (or of their ``result.json`` contents) every
test uses: each number within its tolerance, every count, index, label and flag equal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from _cli_run import run_cli

#: keys that legitimately differ between two runs of the same fit (wall times, the package version)
#: not part of what a method computes: wall times, the version, and where the input files lay (``inputs``:
#: recorded by the commands, absent from a library fit)
VOLATILE = ("timings", "cost_s", "version", "inputs")


def _as_data(result: Any) -> Any:
    return result.to_dict() if hasattr(result, "to_dict") else result


def assert_same_result(a: Any, b: Any, *, rtol: float = 1e-9, atol: float = 0.0,
                       tolerances: Mapping[str, tuple[float, float]] | None = None,
                       ignore: Sequence[str] = VOLATILE) -> None:
    """``a`` and ``b`` (results, or the dicts of result.json) are the same result: the same keys, lists of
    the same length, every string, bool, int and None equal, every float within ``rtol``/``atol``
    (``tolerances[key] = (rtol, atol)`` for the numbers under a key, e.g. ``{"eigenvalues": (0, 1e-7)}``);
    the keys in ``ignore`` are skipped wherever they are (a dotted entry, ``config.test``, only there). The
    assertion names the first difference's path."""
    _compare(_as_data(a), _as_data(b), "result", (rtol, atol), dict(tolerances or {}), set(ignore))


def _compare(x: Any, y: Any, path: str, tol: tuple[float, float], tolerances: dict, ignore: set) -> None:
    if isinstance(x, Mapping) and isinstance(y, Mapping):
        here = path.partition(".")[2]  # the path below the result: "config", "modes[0]", ...
        skip = {k for k in {*x, *y} if k in ignore or f"{here}.{k}".lstrip(".") in ignore}
        keys = set(x) - skip
        assert keys == set(y) - skip, f"{path}: keys differ: {sorted(keys ^ (set(y) - skip))}"
        for k in sorted(keys, key=str):
            _compare(x[k], y[k], f"{path}.{k}", tolerances.get(k, tol), tolerances, ignore)
    elif isinstance(x, (list, tuple, np.ndarray)) and isinstance(y, (list, tuple, np.ndarray)):
        assert len(x) == len(y), f"{path}: {len(x)} items vs {len(y)}"
        for i, (u, v) in enumerate(zip(x, y, strict=True)):
            _compare(u, v, f"{path}[{i}]", tol, tolerances, ignore)
    elif isinstance(x, (float, np.floating)) or isinstance(y, (float, np.floating)):
        u, v = float(x), float(y)  # a float beside an int: compared as numbers
        if math.isnan(u) or math.isnan(v):
            assert math.isnan(u) and math.isnan(v), f"{path}: {u!r} vs {v!r}"
        else:
            assert abs(u - v) <= tol[1] + tol[0] * abs(v), \
                f"{path}: {u!r} vs {v!r} (rtol {tol[0]}, atol {tol[1]})"
    else:
        assert x == y, f"{path}: {x!r} vs {y!r}"


@dataclass
class MethodCase:
    """One estimator on one fixture.

    ``estimator(**options)``: the estimator with the case's options (``options`` override them, e.g.
    ``device``); ``fit(estimator, data)``: its result on ``data``; ``write(folder)``: the fixture written as
    files, returning ``(data, files)``: what ``fit`` takes read from those files (so that cluster workers
    read their own rows) and the command-line arguments that name the files; ``command``: the sub-command and
    the flags that make the same estimator; ``bad_options``: per flag a value it refuses. ``rtol``, ``atol``,
    ``tolerances``: how close two results of this case must be (``backend_tolerance`` between numpy and
    torch); ``ignore``: result keys the library and the command line set differently (input names).
    ``reference``: a reference implementation (brute force from the definitions, or a peer package) as
    ``reference(data) -> {dotted path in the result: expected value}``, checked by
    :meth:`MethodTester.run_reference_test` within ``reference_tolerance`` (like torchmetrics' MetricTester
    takes the reference metric)."""

    name: str
    estimator: Callable[..., Any]
    fit: Callable[[Any, Any], Any]
    write: Callable[[Path], tuple[Any, list[str]]]
    command: list[str] | None = None
    bad_options: dict[str, str] = field(default_factory=dict)
    rtol: float = 1e-9
    atol: float = 0.0
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)
    backend_tolerance: tuple[float, float] = (1e-9, 1e-12)
    ignore: tuple[str, ...] = VOLATILE
    reference: Callable[[Any], dict[str, Any]] | None = None
    reference_tolerance: tuple[float, float] = (1e-9, 1e-12)
    #: ``statistic_reference(data, result dict) -> {path: expected}``: the result's statistics recomputed
    #: from the definitions on the result's own counts (a p-value from its 2 x 2 table, Holm over its
    #: p-values), where the counts come from models the test scripts
    statistic_reference: Callable[[Any, dict], dict[str, Any]] | None = None
    #: library parameters and a value each refuses (``estimator(**{name: value})`` then ``fit``)
    bad_parameters: dict[str, Any] = field(default_factory=dict)
    #: ``permute(data, rng) -> data`` with the inputs reordered, where the method claims the order does not
    #: matter; ``order_ignore``: result keys that record the order (row indices)
    permute: Callable[[Any, np.random.Generator], Any] | None = None
    order_ignore: tuple[str, ...] = ()
    order_tolerance: tuple[float, float] = (1e-7, 1e-12)  #: sums in another order round differently

    def __str__(self) -> str:
        return self.name


class MethodTester:
    """The shared checks of one :class:`MethodCase` (see the module docstring)."""

    def __init__(self, case: MethodCase) -> None:
        self.case = case

    def same(self, a: Any, b: Any, *, tol: tuple[float, float] | None = None,
             ignore: Sequence[str] = ()) -> None:
        """``a`` and ``b`` agree within the case's tolerances (or ``tol`` for every number)."""
        c = self.case
        rtol, atol = tol if tol is not None else (c.rtol, c.atol)
        assert_same_result(a, b, rtol=rtol, atol=atol, tolerances={} if tol is not None else c.tolerances,
                           ignore=(*c.ignore, *ignore))

    def run_cluster_test(self, client: Any, folder: Path) -> Any:
        """On the cluster (workers read the files) == here; returns the local result."""
        from promptprism import execution

        data, _ = self.case.write(folder)
        est = self.case.estimator()
        local = self.case.fit(est, data)
        with execution(client):
            on_cluster = self.case.fit(est, data)
        self.same(local, on_cluster, ignore=("partition_rows",))  # config: used on a cluster only
        return local

    def run_reference_test(self, folder: Path) -> Any:
        """The result's numbers == the reference implementation's (and the statistics == their definitions
        on the result's counts), path by path; returns the result."""
        c = self.case
        assert c.reference is not None or c.statistic_reference is not None, \
            f"{c.name} has no reference implementation"
        data, _ = c.write(folder)
        result = _as_data(c.fit(c.estimator(), data))
        expected = {**(c.reference(data) if c.reference else {}),
                    **(c.statistic_reference(data, result) if c.statistic_reference else {})}
        assert expected, f"{c.name}: the reference gave nothing to compare"
        for path, value in expected.items():
            assert_same_result(value_at(result, path), value, rtol=c.reference_tolerance[0],
                               atol=c.reference_tolerance[1])
        return result

    def run_determinism_test(self, folder: Path) -> Any:
        """Two fits of the same estimator (a fresh one each, the same seed) give the same result."""
        data, _ = self.case.write(folder)
        first = self.case.fit(self.case.estimator(), data)
        self.same(first, self.case.fit(self.case.estimator(), data), tol=(0.0, 0.0))
        return first

    def run_order_test(self, folder: Path, seed: int = 0) -> Any:
        """The result on inputs in another order == the result (where the case claims it: ``permute``)."""
        assert self.case.permute is not None, f"{self.case.name} claims no order invariance"
        data, _ = self.case.write(folder)
        result = self.case.fit(self.case.estimator(), data)
        shuffled = self.case.permute(data, np.random.default_rng(seed))
        self.same(result, self.case.fit(self.case.estimator(), shuffled), tol=self.case.order_tolerance,
                  ignore=self.case.order_ignore)
        return result

    def run_round_trip_test(self, folder: Path) -> Any:
        """result.json matches the schema shipped for its kind, and ``load_result`` reads the same result
        back (its numbers exactly, through JSON); returns the loaded result."""
        import json

        from jsonschema import Draft202012Validator

        from promptprism import load_result
        from promptprism.schema import shipped_schema

        data, _ = self.case.write(folder)
        result = self.case.fit(self.case.estimator(), data)
        path = result.save(folder / "saved")
        written = json.loads(path.read_text(encoding="utf-8"))
        errors = [e.message for e in Draft202012Validator(shipped_schema(result.kind)).iter_errors(written)]
        assert not errors, f"{self.case.name}: result.json does not match its schema: {errors[:3]}"
        loaded = load_result(folder / "saved")
        assert type(loaded) is type(result)
        assert_same_result(loaded, json.loads(json.dumps(_as_data(result), default=_plain)), rtol=0.0,
                           ignore=("version",))
        return loaded

    def run_bad_parameter_test(self, folder: Path, name: str) -> str:
        """The library refuses ``bad_parameters[name]`` (when built or when fitting) with an OptionError
        about ``name``; returns its message."""
        from promptprism.errors import OptionError

        data, _ = self.case.write(folder)
        try:
            self.case.fit(self.case.estimator(**{name: self.case.bad_parameters[name]}), data)
        except OptionError as exc:
            assert exc.parameter == name or name in str(exc), (name, exc.parameter, str(exc))
            return str(exc)
        raise AssertionError(f"{self.case.name}: {name}={self.case.bad_parameters[name]!r} was accepted")

    def run_backend_test(self, folder: Path) -> Any:
        """torch == numpy, every field (the ``device`` each records aside); returns the numpy result."""
        data, _ = self.case.write(folder)
        on_numpy = self.case.fit(self.case.estimator(device="cpu"), data)
        on_torch = self.case.fit(self.case.estimator(device="torch"), data)
        assert on_numpy.config["device"] == "numpy" and on_torch.config["device"].startswith("torch")
        self.same(on_numpy, on_torch, tol=self.case.backend_tolerance, ignore=("device",))
        return on_numpy

    def run_cli_test(self, folder: Path) -> dict:
        """The command's result.json == the library's result; returns result.json's content."""
        import json

        assert self.case.command is not None, f"{self.case.name} has no command"

        data, files = self.case.write(folder)
        out = folder / "out"
        code, _, err = run_cli(*self.case.command, *files, "--out", out, "--quiet", "--no-report")
        assert code == 0, err
        written = json.loads((out / "result.json").read_text(encoding="utf-8"))
        library = _as_data(self.case.fit(self.case.estimator(), data))
        # through JSON, as the command wrote it (tuples become lists, numpy numbers plain numbers)
        self.same(json.loads(json.dumps(library, default=_plain)), written)
        return written

    def run_bad_option_test(self, folder: Path, flag: str) -> str:
        """``flag``'s bad value: exit status 2, one line naming the flag, no results folder; returns it."""
        _, files = self.case.write(folder)
        out = folder / "bad"
        argv = [*self.case.command, *files, "--out", out, "--quiet", flag, self.case.bad_options[flag]]
        code, stdout, err = run_cli(*argv)
        assert code == 2, (code, stdout, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert flag in lines[0], lines[0]
        assert "Traceback" not in err and not out.exists()
        return lines[0]

    def with_options(self, **changes: Any) -> MethodTester:
        """The same checks on a case with fields changed (e.g. another fixture or tolerances)."""
        return MethodTester(replace(self.case, **changes))


def value_at(result: Any, path: str) -> Any:
    """The entry of a result's dict at a dotted path with list indices: ``models[0].precision``."""
    got = _as_data(result)
    for part in path.replace("]", "").replace("[", ".").split("."):
        got = got[int(part)] if isinstance(got, list) else got[part]
    return got


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)
