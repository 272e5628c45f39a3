"""``promptprism compcon`` (and ``compcon-eval``): what differs between two text-to-image models, in words;
with ``--text``, between two language models' answers (the same loop; :mod:`._compcon_text` builds its
parts)."""

from __future__ import annotations

import json
import warnings
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from ..errors import InputError, OptionError
from ..methods.compcon.options import NULL_SETS
from ..results import load_result
from ._app import app, console, new_spellings
from ._compcon_text import chat_client, text_parts
from ._inputs import QUIET, TEXT_MODEL
from ._options import (
    ALPHA,
    API_KEY_ENV,
    BASE_URL,
    CHAT_CACHE,
    DEFAULT_BASE_URL,
    DEFAULT_CHAT_MODEL,
    JUDGE_BASE_URL,
    JUDGE_MODEL,
    MAX_TOKENS,
    MODEL,
    RETRIES,
    SAMPLES,
    SEED,
    TEMPERATURE,
    TIMEOUT,
    Choice,
    Integer,
    Number,
    check_urls,
    typed,
)
from ._output import print_written, save_outputs
from .report import NO_REPORT

if TYPE_CHECKING:  # (the method's modules are imported when a command runs)
    from ..methods.compcon.pipeline import CompConResult


def print_compcon(result: CompConResult, out: Path | None, quiet: bool = False) -> None:
    """The top attributes, each described one with its best description, then where the results are."""
    if not quiet:
        table = Table(
            title=escape(f"CompCon: attributes model {result.models['A'].get('name', 'A')} shows and "
                         f"{result.models['B'].get('name', 'B')} does not ({result.n_prompts} prompts)")
        )
        table.add_column("#", justify="right")
        table.add_column("attribute")
        table.add_column("diverging prompts", justify="right")
        table.add_column("held out: A-only/B-only, p (Holm)", justify="right")
        for a in result.attributes[:10]:
            table.add_row(
                str(a["rank"]), escape(str(a["attribute"])),
                f"{a['n_diverging']}/{a['n_prompts']} ({a['score']:.0%})", _held_out_cell(a.get("held_out")),
            )
        console.print(table)
        for d in result.descriptions:
            best = d.get("best")
            if best and best.get("description"):
                score = "unscored" if best["score"] is None else f"{best['score']:.0%} of new prompts diverge"
                console.print(
                    f"{d['attribute']} ({score}, iteration {best['iteration']}): "
                    f"{best['description']}\n  key concepts: {', '.join(map(str, best['key_concepts']))}",
                    highlight=False, markup=False,
                )
            else:
                console.print(f"{d['attribute']}: no description ({d['stop_reason']})", highlight=False,
                              markup=False)
        if result.failures:
            console.print(
                f"{len(result.failures)} malformed answer(s) given up on; see 'failures' in result.json"
            )
    if out is not None:
        console.print(f"results: {out / 'result.json'}", markup=False, soft_wrap=True)


def _held_out_cell(held: dict | None) -> str:
    """The held-out check of an attribute in one cell: counts, adjusted p-value, whether it holds."""
    if not held:
        return "-"
    verdict = "holds" if held["verified"] else "not shown"
    counts = f"{held['a_only']}/{held['b_only']} of {held['n_prompts']}"
    return f"{counts}, p = {held['p_adjusted']:.3g} ({verdict})"


CLIP_MODEL = typer.Option("openai/clip-vit-base-patch32", "--clip-model",
                          help="CLIP: a local folder or a name in the local Hugging Face cache (never "
                               "downloaded), open_clip:FOLDER_OR_HUB_ID, or module:factory.")
GENERATED_PROMPTS = typed(25, Integer(), "--generated-prompts",
                          help="New prompts the LLM writes per description iteration.")
#: compcon's deprecated spellings (hidden; each still works, with a note)
CACHE_DEPRECATED = typer.Option(None, "--cache", hidden=True, help="Deprecated spelling of --chat-cache.")
PROMPTS_DEPRECATED = typer.Option(None, "--prompts", hidden=True,
                                  help="Deprecated spelling of --prompt-bank.")
