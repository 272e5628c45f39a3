"""The generator demo's quality verdicts (issue 43's image case): where the two generators differ, which one
is closer to the real Fashion-MNIST test images.

After the split section (:func:`.fashion.split_section`, whose sets and result it reads from
``ctx.cache['split']``), each significant mode of the split and each of the ten class prompts is a finding;
on each, both generators' samples are scored against the real test images **of the same prompts**
(precision's indicator on pixels, k = :data:`NEAREST_K`) and compared by the within-prompt permutation test,
Holm over every finding (:class:`~promptprism.methods.metrics.FindingQuality`). The verdicts are written into
the split folder's result.json (``quality``: the mode cards of its report show them) and into the summary as
a table. The planted second generator, which draws sandals for "a photo of a sneaker", must come out farther
from the real sneakers and level with the first elsewhere.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .fashion import DemoContext, DemoSection, with_interval

NEAREST_K = 5
PERMUTATIONS = 2000


def class_findings() -> list[dict]:
    """One finding per class prompt: ``{'id': "prompt 'a photo of a sneaker'", 'prompts': [...]}``."""
    from ..models.fashion import class_prompts

    return [{"id": f"prompt '{p}'", "prompts": [p]} for p in class_prompts()]


def real_test_set(ctx: DemoContext) -> Any:
    """The demo's real test images as a paired set: each image answers its class's prompt (pixels in
    [0, 1], one-hot prompt embeddings, as :meth:`.fashion.DemoContext.paired`)."""
    from ..data.paired import PairedSet
    from ..models.fashion import class_prompts

    prompts = class_prompts()
    labels = np.asarray(ctx.real_test_labels, dtype=int)
    images = np.asarray(ctx.real_test)
    return PairedSet(np.eye(10)[labels], images.reshape(len(images), -1) / 255.0,
                     prompts=[prompts[c] for c in labels], name="real test images")


def generator_verdicts(split: Any, test: Any, reference: Any, real: Any, *, seed: int, bootstrap: int,
                       permutations: int = PERMUTATIONS) -> dict[str, Any]:
    """The closeness record of the split's two sets against ``real`` on every significant mode and every
    class prompt (module docstring): :class:`~promptprism.methods.metrics.FindingQuality` with
    ``nearest_k`` = :data:`NEAREST_K`, Holm over all of them."""
    from ..methods.metrics import FindingQuality

    estimator = FindingQuality(closeness="precision", nearest_k=NEAREST_K, permutations=permutations,
                               bootstrap=max(bootstrap, 50), seed=seed)
    return estimator.fit([*split.findings(), *class_findings()], {"test": test, "reference": reference}, real)


def verdicts_section(ctx: DemoContext) -> DemoSection | None:
    """The quality verdicts of the split section's two generators (module docstring); None without it."""
    done = ctx.cache.get("split")
    if done is None:
        return None
    record = generator_verdicts(done["result"], done["test"], done["reference"], real_test_set(ctx),
                                seed=ctx.seed, bootstrap=ctx.options.get("bootstrap", 200))
    ctx.save(dataclasses.replace(done["result"], quality=record), ctx.out / "split", report=ctx.report,
             quiet=True, images=done["images"])
    names = {"test": done["test"].name, "reference": done["reference"].name}
    rows = []
    for e in record["findings"]:
        cells = [with_interval(e["models"][s]["mean"], e["models"][s]["interval"]) for s in names]
        closer = names.get(e["closer"], "neither") if e["closer"] else "neither"
        if e["p_adjusted"] is None:  # (no prompt holds both generators' samples)
            closer = "not tested"
        rows.append([e["id"], *cells, "–" if e["p_adjusted"] is None else f"{e['p_adjusted']:.2g}", closer])
    called = [e for e in record["findings"] if e["closer"]]
    tested = sum(e["p_value"] is not None for e in record["findings"])
    said = "; ".join(f"{e['id']}: {names[e['closer']]} closer" for e in called) or "no finding has a verdict"
    text = (f"On each significant mode of the split and on each class prompt, both generators' samples "
            f"scored against the real test images of the same prompts ({len(ctx.real_test)} in all): "
            f"precision's "
            f"indicator on pixels (k = {NEAREST_K}), within-prompt permutation test ({PERMUTATIONS} "
            f"permutations), Holm over the {tested} findings tested (alpha "
            f"{record['alpha']:g}). {said}. Closeness to real images is the quality here because the real "
            "test images are what each prompt asks for.")
    headers = ["finding", f"precision of {names['test']}", f"precision of {names['reference']}",
               "p (Holm)", "closer to the real images"]
    return DemoSection("Who is closer to the real images where they differ", text, headers, rows, "split")
