"""``promptprism report DIR`` on a results folder moved without its inputs: one warning on the terminal
names what is missing and what the page leaves out (the page already said it in a note)."""

from __future__ import annotations

from test_report_facet_shares import recorded_run


def test_report_dir_warns_once_naming_the_inputs_it_cannot_find(tmp_path):
    """A results folder moved without its inputs: the page is poorer (no facets, no map) and says why; the
    terminal now says it too, in one warning naming both missing inputs (it printed only 'report: ...')."""
    import warnings

    from promptprism.report import report_from_dir

    out = recorded_run(tmp_path)
    for s in ("test", "reference"):
        (tmp_path / f"{s}.jsonl").unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        page = report_from_dir(out)
    said = [str(w.message) for w in caught if "not found" in str(w.message)]
    assert len(said) == 1 and said[0].startswith("inputs not found: test ../test.jsonl; reference "
                                                 "../reference.jsonl; the page is written without")
    assert "\n" not in said[0] and "facets" in said[0]
    assert "not found" in page.read_text(encoding="utf-8")  # (the page's own note)
