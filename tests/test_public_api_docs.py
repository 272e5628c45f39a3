"""Every public definition has a docstring: a walk over the public API of every public module.

Public: modules and names without a leading underscore; for a module, the functions and classes it defines
(not those it imports); for a class, the methods and properties it defines itself (dunder methods other
than ``__init__`` / ``__call__`` excepted; a dataclass's generated methods excepted). ``BASELINE`` lists the
definitions that had no docstring when this test was written: it may only shrink (a name in it that gained
a docstring is reported, so it can be removed); a definition outside it without a docstring fails.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import promptprism

#: modules whose import needs an optional dependency that may be absent
OPTIONAL = {"promptprism.guidance": "torch"}


def _modules():
    for info in pkgutil.walk_packages(promptprism.__path__, "promptprism."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        needs = OPTIONAL.get(info.name)
        if needs is not None:
            try:
                importlib.import_module(needs)
            except ImportError:
                continue
        yield importlib.import_module(info.name)


def _own(member, owner) -> bool:
    return inspect.getmodule(member) is owner


def public_definitions() -> dict[str, object]:
    """``{qualified name: object}`` for every public function, class, method and property."""
    out: dict[str, object] = {"promptprism": promptprism}
    for mod in _modules():
        out[mod.__name__] = mod
        for name, obj in vars(mod).items():
            if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if not _own(obj, mod):
                continue
            out[f"{mod.__name__}.{name}"] = obj
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and attr not in ("__init__", "__call__"):
                        continue
                    func = member.fget if isinstance(member, property) else member
                    func = getattr(func, "__func__", func)  # classmethod / staticmethod
                    if not inspect.isfunction(func) or inspect.getmodule(func) is not mod:
                        continue
                    if attr == "__init__" and (obj.__doc__ or "").strip():
                        continue  # documented on the class
                    out[f"{mod.__name__}.{name}.{attr}"] = func
    return out


def _documented(obj) -> bool:
    return bool((inspect.getdoc(obj) if not inspect.isclass(obj) else obj.__dict__.get("__doc__")) or "")


def missing_docstrings() -> list[str]:
    """The public definitions without a docstring."""
    return sorted(name for name, obj in public_definitions().items() if not _documented(obj))


BASELINE: set[str] = {
    "promptprism.cli.compcon.LazyClip.embed_images",
    "promptprism.cli.compcon.LazyClip.embed_texts",
    "promptprism.cli.compcon.print_compcon",
    "promptprism.embed.base.Encoder.encode_images",
    "promptprism.embed.base.Encoder.encode_texts",
    "promptprism.embed.base.as_float32",
    "promptprism.embed.base.check_batch_size",
    "promptprism.embed.base.l2_normalize",
    "promptprism.embed.clip.CLIPEncoder",
    "promptprism.embed.clip.CLIPEncoder.encode_images",
    "promptprism.embed.clip.CLIPEncoder.encode_texts",
    "promptprism.embed.pipeline.item_key",
    "promptprism.io.atomic_write_bytes",
    "promptprism.io.atomic_write_text",
    "promptprism.kernels.features.JointFeatureMap.describe",
    "promptprism.kernels.features.JointFeatureMap.transform",
    "promptprism.kernels.features.ProductRandomFourierFeatures.describe",
    "promptprism.kernels.features.ProductRandomFourierFeatures.dim",
    "promptprism.kernels.features.ProductRandomFourierFeatures.transform",
    "promptprism.kernels.features.ProductRandomProjection.describe",
    "promptprism.kernels.features.ProductRandomProjection.dim",
    "promptprism.kernels.features.ProductRandomProjection.transform",
    "promptprism.kernels.features.RandomFourierFeatures.dim",
    "promptprism.kernels.features.RandomFourierFeatures.transform",
    "promptprism.methods.compcon.clients.ChatClient.url",
    "promptprism.methods.compcon.clients.ChatModel.chat",
    "promptprism.methods.compcon.embedding.ClipEmbedder.embed_images",
    "promptprism.methods.compcon.embedding.ClipEmbedder.embed_texts",
    "promptprism.methods.compcon.templates.render",
    "promptprism.methods.promptsplit.Mode.from_dict",
    "promptprism.methods.promptsplit.ModeStats.empty",
    "promptprism.methods.promptsplit.ModeStats.merge",
    "promptprism.methods.promptsplit.ModeStats.update",
    "promptprism.methods.promptsplit.PromptSplitResult.from_dict",
    "promptprism.methods.promptsplit.PromptSplitResult.negative_modes",
    "promptprism.methods.promptsplit.PromptSplitResult.positive_modes",
    "promptprism.methods.regions.PixelCKAAccumulator.merge",
    "promptprism.methods.regions.RegionCMS.fit_compare",
    "promptprism.methods.regions.RegionsResult.to_dict",
    "promptprism.methods.scendi.Cluster.from_dict",
    "promptprism.methods.scendi.PromptNullifier.fit_transform",
    "promptprism.methods.scendi.ScendiComparison.from_dict",
    "promptprism.methods.scendi.ScendiComparison.table",
    "promptprism.methods.scendi.ScendiFeatureMaps.describe",
    "promptprism.methods.scendi.ScendiFeatureMaps.dim_output",
    "promptprism.methods.scendi.ScendiFeatureMaps.dim_prompt",
    "promptprism.methods.scendi.ScendiFeatureMaps.outputs",
    "promptprism.methods.scendi.ScendiFeatureMaps.prompts",
    "promptprism.methods.scendi.ScendiResult.from_dict",
    "promptprism.report.common.finish",
    "promptprism.report.common.mapping",
    "promptprism.report.common.notes_block",
    "promptprism.report.common.text_card",
    "promptprism.report.figures.to_png",
    "promptprism.report.generic.render_generic",
    "promptprism.report.html.Page.add",
    "promptprism.report.html.Page.render",
    "promptprism.report.html.cards",
    "promptprism.report.html.data_uri",
    "promptprism.report.html.details",
    "promptprism.report.html.kv_table",
    "promptprism.report.html.link",
    "promptprism.report.html.note",
    "promptprism.report.html.p",
    "promptprism.report.html.section",
    "promptprism.report.html.snippet",
    "promptprism.report.html.stat",
    "promptprism.report.summary.summary",
    "promptprism.report.summary.summary_html",
    "promptprism.results.Result.from_dict",
    "promptprism.results.Result.from_json",
    "promptprism.results.Result.to_dict",
    "promptprism.results.Result.to_json",
    "promptprism.scale.runner.DaskRunner.map_reduce",
    "promptprism.scale.runner.LocalRunner.map_reduce",
    "promptprism.scale.runner.Runner",
    "promptprism.scale.runner.Runner.map_reduce",
    "promptprism.stats.accumulators.CovarianceAccumulator.merge",
    "promptprism.stats.accumulators.CovarianceAccumulator.reset",
    "promptprism.stats.accumulators.CovarianceAccumulator.update",
    "promptprism.stats.accumulators.GroupSumAccumulator.merge",
    "promptprism.stats.accumulators.GroupSumAccumulator.update",
    "promptprism.stats.accumulators.MinMaxAccumulator.merge",
    "promptprism.stats.accumulators.MinMaxAccumulator.update",
    "promptprism.stats.accumulators.SumsAccumulator.merge",
    "promptprism.stats.accumulators.SumsAccumulator.update",
    "promptprism.stats.accumulators.TopKAccumulator.merge",
    "promptprism.stats.accumulators.TopKAccumulator.update",
}


def test_the_walk_sees_the_public_api():
    names = public_definitions()
    assert "promptprism.methods.promptsplit.PromptSplit" in names
    assert "promptprism.data.paired.PairedSet.dim_prompt" in names  # a property
    assert "promptprism.data.loaders.load_paired" in names
    assert "promptprism.data.paired.np" not in names  # imported, not defined there
    assert not any(n.split(".")[-1].startswith("_") and not n.endswith(("__init__", "__call__"))
                   for n in names)


def test_every_public_definition_has_a_docstring():
    missing = missing_docstrings()
    new = [n for n in missing if n not in BASELINE]
    assert not new, f"{len(new)} public definitions without a docstring:\n" + "\n".join(new)


def test_the_baseline_only_shrinks():
    fixed = sorted(BASELINE - set(missing_docstrings()))
    if fixed:
        pytest.fail("documented now, remove from BASELINE: " + ", ".join(fixed))
