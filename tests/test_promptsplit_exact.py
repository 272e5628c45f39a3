"""PromptSplit, exact route, against brute force from SPEC: explicit np.kron features and eq. 3."""

from __future__ import annotations

import numpy as np
import pytest

from brute import (
    cosine_psi,
    desc_eigh,
    eq3_eigenvalues,
    joint_gram_loops,
    lambda_matrix,
    nonzero,
    padded_sorted,
    small_sets,
)
from promptprism import PairedSet, PromptSplit
from promptprism.errors import InputError, OptionError


def _sets(seed=0, **kw):
    (tt, zt, pt), (tr, zr, pr) = small_sets(seed, **kw)
    return PairedSet(tt, zt, prompts=pt, name="test"), PairedSet(tr, zr, prompts=pr, name="ref")


def _brute(test, ref, eta):
    pt = cosine_psi(test.prompt_embeddings, test.output_embeddings)
    pr = cosine_psi(ref.prompt_embeddings, ref.output_embeddings)
    lam = lambda_matrix(pt, pr, eta)
    vals, vecs = desc_eigh(lam)
    return pt, pr, lam, vals, vecs


CASES = [(0, 1.0, {}), (1, 0.5, {}), (2, 2.0, {"n": 20, "m": 35}), (3, 1.3, {"n": 40, "m": 12})]


@pytest.mark.parametrize(("seed", "eta", "sizes"), CASES)
def test_cosine_exact_equals_explicit_lambda(seed, eta, sizes, device):
    test, ref = _sets(seed, **sizes)
    _, _, lam, vals, _ = _brute(test, ref, eta)
    res = PromptSplit(
        device=device, kernel="cosine", method="exact", eta=eta, solver="dense", n_modes=12).fit(test, ref)
    assert res.method == "exact"
    got = np.array(res.eigenvalues)
    assert np.all(np.diff(got) <= 0)
    expected = nonzero(vals)
    assert got.size == expected.size == 12
    np.testing.assert_allclose(got, expected, rtol=1e-8)
    # eq. 3's non-symmetric (n+m) x (n+m) matrix: the same non-zero eigenvalues, the rest zero
    gram = joint_gram_loops(np.vstack([test.prompt_embeddings, ref.prompt_embeddings]),
                            np.vstack([test.output_embeddings, ref.output_embeddings]), "cosine")
    a, b = padded_sorted(got, eq3_eigenvalues(gram, len(test), eta))
    np.testing.assert_allclose(a, b, atol=1e-12)
    assert res.distance == pytest.approx(np.sum(lam * lam), rel=1e-10)
    assert res.distance == pytest.approx(np.sum(vals**2), rel=1e-10)
    # the modes are the eigenvalues, positive ones then negative ones
    pos = [mo.eigenvalue for mo in res.positive_modes]
    neg = [mo.eigenvalue for mo in res.negative_modes]
    np.testing.assert_allclose(pos, expected[expected > 0], rtol=1e-8)
    np.testing.assert_allclose(neg, expected[expected < 0][::-1], rtol=1e-8)
    assert [mo.rank for mo in res.positive_modes] == list(range(1, len(pos) + 1))


@pytest.mark.parametrize(("seed", "eta", "sizes"), CASES[:3])
def test_mode_scores_are_psi_dot_unit_eigenvector(seed, eta, sizes, device):
    test, ref = _sets(seed, **sizes)
    pt, pr, _, vals, vecs = _brute(test, ref, eta)
    top_k = 6
    res = PromptSplit(
        device=device, kernel="cosine", method="exact", eta=eta, solver="dense", n_modes=12,
                      top_k=top_k).fit(test, ref)
    psi = {"test": pt, "reference": pr}
    for mode in res.modes:
        j = int(np.argmin(np.abs(vals - mode.eigenvalue)))
        v = vecs[:, j]
        fav = psi[mode.side] @ v
        # orientation: the strongest sample of the favoured side scores positive
        strongest = int(np.lexsort((np.arange(fav.size), -np.abs(fav)))[0])
        sign = np.sign(fav[strongest])
        for samples, side in ((mode.top_samples, mode.side),
                              (mode.top_samples_other, "reference" if mode.side == "test" else "test")):
            scores = sign * (psi[side] @ v)
            order = np.lexsort((np.arange(scores.size), -np.abs(scores)))[:top_k]
            assert [s.set for s in samples] == [side] * top_k
            assert [s.index for s in samples] == order.tolist()
            np.testing.assert_allclose([s.score for s in samples], scores[order], atol=1e-9)
        assert mode.top_samples[0].score > 0
        idx = mode.top_samples[0].index
        assert mode.top_samples[0].prompt == (test if mode.side == "test" else ref).prompts[idx]


