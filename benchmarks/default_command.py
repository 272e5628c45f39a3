"""The default commands against this machine's own floor, the fit and the significance test apart, in one run.

    python benchmarks/default_command.py                  # the three commands, one run each
    python benchmarks/default_command.py --repeat 3       # the median of 3 runs per command
    python benchmarks/default_command.py --only rff       # a subset of: rff exact scendi
    python benchmarks/default_command.py --no-warmup      # no uncounted full-size first run (half the time)
    python benchmarks/default_command.py --pause 0        # timed runs back to back (no settling pause)
    python benchmarks/default_command.py --only rff --repeat 5 --paired   # each run against its own floor

Prints, first, the machine: CPU model, load average, the BLAS library and kernel (threadpoolctl), the CPUs
this process may use, and the float32 rates of the two routines the commands are made of, measured now at
the commands' own shapes:

* SYRK floor: C = A^T A with A 60,000 x 3,000 float32 (the covariance pass of rff r = 3,000 at
  n = m = 30,000), best of two;
* GEMM floor: a float32 4,000 x 4,000 product (Scendi's yardstick), best of three.

Then the CLI's start-up (the process up to refusing a missing input: interpreter, imports, option parsing;
the median of 7 runs), and each default command as a whole command-line process (significance on with its
defaults, report off):

* ``split`` rff: ``--method rff --features 3000`` at n = m = 30,000 (384-d prompts and outputs, the data of
  ``compare.py``), against the SYRK floor;
* ``split`` exact: ``--method exact --permutations 200`` at n = m = 5,000, against the SYRK floor of its
  joint Gram matrix (N (N + 1) 768 flops, N = n + m);
* ``diversity --kernel gaussian --shared-frequencies --features 2500`` at n = 1,000 (512-d, the data of
  ``compare.py``), against the GEMM floor.

Each row: the process's wall seconds and its ratio to the floor; from result.json, the fit (everything but the
test) and the test (``timings.significance_s``) apart, each as a ratio to the floor, the test's cost relative
to the fit, and the test's stopping record (rule, permutations drawn). The load average is printed before and
after each command: on a shared machine read the ratios of one run, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine  # noqa: E402
from busy_machine import cpu_model  # noqa: E402
from compare import CLI, _installed_like, promptsplit_sets, scendi_set  # noqa: E402

RFF_N, RFF_FEATURES, EXACT_N, EXACT_PERMUTATIONS, SCENDI_N = 30_000, 3000, 5_000, 200, 1_000
#: untimed seconds before each timed run: the previous run's process has returned its memory (a virtual
#: machine's kernel then hands the freed pages back to the host in the background, and the busy-CPU window
#: of the next command's thread budget would count that work as another program's)
PAUSE_S = 2.0


def blas_info() -> str:
    """The BLAS numpy runs on: library, version, kernel ('architecture') and its thread count."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    rows = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return "; ".join(f"{i.get('internal_api')} {i.get('version')} kernel {i.get('architecture')}, "
                     f"{i.get('num_threads')} threads" for i in rows) or "no BLAS found"


def syrk_seconds(rows: int, cols: int, repeats: int = 2) -> float:
    """Best seconds of a float32 SYRK A^T A, A (rows x cols)."""
    from scipy.linalg import blas

    a_t = np.asfortranarray(np.random.default_rng(0).standard_normal((cols, rows), dtype=np.float32))
    return machine.best_seconds(lambda: blas.ssyrk(1.0, a_t), repeats)


def gemm_seconds(size: int, repeats: int = 3) -> float:
    """Best seconds of a float32 (size x size) @ (size x size)."""
    from scipy.linalg import blas

    rng = np.random.default_rng(0)
    a, b = (np.asfortranarray(rng.standard_normal((size, size), dtype=np.float32)) for _ in range(2))
    return machine.best_seconds(lambda: blas.sgemm(1.0, a, b), repeats)


