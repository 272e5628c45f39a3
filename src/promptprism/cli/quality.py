"""``promptprism quality DIR [--real REAL] [--judge-base-url URL]``: on each finding of a split or compare
result, which model is closer to real data (or to gold answers) and which one a judge prefers, each with a
test; added to DIR's result.json and report as one transaction."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer

from ..errors import InputError
from ..methods.metrics.findings import CLOSENESS
from . import _inputs as inp
from ._app import app, console
from ._options import (
    ALPHA,
    API_KEY_ENV,
    CHAT_CACHE,
    CONFIDENCE,
    DEFAULT_CHAT_MODEL,
    JUDGE_MODEL,
    NEAREST_K,
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

#: suffixes of outputs that are images (a text judge cannot read them)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif")
#: the result kinds whose findings get verdicts: modes, K-way comparisons, Scendi clusters
QUALITY_KINDS = ("promptsplit", "promptsplit_kway", "scendi", "scendi_comparison")
#: kinds whose models are ranked over every prompt they share with the real data, findings or not
RANKED_KINDS = ("promptsplit_kway", "scendi_comparison")
METRICS = typer.Option(False, "--metrics", help="Also precision, recall, density, coverage and FD of each "
                                                "model on each finding's prompts against the real samples "
                                                "of those prompts, with intervals.")
FACET = typer.Option(None, "--facet", metavar="COLUMN",
                     help="A manifest column (repeatable): the closeness and judge verdicts per value of the "
                          "column on each finding (mode, deviating model, cluster) too (Holm over every test "
                          "reported).")

REAL = typer.Option(None, "--real", help=f"Real data (or gold answers) on the same prompts, that each "
                                         f"model's outputs are compared against (the set metrics and "
                                         f"diversity call --reference): {inp.INPUT_HELP}.")
#: quality's judge is off unless this is given (no default endpoint its outputs would be sent to)
JUDGE_BASE_URL = typer.Option("", "--judge-base-url",
                              help="OpenAI-compatible endpoint of a judge that compares the models' outputs "
                                   "pair by pair (both orders; texts, or images sent as PNG data URLs to a "
                                   "vision-language model); no default: giving it turns the judge on.")


@app.command("quality")
def quality(
    folder: Path = typer.Argument(..., metavar="DIR",
                                  help="A split, compare or diversity results folder (result.json)."),
    inputs: list[Path] | None = typer.Argument(None, metavar="[INPUTS]",
                                               help="split: TEST REF; compare or diversity: one set per "
                                                    "model, in the order of the run (default: the paths "
                                                    "result.json "
                                                    "records, checked against their fingerprints)."),
    real: Path | None = REAL,
    closeness: str = typed("precision", Choice(CLOSENESS), "--closeness",
                           help="precision (inside the real samples' k-NN balls; images, any embedding), "
                                "gold (cosine to the nearest real output of the same prompt; texts with gold "
                                "answers) or exact (the same text as a gold answer of the prompt, case and "
                                "punctuation aside; short answers)."),
    nearest_k: int = NEAREST_K,
    metrics: bool = METRICS,
    judge_base_url: str = JUDGE_BASE_URL,
    judge_model: str = JUDGE_MODEL,
    rubric: str = typer.Option("", "--rubric", help="What makes an answer better, for the judge: TEXT or "
                                                    "@FILE (default: correct, helpful, does what is asked)."),
    judge_pairs: int = typed(20, Integer(minimum=1), "--judge-pairs",
                             help="Pairs of answers judged per finding and pair of models (seeded draw, "
                                  "one pair per prompt in turn, no answer twice)."),
    api_key_env: str = API_KEY_ENV, timeout: float = TIMEOUT, retries: int = RETRIES,
    chat_cache: Path | None = CHAT_CACHE,
    facet: list[str] | None = FACET,
    alpha: float = ALPHA,
    permutations: int = typed(2000, Integer(), "--permutations",
                              help="Permutations of the within-prompt test (>= 99)."),
    bootstrap: int = typed(500, Integer(), "--bootstrap", help="Bootstrap replicates over prompts (>= 50)."),
    confidence: float = CONFIDENCE,
    seed: int = SEED,
    out: Path | None = typer.Option(None, "--out", "-o", help="Results folder to write (default: DIR)."),
    text_model: str = inp.TEXT_MODEL,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No lines per finding."),
    no_report: bool = NO_REPORT,
) -> None:
    """Which model is closer to real data, and which one a judge prefers, on each finding of a split,
    compare or diversity result.

    Each significant mode, deviating model or model-driven cluster: the models' samples on its prompts
    against the real samples of those prompts (within-prompt permutation test, Holm; K models ranked with
    ties), and/or pairs of outputs judged in both orders (Wilson interval, sign test; docs/quality.md)."""
    from ..results import load_result

    if real is None and not judge_base_url:
        raise InputError("nothing to judge with: pass --real REAL (closeness to real data), --judge-base-url "
                         "URL (a judge's preference), or both")
    check_urls(judge_base_url=judge_base_url)
    rubric_text = _rubric(rubric)
    result = load_result(folder)
    if result.kind not in QUALITY_KINDS:
        raise InputError(f"{folder}: holds a {result.kind} result; quality verdicts need a split, compare or "
                         "diversity result")
    sets = _sets(result, folder, list(inputs or []), text_model)
    findings = result.findings()
    if not findings:  # a result, not bad input: the models agree (exit 0, as split and describe do)
        _note_no_findings(folder, ranked=result.kind in RANKED_KINDS and real is not None and len(sets) > 1)
    options = {"alpha": alpha, "confidence": confidence, "seed": seed}
    record = _verdicts(result, findings, sets, list(facet or []), options, real=real, text_model=text_model,
                       closeness=dict(closeness=closeness, nearest_k=nearest_k, permutations=permutations,
                                      bootstrap=bootstrap, metrics=metrics),
                       judge=judge_base_url and dict(
                           base_url=judge_base_url, model=judge_model or DEFAULT_CHAT_MODEL,
                           rubric=rubric_text, pairs=judge_pairs,
                           link={"api_key_env": api_key_env, "timeout": timeout, "retries": retries,
                                 "cache": chat_cache}))
    judged = dataclasses.replace(result, quality=record)
    written = save_outputs(judged, out or folder, report=not no_report, inputs=sets, quiet=quiet,
                           origin=folder,
                           sources={**sets.given, **({"real data": inp.results_folder_input(real)} if real
                                                     else {})} or None,
                           amend=out is None or Path(out).resolve() == Path(folder).resolve())
    if not quiet:
        _print(record, closeness=real is not None, judge=bool(judge_base_url))
    print_written(written)


def _verdicts(result, findings: list, sets: list, facets: list[str], options: dict, *, real: Path | None,
              text_model: str, closeness: dict, judge: dict | str) -> dict:
    """The result's quality record with the closeness verdicts (``real`` given) and the judge's (``judge``:
    its endpoint, model, rubric, pairs and link options; empty: none)."""
    record = dict(result.quality or {})
    if real is not None:
        record.update(_closeness(result.kind, findings, sets, real, text_model, facets, **closeness,
                                 **options))
    if judge:
        record["judge"] = _judge(result.kind, findings, sets, judge["base_url"], judge["model"],
                                 judge["link"], facets, rubric=judge["rubric"], pairs=judge["pairs"],
                                 **options)
    return record


def _rubric(value: str) -> str:
    """``--rubric``: the text, or the text of the file after '@'; '' for the default."""
    if not value.startswith("@"):
        return value
    path = Path(value[1:])
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--rubric {value}: cannot read {path} ({exc.__class__.__name__})") from None


def _sets(result, folder: Path, paths: list, text_model: str) -> dict:
    """The result's input sets by name: test and reference for a split, one per model for a compare."""
    if result.kind == "promptsplit":
        if len(paths) not in (0, 2):
            raise InputError(f"{folder}: a split result takes its 2 inputs (TEST REF) or none, got "
                             f"{len(paths)}")
        return inp.recorded_sets(result, folder, dict(zip(("test", "reference"), paths or [None, None],
                                                          strict=True)), result.config, text_model)
    if result.kind == "scendi":
        if len(paths) > 1:
            raise InputError(f"{folder}: a diversity result of one model takes its input or none, got "
                             f"{len(paths)}")
        return inp.recorded_sets(result, folder, {result.name: paths[0] if paths else None}, {}, text_model)
    if paths and len(paths) != len(result.names):
        raise InputError(f"{folder}: a compare result of {len(result.names)} models takes one input per "
                         f"model ({', '.join(result.names)}), got {len(paths)}")
    config = getattr(result, "config", None) or {}  # (a diversity comparison records its inputs only)
    recorded = dict(zip(result.names, config.get("sets") or [None] * len(result.names), strict=False))
    given = dict(zip(result.names, paths or [None] * len(result.names), strict=True))
    return inp.recorded_sets(result, folder, given, recorded, text_model)


