"""The benchmarks' straightforward baselines compute the same numbers as promptprism (on small data).

A speed-up measured against ``benchmarks/baselines.py`` only means something if the baseline computes the
same quantity; these checks also keep the baselines from rotting as the library changes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from promptprism import PairedSet, PromptSplit, Scendi, pixel_cka_matrix

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
import baselines  # noqa: E402


def _sets(n: int, m: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((4, 5))
    t_x = centres[rng.integers(0, 4, n)] + 0.3 * rng.standard_normal((n, 5))
    t_y = centres[rng.integers(0, 4, m)] + 0.3 * rng.standard_normal((m, 5))
    x = t_x[:, :4] + 0.5 * rng.standard_normal((n, 4))
    y = -t_y[:, :4] + 0.5 * rng.standard_normal((m, 4))  # the reference answers differently
    return t_x, x, t_y, y


def test_exact_block_eig_equals_promptsplit_exact():
    t_x, x, t_y, y = _sets(40, 30)
    est = PromptSplit(method="exact", sigma_prompt=1.5, sigma_output=2.0, eta=0.8, n_modes=5, seed=0,
                      permutations=0)
    res = est.fit(PairedSet(t_x, x), PairedSet(t_y, y))
    base = baselines.exact_block_eig(t_x, x, t_y, y, sigma_prompt=1.5, sigma_output=2.0, eta=0.8)
    lib = np.asarray(res.eigenvalues)
    pos, neg = lib[lib > 0][:5], np.sort(lib[lib < 0])[:5]
    np.testing.assert_allclose(pos, base[:5], atol=1e-8, rtol=0)
    np.testing.assert_allclose(neg, base[::-1][:5], atol=1e-8, rtol=0)
    assert pos[0] > 0.05 and neg[0] < -0.05  # real modes on both sides, not round-off


def test_rff_outer_loop_matches_batched_sum_and_the_exact_spectrum():
    t_x, x, t_y, y = _sets(30, 30, seed=1)
    sig_t, sig_z = 1.5, 2.0
    w = baselines.product_rff_frequencies(5, 4, 400, sigma_prompt=sig_t, sigma_output=sig_z, seed=3)
    lam, done = baselines.rff_outer_loop(t_x, x, t_y, y, frequencies=w, eta=1.0)
    assert done == 60
    psi_x, psi_y = baselines.product_rff(t_x, x, w), baselines.product_rff(t_y, y, w)
    np.testing.assert_allclose(lam, psi_x.T @ psi_x / 30 - psi_y.T @ psi_y / 30, atol=1e-12)
    lam_b, _ = baselines.rff_outer_loop(t_x, x, t_y, y, frequencies=w, eta=1.0, batch=7)
    np.testing.assert_allclose(lam_b, lam, atol=1e-12)
    # a timing probe (samples taken alternately from the two sets) covers every sample exactly once
    a = _sets(12, 7, seed=4)
    full, _ = baselines.rff_outer_loop(*a, frequencies=w)
    probe, done = baselines.rff_outer_loop(*a, frequencies=w, max_samples=10**6)
    assert done == 19
    np.testing.assert_allclose(probe, full, atol=1e-12)
    # the RFF convention is right: psi . psi' estimates the product kernel (error ~ 1/sqrt(D))
    gram = (baselines.gaussian_gram(t_x, t_x, sig_t) * baselines.gaussian_gram(x, x, sig_z))
    assert np.abs(psi_x @ psi_x.T - gram).max() < 0.15
    # and its spectrum is the exact one up to the random-feature error, as promptprism's own rff route is
    exact = baselines.exact_block_eig(t_x, x, t_y, y, sigma_prompt=sig_t, sigma_output=sig_z)
    approx = baselines.rff_spectrum(lam)
    est = PromptSplit(method="rff", n_features=800, sigma_prompt=sig_t, sigma_output=sig_z, n_modes=3, seed=0,
                      permutations=0)
    lib = np.asarray(est.fit(PairedSet(t_x, x), PairedSet(t_y, y)).eigenvalues)
    for top in (approx, lib):
        np.testing.assert_allclose(top[:3], exact[:3], atol=0.03)
        np.testing.assert_allclose(np.sort(top)[:3], exact[::-1][:3], atol=0.03)
    assert exact[0] > 0.1


def test_pixel_cka_nested_loop_equals_library():
    rng = np.random.default_rng(0)
    images = rng.random((40, 6, 6))
    images[:, :3] += 2.0 * rng.random((40, 1, 1))  # the top half shares a brightness: CKA clearly > 0
    loop = baselines.pixel_cka_nested_loop(images, gamma=0.7)
    lib = pixel_cka_matrix(images, gamma=0.7, block_size=None, max_images=None)
    np.testing.assert_allclose(loop, lib, atol=1e-10)
    assert loop[0, 1] > 0.3 and np.allclose(np.diag(loop), 1.0)
    part = baselines.pixel_cka_nested_loop(images, gamma=0.7, pairs=[(0, 35), (4, 4)])
    assert part[0, 35] == loop[0, 35] and np.isnan(part[1, 2])


def test_scendi_dense_equals_library_cosine():
    rng = np.random.default_rng(2)
    prompts = rng.standard_normal((15, 6))[rng.integers(0, 15, 120)]
    outputs = prompts @ rng.standard_normal((6, 7)) + 0.6 * rng.standard_normal((120, 7))
    base = baselines.scendi_dense(prompts, outputs, kernel="cosine")
    res = Scendi(kernel="cosine", seed=0, gamma_estimator="in-sample").fit(PairedSet(prompts, outputs))
    for key in ("scendi", "scendi_prompt", "vendi"):
        np.testing.assert_allclose(getattr(res, key), base[key], rtol=1e-8)
    assert 1.0 < base["scendi"] < base["vendi"]


@pytest.mark.slow
def test_compare_quick_prints_its_table():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(BENCH.parent / "src")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.run([sys.executable, str(BENCH / "compare.py"), "--quick"], capture_output=True,
                          text=True, timeout=600, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    header = [ln for ln in lines if ln.startswith("| task")]
    assert header, proc.stdout
    rows = [ln for ln in lines if ln.startswith("| ") and not ln.startswith("| task")]
    tasks = {ln.split("|")[1].strip().split()[0] for ln in rows}
    assert {"exact", "rff", "pixel-cka", "scendi"} <= tasks, proc.stdout
    for ln in rows:  # every row has a positive promptprism time, CPU time, baseline time and a ratio
        cells = [c.strip() for c in ln.strip("|").split("|")]
        assert float(cells[2]) > 0 and float(cells[3]) >= 0 and float(cells[4].split()[0]) > 0, ln
        assert cells[5].endswith("x") and float(cells[5][:-1]) > 0, ln
    assert "GFLOP/s" in proc.stdout
