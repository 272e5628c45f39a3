"""The interactive report in Chromium: file size and open time per report, and a screenshot of each kind.

    python benchmarks/report_browser.py [--only demo text fashion] [--repeat 3] [--shots docs/screenshots]

Reports measured:
* ``demo``: ``promptprism demo`` (coloured digits, 40 prompts, 8x8 images);
* ``text``: a text-to-text report: ``promptprism split`` on the recorded SmolLM2-135M answers
  (tests/data/smollm2_qa_*.jsonl, 100 questions per set; needs the default text encoder in the local cache);
* ``fashion``: 60,000 Fashion-MNIST images (3,000 per class and model, the ``pixels:28`` encoder), fitted by
  PromptSplit's defaults, with the images (needs Debian's dataset-fashion-mnist);
* ``long``: 100 + 100 samples over 10 prompts, one of them 100 kB long (strings stored once, issue 41);
* ``long100``: 200 + 200 samples over 100 prompts, each 100 kB long (10 MB of distinct text);
* ``noise``: the size worst case, 30,000 + 30,000 synthetic samples with 64x64 RGB noise images and long
  texts (tests/_report_data.py's ``big_run``);
* ``kway4``: a K = 4 ``compare`` page (4 models x 400 samples over 8 prompts, texts).
``fashion`` and ``noise`` draw ``--map-points`` samples on the map (default 20,000); the seconds the map's
layout took when the result was written (t-SNE of the landmarks, the k-NN placement of the rest) are
printed beside them.
Open time: a fresh headless Chromium page per repeat (selenium + chromedriver), ``loadEventEnd`` of the
Navigation Timing entry (navigation start to the end of the load event, so it includes parsing the data
block and running the script's start-up, which runs before load), and the time until the script marks the
page ready; the median of ``--repeat`` loads. ``--shots``: PNG screenshots (1280x900 viewport, quantised to
256 colours) of each report kind, with a view open, into that folder. Prints the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: seconds a page may take to load before it counts as not loading
LOAD_TIMEOUT = 180
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the report tests' small real runs (_report_data.py)


def driver(width: int = 1280, height: int = 900):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--window-size={width},{height}", "--hide-scrollbars"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)


def open_times(path: Path, repeat: int) -> tuple[float, float]:
    """(median ms to loadEventEnd, median ms until the script marked the page ready) over fresh pages."""
    from selenium.common.exceptions import TimeoutException

    loads, ready = [], []
    d = driver()
    d.set_page_load_timeout(LOAD_TIMEOUT)
    try:
        for _ in range(repeat):
            d.get("about:blank")
            try:
                d.get(path.as_uri())
            except TimeoutException:
                print(f"  {path.parent.name}: not loaded within {LOAD_TIMEOUT} s", flush=True)
                return float("inf"), float("inf")
            nav = d.execute_script("return performance.getEntriesByType('navigation')[0].toJSON()")
            mark = d.execute_script("return performance.getEntriesByName('pp-ready')[0]?.startTime ?? null")
            loads.append(nav["loadEventEnd"])
            ready.append(mark if mark is not None else float("nan"))
    finally:
        d.quit()
    return statistics.median(loads), statistics.median(ready)


#: ready-time targets (ms) of issue 41: the demo within 1 s, every other report within 3 s
TARGET_MS = {"demo": 1000}
DEFAULT_TARGET_MS = 3000


def page_samples(path: Path) -> tuple[int, int]:
    """(samples the page's data holds, samples drawn on its map), read from its data block."""
    import json
    import re

    html = path.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="pp-data">(.*?)</script>', html, re.S)
    if m is None:
        return 0, 0
    view = json.loads(m.group(1)).get("view") or {}
    return len(view.get("rows") or []), len((view.get("map") or {}).get("x") or [])


def shot(path: Path, out: Path, fragment: str = "", height: int = 900) -> int:
    """A PNG screenshot of ``path`` with ``fragment``, quantised to 256 colours; returns its bytes."""
    from PIL import Image

    d = driver(height=height)
    try:
        d.get(path.as_uri() + fragment)
        time.sleep(0.3)
        raw = out.with_suffix(".raw.png")
        d.save_screenshot(str(raw))
    finally:
        d.quit()
    with Image.open(raw) as im:
        im.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT).save(out, optimize=True)
    raw.unlink()
    return out.stat().st_size