def _facets(sets: dict, columns: list[str]) -> list[dict]:
    """The facets named by ``--facet`` from the sets' manifests (the report's facet values: categories, or
    quantile bins of a number), each ``{'name', 'values', 'rows'}``."""
    from ..report.facets import sets_facets

    found = {f["name"]: f for f in sets_facets(sets, lambda _: 0, lambda: [None])[0]}
    missing = [c for c in columns if c not in found]
    if missing:
        raise InputError(f"--facet {missing[0]}: not a facet of the inputs' manifests (facets: "
                         f"{', '.join(found) or 'none'})")
    return [{"name": c, "values": found[c]["values"], "rows": found[c]["rows"]} for c in columns]


def _closeness(kind: str, findings: list, sets: dict, real: Path, text_model: str, facets: list[str],
               **params) -> dict:
    """The closeness record: two models (split; per facet value of ``facets`` too), a ranking of K
    (compare, diversity), or one model's clusters against its other samples."""
    import dataclasses

    from ..data.inputs import load_input
    from ..methods.metrics.findings_clusters import ClusterQuality
    from ..methods.metrics.findings_facets import FacetQuality, FacetRanking

    reference = dataclasses.replace(load_input(inp.results_folder_input(real), text_model=text_model),
                                    name="real data")
    faceted = _facets(sets, facets) if facets else ()
    try:
        if kind == "scendi":
            return ClusterQuality(**params).fit(findings, next(iter(sets.values())), reference, faceted)
        if kind == "promptsplit":
            return FacetQuality(**params).fit(findings, sets, reference, faceted)
        return FacetRanking(**params).fit(findings, sets, reference, faceted)
    except InputError as exc:  # the real data named by its path, as the user gave it
        if str(exc).startswith("real data:"):
            raise InputError(f"--real {real}: {str(exc).removeprefix('real data: ')}") from exc
        raise


