"""The sample map's landmark path: k-NN interpolation from landmarks, checked by brute force."""

from types import SimpleNamespace

import numpy as np

from promptprism.methods.promptsplit.landmarks import (
    interpolate,
    knn_weights,
    landmark_indices,
    place_on_landmarks,
    project_on_landmarks,
)
from promptprism.methods.promptsplit.layout import sample_map


def _brute(x, land, k):
    """Each row's k nearest landmarks by a Python loop, Gaussian weights with h^2 = median k-th d^2."""
    rows = []
    for v in x:
        d2 = np.array([float(((v - lv) ** 2).sum()) for lv in land])
        order = sorted(range(len(land)), key=lambda j: (d2[j], j))[:k]
        rows.append((order, d2[order]))
    h2 = float(np.median([d[-1] for _, d in rows]))
    out = []
    for order, d in rows:
        w = np.exp(-d / (2 * h2))
        if d[0] <= 1e-12 * h2:
            w = np.eye(1, k)[0]
        out.append((order, w / w.sum()))
    return out


def test_knn_weights_match_brute_force():
    rng = np.random.default_rng(3)
    land = rng.normal(size=(40, 5))
    x = np.vstack([rng.normal(size=(30, 5)), land[[4, 17]]])
    idx, w = knn_weights(x, land, k=6)
    for i, (order, wb) in enumerate(_brute(x, land, 6)):
        assert list(idx[i]) == order
        np.testing.assert_allclose(w[i], wb, rtol=1e-9, atol=1e-12)
    vals = rng.normal(size=(40, 3))
    got = interpolate(vals, idx, w)
    want = np.array([sum(wj * vals[j] for j, wj in zip(idx[i], w[i], strict=True))
                     for i in range(x.shape[0])])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # a point equal to a landmark lands exactly on it
    np.testing.assert_array_equal(got[-2:], vals[[4, 17]])


def test_landmarks_seeded_and_projection_keeps_landmark_distances():
    a, b = landmark_indices(1000, 50, seed=7), landmark_indices(1000, 50, seed=7)
    np.testing.assert_array_equal(a, b)
    assert len(set(a)) == 50 and not np.array_equal(a, landmark_indices(1000, 50, seed=8))
    np.testing.assert_array_equal(landmark_indices(30, 50, seed=7), np.arange(30))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 6)) @ np.diag([5, 4, 3, 0, 0, 0]) @ rng.normal(size=(6, 80))  # rank 3
    proj = project_on_landmarks(x, a[a < 200] if (a < 200).sum() > 5 else np.arange(20), dims=10)
    d_full = np.linalg.norm(x[0] - x[1])
    assert abs(np.linalg.norm(proj[0] - proj[1]) - d_full) < 1e-8 * d_full


def _fit(n):
    rng = np.random.default_rng(1)

    def make(shift):
        return SimpleNamespace(prompt_embeddings=rng.normal(size=(n, 6)),
                               output_embeddings=rng.normal(size=(n, 6)) + shift * rng.integers(0, 2, (n, 1)))

    result = SimpleNamespace(n_test=n, n_reference=n, seed=5, method="exact", positive_modes=[],
                             negative_modes=[], config={"kernel": "gaussian", "sigma_prompt": 3.0,
                                                        "sigma_output": 3.0, "eta": 1.0, "n_modes": 2})
    return result, {"test": make(3.0), "reference": make(0.0)}


def test_sample_map_landmark_path_deterministic_and_landmarks_placed_by_embedding():
    result, sets = _fit(150)
    calls = []

    def embed(x, seed):
        calls.append(x[:, :2] * 10.0)
        return calls[-1]  # a known projection: the landmarks' first two joint coordinates

    one = sample_map(result, sets, 300, landmarks=40, embed=embed)
    two = sample_map(result, sets, 300, landmarks=40, embed=embed)
    assert [c.shape[0] for c in calls] == [40, 40] and one == two
    assert one["shown"] == 300 and one["landmarks"] == 40 and len(one["x"]) == 300
    xy = np.column_stack([one["x"], one["y"]])
    land = landmark_indices(300, 40, result.seed)
    # the landmarks sit where the projection put them (rounded to 3 decimals in the record) ...
    np.testing.assert_allclose(xy[land], calls[0], atol=6e-4)
    # ... and every other point inside their bounding box (a convex combination of them)
    inside = np.ones(300, bool)
    inside[land] = False
    lo, hi = xy[land].min(axis=0) - 1e-3, xy[land].max(axis=0) + 1e-3
    assert ((xy[inside] >= lo) & (xy[inside] <= hi)).all()


