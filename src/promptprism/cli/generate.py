"""``promptprism generate``: a prompts file -> a manifest of generations (text or images), resumable."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from ..errors import OptionError
from ._app import app, console, new_spellings, run_state
from ._options import (
    API_KEY_ENV,
    MAX_TOKENS,
    RETRIES,
    SAMPLES,
    SEED,
    TEMPERATURE,
    TIMEOUT,
    Integer,
    Number,
    check_urls,
    typed,
)

#: the options of one mode only, by the flag that names them: given in the other mode, they are refused
TEXT_ONLY = {"model": "--model", "system": "--system", "system_file": "--system-file",
             "temperature": "--temperature", "max_tokens": "--max-tokens", "api_key_env": "--api-key-env",
             "timeout": "--timeout", "retries": "--retries"}
IMAGE_ONLY = {"steps": "--steps", "guide_scale": "--guide-scale", "guide_rho": "--guide-rho"}


def _given(ctx: typer.Context, options: dict[str, str]) -> list[str]:
    """The flags of ``options`` the command line gave (not their defaults)."""
    from typer._click.core import ParameterSource

    return [flag for name, flag in options.items()
            if ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)]


@app.command("generate")
def generate(
    ctx: typer.Context,
    prompts: Path = typer.Argument(..., help="Prompts: .txt (one per line), .csv, .jsonl or .json (a list) "
                                             "with a 'prompt' column (optional 'id'; other columns are "
                                             "copied)."),
    out: Path = typer.Option(..., "--out", "-o", help="The manifest to write (.jsonl). An interrupted run "
                                                      "continues when started again with the same options."),
    base_url: str = typer.Option(None, "--base-url", help="Text: the OpenAI-compatible endpoint of --model "
                                                          "(http://127.0.0.1:8080/v1); no default."),
    endpoint_deprecated: str = typer.Option(None, "--endpoint", hidden=True,
                                            help="Deprecated spelling of --base-url."),
    model: str = typer.Option(None, "--model", help="Text: the model name sent to --base-url; no default."),
    system: str = typer.Option(None, "--system", help="Text: a system prompt."),
    system_file: Path = typer.Option(None, "--system-file", help="Text: a file holding the system prompt."),
    temperature: float = TEMPERATURE, max_tokens: int = MAX_TOKENS,
    api_key_env: str = API_KEY_ENV, timeout: float = TIMEOUT, retries: int = RETRIES,
    generator: str = typer.Option(None, "--generator", help="Images: a Python callable module:function, "
                                                            "fn(prompt[, seed=]) -> one image."),
    diffusers: Path = typer.Option(None, "--diffusers", help="Images: a diffusers pipeline saved in a local "
                                                             "folder (needs diffusers)."),
    steps: int = typed(30, Integer(), "--steps", help="Images: diffusers inference steps."),
    samples: int = SAMPLES,
    seed: int = SEED,
    concurrency: int = typed(1, Integer(), "--concurrency", help="Requests or calls in flight at once."),
    guide_reference: Path = typer.Option(None, "--guide-reference", help="Images: guide the sampler toward "
                                         "this reference (a manifest with prompt and image columns): "
                                         "PromptSplit guidance, docs/guidance.md; needs a generator that "
                                         "takes guidance=, e.g. promptprism.models.fashion:generate."),
    guide_scale: float = typed(1.0, Number(minimum=0), "--guide-scale",
                               help="Images: the guidance step size (>= 0)."),
    guide_rho: float = typed(0.0, Number(minimum=0), "--guide-rho",
                             help="Images: the Joint-Diversity weight (>= 0)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Generate outputs for every prompt and write a manifest that split/diversity/compcon read.

    Text through an OpenAI-compatible chat endpoint (--base-url, --model), or images through a Python
    callable (--generator) or a local diffusers pipeline (--diffusers).
    """
    from ..generate import generate_images, generate_text

    check_urls(endpoint=endpoint_deprecated, base_url=base_url)  # (a bad URL named by the flag typed)
    base_url = new_spellings(ctx, locals(), {"endpoint_deprecated": ("--endpoint", "--base-url",
                                                                       "endpoint")})["base_url"]
    common = dict(out=out, samples=samples, seed=seed, concurrency=concurrency,
                  progress=False if quiet else None)
    image_mode = generator is not None or diffusers is not None
    if image_mode and base_url is not None:
        raise OptionError("pass --base-url (text) or --generator/--diffusers (images), not both")
    if guide_reference is not None and not image_mode:
        raise OptionError("--guide-reference guides an image generator: pass --generator")
    _check_mode_options(ctx, generator, diffusers, guide_reference)
    if image_mode:
        guidance = (None if guide_reference is None
                    else _guidance_request(guide_reference, guide_scale, guide_rho))
        result = generate_images(prompts, generator=generator, diffusers=diffusers, steps=steps,
                                 guidance=guidance, **common)
    else:
        result = generate_text(prompts, base_url=base_url, model=model, temperature=temperature,
                               system_prompt=_system_prompt(base_url, model, system, system_file),
                               max_tokens=max_tokens, api_key_env=api_key_env or None, timeout=timeout,
                               retries=retries, **common)
    if not quiet:
        speed = result.stats.get("tokens_per_second")
        extra = f", {speed:.1f} tokens/s" if speed else ""
        console.print(f"{result.n_rows} rows ({result.n_generated} generated, {result.n_reused} kept from an "
                      f"earlier run) in {result.seconds:.1f} s{extra}")
    console.print(f"manifest: {escape(str(result.manifest))}")
    images = Path(result.manifest).with_name(f"{Path(result.manifest).stem}_images")
    run_state().summary = {
        "kind": "generate", "manifest": str(result.manifest), "rows": result.n_rows,
        "generated": result.n_generated, "skipped": result.n_reused, "seconds": result.seconds,
        "settings": result.settings, "stats": result.stats,
        "files": {"manifest": str(result.manifest), **({"images": str(images)} if images.is_dir() else {})}}