def write_inputs(folder: Path, only: list[str], sizes: dict[str, int] | None = None
                 ) -> dict[str, list[Path]]:
    """The commands' input files (.npz), at the rows' sizes or at ``sizes`` (key -> n)."""
    sizes = {"rff": RFF_N, "exact": EXACT_N, "scendi": SCENDI_N, **(sizes or {})}
    out = {}
    for key in ("rff", "exact"):
        if key in only:
            t_x, x, t_y, y = promptsplit_sets(sizes[key], 0)
            paths = []
            for name, (t, z) in (("test", (t_x, x)), ("ref", (t_y, y))):
                paths.append(folder / f"{key}-{name}.npz")
                np.savez(paths[-1], prompt_embeddings=t, output_embeddings=z)
            out[key] = paths
    if "scendi" in only:
        prompts, outputs = scendi_set(sizes["scendi"], 0)
        out["scendi"] = [folder / "scendi.npz"]
        np.savez(out["scendi"][0], prompt_embeddings=prompts, output_embeddings=outputs)
    return out


def compile_bytecode(only: list[str], env: dict, folder: Path) -> None:
    """Each command once on small inputs (not counted): it writes the bytecode of every module the command
    imports into the run's cache, as an installed package has it. Without this, the first timed run of a
    fresh cache compiles numpy, scipy, typer, pydantic and promptprism: ~0.8 s of CPU more than a run from
    bytecode (measured on the 2-core AMD EPYC machine)."""
    small = folder / "small"
    small.mkdir()
    inputs = write_inputs(small, only, {"rff": 600, "exact": 300, "scendi": 200})
    for key, cmd in commands(inputs, small).items():
        run_command(cmd, small / f"out-{key}", env)


def commands(inputs: dict[str, list[Path]], folder: Path) -> dict[str, list[str]]:
    """The default command of each row (significance on, report off)."""
    cmds = {}
    if "rff" in inputs:
        cmds["rff"] = ["split", *map(str, inputs["rff"]), "--method", "rff", "--features", str(RFF_FEATURES)]
    if "exact" in inputs:
        cmds["exact"] = ["split", *map(str, inputs["exact"]), "--method", "exact", "--permutations",
                         str(EXACT_PERMUTATIONS)]
    if "scendi" in inputs:
        cmds["scendi"] = ["diversity", str(inputs["scendi"][0]), "--kernel", "gaussian",
                          "--shared-frequencies", "--features", "2500"]
    return {k: [*CLI, *v, "--out", str(folder / f"out-{k}"), "--no-report", "--quiet", "--seed", "0"]
            for k, v in cmds.items()}


def startup_seconds(env: dict, folder: Path, repeats: int = 7) -> list[float]:
    """Wall seconds of the CLI up to its first refusal, ``repeats`` times: the interpreter, the imports,
    parsing the options and the one-line error for a missing input (exit 2); the first, uncounted run writes
    the bytecode."""
    cmd = [*CLI, "split", str(folder / "missing-a.npz"), str(folder / "missing-b.npz"), "--out",
           str(folder / "out-startup"), "--quiet"]
    seconds = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
        if proc.returncode != 2:
            raise RuntimeError(f"start-up run: expected exit 2, got {proc.returncode}: {proc.stderr[-400:]}")
        if i:
            seconds.append(time.perf_counter() - t0)
    return seconds


def run_command(cmd: list[str], out: Path, env: dict, pause: float = 0.0) -> tuple[float, dict]:
    """(wall seconds, result.json) of one run, started ``pause`` seconds after the call (untimed)."""
    time.sleep(pause)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    secs = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[3:6])} failed: {proc.stderr.strip()[-800:]}")
    return secs, json.loads((out / "result.json").read_text())