BATCH_SIZE_DEPRECATED = typer.Option(None, "--batch-size", hidden=True,
                                     help="Deprecated spelling of --description-prompts.")
GENERATED_DEPRECATED = typed(None, Integer(), "--generated", hidden=True,
                             help="Deprecated spelling of --generated-prompts.")
ENDPOINT_DEPRECATED = typer.Option(None, "--endpoint", hidden=True,
                                   help="Deprecated spelling of --models-base-url.")
#: text CompCon's verifiers (--judge)
TEXT_JUDGES = ("chat", "embedding")
#: the options of compcon --text (and the ones it enables)
TEXT = typer.Option(False, "--text", help="A and B are language models: answer tables (.jsonl/.csv/.parquet "
                                          "with prompt and answer or output columns) or chat:MODEL served at "
                                          "--models-base-url.")
MODELS_BASE_URL = typer.Option("", "--models-base-url",
                               help="Text: the OpenAI-compatible endpoint of chat:MODEL models A and B "
                                    "(default: --base-url).")
SYSTEM_A = typer.Option("", "--system-a", help="Text: a system prompt for chat model A.")
SYSTEM_B = typer.Option("", "--system-b", help="Text: a system prompt for chat model B.")
TEXT_JUDGE = typed("chat", Choice(TEXT_JUDGES), "--judge",
                   help="Text: what verifies an attribute on an answer: chat (a model says yes/no) or "
                        "embedding (cosine of answer and attribute in --text-model, CompCon's quantile "
                        "rule).")


def _estimator(llm: tuple[str, str], vlm: tuple[str, str], link: dict, *, clip_model: str | None,
               seed: int, **options):
    """The CompCon estimator: chat clients for the LLM and the VLM ((endpoint, model) each), CLIP loaded on
    first use (none for text), the loop's options."""
    from ..methods.compcon.embedding import LazyClip
    from ..methods.compcon.pipeline import CompCon

    return CompCon(llm=chat_client(*llm, seed=seed, **link), vlm=chat_client(*vlm, seed=seed, **link),
                   embedder=None if clip_model is None else LazyClip(clip_model), seed=seed, **options)