@pytest.mark.parametrize("eta", [1.0, 0.4])
def test_prompt_contributions_add_up_to_eigenvalue(eta, device):
    test, ref = _sets(4, n_prompts=6)
    pt, pr, _, vals, vecs = _brute(test, ref, eta)
    n, m = len(test), len(ref)
    res = PromptSplit(
        device=device, kernel="cosine", method="exact", eta=eta, solver="dense", n_modes=12,
                      top_prompts=6, permutations=0).fit(test, ref)
    names = sorted(set(test.prompts) | set(ref.prompts))
    assert len(names) == 6
    for mode in res.modes:
        assert sorted(p.prompt for p in mode.top_prompts) == names
        assert sum(p.contribution for p in mode.top_prompts) == pytest.approx(mode.eigenvalue, rel=1e-9)
        # each prompt's contribution from the definition: (1/n) sum s_i^2 - (eta/m) sum s_j^2
        v = vecs[:, int(np.argmin(np.abs(vals - mode.eigenvalue)))]
        st, sr = pt @ v, pr @ v
        for p in mode.top_prompts:
            it = np.array(test.prompts) == p.prompt
            ir = np.array(ref.prompts) == p.prompt
            assert p.contribution == pytest.approx(np.sum(st[it] ** 2) / n - eta * np.sum(sr[ir] ** 2) / m,
                                                   rel=1e-8, abs=1e-12)
            assert (p.n_test, p.n_reference) == (int(it.sum()), int(ir.sum()))
        keys = [p.contribution * (1 if mode.side == "test" else -1) for p in mode.top_prompts]
        assert keys == sorted(keys, reverse=True)
    # the prompt ranking: d_p = sum_j lambda_j c_pj over all modes adds up to ||Lambda||_F^2
    assert len(res.prompt_ranking) == 6
    assert sum(r["disagreement"] for r in res.prompt_ranking) == pytest.approx(res.distance, rel=1e-9)
    assert sum(r["share"] for r in res.prompt_ranking) == pytest.approx(1.0, rel=1e-9)
    d = [r["disagreement"] for r in res.prompt_ranking]
    assert d == sorted(d, reverse=True)


def test_mean_score_ranking(device):
    test, ref = _sets(5, n_prompts=4)
    pt, pr, _, vals, vecs = _brute(test, ref, 1.0)
    res = PromptSplit(
        device=device, kernel="cosine", method="exact", solver="dense", n_modes=2, top_prompts=4,
                      rank_prompts_by="mean_score").fit(test, ref)
    for mode in res.modes:
        v = vecs[:, int(np.argmin(np.abs(vals - mode.eigenvalue)))]
        fav_psi, fav = (pt, test) if mode.side == "test" else (pr, ref)
        s = fav_psi @ v
        s = s * np.sign(s[np.argmax(np.abs(s))])
        means = {p.prompt: p.mean_score for p in mode.top_prompts}
        for name, value in means.items():
            rows = np.array(fav.prompts) == name
            assert value == pytest.approx(np.mean(s[rows]), rel=1e-8, abs=1e-12)
        ordered = [p.mean_score for p in mode.top_prompts]
        assert ordered == sorted(ordered, reverse=True)