def demo_report(tmp: Path) -> Path:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    subprocess.run([sys.executable, "-m", "promptprism", "demo", "--out", str(tmp / "demo"), "--quiet"],
                   check=True, env=env)
    return tmp / "demo" / "report.html"


def text_report(tmp: Path) -> Path:
    data = ROOT / "tests" / "data"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    subprocess.run([sys.executable, "-m", "promptprism", "split", str(data / "smollm2_qa_test.jsonl"),
                    str(data / "smollm2_qa_reference.jsonl"), "--out", str(tmp / "text"), "--device", "cpu",
                    "--quiet"], check=True, env=env)
    return tmp / "text" / "report.html"


def fashion_report(tmp: Path, per_class: int = 3000) -> Path:
    from promptprism import PromptSplit
    from promptprism.data.paired import PairedSet
    from promptprism.datasets import fashion_disagreement
    from promptprism.report import write_report

    data = fashion_disagreement(per_class, seed=0)
    names = list(dict.fromkeys(data.prompts))
    import numpy as np

    onehot = np.eye(len(names), dtype=np.float32)[[names.index(p) for p in data.prompts]]
    images = {s: np.asarray(getattr(data, f"{s}_images")) for s in ("test", "reference")}
    sets = {s: PairedSet(onehot, images[s].reshape(len(onehot), -1).astype(np.float32) / 255.0,
                         prompts=list(data.prompts), name=f"fashion {s}") for s in images}
    t0 = time.perf_counter()
    result = PromptSplit(seed=0).fit(sets["test"], sets["reference"])
    print(f"  fashion: fit {time.perf_counter() - t0:.1f} s ({result.method} route)", flush=True)
    result = timed_layout("fashion", result, sets)
    t0 = time.perf_counter()
    path = write_report(result, tmp / "fashion", inputs=sets, images=images, progress=False,
                        map_points=MAP_POINTS)
    print(f"  fashion: report {time.perf_counter() - t0:.1f} s", flush=True)
    return path


#: samples drawn on the map of the fashion and noise reports (--map-points)
MAP_POINTS = 20_000


def timed_layout(name: str, result, sets):
    """``result`` with its map layout of ``MAP_POINTS`` samples, computed as when it is written; prints the
    seconds it took (wall and this process's CPU)."""
    from promptprism.methods.promptsplit.layout import with_layout

    t0, c0 = time.perf_counter(), time.process_time()
    out = with_layout(result, sets, MAP_POINTS)
    layout = out.layout
    print(f"  {name}: map layout {time.perf_counter() - t0:.2f} s wall, {time.process_time() - c0:.2f} s CPU "
          f"({layout.get('shown', 0):,} points, "
          f"{layout.get('landmarks', 0)} landmarks{'; ' + layout['note'] if 'note' in layout else ''})",
          flush=True)
    return out


def noise_report(tmp: Path, n: int = 30_000) -> Path:
    """The worst case for size: n + n samples, 200 prompts, long texts, 64x64 RGB noise images (the report
    tests' synthetic result, ``big_run``)."""
    from _report_data import big_run
    from promptprism.report import write_report

    result, sets, images = big_run(n)
    result = timed_layout("noise", result, sets)
    return write_report(result, tmp / "noise", inputs=sets, images=images, progress=False,
                        map_points=MAP_POINTS)