def _judge(kind: str, findings: list, sets: dict, url: str, model: str, link: dict, facets: list[str], *,
           rubric: str, **params) -> dict:
    """The judge's preference record, with the endpoint (no key) and the calls made (one model's clusters:
    each cluster's samples against the model's other samples of its prompts)."""
    from ..methods.metrics import FindingPreference
    from ..methods.metrics.findings_clusters import cluster_preference
    from ..methods.metrics.findings_facets import facet_preference
    from ._compcon_text import chat_client

    kinds = set()
    for name, s in sets.items():
        outputs = getattr(s, "outputs", None)
        if outputs is None:
            raise InputError(f"{name}: no output texts or image paths (an embeddings file); the judge reads "
                             "the outputs")
        kinds.add("image" if outputs and str(outputs[0]).lower().endswith(IMAGE_SUFFIXES) else "text")
    if len(kinds) > 1:
        raise InputError("some sets hold images and some texts; the judge compares outputs of one kind")
    estimator = FindingPreference(**({"rubric": rubric} if rubric.strip() else {}), modality=kinds.pop(),
                                  **params)
    client = chat_client(url, model, seed=params["seed"], temperature=0.0, **link)
    faceted = _facets(sets, facets) if facets else ()
    if kind == "scendi":
        record = cluster_preference(estimator, findings, next(iter(sets.values())), client, faceted)
    else:
        record = facet_preference(estimator, findings, sets, client, faceted)
    return {**record, "endpoint": client.describe(),
            "calls": {"requests": client.n_requests, "cache_hits": client.n_cache_hits}}


def _print(record: dict, *, closeness: bool, judge: bool) -> None:
    """One line per finding and verdict kind (closeness, then the judge)."""
    lines = [line for e in record.get("findings", []) for line in
             [e["verdict"], *_noted(e), *(x for f in e.get("facets", []) for x in ("  " + f["verdict"],
                                                                                   *_noted(f, "    ")))]
             ] if closeness else []
    if closeness and record.get("overall"):
        lines += [record["overall"]["verdict"], *_noted(record["overall"])]
    if judge:
        lines += [line for e in record["judge"]["findings"] for line in
                  [e["verdict"], *("  " + f["verdict"] for f in e.get("facets", []))]]
        calls = record["judge"]["calls"]
        lines.append(f"judge calls: {calls['requests']} sent, {calls['cache_hits']} from the cache")
    for line in lines:
        console.print(line, markup=False, soft_wrap=True)


def _noted(entry: dict, indent: str = "  ") -> list[str]:
    """The entry's note under its verdict (e.g. scored against the whole reference), when it has one."""
    return [f"{indent}note: {entry['note']}"] if entry.get("note") else []


def _note_no_findings(folder: Path, *, ranked: bool) -> None:
    """The note of a result whose models agree (``ranked``: they are still ranked over every prompt)."""
    inp.note(f"{folder}: no significant finding (or cluster) with prompts that carry it, so no verdict per "
             "finding" + ("; the models are still ranked over every prompt they share with the real data"
                          if ranked else ""))
