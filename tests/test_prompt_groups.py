"""prompt_groups: labels shared across sets, numbered by first occurrence, equal prompts (strings, or
identical embedding rows) in one group; checked against a brute-force grouping."""

import numpy as np
import pytest

from promptprism.data.paired import PairedSet, _first_and_inverse, prompt_groups


def _brute_force(rows: list[tuple]) -> list[int]:
    first: dict[tuple, int] = {}
    return [first.setdefault(r, len(first)) for r in rows]


def test_first_and_inverse_equals_numpy_unique_rows():
    rng = np.random.default_rng(1)
    for n in (0, 1, 2, 7, 500):
        for _ in range(20):
            keys = rng.integers(0, 3, size=(n, 2)).astype(np.uint64)
            first, inverse = _first_and_inverse(keys)
            _, want_first, want_inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
            assert np.array_equal(first, want_first) and np.array_equal(inverse, want_inverse.reshape(-1))


def test_groups_by_identical_embedding_rows_across_sets():
    rng = np.random.default_rng(2)
    pool = rng.standard_normal((6, 5)).astype(np.float32)
    a_idx, b_idx = rng.integers(0, 6, 40), rng.integers(0, 6, 30)
    a = PairedSet(pool[a_idx], rng.standard_normal((40, 3)), name="a")
    b = PairedSet(pool[b_idx].astype(np.float64), rng.standard_normal((30, 3)), name="b")  # same values
    labels, names = prompt_groups(a, b)
    want = _brute_force([tuple(pool[i]) for i in np.r_[a_idx, b_idx]])
    assert np.r_[labels[0], labels[1]].tolist() == want
    assert names == [f"prompt #{g}" for g in range(max(want) + 1)]


def test_groups_by_prompt_string_and_names_them():
    rng = np.random.default_rng(3)
    words = ["a cat", "a dog", "a red car", "two birds"]
    pa, pb = [words[i] for i in rng.integers(0, 4, 25)], [words[i] for i in rng.integers(0, 4, 15)]
    a = PairedSet(rng.standard_normal((25, 4)), rng.standard_normal((25, 3)), prompts=pa, name="a")
    b = PairedSet(rng.standard_normal((15, 4)), rng.standard_normal((15, 3)), prompts=pb, name="b")
    labels, names = prompt_groups(a, b)
    want = _brute_force([(p,) for p in pa + pb])
    assert np.r_[labels[0], labels[1]].tolist() == want
    order = list(dict.fromkeys(pa + pb))
    assert names == order


@pytest.mark.parametrize("with_strings", [True, False])
def test_labels_numbered_by_content_ignore_the_row_and_set_order(with_strings):
    """numbered='content': a prompt's label depends on its string (or embedding) only, so the same pairs in
    another row order, or the sets in another order, give every row the same label."""
    rng = np.random.default_rng(4)
    pool = rng.standard_normal((7, 5))
    words = [f"prompt {w}" for w in "gdafceb"]
    idx_a, idx_b = rng.integers(0, 7, 30), rng.integers(0, 7, 20)

    def make(idx, name):
        return PairedSet(pool[idx], rng.standard_normal((idx.size, 3)), name=name,
                         prompts=[words[i] for i in idx] if with_strings else None)

    a, b = make(idx_a, "a"), make(idx_b, "b")
    perm = rng.permutation(30)
    a_shuffled = PairedSet(a.prompt_embeddings[perm], a.output_embeddings[perm], name="a",
                           prompts=None if a.prompts is None else [a.prompts[i] for i in perm])
    (la, lb), _ = prompt_groups(a, b, numbered="content")
    (lb2, la2), _ = prompt_groups(b, a_shuffled, numbered="content")
    assert la2.tolist() == la[perm].tolist() and lb2.tolist() == lb.tolist()
    if with_strings:  # in the strings' order
        assert {words[i]: g for i, g in zip(idx_a, la, strict=True)} == {
            w: sorted(set(words[i] for i in np.r_[idx_a, idx_b])).index(w) for w in (words[i] for i in idx_a)}


def test_a_set_without_strings_joins_the_strings_of_identical_embeddings_and_is_noted():
    """Strings in one set only: that set groups by its strings; a string-less row joins the string of a row
    with its identical prompt embedding, else stands alone (it was one group per row for both sets, the
    same string listed once per row)."""
    from promptprism.data.paired import missing_strings_note

    rng = np.random.default_rng(3)
    pool = rng.standard_normal((3, 4))
    a_idx = np.repeat([0, 1, 2], 4)
    noisy = pool[a_idx] + 0.01 * rng.standard_normal((12, 4))  # rows of one string, embeddings apart
    a = PairedSet(noisy, rng.standard_normal((12, 2)), prompts=[f"p{i}" for i in a_idx], name="a")
    b_rows = np.concatenate([noisy[[0, 4]], rng.standard_normal((2, 4))])  # two match a's rows exactly
    b = PairedSet(b_rows, rng.standard_normal((4, 2)), name="b")
    for numbered in ("first", "content"):
        (la, lb), names = prompt_groups(a, b, numbered=numbered)
        got = [names[g] for g in la]
        assert got == [f"p{i}" for i in a_idx]
        assert [names[g] for g in lb[:2]] == ["p0", "p1"]
        assert lb[2] != lb[3] and names[lb[2]].startswith("prompt #") and len(names) == 5
    assert "b has no prompt strings" in missing_strings_note([a, b], ["a", "b"])
    assert missing_strings_note([a, a], ["a", "a2"]) is None