def kway_report(tmp: Path, k: int = 4, n: int = 400) -> Path:
    """A K-way ``compare`` page: ``k`` models x ``n`` text samples over 8 prompts, one model deviating."""
    import numpy as np

    from promptprism import PairedSet
    from promptprism.methods.promptsplit.kway import KWaySplit
    from promptprism.report import write_report

    rng = np.random.default_rng(0)
    which = np.arange(n) % 8
    sets = []
    for j in range(k):
        z = rng.standard_normal((n, 8)) + np.eye(8)[which] @ rng.standard_normal((8, 8))
        z[which < 2, 0] += 3.0 * (j == 1)
        sets.append(PairedSet(np.eye(8)[which], z, prompts=[f"prompt {w}: a question" for w in which],
                              outputs=[f"answer {i} of model {j}" for i in range(n)], name=f"model {j}"))
    result = KWaySplit(method="exact", permutations=19, n_modes=2).fit(sets)
    return write_report(result, tmp / "kway4", inputs={s.name: s for s in sets}, progress=False)


def long_prompt_sets(n: int = 100, n_prompts: int = 10, long_chars: int = 100_000, seed: int = 0):
    """A 100-row split (``n`` samples per set over ``n_prompts`` prompts) whose first prompt is ``long_chars``
    characters long: the worst case for strings copied into a page (issue 41)."""
    import numpy as np

    from promptprism import PairedSet

    rng = np.random.default_rng(seed)
    words = ("the", "red", "cat", "walks", "over", "a", "long", "bridge", "at", "night")
    long = ("a very long prompt " + " ".join(rng.choice(words, long_chars // 3)))[:long_chars]
    names = [long] + [f"prompt {k}: a short question" for k in range(1, n_prompts)]
    which = np.arange(n) % n_prompts
    onehot = np.eye(n_prompts)[which]
    out = {}
    for k, s in enumerate(("test", "reference")):
        z = rng.standard_normal((n, 8)) + (k + 1) * onehot @ rng.standard_normal((n_prompts, 8))
        outputs = [f"answer {i} of the {s} model to prompt {w}" for i, w in enumerate(which)]
        out[s] = PairedSet(onehot, z, prompts=[names[w] for w in which], outputs=outputs, name=s)
    return out, long


def long_prompt_report(tmp: Path, n_long: int = 1) -> Path:
    """``long_prompt_sets`` fitted by PromptSplit and reported (map included); ``n_long`` > 1: every one of
    ``n_long`` prompts is 100 kB long (2 samples per prompt and set)."""
    from promptprism import PromptSplit
    from promptprism.data.paired import PairedSet
    from promptprism.report import write_report

    if n_long == 1:
        sets, _ = long_prompt_sets()
    else:
        base, _ = long_prompt_sets(n=2 * n_long, n_prompts=n_long)
        sets = {s: PairedSet(x.prompt_embeddings, x.output_embeddings, outputs=x.outputs, name=s,
                             prompts=[p if len(p) >= 100_000 else p + " " + "x" * (99_999 - len(p))
                                      for p in x.prompts]) for s, x in base.items()}
    result = PromptSplit(seed=0).fit(sets["test"], sets["reference"])
    return write_report(result, tmp / f"long{n_long}", inputs=sets, progress=False)


def kind_reports(tmp: Path) -> dict[str, tuple[Path, str]]:
    """One small report of every other kind, with the view each screenshot opens."""
    import numpy as np

    from _report_data import BANK_PROMPTS, compcon_result, regions_run, write_bank
    from promptprism import PairedSet
    from promptprism.methods.compcon.image_sources import ImageBank
    from promptprism.methods.scendi import Scendi, compare
    from promptprism.report import write_report

    out = {}
    rg, rin = regions_run()
    out["regions"] = (write_report(rg, tmp / "regions", inputs=rin, progress=False), "#group=epoch+1")
    a = write_bank(tmp / "bankA", BANK_PROMPTS, (20, 40, 220))
    b = write_bank(tmp / "bankB", BANK_PROMPTS, (120, 120, 120))
    out["compcon"] = (write_report(compcon_result(a, b), tmp / "compcon",
                                   inputs={"A": ImageBank.load(a), "B": ImageBank.load(b)}, progress=False),
                      "#attr=0")
    rng = np.random.default_rng(0)
    which = np.arange(60) % 4
    sets = []
    for k in (1, 2):
        z = rng.standard_normal((60, 6)) + k * np.eye(4)[which] @ rng.standard_normal((4, 6))
        sets.append(PairedSet(np.eye(4)[which], z, prompts=[f"prompt {w}" for w in which],
                              outputs=[f"output {i} of model {k}" for i in range(60)], name=f"model {k}"))
    from promptprism.methods.compcon.evaluation import CompConEvaluation

    split = {"attribute_top1": 0.5, "attribute_top5": 1.0, "description_top1": 0.0, "description_top5": 0.5}
    ev = CompConEvaluation(
        summary={"n_splits": 2, **split},
        per_split=[{"split": 0, "truth_attribute": "blue tint", "truth_concepts": ["sea"],
                    "attribute_ratings": [2, 3], "description_ratings": [1, 2], **split},
                   {"split": 1, "truth_attribute": "fog", "truth_concepts": ["city"],
                    "attribute_ratings": [1], "description_ratings": [3], **split}],
        judge={"model": "a judge model"}, config={"k": 5}, failures=[],
    )
    out["compcon-eval"] = (write_report(ev, tmp / "compcon-eval", progress=False), "#q=fog")
    est = Scendi(n_clusters=3, top_k=4, seed=0)
    out["diversity"] = (write_report(est.fit(sets[0], name="model 1"), tmp / "diversity", progress=False),
                        "#cluster=0")
    both = compare(sets, est, names=["model 1", "model 2"])
    out["diversity-multi"] = (write_report(both, tmp / "diversity-multi", progress=False),
                              "#group=model+2&cluster=6")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", default=["demo", "text", "fashion"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shots", default=None, help="folder for the screenshots (e.g. docs/screenshots)")
    ap.add_argument("--keep", default=None, help="keep the reports in this folder")
    ap.add_argument("--map-points", type=int, default=MAP_POINTS, help="samples on the fashion/noise maps")
    args = ap.parse_args()
    globals()["MAP_POINTS"] = args.map_points
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}; chromium via selenium", flush=True)
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="pp-report-browser-"))
    tmp.mkdir(parents=True, exist_ok=True)
    makers = {"demo": (demo_report, "#mode=%2B1"), "text": (text_report, "#prompt=0"),
              "fashion": (fashion_report, "#prompt=0"), "noise": (noise_report, "#prompt=0"),
              "long": (long_prompt_report, "#prompt=0"), "kway4": (kway_report, "#prompt=0"),
              "long100": (lambda tmp: long_prompt_report(tmp, 100), "#prompt=0")}
    print("| report | file size | samples in the page (on the map) | MB per 1,000 samples "
          "| open (loadEventEnd) | views ready | target |\n|---|---|---|---|---|---|---|")
    paths = {}
    for name in args.only:
        fn, fragment = makers[name]
        path = fn(tmp)
        paths[name] = (path, fragment)
        load, ready = open_times(path, args.repeat)
        size, (n, drawn) = path.stat().st_size / 1e6, page_samples(path)
        target = TARGET_MS.get(name, DEFAULT_TARGET_MS)
        per = f"{1000 * size / n:.3f}" if n else "–"
        print(f"| {name} | {size:.2f} MB | {n:,} ({drawn:,}) | {per} | {load:.0f} ms | {ready:.0f} ms "
              f"| < {target} ms: {'met' if ready < target else 'NOT met'} |", flush=True)
    if args.shots:
        shots = Path(args.shots)
        shots.mkdir(parents=True, exist_ok=True)
        paths.update(kind_reports(tmp))
        for name, (path, fragment) in paths.items():
            size = shot(path, shots / f"report-{name}.png", fragment)
            print(f"screenshot {name}: {size / 1e3:.0f} kB", flush=True)
    print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