@pytest.mark.parametrize(("eta", "sizes"), [(1.0, {"n": 14, "m": 11}), (0.7, {"n": 9, "m": 16})])
def test_gaussian_exact_equals_eq3_by_loops(eta, sizes, device):
    test, ref = _sets(6, **sizes)
    st, sz = 1.1, 2.3
    res = PromptSplit(
        device=device, kernel="gaussian", method="exact", eta=eta, sigma_prompt=st, sigma_output=sz,
                      solver="dense").fit(test, ref)
    gram = joint_gram_loops(np.vstack([test.prompt_embeddings, ref.prompt_embeddings]),
                            np.vstack([test.output_embeddings, ref.output_embeddings]), "gaussian", st, sz)
    expected = eq3_eigenvalues(gram, len(test), eta)
    a, b = padded_sorted(res.eigenvalues, expected)
    np.testing.assert_allclose(a, b, atol=1e-12)
    np.testing.assert_allclose(res.eigenvalues[:3], expected[:3], rtol=1e-9)
    n = len(test)
    d = np.r_[np.full(n, 1.0 / n), np.full(len(ref), -eta / len(ref))]
    dg = d[:, None] * gram
    assert res.distance == pytest.approx(np.trace(dg @ dg), rel=1e-10)
    assert res.config["sigma_prompt"] == st and res.config["sigma_output"] == sz


def test_gaussian_median_bandwidth_is_recorded():
    test, ref = _sets(7)
    res = PromptSplit(kernel="gaussian", method="exact", sigma_prompt="0.5*median").fit(test, ref)
    pool = np.vstack([test.prompt_embeddings, ref.prompt_embeddings])
    d = np.array([np.linalg.norm(a - b) for i, a in enumerate(pool) for b in pool[i + 1:]])
    assert res.config["sigma_prompt"] == pytest.approx(0.5 * np.median(d[d > 0]), rel=1e-10)
    assert res.config["sigma_prompt_rule"] == "0.5*median"


@pytest.mark.slow
def test_lanczos_and_auto_agree_with_dense(device):
    test, ref = _sets(8, n=45, m=40, d_t=4, d_z=5)
    dense = PromptSplit(
        device=device, kernel="cosine", method="exact", solver="dense", n_modes=3).fit(test, ref)
    for solver in ("lanczos", "auto"):
        res = PromptSplit(
        device=device, kernel="cosine", method="exact", solver=solver, n_modes=3).fit(test, ref)
        assert len(res.modes) == 6
        np.testing.assert_allclose([mo.eigenvalue for mo in res.modes],
                                   [mo.eigenvalue for mo in dense.modes], rtol=1e-9)
        for a, b in zip(res.modes, dense.modes, strict=True):
            assert [s.index for s in a.top_samples] == [s.index for s in b.top_samples]
            np.testing.assert_allclose([s.score for s in a.top_samples], [s.score for s in b.top_samples],
                                       atol=1e-8)
        assert res.distance == pytest.approx(dense.distance, rel=1e-12)


def test_identical_sets_give_zero_spectrum(device):
    test, _ = _sets(9)
    res = PromptSplit(
        device=device, kernel="cosine", method="exact", solver="dense").fit(test, test)
    assert max(abs(v) for v in res.eigenvalues) < 1e-12
    assert res.distance < 1e-20
    assert res.modes == []


def test_tuples_and_errors():
    (tt, zt, _), (tr, zr, _) = small_sets(10)
    res = PromptSplit(kernel="cosine", method="exact").fit((tt, zt), (tr, zr))
    assert res.n_test == len(tt) and res.n_reference == len(tr)
    with pytest.raises(InputError, match="dimensions"):
        PromptSplit(kernel="cosine").fit((tt, zt), (tr, zr[:, :3]))
    bad = zt.copy()
    bad[3] = 0.0
    with pytest.raises(InputError, match="row 3"):
        PromptSplit(kernel="cosine").fit((tt, bad), (tr, zr))
    with pytest.raises(OptionError):
        PromptSplit(kernel="cosine", eta=0)
    with pytest.raises(OptionError):
        PromptSplit(kernel="cosine", method="rff")
    with pytest.raises(OptionError):
        PromptSplit(kernel="gaussian", method="sketch")
    with pytest.raises(OptionError):
        PromptSplit(solver="qr")
    with pytest.raises(OptionError):
        PromptSplit(seed=-1)
