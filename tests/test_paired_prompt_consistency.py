"""Prompt strings and prompt embeddings that disagree: a string may label a category of prompts (split,
compare and metrics group by it), but Scendi's prompt features come from the embeddings, so it groups by
embedding then, says so, and gives the number the embeddings give; no prompt string is empty.

Before, a set whose prompt strings were all '' (distinct embeddings) was one prompt to Scendi: 5.39 instead
of 1.80, with a false 'C_TT has rank 1' warning.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import promptprism as pp
from _cli_run import run_cli
from promptprism.data.paired import PROMPT_EMBEDDING_RTOL, check_compatible, prompt_groups, strings_disagree
from promptprism.errors import InputError


def _arrays(seed=0, prompts=20, per=10):
    rng = np.random.default_rng(seed)
    pe = np.repeat(rng.normal(size=(prompts, 8)), per, axis=0)
    oe = pe[:, :6] * 0.5 + rng.normal(size=(prompts * per, 6)) * 0.3
    names = [f"prompt {i // per}" for i in range(prompts * per)]
    return pe, oe, names


def test_one_string_two_embeddings_is_found_naming_rows_and_string():
    pe, oe, names = _arrays()
    assert strings_disagree(pp.PairedSet(pe, oe, prompts=names)) is None
    names[15] = "prompt 0"  # row 15 carries prompt 1's embedding
    said = strings_disagree(pp.PairedSet(pe, oe, prompts=names, name="m", source="m.npz"))
    assert "m.npz" in said and "rows 0 and 15" in said and "'prompt 0'" in said
    assert strings_disagree(pp.PairedSet(pe, oe)) is None  # no strings: nothing to disagree


def test_tolerance_is_relative_and_bites_just_above_it():
    pe, oe, names = _arrays()
    assert strings_disagree(pp.PairedSet(pe * 1e6, oe, prompts=names)) is None  # relative: any scale
    moved = pe.copy()
    moved[3] += 3 * PROMPT_EMBEDDING_RTOL * np.linalg.norm(pe[0]) / np.sqrt(pe.shape[1])
    assert "rows 0 and 3 (0-based)" in strings_disagree(pp.PairedSet(moved, oe, prompts=names))


def test_the_same_string_across_sets_is_compared_within_one_prompt_dimension():
    pe, oe, names = _arrays()
    other = pe.copy()
    other[25] = -other[25]  # row 25 of the second set: 'prompt 2' with another embedding
    a, b = pp.PairedSet(pe, oe, prompts=names, name="a"), pp.PairedSet(other, oe, prompts=names, name="b")
    assert "a row 20 and b row 25 (0-based)" in strings_disagree(a, b)
    assert strings_disagree(a, pp.PairedSet(pe.copy(), oe, prompts=names, name="c")) is None
    narrow = pp.PairedSet(pe[:, :4], oe, prompts=names, name="d")  # another prompt embedder
    assert strings_disagree(a, narrow) is None


def test_scendi_groups_a_category_labelled_set_by_embedding_and_says_so():
    pe, oe, names = _arrays()
    plain = pp.Scendi(seed=0).fit(pp.PairedSet(pe, oe))  # grouped by embedding: the reference
    for labels in (["same"] * len(names), [f"category {i % 3}" for i in range(len(names))]):
        with pytest.warns(UserWarning, match="do not name one prompt embedding each"):
            res = pp.Scendi(seed=0).fit(pp.PairedSet(pe, oe, prompts=labels))
        assert res.scendi == pytest.approx(plain.scendi, rel=1e-12)
        assert res.model_share == pytest.approx(plain.model_share, rel=1e-12)
        assert any("distinct prompt embeddings" in n for n in res.warnings)


def test_consistent_strings_and_re_embedding_noise_change_nothing():
    pe, oe, names = _arrays()
    noisy = pe * (1 + 1e-6 * np.random.default_rng(1).normal(size=pe.shape))  # float32-level round-off
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        exact = pp.Scendi(seed=0).fit(pp.PairedSet(pe, oe, prompts=names))
        again = pp.Scendi(seed=0).fit(pp.PairedSet(noisy, oe, prompts=names))
    assert again.scendi == pytest.approx(exact.scendi, rel=1e-4)
    assert not any("prompt embedding" in n for n in exact.warnings)


def test_split_keeps_grouping_by_a_category_string():
    pe, oe, _ = _arrays()
    labels = [f"category {i % 3}" for i in range(len(pe))]
    (groups,), names = prompt_groups(pp.PairedSet(pe, oe, prompts=labels))
    assert names == ["category 0", "category 1", "category 2"]
    assert np.array_equal(groups, np.arange(len(pe)) % 3)


def test_empty_prompt_string_is_refused_where_it_enters():
    pe, oe, names = _arrays()
    names[7] = "  "
    with pytest.raises(InputError, match=r"prompts: row 7 \(0-based\) is empty; every row needs one"):
        pp.PairedSet(pe, oe, prompts=names)


def test_cli_refuses_empty_prompts_and_warns_of_category_strings(tmp_path):
    pe, oe, names = _arrays()
    np.savez(tmp_path / "empty.npz", prompt_embeddings=pe, output_embeddings=oe, prompts=np.array([""] * 200))
    code, _, err = run_cli("diversity", tmp_path / "empty.npz", "--out", tmp_path / "r1", "--no-report")
    assert code == 2 and "empty.npz: prompts: row 0 (0-based) is empty" in err
    assert len(err.strip().splitlines()) == 1
    np.savez(tmp_path / "same.npz", prompt_embeddings=pe, output_embeddings=oe, prompts=np.array(["x"] * 200))
    np.savez(tmp_path / "none.npz", prompt_embeddings=pe, output_embeddings=oe)
    code, out, err = run_cli("diversity", tmp_path / "same.npz", "--out", tmp_path / "r2", "--no-report",
                             "--json")
    code_none, out_none, _ = run_cli("diversity", tmp_path / "none.npz", "--out", tmp_path / "r3",
                                     "--no-report", "--json", "--quiet")
    assert code == code_none == 0, err
    assert any("same.npz: rows 0 and 10" in w for w in json_value(out, "warnings"))
    assert json_value(out, "scendi") == json_value(out_none, "scendi")


def json_value(text: str, key: str) -> float:
    import json

    return json.loads(text)[key]


def test_dimension_mismatch_names_two_unnamed_sets_apart():
    rng = np.random.default_rng(0)
    a = pp.PairedSet(rng.normal(size=(10, 4)), rng.normal(size=(10, 3)))
    b = pp.PairedSet(rng.normal(size=(10, 8)), rng.normal(size=(10, 3)))
    with pytest.raises(InputError, match=r"4 dimensions in set \(1st set\) but 8 in set \(2nd set\)"):
        check_compatible(a, b)