@app.command("compcon")
def compcon(
    ctx: typer.Context,
    model_a: str = typer.Argument(..., metavar="A", help="Model A: an image folder/manifest for the prompt "
                                                         "bank, or module:callable (prompt -> images); "
                                                         "with --text an answer table or chat:MODEL."),
    model_b: str = typer.Argument(..., metavar="B", help="Model B, same forms as A."),
    prompt_bank: Path = typer.Option(None, "--prompt-bank", "-p",
                                     help="Prompt bank (required): one prompt per line, .json list, "
                                          ".jsonl/.csv with a 'prompt' field."),
    prompts_deprecated: Path = PROMPTS_DEPRECATED,
    out: Path = typer.Option(..., "--out", "-o", help="Results folder (result.json is written there)."),
    base_url: str = BASE_URL, model: str = MODEL,
    vlm_model: str = typer.Option("", help="Vision-language model (attribute discovery); default: --model."),
    vlm_base_url: str = typer.Option("", help="Endpoint of the VLM; default: --base-url."),
    api_key_env: str = API_KEY_ENV, timeout: float = TIMEOUT, retries: int = RETRIES,
    clip_model: str = CLIP_MODEL,
    iterations: int = typed(10, Integer(), "--iterations",
                            help="Description iterations per attribute (early stop: C.3)."),
    seed: int = SEED,
    discovery_prompts: int = typed(10, Integer(), "--discovery-prompts",
                                   help="Prompts sampled for attribute discovery."),
    attributes: int = typed(1, Integer(), "--attributes", help="Top attributes to describe."),
    description_prompts: int = typed(10, Integer(minimum=1), "--description-prompts",
                                     help="B: diverging and non-diverging prompts shown per description."),
    batch_size_deprecated: int = BATCH_SIZE_DEPRECATED,
    generated_prompts: int = GENERATED_PROMPTS, generated_deprecated: int | None = GENERATED_DEPRECATED,
    quantile: float = typed(0.95, Number(), "--quantile",
                            help="Threshold: this quantile of the null set's CLIP similarities."),
    null: str = typed("reference", Choice(NULL_SETS), "--null",
                      help="Null set for the thresholds: reference (B's images) or pooled."),
    min_fraction: float = typed(0.5, Number(), "--min-fraction",
                                help="Share of a prompt's images that must have the attribute."),
    chat_cache: Path | None = CHAT_CACHE, cache_deprecated: Path | None = CACHE_DEPRECATED,
    templates: Path | None = typer.Option(None, help="Folder of edited prompt templates (<name>.txt)."),
    skip_missing: bool = typer.Option(False, help="Leave out prompts without images (listed in result.json) "
                                                  "instead of stopping."),
    from_split: Path | None = typer.Option(None,
                                           help="A PromptSplit result.json: describe one of its modes."),
    mode: int = typed(1, Integer(), "--mode",
                      help="With --from-split: K > 0 the K-th positive mode, K < 0 a negative one."),
    text: bool = TEXT, models_base_url: str = MODELS_BASE_URL,
    endpoint_deprecated: str | None = ENDPOINT_DEPRECATED, system_a: str = SYSTEM_A, system_b: str = SYSTEM_B,
    samples: int = SAMPLES, temperature: float = TEMPERATURE, max_tokens: int = MAX_TOKENS,
    judge: str = TEXT_JUDGE, judge_model: str = JUDGE_MODEL, judge_base_url: str = JUDGE_BASE_URL,
    text_model: str = TEXT_MODEL, alpha: float = ALPHA, quiet: bool = QUIET, no_report: bool = NO_REPORT,
) -> None:
    """CompCon: a visual attribute A's images show and B's don't, and the prompts that trigger it, in words.

    A VLM proposes attributes from image grids, CLIP verifies them over the bank, an LLM describes the
    diverging prompts and is refined by generating and scoring new prompts. --from-split starts from a
    PromptSplit mode. --text runs the same loop over two language models' answers (answer tables, or chat
    models that answer the new prompts too), verified by a chat judge or a text encoder. Each attribute is
    re-tested on prompts discovery never saw (--alpha).
    """
    from ..methods.compcon.image_sources import load_prompt_bank
    prompt_bank, description_prompts, chat_cache, generated_prompts, models_base_url = _new_spellings(
        ctx, locals())
    bank = load_prompt_bank(prompt_bank)
    link = {"api_key_env": api_key_env, "timeout": timeout, "retries": retries, "cache": chat_cache}
    check_urls(base_url=base_url, vlm_base_url=vlm_base_url, models_base_url=models_base_url,
               judge_base_url=judge_base_url)
    text_options = {"endpoint": models_base_url or base_url, "systems": {"A": system_a, "B": system_b},
                    "samples": samples, "temperature": temperature, "max_tokens": max_tokens, "judge": judge,
                    "judge_base_url": judge_base_url or base_url, "judge_model": judge_model or model,
                    "text_model": text_model, "seed": seed, "link": link}
    resolve, modality = _readers(text, text_options, models_base_url=models_base_url, judge_model=judge_model)
    source_a, source_b, seed_prompts, seeded_from = _sources(model_a, model_b, from_split, mode, resolve)
    estimator = _estimator(
        (base_url, model), (vlm_base_url or base_url, vlm_model or model), link, clip_model=None if text
        else clip_model, n_discovery_prompts=discovery_prompts, n_attributes=attributes,
        batch_size=description_prompts, n_generated=generated_prompts, iterations=iterations,
        quantile=quantile, null=null, min_fraction=min_fraction, seed=seed, alpha=alpha, modality=modality,
        template_dir=str(templates) if templates else None, progress=False if quiet else None)
    result = estimator.fit(source_a, source_b, bank, seed_prompts=seed_prompts, skip_missing=skip_missing,
                           seeded_from=seeded_from)
    written = save_outputs(result, out, report=not no_report, inputs={"A": source_a, "B": source_b},
                           quiet=quiet)
    print_compcon(result, None, quiet=quiet)
    print_written(written)