def _check_mode_options(ctx: typer.Context, generator: str | None, diffusers: Path | None,
                        guide_reference: Path | None) -> None:
    """Options of the other mode given on the command line are refused, never dropped in silence."""
    image_mode = generator is not None or diffusers is not None
    unused = _given(ctx, TEXT_ONLY if image_mode else IMAGE_ONLY)
    if image_mode and diffusers is None:
        unused += _given(ctx, {"steps": "--steps"})  # (a callable takes its own steps)
    if image_mode and guide_reference is None:
        unused += _given(ctx, {"guide_scale": "--guide-scale", "guide_rho": "--guide-rho"})
    if unused:
        mode = "text" if not image_mode else "--diffusers" if diffusers is not None else "--generator"
        hint = ("; --guide-scale and --guide-rho go with --guide-reference"
                if {"--guide-scale", "--guide-rho"} & set(unused) and image_mode else "")
        raise OptionError(f"{', '.join(unused)}: not used by {mode} generation; leave "
                          f"{'it' if len(unused) == 1 else 'them'} out{hint}")


def _system_prompt(base_url: str | None, model: str | None, system: str | None,
                   system_file: Path | None) -> str | None:
    """Text mode's checks, and its system prompt: --system, or --system-file's text."""
    if not base_url or not model:
        raise OptionError("text generation needs --base-url and --model (or pass --generator or "
                          "--diffusers for images)")
    if system is not None and system_file is not None:
        raise OptionError("pass --system or --system-file, not both")
    if system_file is None:
        return system
    if not system_file.is_file():
        raise OptionError(f"--system-file {system_file}: no such file")
    return system_file.read_text(encoding="utf-8")


def _guidance_request(path: Path, scale: float, rho: float):
    """The reference manifest's (prompt, image) pairs as a GuidanceRequest (validated before generating)."""
    import numpy as np

    from ..data.imageio import read_rgb
    from ..data.manifest import read_manifest
    from ..errors import InputError
    from ..guidance import GuidanceRequest

    rows = read_manifest(path).rows
    if any(r.prompt is None or r.image is None for r in rows):
        raise InputError(f"--guide-reference {path}: every row needs a text prompt and an image")
    images = [np.asarray(read_rgb(r.image, r.where)) for r in rows]
    return GuidanceRequest([r.prompt for r in rows], images, scale=scale, rho=rho, source=str(path))