def describe(key: str, runs: list[tuple[float, dict]], floor: float, floor_name: str) -> list[str]:
    """Lines for one command: wall, fit and test as ratios to the floor, the stopping record."""
    wall = statistics.median(s for s, _ in runs)
    result = sorted(runs, key=lambda run: run[0])[len(runs) // 2][1]  # the median run's split
    timings = result.get("timings", {})
    test = float(timings.get("significance_s", 0.0))
    fit = float(timings.get("total_s", wall)) - test
    lines = [f"{key:>6}: wall {wall:7.2f} s = {wall / floor:5.2f}x {floor_name}"
             + (f" (runs: {', '.join(f'{s:.2f}' for s, _ in runs)})" if len(runs) > 1 else "")]
    if test:
        lines.append(f"        fit {fit:7.2f} s = {fit / floor:5.2f}x; test {test:7.2f} s = "
                     f"{test / floor:5.2f}x; test / fit = {test / max(fit, 1e-9):.2f}")
        sig = result.get("significance") or {}
        stop = sig.get("stopping") or {}
        lines.append(f"        test: {sig.get('permutations_drawn', sig.get('permutations'))} permutations "
                     f"drawn of {sig.get('permutations')}; rule: {stop.get('rule', 'fixed').split(':')[0]}; "
                     f"p_largest = {sig.get('p_largest')}; {sig.get('n_significant')} significant")
    else:
        lines.append(f"        fit (in-process total) {fit:7.2f} s = {fit / floor:5.2f}x {floor_name}")
    part = {k: round(float(v), 2) for k, v in timings.items() if k.endswith("_s")}
    lines.append(f"        timings: {part}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=("rff", "exact", "scendi"),
                    default=["rff", "exact", "scendi"])
    ap.add_argument("--repeat", type=int, default=1, help="runs per command (the median is printed)")
    ap.add_argument("--pause", type=float, default=PAUSE_S,
                    help=f"untimed seconds before each timed run (default {PAUSE_S:g}; 0: back to back)")
    ap.add_argument("--paired", action="store_true",
                    help="rff: measure the SYRK floor again just before each timed run and print each run's "
                         "ratio to its own floor (on a shared machine whose speed drifts during the runs)")
    ap.add_argument("--no-warmup", dest="warmup", action="store_false",
                    help="skip the uncounted full-size first run of each command (the bytecode cache is "
                         "then written by a small run of each; the inputs are not paged in beforehand)")
    args = ap.parse_args(argv)
    print(f"# {cpu_model()}; {len(os.sched_getaffinity(0))} CPUs usable; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"# BLAS: {blas_info()}")
    n_rows = 2 * RFF_N
    syrk = syrk_seconds(n_rows, RFF_FEATURES)
    gemm = gemm_seconds(4000)
    rate = machine.syrk_flops(RFF_FEATURES, n_rows) / syrk / 1e9
    gemm_rate = machine.gemm_flops(4000, 4000, 4000) / gemm / 1e9
    print(f"# float32 SYRK {n_rows:,} x {RFF_FEATURES:,}: {syrk:.2f} s ({rate:.0f} GFLOP/s); "
          f"float32 GEMM 4000^3: {gemm:.2f} s ({gemm_rate:.0f} GFLOP/s)")
    exact_floor = machine.syrk_flops(2 * EXACT_N, 768) / (rate * 1e9)
    floors = {"rff": (syrk, "SYRK floor"), "exact": (exact_floor, "Gram SYRK floor"),
              "scendi": (gemm, "GEMM 4000")}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        inputs = write_inputs(folder, args.only)
        env = _installed_like(folder / "pycache")
        if not args.warmup:
            compile_bytecode(args.only, env, folder)
        startup = startup_seconds(env, folder)
        print(f"# start-up (the CLI up to refusing a missing input, exit 2): median "
              f"{statistics.median(startup):.3f} s (min {min(startup):.3f}, max {max(startup):.3f}, "
              f"{len(startup)} runs)", flush=True)
        for key, cmd in commands(inputs, folder).items():
            out = folder / f"out-{key}"
            before = os.getloadavg()[0]
            if args.warmup:
                run_command(cmd, out, env)  # not counted: writes the bytecode cache, pages the inputs in
            runs, paired = [], []
            for _ in range(args.repeat):
                if args.paired and key == "rff":  # (the floor again, just before this run)
                    paired.append(syrk_seconds(n_rows, RFF_FEATURES, repeats=1))
                runs.append(run_command(cmd, out, env, pause=args.pause))
            print("\n".join(describe(key, runs, *floors[key]))
                  + f"\n        load {before:.2f} -> {os.getloadavg()[0]:.2f}", flush=True)
            if paired:
                ratios = [s / f for (s, _), f in zip(runs, paired, strict=True)]
                print(f"        paired: each run against a SYRK floor measured just before it: ratios "
                      f"{', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}x "
                      f"(floors {', '.join(f'{f:.2f}' for f in paired)} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
