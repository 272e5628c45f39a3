"""PromptSplit end to end on a GPU, beside the device's own matrix-product rate.

    python benchmarks/gpu.py                    # on a CUDA machine: floors, then exact 10k, rff 30k and 100k
    python benchmarks/gpu.py --device torch --quick   # the same code path on the CPU, small sizes (smoke)
    python benchmarks/gpu.py --json out.json    # also write every figure as JSON

It prints, in one run on the machine it runs on:

1. the device and the host CPU, and the device's float32 / float64 GEMM and SYRK rates (TF32 off, so float32
   is real float32), measured with synchronised timers after a warm-up;
2. for each default command (the permutation test on, the default aggregated test over the kernel family),
   the whole fit, the fit without the test and the test alone, each as a ratio to the floor of its own
   largest matrix product (the covariance SYRK of the features on the random-feature route, the joint Gram
   matrix's GEMM on the exact route);
3. how many device-to-host copies each run made (torch's profiler; a copy per Lanczos step would show here).

Data: the same 384-d prompt / output mixture as ``benchmarks/promptsplit.py`` (three prompt clusters answered
differently by the reference), so the modes are real and the test rejects.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from busy_machine import cpu_model  # noqa: E402
from promptsplit import make_sets  # noqa: E402  (the benchmark data, shared)

from promptprism import PromptSplit  # noqa: E402


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _best_seconds(fn, device: str, repeats: int = 5) -> float:
    fn()
    _sync(device)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return best


def device_rates(device: str, quick: bool) -> dict[str, float]:
    """GFLOP/s of float32 / float64 GEMM (square) and SYRK-shaped X^T X (tall X) on ``device``."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator(device="cpu").manual_seed(0)
    size = 1024 if quick else 8192
    rows, cols = (6000, 300) if quick else (60_000, 3000)
    rates = {}
    for name, dtype in (("float32", torch.float32), ("float64", torch.float64)):
        a = torch.randn(size, size, generator=g).to(device=device, dtype=dtype)
        b = torch.randn(size, size, generator=g).to(device=device, dtype=dtype)
        s = _best_seconds(lambda a=a, b=b: a @ b, device)
        rates[f"gemm_{name}"] = 2 * size**3 / s / 1e9
        x = torch.randn(rows, cols, generator=g).to(device=device, dtype=dtype)
        s = _best_seconds(lambda x=x: x.T @ x, device)
        rates[f"syrk_{name}"] = 2 * rows * cols**2 / s / 1e9
    return rates


def count_host_copies(fn) -> tuple[int, object]:
    """Run ``fn`` under torch's profiler; (device-to-host copies, fn's return value)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    import torch

    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        out = fn()
    copies = sum(e.count for e in prof.key_averages() if "DtoH" in e.key or "Memcpy DtoH" in e.key)
    return copies, out


def run_case(label: str, n: int, method: str, device: str, rates: dict[str, float], *, profile_copies: bool,
             **options) -> dict:
    test, ref = make_sets(n, seed=0)
    est = PromptSplit(method=method, device=device, seed=0, **options)
    t0 = time.perf_counter()
    if profile_copies:
        copies, res = count_host_copies(lambda: est.fit(test, ref))
    else:
        copies, res = None, est.fit(test, ref)
    _sync(device)
    wall = time.perf_counter() - t0
    t = res.timings
    sig = t.get("significance_s", 0.0)
    if method == "exact":  # the joint Gram matrix: (2n)^2 x d products, twice (prompt and output kernels)
        flops = 2 * (2 * n) ** 2 * 384 * 2
        floor = flops / (rates["gemm_float32"] * 1e9)
    else:  # the covariance pass: a SYRK of 2n x r features in float32
        r = options.get("n_features", 2000)
        flops = 2 * (2 * n) * r * r
        floor = flops / (rates["syrk_float32"] * 1e9)
    sigdict = res.significance or {}
    row = {
        "case": label, "n": n, "method": method, "device": res.config.get("device"),
        "wall_s": wall, "total_s": t.get("total_s"), "fit_s": t.get("total_s", wall) - sig, "test_s": sig,
        "floor_s": floor, "total_over_floor": t.get("total_s", wall) / floor, "host_copies": copies,
        "permutations": sigdict.get("permutations"), "drawn": sigdict.get("permutations_drawn"),
        "statistic": sigdict.get("statistic"), "verdict": sigdict.get("verdict"),
        "n_significant": sigdict.get("n_significant"), "timings": t,
        "test_cost_s": (sigdict.get("aggregation") or {}).get("cost_s"),
    }
    print(f"  {label}: wall {wall:.2f} s, fit {row['fit_s']:.2f} s, test {sig:.2f} s, "
          f"floor {floor * 1e3:.1f} ms, host copies {copies}; timings {json.dumps(t, default=float)}; "
          f"the test by kernel (s) {json.dumps(row['test_cost_s'])}",
          flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or torch (the CPU smoke run)")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--no-profile", action="store_true", help="skip counting host copies")
    ap.add_argument("--only", default="", help="comma-separated case labels to run")
    ap.add_argument("--json", default="", help="write every figure to this JSON file")
    args = ap.parse_args()
    import torch

    device = "cpu" if args.device == "torch" else args.device
    name = torch.cuda.get_device_name(0) if device.startswith("cuda") else "CPU (torch)"
    print(f"# device: {name}; host CPU: {cpu_model()} ({os.cpu_count()} CPUs); torch {torch.__version__}; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    rates = device_rates(device, args.quick)
    print("# device rates (GFLOP/s, TF32 off): " + ", ".join(f"{k} {v:,.0f}" for k, v in rates.items()),
          flush=True)
    if args.quick:
        cases = [("warm-up rff 2k", 200, "rff", {"n_features": 100}), ("exact 10k", 300, "exact", {}),
                 ("rff 30k r3000", 400, "rff", {"n_features": 200}),
                 ("rff 100k r3000", 600, "rff", {"n_features": 200})]
    else:
        cases = [("warm-up rff 2k", 2000, "rff", {"n_features": 500}), ("exact 10k", 10_000, "exact", {}),
                 ("rff 30k r3000", 30_000, "rff", {"n_features": 3000}),
                 ("rff 100k r3000", 100_000, "rff", {"n_features": 3000})]
    only = {c.strip() for c in args.only.split(",") if c.strip()}
    rows = []
    for label, n, method, options in cases:
        if only and label not in only and not label.startswith("warm-up"):
            continue
        try:
            rows.append(run_case(label, n, method, args.device, rates,
                                 profile_copies=not args.no_profile and not label.startswith("warm-up"),
                                 **options))
        except Exception as exc:  # a benchmark prints what failed and goes on
            print(f"  {label}: FAILED {type(exc).__name__}: {exc}", flush=True)
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    print("\n| case | device | fit (s) | test (s) | total (s) | floor (ms) | total / floor | test / fit "
          "| host copies | permutations drawn / K | significant |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["case"].startswith("warm-up"):
            continue
        print(f"| {r['case']} | {r['device']} | {r['fit_s']:.2f} | {r['test_s']:.2f} | {r['total_s']:.2f} "
              f"| {r['floor_s'] * 1e3:.1f} | {r['total_over_floor']:.0f}x | {r['test_s'] / r['fit_s']:.2f} "
              f"| {r['host_copies']} | {r['drawn']} / {r['permutations']} | {r['n_significant']} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": name, "cpu": cpu_model(), "rates": rates,
                                               "rows": rows}, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