def _lamp_brute(x, land, pos, idx, w):
    """LAMP (Joia et al. 2011) point by point: weighted means, the scaled orthogonal Procrustes map of the
    neighbours by a full SVD, clipped to the neighbours' bounding box."""
    out = []
    for v, nb, wv in zip(x, idx, w, strict=True):
        f, y = land[nb], pos[nb]
        fbar, ybar = wv @ f, wv @ y
        fh = np.sqrt(wv)[:, None] * (f - fbar)
        yh = np.sqrt(wv)[:, None] * (y - ybar)
        u, sv, vt = np.linalg.svd(fh.T @ yh)  # full: (d, d), (2,), (2, 2)
        a = u[:, :2] @ vt
        s = sv.sum() / (fh ** 2).sum() if (fh ** 2).sum() > 0 else 0.0
        out.append(np.clip(ybar + s * (v - fbar) @ a, y.min(axis=0), y.max(axis=0)))
    return np.array(out)


def test_place_on_landmarks_matches_brute_force_and_keeps_a_similarity_map():
    rng = np.random.default_rng(4)
    land = rng.normal(size=(50, 6))
    pos = rng.normal(size=(50, 2)) * 3.0
    x = np.vstack([rng.normal(size=(40, 6)), land[[3, 30]], 50.0 * rng.normal(size=(2, 6))])
    idx, w = knn_weights(x, land, k=7)
    got = place_on_landmarks(x, land, pos, idx, w)
    np.testing.assert_allclose(got, _lamp_brute(x, land, pos, idx, w), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(got[40:42], pos[[3, 30]])  # a landmark lands on itself
    for g, nb in zip(got, idx, strict=True):  # never outside its neighbours' box (the far points too)
        assert (g >= pos[nb].min(axis=0) - 1e-12).all() and (g <= pos[nb].max(axis=0) + 1e-12).all()
    # landmarks laid out by a similarity map of their features (scale 2.5, a rotation): every
    # point inside its neighbours' box is placed by that same map, where the weighted mean is not
    q = np.zeros((6, 2))
    q[:2] = [[np.cos(0.7), -np.sin(0.7)], [np.sin(0.7), np.cos(0.7)]]
    flat = np.column_stack([rng.normal(size=(50, 2)), np.zeros((50, 4))])
    lpos, pts = 2.5 * flat @ q, np.column_stack([rng.normal(size=(30, 2)), np.zeros((30, 4))])
    nb, wt = knn_weights(pts, flat, k=6)
    placed, want = place_on_landmarks(pts, flat, lpos, nb, wt), 2.5 * pts @ q
    inside = np.array([(t >= lpos[n].min(axis=0)).all() and (t <= lpos[n].max(axis=0)).all()
                       for t, n in zip(want, nb, strict=True)])
    assert inside.sum() >= 10
    np.testing.assert_allclose(placed[inside], want[inside], atol=1e-9)
    assert np.abs(interpolate(lpos, nb, wt)[inside] - want[inside]).max() > 1e-3


def test_kernel_pca_projection_is_the_top_two_of_the_centred_gram():
    """embed_kernel_pca against the SPEC-level definition: X X^T equals the best rank-2 approximation of
    H K H (K_ij = exp(-|x_i - x_j|^2 / 2), by a Python loop), and the axes are signed deterministically."""
    from promptprism.methods.promptsplit.layout import embed_2d, embed_kernel_pca

    rng = np.random.default_rng(5)
    x = np.vstack([rng.normal(size=(25, 6)), rng.normal(size=(20, 6)) + 3.0])
    n = len(x)
    k = np.array([[np.exp(-0.5 * float(((a - b) ** 2).sum())) for b in x] for a in x])
    h = np.eye(n) - np.ones((n, n)) / n
    vals, vecs = np.linalg.eigh(h @ k @ h)
    best = (vecs[:, -2:] * vals[-2:]) @ vecs[:, -2:].T
    xy = embed_kernel_pca(x, seed=0)
    assert xy.shape == (n, 2)
    np.testing.assert_allclose(xy @ xy.T, best, atol=1e-10)
    assert np.all(xy[np.abs(xy).argmax(axis=0), [0, 1]] > 0)
    np.testing.assert_array_equal(embed_2d(x, 0), xy)  # the default projection
    # two groups at the kernel's scale (within-group |x - y|^2 about 1, between about 10) separate on the
    # first axis: no point of one group beyond the other's nearest
    xy = embed_kernel_pca(np.vstack([x[:25] / 3.0, x[25:] / 3.0]), seed=0)
    a, b = sorted((xy[:25, 0], xy[25:, 0]), key=np.mean)
    assert a.max() < b.min()
