"""The summary page of ``promptprism demo --trained-generator``: every experiment's table, with its own
report's folder named (each experiment also writes a full report of its method there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .common import finish
from .html import Page, el, figure, note, p, table

INTRO = ("Two diffusion models of Fashion-MNIST were trained here and are examined by promptprism's methods: "
         "a text-conditioned one at 28x28 pixels (free-text prompts such as 'a dark sandal' through MiniLM, "
         "cross-attention, classifier-free guidance; its sections are named 'text'), with a second copy "
         "fine-tuned with one attribute swapped on one class, and a small class-prompted one at 16x16 pixels "
         "(a diffusers UNet2DModel with a null class), whose training checkpoints are below. Every set of "
         "samples uses the same seeds, so two sets differ only by the model or the sampling setting that "
         "made them.")


def render_generator_demo(summary: dict, folder: str | Path | None = None) -> str:
    """The page for ``summary`` (what ``run_fashion_demo`` writes to summary.json); sample grids named in
    ``summary['figures']`` are read from ``folder`` and embedded."""
    page = Page("A diffusion model trained here, through promptprism's methods",
                f"{len(summary.get('checkpoints', []))} checkpoints, {summary.get('per_prompt')} samples per "
                f"prompt, {summary.get('steps')} DDIM steps, seed {summary.get('seed')}"
                + (f" ({summary['sizes']} sizes)" if summary.get("sizes") else ""))
    page.add("What this is", p(INTRO), _figures(summary, folder))
    for section in summary.get("sections", []):
        children: list[Any] = [p(section["text"])]
        numeric = range(1, len(section["headers"]))
        children.append(table(section["headers"], section["rows"], numeric=numeric))
        for name, caption in section.get("figures", []) if folder is not None else []:
            if (Path(folder) / name).is_file():
                children.append(figure((Path(folder) / name).read_bytes(), alt=caption, caption=caption))
        if section.get("folder"):
            children.append(note(f"The full report of this method: {section['folder']}/report.html "
                                 f"(its result: {section['folder']}/result.json)."))
        page.add(section["title"], *children)
    unfinished = ("" if summary.get("complete", True) else
                  " The run had not finished when this page was written: the sections above are the ones "
                  "finished by then.")
    page.add("Run", p(f"Total {summary.get('seconds', 0):.0f} s, of which sampling "
                      f"{summary.get('sampling_seconds', 0):.0f} s.{unfinished}"))
    return finish(page, kind="generator demo")


def _figures(summary: dict, folder: str | Path | None) -> Any:
    out = []
    for name, caption in summary.get("figures", {}).items():
        path = Path(folder) / name if folder is not None else None
        if path is not None and path.is_file():
            out.append(figure(path.read_bytes(), alt=caption, caption=caption))
    return el("div", out) if out else None
