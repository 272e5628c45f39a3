"""The paper's prompts (appendix C.1, D.1, D.2) as editable text templates, and their text-to-text
variants (``*_text``: the same steps asked about language-model answers instead of images).

They ship as package data in ``prompts/``; pass ``template_dir`` (CLI ``--templates DIR``) to use edited
copies: any ``<name>.txt`` found there replaces the shipped one. Fields are ``str.format`` fields
(``{prompt}``, ``{attribute}``...); literal braces are doubled.
"""

from __future__ import annotations

import os
import string
from importlib import resources
from pathlib import Path

from ...errors import InputError

#: template name -> the fields it must use
FIELDS: dict[str, frozenset[str]] = {
    "attribute_discovery": frozenset({"prompt"}),
    "description": frozenset({"attribute", "diverging_prompts", "non_diverging_prompts"}),
    "prompt_generation": frozenset({"num_prompts", "description", "attribute"}),
    "attribute_scoring": frozenset({"sets"}),
    "description_scoring": frozenset({"sets"}),
    "dataset_generation": frozenset({"semantic_attribute_set"}),
    # text CompCon (LLM answers): the same three steps, written for answers instead of images
    "attribute_discovery_text": frozenset({"prompt", "answers_a", "answers_b"}),
    "description_text": frozenset({"attribute", "diverging_prompts", "non_diverging_prompts"}),
    "prompt_generation_text": frozenset({"num_prompts", "description", "attribute"}),
}


def _fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def load_templates(template_dir: str | os.PathLike | None = None) -> dict[str, str]:
    """name -> template text; edited copies in ``template_dir`` override the shipped ones."""
    out: dict[str, str] = {}
    pkg = resources.files(__package__).joinpath("prompts")
    for name in FIELDS:
        out[name] = pkg.joinpath(f"{name}.txt").read_text(encoding="utf-8")
    if template_dir is not None:
        d = Path(template_dir)
        if not d.is_dir():
            raise InputError(f"{d}: no such template folder")
        for name in FIELDS:
            f = d / f"{name}.txt"
            if f.exists():
                out[name] = f.read_text(encoding="utf-8")
    for name, text in out.items():
        try:
            fields = _fields(text)
        except ValueError as exc:
            raise InputError(
                f"template {name}.txt: unbalanced braces ({exc}); write literal braces as {{{{ }}}}"
            ) from None
        unknown = fields - FIELDS[name]
        if unknown:
            raise InputError(
                f"template {name}.txt: unknown field(s) {sorted(unknown)}; allowed: {sorted(FIELDS[name])}"
            )
    return out


def render(template: str, **fields: object) -> str:
    """The template with its ``{field}`` placeholders filled in."""
    return template.format(**fields)