#: compcon's deprecated spellings: python name -> (the old flag, the current one, what it sets)
OLD_SPELLINGS = {
    "prompts_deprecated": ("--prompts", "--prompt-bank", "prompt bank"),
    "batch_size_deprecated": ("--batch-size", "--description-prompts", "prompts per description"),
    "cache_deprecated": ("--cache", "--chat-cache", "chat cache"),
    "generated_deprecated": ("--generated", "--generated-prompts", "prompts generated per iteration"),
    "endpoint_deprecated": ("--endpoint", "--models-base-url", "endpoint of chat models A and B"),
}


def _new_spellings(ctx: typer.Context, options: dict) -> tuple:
    """(prompt bank, description prompts, chat cache, generated prompts, models' endpoint) under their
    current names, taking the deprecated spellings in ``options`` (the command's arguments; with a note)."""
    check_urls(endpoint=options["endpoint_deprecated"])  # (a bad URL named by the flag the user typed)
    values = new_spellings(ctx, options, OLD_SPELLINGS)
    if values["prompt_bank"] is None:
        raise OptionError("--prompt-bank is required: the prompt bank (one prompt per line, .json list, "
                          ".jsonl/.csv with a 'prompt' field)")
    return tuple(values[k] for k in ("prompt_bank", "description_prompts", "chat_cache", "generated_prompts",
                                     "models_base_url"))


def _readers(text: bool, text_options: dict, *, models_base_url: str, judge_model: str) -> tuple:
    """(how models A and B are read from their arguments, the modality: None for images): with ``--text``
    answer tables or chat models and a text verifier; without it, the text-only options are refused (they
    would silently do nothing)."""
    if text:

        return text_parts(**text_options)
    systems = text_options["systems"]
    given = {"--system-a": systems["A"], "--system-b": systems["B"], "--models-base-url": models_base_url,
             "--judge-model": judge_model}
    text_only = {"samples": SAMPLES, "temperature": TEMPERATURE, "max_tokens": MAX_TOKENS,
                 "judge": TEXT_JUDGE, "text_model": TEXT_MODEL}  # given when not their default
    given |= {"--" + key.replace("_", "-"): text_options[key] != option.default
              for key, option in text_only.items()}
    for flag, value in given.items():
        if value:
            raise OptionError(f"{flag} applies to text models: add --text (A and B are answer tables or "
                              "chat:MODEL)")
    from ..methods.compcon.image_sources import resolve_source

    return {side: partial(resolve_source, name=side) for side in ("A", "B")}, None


def _sources(model_a: str, model_b: str, from_split: Path | None, mode: int, resolve: dict) -> tuple:
    """(source A, source B, seed prompts, where they came from): with --from-split, the mode's prompts,
    and for a negative mode the two models swapped (the reference is the one that shows more)."""
    seed_prompts, seeded_from, swapped = None, None, False
    if from_split is not None:
        from ..methods.compcon.pipeline import split_mode_prompts

        split = load_result(from_split)
        _check_split_inputs(split, from_split, {"test": model_a, "reference": model_b})
        seed_prompts, swapped, seeded_from = split_mode_prompts(split, mode)
        seeded_from["result"] = str(from_split)
    source_a = resolve["A"](model_a)
    source_b = resolve["B"](model_b)
    if swapped:
        source_a, source_b = source_b, source_a
    return source_a, source_b, seed_prompts, seeded_from


def _check_split_inputs(split, folder: Path, given: dict) -> None:
    """A, B given as files must be the test and reference sets --from-split's result was computed on (its
    recorded fingerprints): another model's answers would be described on that result's prompts."""
    from ..provenance import verify

    records = getattr(split, "inputs", None) or {}
    for side, arg in given.items():
        if Path(arg).exists() and side in records:
            try:
                verify(side, Path(arg), records)
            except InputError as exc:
                raise InputError(f"--from-split {folder}: {exc}") from None


#: compcon-eval's deprecated spellings: python name -> (the old flag, the current one, what it sets)
EVAL_OLD_SPELLINGS = {
    "cache_deprecated": ("--cache", "--chat-cache", "chat cache"),
    "model_deprecated": ("--model", "--judge-model", "judge model"),
    "base_url_deprecated": ("--base-url", "--judge-base-url", "judge endpoint"),
}


