"""``promptprism describe DIR``: verified names for the significant modes of a PromptSplit result, the
deviating models of a K-way comparison (``compare``) and Scendi's model-driven clusters.

A namer (any OpenAI-compatible chat endpoint) proposes what the favoured model does on a mode's prompts that
the other does not; a judge tests each candidate on held-out samples the namer never saw; a name is kept only
when it separates them (Fisher exact test, Holm over the candidates). The names go into DIR's result.json
(``descriptions``) and report.html, written as one transaction; every model answer is cached
(``--chat-cache``), so a re-run costs no model calls.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import InputError
from ._app import app, console
from ._inputs import TEXT_MODEL, recorded_sets
from ._options import (
    ALPHA,
    API_KEY_ENV,
    BASE_URL,
    CHAT_CACHE,
    JUDGE_BASE_URL,
    JUDGE_MODEL,
    MODEL,
    RETRIES,
    SEED,
    TIMEOUT,
    Choice,
    Integer,
    check_urls,
    typed,
)
from ._output import print_written, save_outputs
from .report import NO_REPORT

NAMERS = ("chat", "words", "facets", "length")
JUDGES = ("chat", "embedding", "lexical", "completion", "length")


def _embedding_judge(text_model: str):
    from ..embed.registry import get_encoder
    from ..methods.naming import EmbeddingJudge

    encoder = get_encoder(text_model, modality="text")
    return EmbeddingJudge(encode=lambda texts: encoder.encode_texts(list(texts)))


@app.command("describe")
def describe(
    folder: Path = typer.Argument(..., metavar="DIR", help="A split, compare or diversity results folder "
                                                           "(result.json)."),
    inputs: list[Path] | None = typer.Argument(None, metavar="INPUTS",
                                               help="split: TEST REF; compare: one set per model, in the "
                                                    "order of the comparison (default for both: the paths "
                                                    "result.json records); diversity: INPUT (default: "
                                                    "the one result.json records)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Results folder to write (default: DIR)."),
    base_url: str = BASE_URL,
    model: str = MODEL,
    namer: str = typed("chat", Choice(NAMERS), "--namer",
                       help="chat (the model at --base-url), words (no model: the words that mark the "
                            "mode's side, by log-odds) or facets (the model at --base-url continues 'This "
                            "text is written in' ... per sample; needs log-probabilities) or length (no "
                            "model: 'answers are shorter/longer', with --judge length)."),
    judge: str = typed("chat", Choice(JUDGES), "--judge",
                       help="chat (a model says yes/no per held-out sample), embedding (a text-embedding "
                            "classifier), lexical (word-list names), completion (facet names scored by "
                            "log-probability, a rank test) or length (length names scored by word count)."),
    judge_model: str = JUDGE_MODEL,
    judge_base_url: str = JUDGE_BASE_URL,
    api_key_env: str = API_KEY_ENV, timeout: float = TIMEOUT, retries: int = RETRIES,
    chat_cache: Path | None = CHAT_CACHE,
    candidates: int = typed(3, Integer(minimum=1), "--candidates", help="Candidate names asked per mode."),
    alpha: float = ALPHA,
    min_held_out: int = typed(5, Integer(minimum=1), "--min-held-out",
                              help="Held-out samples needed per side to test a name."),
    all_modes: bool = typer.Option(False, "--all-modes", help="Name every reported mode, not only the "
                                                              "significant ones."),
    text_model: str = TEXT_MODEL,
    seed: int = SEED,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No table."),
    no_report: bool = NO_REPORT,
) -> None:
    """Name what differs in each significant PromptSplit mode (each deviating model of a compare, each
    Scendi cluster), and keep only names that hold on held-out data.

    A namer proposes candidates from 40 % of each side's samples; a judge decides on the rest whether each
    candidate applies (or scores how well it does); a name is kept when it applies significantly more often
    (scores significantly higher) on the finding's side.
    """
    import dataclasses

    from ..methods.naming import NamingOptions
    from ..results import load_result

    result = load_result(folder)
    if result.kind not in ("promptsplit", "promptsplit_kway", "scendi"):
        raise InputError(f"{folder}: holds a {result.kind} result; describe names PromptSplit modes, K-way "
                         "deviations and Scendi clusters")
    options = NamingOptions(candidates=candidates, alpha=alpha, min_held_out=min_held_out, seed=seed)
    link = {"api_key_env": api_key_env, "timeout": timeout, "retries": retries, "cache": chat_cache,
            "seed": seed}
    namer_obj, judge_obj = _namer_and_judge(namer, judge, base_url=base_url, model=model,
                                            judge_base_url=judge_base_url, judge_model=judge_model,
                                            text_model=text_model, link=link)
    record, sets, given = _describe(result, folder, list(inputs or []), text_model, namer=namer_obj,
                                    judge=judge_obj, options=options, all_modes=all_modes)
    clients = [getattr(namer_obj, "client", None), getattr(judge_obj, "client", None)]
    record["calls"] = {"requests": sum(getattr(c, "n_requests", 0) for c in clients),
                       "cache_hits": sum(getattr(c, "n_cache_hits", 0) for c in clients)}
    named = dataclasses.replace(result, descriptions=record)
    written = save_outputs(named, out or folder, report=not no_report, inputs=sets, quiet=quiet,
                           origin=folder, sources=given or None,
                           amend=out is None or Path(out).resolve() == Path(folder).resolve())
    if not quiet:
        print_descriptions(record, names=result.given_names() if result.kind == "promptsplit" else None)
    print_written(written)


def _namer_and_judge(namer: str, judge: str, *, base_url: str, model: str, judge_base_url: str,
                     judge_model: str, text_model: str, link: dict) -> tuple:
    """The namer and the judge that ``--namer`` and ``--judge`` name (chat ones through one client each)."""
    from ..errors import OptionError
    from ..methods.naming import (
        ChatJudge,
        ChatNamer,
        CompletionJudge,
        FacetNamer,
        LengthJudge,
        LengthNamer,
        LexicalJudge,
        WordNamer,
    )
    from ._compcon_text import chat_client as _client

    if judge == "completion" and namer != "facets":
        raise OptionError("--judge completion scores the facet names of --namer facets; pass --namer facets "
                          "or another judge")
    if judge == "lexical" and namer in ("facets", "length"):
        own = "completion" if namer == "facets" else "length"
        raise OptionError(f"--judge lexical tests the word lists of --namer words; {namer} names need "
                          f"--judge {own}, chat or embedding")
    if judge == "length" and namer != "length":
        raise OptionError("--judge length scores the names of --namer length; pass --namer length or another "
                          "judge")
    check_urls(base_url=base_url, judge_base_url=judge_base_url)
    namer_obj = (WordNamer() if namer == "words" else LengthNamer() if namer == "length"
                 else FacetNamer(_client(base_url, model, **link)) if namer == "facets"
                 else ChatNamer(_client(base_url, model, **link)))
    if judge in ("chat", "completion"):
        client = _client(judge_base_url or base_url, judge_model or model, **link)
        return namer_obj, ChatJudge(client) if judge == "chat" else CompletionJudge(client)
    return namer_obj, {"embedding": _embedding_judge, "length": lambda _: LengthJudge(),
                       "lexical": lambda _: LexicalJudge()}[judge](text_model)


def _describe(result, folder: Path, paths: list, text_model: str, **how) -> tuple[dict, dict | None, dict]:
    """(the descriptions record, the inputs for the report, the paths given for them) for a PromptSplit,
    K-way or Scendi result."""
    from ..methods.naming import describe_clusters, describe_deviations, describe_modes

    if result.kind == "promptsplit":
        sides = ("test", "reference")
        if len(paths) > 2:
            raise InputError(f"{folder}: a split result takes at most 2 inputs (TEST REF), got {len(paths)}")
        sets = recorded_sets(result, folder, dict(zip(sides, paths + [None] * 2, strict=False)),
                          result.config, text_model)
        return describe_modes(result, sets["test"], sets["reference"], **how), sets, sets.given
    if result.kind == "promptsplit_kway":
        if paths and len(paths) != len(result.names):
            raise InputError(f"{folder}: a compare result of {len(result.names)} models takes one input per "
                             f"model ({', '.join(result.names)}), got {len(paths)}")
        recorded = dict(zip(result.names, result.config.get("sets") or [None] * len(result.names),
                            strict=False))
        given = dict(zip(result.names, paths or [None] * len(result.names), strict=True))
        sets = recorded_sets(result, folder, given, recorded, text_model)
        return describe_deviations(result, sets, **how), sets, sets.given
    if len(paths) > 1:
        raise InputError(f"{folder}: a Scendi result takes one input (its set), got {len(paths)}")
    how.pop("all_modes")
    sets = recorded_sets(result, folder, {result.name: paths[0] if paths else None},
                      {result.name: result.config.get("input")}, text_model)
    return describe_clusters(result, sets[result.name], **how), None, sets.given


def print_descriptions(record: dict, *, names: tuple[str, str] | None = None) -> None:
    """One line per finding: which one, then the verified name with its held-out accuracy, or why none;
    ``names`` (test, reference): a split's set names, shown beside the sides."""
    from ..methods.promptsplit.verdicts import side_label

    for entry in record.get("modes", []) + record.get("clusters", []) + record.get("deviations", []):
        head = (f"cluster {entry['cluster']}:" if "cluster" in entry
                else f"{entry['model']} mode {entry['rank']}:" if "model" in entry
                else f"{side_label(entry['side'], names)} mode {entry['rank']}:")
        if entry["status"] == "named":
            lo, hi = entry["interval"]
            measure = "AUC" if entry.get("measure") == "auc" else "accuracy"
            console.print(f"{head} {entry['name']!r} (held-out {measure} {entry['accuracy']:.2f} "
                          f"[{lo:.2f}, {hi:.2f}], p = {entry['p_value']:.3g})", markup=False, soft_wrap=True)
        else:
            why = f" ({entry['note']})" if entry.get("note") else ""
            console.print(f"{head} {entry['status']}{why}", markup=False, soft_wrap=True)
    for note in record["notes"]:
        console.print(f"note: {note}", markup=False, soft_wrap=True)
    calls = record.get("calls", {})
    sent, cached = calls.get("requests", 0), calls.get("cache_hits", 0)
    console.print(f"model calls: {sent} sent, {cached} from the cache", markup=False)
