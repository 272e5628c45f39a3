"""Reports in a real browser: headless Chromium opens each report kind from a file:// URL with the network
off, every image must decode, and the screenshot must show a rendered page (not blank, not broken).

Skipped when no Chromium is installed (CI installs Debian's ``chromium`` first, see .ci/run).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from _report_data import (
    BANK_PROMPTS,
    big_report,
    compcon_result,
    digits_run,
    regions_run,
    scan_record,
    significance_result,
    write_bank,
)
from promptprism.report import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.slow]  # run by `make test` / CI, not by -m 'not slow'
pytestmark.append(pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium is not installed (Debian: apt-get "
    "install chromium); browser checks of the reports skipped",
))

#: counts, after load, the <img> elements that decoded (naturalWidth > 0) and those that did not
PROBE = (
    "<script>window.addEventListener('load',function(){var a=document.images,ok=0,bad=0;"
    "for(var i=0;i<a.length;i++){if(a[i].complete&&a[i].naturalWidth>0){ok++}else{bad++}}"
    "document.title='pp-images '+ok+' '+bad;});</script>"
)


def chromium(*args: str, profile: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def images_decoded(report: Path, tmp: Path) -> tuple[int, int]:
    """(decoded, not decoded) <img> counts of ``report`` in the browser (a probe script in a copy)."""
    probe = tmp / f"probe-{report.parent.name}.html"
    probe.write_text(report.read_text().replace("</body>", PROBE + "</body>"))
    run = chromium("--dump-dom", probe.as_uri(), profile=tmp / "profile-dom")
    m = re.search(r"<title>pp-images (\d+) (\d+)</title>", run.stdout)
    assert m, f"no probe result; chromium said: {run.stderr[-500:]}"
    return int(m.group(1)), int(m.group(2))


def screenshot(report: Path, tmp: Path, height: int = 2000) -> tuple[Image.Image, float]:
    png = tmp / f"shot-{report.parent.name}.png"
    t0 = time.perf_counter()
    run = chromium(
        f"--screenshot={png}", f"--window-size=1280,{height}", report.as_uri(), profile=tmp / "profile-shot"
    )
    elapsed = time.perf_counter() - t0
    assert png.exists(), f"no screenshot; chromium said: {run.stderr[-500:]}"
    return Image.open(png).convert("RGB"), elapsed


def assert_rendered(shot: Image.Image) -> None:
    """Not blank: many colours, a good part of the page drawn on, the dark header styled by the inline CSS."""
    a = np.asarray(shot)
    assert shot.size == (1280, 2000)
    colours = len(np.unique(a.reshape(-1, 3)[::7], axis=0))
    assert colours > 200, f"{colours} colours: a blank or unstyled page?"
    ink = np.mean(a.mean(axis=2) < 200)  # text, figures, thumbnails (the page and cards are near white)
    assert ink > 0.04, f"only {ink:.1%} of the screenshot is drawn on"
    assert np.abs(a[20, 20].astype(int) - [29, 36, 48]).max() < 12, "the header is not styled"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    root = tmp_path_factory.mktemp("reports")
    out = {}
    ps, inputs, images = digits_run()
    out["promptsplit"] = write_report(ps, root / "promptsplit", inputs=inputs, images=images, map_points=500)
    tested = significance_result([0.002, 0.3, 0.6, 0.01, 0.4, 0.9], scan=scan_record())
    out["significance"] = write_report(tested, root / "significance", inputs=inputs, images=images)
    rg, rin = regions_run()
    out["regions"] = write_report(rg, root / "regions", inputs=rin)
    from promptprism.methods.compcon.image_sources import ImageBank

    a = write_bank(root / "bankA", BANK_PROMPTS, (20, 40, 220))
    b = write_bank(root / "bankB", BANK_PROMPTS, (120, 120, 120))
    out["compcon"] = write_report(
        compcon_result(a, b), root / "compcon", inputs={"A": ImageBank.load(a), "B": ImageBank.load(b)}
    )
    from promptprism import PairedSet
    from promptprism.methods.scendi import Scendi

    rng = np.random.default_rng(0)
    which = np.arange(40) % 4
    s = PairedSet(
        np.eye(4)[which],
        rng.standard_normal((40, 6)) + np.eye(4)[which] @ rng.standard_normal((4, 6)),
        prompts=[f"prompt {w}" for w in which],
        outputs=[f"output {i}" for i in range(40)],
        name="m",
    )
    out["scendi"] = write_report(Scendi(n_clusters=2, top_k=4).fit(s, name="m"), root / "scendi")
    return out


@pytest.mark.parametrize("kind", ["promptsplit", "significance", "regions", "compcon", "scendi"])
def test_report_renders_in_chromium(reports, kind, tmp_path):
    report = reports[kind]
    ok, bad = images_decoded(report, tmp_path)
    assert bad == 0 and ok == report.read_text().count("<img ")
    assert ok >= {"promptsplit": 30, "significance": 31, "regions": 20, "compcon": 9, "scendi": 1}[kind]
    shot, _ = screenshot(report, tmp_path)
    assert_rendered(shot)


def test_report_of_a_100k_result_opens_in_seconds(tmp_path):
    report, _ = big_report()
    assert report.stat().st_size < 20 * 1024**2
    shot, elapsed = screenshot(report, tmp_path)
    assert_rendered(shot)
    ok, bad = images_decoded(report, tmp_path)
    assert bad == 0 and ok > 300
    # headless Chromium starts, lays out and paints the page: a few seconds, well under the limit here
    assert elapsed < 20, f"{elapsed:.1f} s to open and screenshot the 100k report"


def test_the_probe_sees_a_broken_image(tmp_path):
    """The decoded-image check can fail: a corrupted data URI is counted as not decoded."""
    page = tmp_path / "broken" / "report.html"
    page.parent.mkdir()
    good = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    page.write_text(
        f'<!DOCTYPE html><html><body><img src="data:image/png;base64,{good}">'
        f'<img src="data:image/png;base64,{good[:40]}"></body></html>'
    )
    assert images_decoded(page, tmp_path) == (1, 1)