@app.command("compcon-eval")
def compcon_eval(
    ctx: typer.Context,
    predictions: Path = typer.Argument(
        ...,
        help="JSON object: ID^2 split id (or attribute) -> a CompCon "
        "result.json path, or {attributes: [...], descriptions: [[...]]}.",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Results folder (result.json is written there)."),
    judge_base_url: str = JUDGE_BASE_URL, judge_model: str = JUDGE_MODEL,
    base_url_deprecated: str | None = typer.Option(None, "--base-url", hidden=True,
                                                   help="Deprecated spelling of --judge-base-url."),
    model_deprecated: str | None = typer.Option(None, "--model", hidden=True,
                                                help="Deprecated spelling of --judge-model."),
    api_key_env: str = API_KEY_ENV, timeout: float = TIMEOUT, retries: int = RETRIES,
    k: int = typed(5, Integer(minimum=1), "--k", help="Top-k (besides top-1), >= 1."),
    chat_cache: Path | None = CHAT_CACHE, cache_deprecated: Path | None = CACHE_DEPRECATED,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars and no summary."),
    no_report: bool = NO_REPORT,
) -> None:
    """Appendix D evaluation: attribute and description scores (top-1, top-k) on ID^2 with a judge model."""
    from ..methods.compcon.evaluation import evaluate_predictions

    check_urls(base_url=base_url_deprecated)  # (a bad URL named by the flag the user typed)
    new = new_spellings(ctx, locals(), EVAL_OLD_SPELLINGS)
    chat_cache = new["chat_cache"]
    judge_model, judge_base_url = new["judge_model"] or DEFAULT_CHAT_MODEL, new["judge_base_url"]
    if not predictions.is_file():
        raise InputError(f"{predictions}: no such file")
    try:
        spec = json.loads(predictions.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{predictions}: not valid UTF-8 JSON ({exc})") from None
    if not isinstance(spec, dict) or not spec:
        raise InputError(f"{predictions}: expected a non-empty object split -> prediction")
    preds = {}
    for key, value in spec.items():
        if isinstance(value, str):
            path = Path(value) if Path(value).is_absolute() else predictions.parent / value
            value = load_result(path)
        elif isinstance(value, dict):
            _check_prediction(predictions, key, value)
        elif not hasattr(value, "attributes"):
            raise InputError(f"{predictions}: entry {key!r}: expected a result.json path or an object "
                             f"{{attributes: [...], descriptions: [[...]]}}, got {type(value).__name__}")
        preds[key] = value
    check_urls(judge_base_url=judge_base_url)
    judge = chat_client(judge_base_url or DEFAULT_BASE_URL, judge_model, api_key_env=api_key_env,
                        timeout=timeout, retries=retries, seed=0, cache=chat_cache)
    result = evaluate_predictions(preds, judge, k=k, progress=False if quiet else None)
    written = save_outputs(result, out, report=not no_report, quiet=quiet)
    if not quiet:
        console.print(json.dumps(result.summary, indent=1), markup=False)
    if result.failures:  # (a split the judge could not rate counts 0 in the scores above)
        warnings.warn(f"{len(result.failures)} split(s) the judge could not rate (scored 0, e.g. "
                      f"{result.failures[0]['split']!r}: {result.failures[0]['error']}); see 'failures' in "
                      "result.json", UserWarning, stacklevel=2)
    print_written(written)


def _check_prediction(source: Path, key: str, value: dict) -> None:
    """A hand-written prediction: lists of strings under 'attributes' and lists of lists under
    'descriptions' (a bare string would be rated character by character)."""
    attrs = value.get("attributes", [])
    if not isinstance(attrs, list) or not all(isinstance(a, str) for a in attrs):
        raise InputError(f"{source}: entry {key!r}: 'attributes' must be a list of strings, got "
                         f"{type(attrs).__name__}")
    descs = value.get("descriptions", [])
    if not isinstance(descs, list) or not all(
            isinstance(d, list) and all(isinstance(x, str) for x in d) for d in descs):
        raise InputError(f"{source}: entry {key!r}: 'descriptions' must be a list of lists of strings")
