"""Section 5.4 of the PromptSplit paper on the Fashion-MNIST generator: PromptSplit guidance over a range of
scales, a section of the trained-generator demo (``promptprism demo --trained-generator``, whose command line
reads its options into :class:`SweepOptions`) and of ``benchmarks/guidance_fashion.py``.

The reference is what the base model never makes: its own samples with a white frame on three *guided*
classes (trouser, sandal, bag), plain on three *control* classes (T-shirt, sneaker, dress)
(``models.fashion_guidance``). Samples are guided toward it on pixels with one-hot class prompts, and
evaluated in a space the guidance never saw, EfficientNet-Lite0 features, against a second, disjoint
reference of the same kind: the PromptSplit distance, the significant modes (permutation test) and the
prompts they sit on, a per-prompt distance (guided vs control prompts), k-NN accuracy (real training
images as neighbours) and the Frechet distance to real test images of the six classes, Scendi diversity
(rho = 0 vs rho > 0). Every seed draws new samples, new references and new permutations.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..io import atomic_write_bytes, atomic_write_text
from .fashion import DemoSection, grid_png

EVAL_SIZE = 64  #: EfficientNet-Lite0's input side for the evaluation (16 px images upscaled)
REAL_TEST_EVERY, TRAIN_NEIGHBOURS = 8, 1000
#: the six prompts sampled per scale and seed (three guided, three control), and the memory one guided sample
#: takes while the section runs (its pixels, upscaled copy and embeddings: a generous bound)
GUIDED_PROMPTS, GUIDE_BYTES_PER_IMAGE = 6, 64 * 1024


@dataclass(frozen=True)
class SweepOptions:
    """The sizes of the experiment: guidance ``scales`` (0 = unguided), one more row at ``rho_scale`` with
    Joint-Diversity weight ``rho``, and one at ``rho_scale`` with the other gradient (``compare_gradient``:
    through the UNet when the curve holds the prediction constant, and the other way round);
    ``per_prompt`` samples of each of the six prompts, ``reference_per_class`` reference images per class
    and set, ``steps`` DDIM steps, CFG ``cfg``, the step ``schedule``, the gradient ``through_model``,
    ``seeds``, ``permutations`` of PromptSplit's test."""

    scales: tuple[float, ...] = (0.0, 50.0, 100.0, 200.0, 400.0)
    rho: float = 0.2
    rho_scale: float = 200.0
    per_prompt: int = 16
    reference_per_class: int = 40
    steps: int = 20
    cfg: float = 2.0
    schedule: str = "constant"
    through_model: bool = False  #: the demo's curve holds the prediction constant (see docs/guidance.md)
    compare_gradient: bool = True
    seeds: tuple[int, ...] = (0,)
    permutations: int = 200
    reference: str = "model"


def runs(options: SweepOptions) -> list[tuple[float, float, bool]]:
    """(scale, rho, through_model) of every run of one seed: the curve, then the rho row and the other
    gradient's row at ``rho_scale``."""
    out = [(float(s), 0.0, options.through_model) for s in options.scales]
    if options.rho > 0:
        out.append((options.rho_scale, options.rho, options.through_model))
    if options.compare_gradient and options.rho_scale > 0:
        out.append((options.rho_scale, 0.0, not options.through_model))
    return out


def per_prompt_distance(gen: np.ndarray, gen_cls: np.ndarray, ref: np.ndarray, ref_cls: np.ndarray,
                        sigma: float) -> dict[int, float]:
    """PromptSplit distance of each prompt's samples alone to that prompt's reference rows (with one prompt
    it is ||C_gen - C_ref||_F^2 of the output kernel, eq. 3 of the paper)."""
    import torch

    from ..guidance import promptsplit_distance

    out = {}
    for c in np.unique(ref_cls):
        a, b = torch.tensor(gen[gen_cls == c]), torch.tensor(ref[ref_cls == c])
        out[int(c)] = promptsplit_distance(a, torch.ones((len(a), 1), dtype=a.dtype), b,
                                           torch.ones((len(b), 1), dtype=b.dtype), sigma_output=sigma,
                                           sigma_prompt=1.0).item()
    return out


def evaluate(gen_feats: np.ndarray, gen_cls: np.ndarray, ref_feats: np.ndarray, ref_cls: np.ndarray, *,
             seed: int, permutations: int) -> dict:
    """PromptSplit of the generations against the evaluation reference: distance, significant modes and the
    prompt each sits on (its top prompt), per-prompt distances."""
    from ..data.paired import PairedSet
    from ..kernels import median_pairwise_distance
    from ..methods.promptsplit import PromptSplit
    from ..models.fashion import CLASS_NAMES

    onehot, names = np.eye(len(CLASS_NAMES)), np.array(CLASS_NAMES)
    res = PromptSplit(kernel="gaussian", method="exact", sigma_prompt=0.5, sigma_output="median",
                      permutations=permutations, seed=seed, n_modes=6).fit(
        PairedSet(onehot[gen_cls], gen_feats, prompts=list(names[gen_cls]), name="generated"),
        PairedSet(onehot[ref_cls], ref_feats, prompts=list(names[ref_cls]), name="reference"))
    modes = [{"side": m.side, "rank": m.rank, "eigenvalue": m.eigenvalue, "p_value": m.p_value,
              "prompt": m.top_prompts[0].prompt if m.top_prompts else None}
             for m in res.modes if m.significant]
    sigma = median_pairwise_distance(np.concatenate([gen_feats, ref_feats]), seed=seed)
    per = per_prompt_distance(gen_feats, gen_cls, ref_feats, ref_cls, sigma)
    return {"distance": float(res.distance), "significant_modes": modes,
            "per_prompt": {CLASS_NAMES[c]: v for c, v in per.items()}}


def diversity(gen_feats: np.ndarray, gen_cls: np.ndarray, seed: int) -> dict:
    """Scendi (model-driven diversity) and Vendi of the generations."""
    from ..data.paired import PairedSet
    from ..methods.scendi import Scendi

    r = Scendi(seed=seed).fit(PairedSet(np.eye(10)[gen_cls], gen_feats, name="generated"))
    return {"scendi": float(r.scendi), "vendi": float(r.vendi)}


class EvaluationSpace:
    """EfficientNet-Lite0 features (64 px) of real images of the six classes: test images (every 8th) for
    the Frechet distance, ``TRAIN_NEIGHBOURS`` training images (a seeded draw) as the k-NN's neighbours."""

    def __init__(self, image_size: int, classes: np.ndarray, seed: int) -> None:
        from ..embed.efficientnet import EfficientNetLite0Encoder
        from ..models.fashion import real_images

        self.encoder = EfficientNetLite0Encoder(size=EVAL_SIZE)
        x, y = real_images("test", image_size)
        keep = np.isin(y, classes)
        self.test, self.test_cls = self.embed(x[keep][::REAL_TEST_EVERY]), y[keep][::REAL_TEST_EVERY]
        tx, ty = real_images("train", image_size)
        pick = np.random.default_rng(seed).permutation(len(ty))[:TRAIN_NEIGHBOURS]
        self.train, self.train_cls = self.embed(tx[pick]), ty[pick]

    def embed(self, images: np.ndarray) -> np.ndarray:
        """(n, 1280) L2-normalised features of uint8 images (n, s, s)."""
        return self.encoder.encode_images(list(images))

    def quality(self, feats: np.ndarray, classes: np.ndarray) -> dict:
        """5-NN accuracy per prompt and the Frechet distance to the real test features."""
        from ..methods.metrics.frechet import frechet_distance
        from ..models.fashion import CLASS_NAMES
        from ..models.quality import knn_accuracy

        acc = knn_accuracy(feats, classes, self.train, self.train_cls, k=5)
        return {"accuracy": {CLASS_NAMES[c]: v for c, v in acc.items()},
                "frechet": float(frechet_distance(feats, self.test))}


def sweep(checkpoint: Any, options: SweepOptions, *, space: EvaluationSpace | None = None,
          on_row: Any = None) -> list[dict]:
    """Every run of :func:`runs` for every seed: one row (dict) each; ``on_row(rows)`` after each."""
    from ..models import fashion_guidance as fg

    classes = np.repeat(fg.section_classes(), options.per_prompt)
    space = space or EvaluationSpace(checkpoint.image_size, fg.section_classes(), options.seeds[0])
    rows: list[dict] = []
    for seed in options.seeds:
        guide_ref, eval_ref = (
            fg.real_reference_sets(checkpoint.image_size, options.reference_per_class, seed)
            if options.reference == "real" else
            fg.model_reference_sets(checkpoint, options.reference_per_class, seed, options.steps,
                                    cfg=options.cfg))
        eval_feats = space.embed(eval_ref[0])
        for scale, rho, through in runs(options):
            images, secs = fg.guided_samples(checkpoint, classes, guide_ref, scale=scale, rho=rho,
                                             steps=options.steps, seed=seed, cfg=options.cfg,
                                             through_model=through, schedule=options.schedule)
            feats = space.embed(images)
            rows.append({"seed": seed, "scale": scale, "rho": rho, "through_model": through,
                         "schedule": options.schedule, "seconds": secs,
                         **evaluate(feats, classes, eval_feats, eval_ref[1], seed=seed,
                                    permutations=options.permutations),
                         **space.quality(feats, classes), **diversity(feats, classes, seed),
                         "frame_brightness": frame_brightness(images, classes)})
            if on_row is not None:
                on_row(rows, images)
    return rows


def frame_brightness(images: np.ndarray, classes: np.ndarray) -> dict:
    """Mean frame-pixel value (0-255) of the guided and the control prompts' samples (target: 255 / dark)."""
    from ..models.fashion_guidance import CONTROL, FRAME, GUIDED, section_classes

    mask = np.zeros(images.shape[1:], bool)
    mask[:FRAME], mask[-FRAME:], mask[:, :FRAME], mask[:, -FRAME:] = True, True, True, True
    return {kind: float(images[np.isin(classes, section_classes(names, ()))][:, mask].mean())
            for kind, names in (("guided", GUIDED), ("control", CONTROL))}


def _mean(row: dict, key: str, names: tuple[str, ...]) -> float:
    return float(np.mean([row[key][n] for n in names]))


TABLE_HEADERS = ["seed", "scale", "rho", "gradient", "PromptSplit distance", "significant modes: prompts",
                 "distance guided / control", "5-NN acc. guided / control", "Frechet", "Scendi",
                 "frame guided / control"]


def table_rows(rows: list[dict]) -> list[list[str]]:
    """One table row per run (see :data:`TABLE_HEADERS`)."""
    from ..models.fashion_guidance import CONTROL, GUIDED

    out = []
    for r in rows:
        sig = r["significant_modes"]
        where = ", ".join(sorted({str(m["prompt"]) for m in sig})) or "-"
        grad = "-" if r["scale"] == 0 else ("through UNet" if r["through_model"] else "prediction constant")
        grad += f", {r['schedule']} schedule" if r["scale"] and r["schedule"] != "constant" else ""
        out.append([str(r["seed"]), f"{r['scale']:g}", f"{r['rho']:g}", grad, f"{r['distance']:.4f}",
                    f"{len(sig)}: {where}",
                    f"{_mean(r, 'per_prompt', GUIDED):.3f} / {_mean(r, 'per_prompt', CONTROL):.3f}",
                    f"{_mean(r, 'accuracy', GUIDED):.2f} / {_mean(r, 'accuracy', CONTROL):.2f}",
                    f"{r['frechet']:.3f}", f"{r['scendi']:.2f}",
                    f"{r['frame_brightness']['guided']:.0f} / {r['frame_brightness']['control']:.0f}"])
    return out


def modes_on(row: dict, names: tuple[str, ...]) -> int:
    """The number of significant modes whose top prompt is one of ``names``."""
    return sum(m["prompt"] in names for m in row["significant_modes"])


def curve_png(rows: list[dict], options: SweepOptions) -> bytes:
    """Over the guidance scale (rho = 0, the sweep's gradient), left: the per-prompt distance to the
    reference of the guided and the control prompts; right: the significant modes on each; a line through
    the mean over seeds, a dot per seed."""
    from ..models.fashion_guidance import CONTROL, GUIDED
    from ..report.canvas import new_figure, to_png

    curve = [r for r in rows if r["rho"] == 0 and (r["through_model"] == options.through_model
                                                   or r["scale"] == 0)]
    scales = sorted({r["scale"] for r in curve})
    fig = new_figure(8.0, 3.2)
    panels = (("distance to the reference", lambda r, n: _mean(r, "per_prompt", n)),
              ("significant modes", modes_on))
    for k, (label, value) in enumerate(panels):
        ax = fig.add_subplot(1, 2, k + 1)
        for names, name, color in ((GUIDED, "guided prompts", "C0"), (CONTROL, "control prompts", "C1")):
            ys = [[value(r, names) for r in curve if r["scale"] == s] for s in scales]
            ax.plot(scales, [np.mean(y) for y in ys], "-", color=color, label=name)
            ax.plot([s for s, y in zip(scales, ys, strict=True) for _ in y], [v for y in ys for v in y], "o",
                    color=color, ms=3)
        ax.set_xlabel("guidance scale")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
    ax.legend(fontsize=7, frameon=False)
    return to_png(fig)


def write_results(out: Path, rows: list[dict], options: SweepOptions) -> None:
    """result.json (every row, the options, the seeds), table.md and curve.png under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "result.json", json.dumps({"config": asdict(options), "seed": list(options.seeds),
                                                       "rows": rows}, indent=2) + "\n")
    lines = ["| " + " | ".join(TABLE_HEADERS) + " |", "|" + "---|" * len(TABLE_HEADERS)]
    lines += ["| " + " | ".join(r) + " |" for r in table_rows(rows)]
    atomic_write_text(out / "table.md", "\n".join(lines) + "\n")
    atomic_write_bytes(out / "curve.png", curve_png(rows, options))


def section_text(rows: list[dict], options: SweepOptions) -> str:
    """The section's sentence: the set-up and where the significant modes sit at each scale."""
    from ..models.fashion_guidance import FRAME

    gradient = "through the UNet" if options.through_model else "with the noise prediction held constant"
    return (f"PromptSplit guidance (paper, eq. 5 and section 5.4) toward a reference the model never makes: "
            f"its own samples with a white {FRAME}-pixel frame on trouser, sandal and bag, plain on T-shirt, "
            f"sneaker and dress. Guidance on pixels with one-hot class prompts, the gradient {gradient}, "
            f"{options.schedule} schedule, {options.per_prompt} samples per prompt, "
            f"{options.reference_per_class} reference images per class; evaluated on EfficientNet-Lite0 "
            f"features against a second, disjoint reference (PromptSplit's permutation test, "
            f"{options.permutations} permutations; significant modes named by their top prompt), 5-NN "
            f"accuracy on real training images, Frechet distance to real test images, Scendi diversity; "
            f"'frame' is the mean frame pixel (0-255). Seeds {', '.join(map(str, options.seeds))}: every "
            f"seed is its own row. The modes should vanish on the guided prompts and not appear on the "
            f"others.")


def guidance_section(ctx: Any, options: SweepOptions | None = None) -> Any:
    """The demo's section (an ``extra`` experiment of ``run_fashion_demo``): the sweep on the final
    checkpoint, written to
    ``guidance/`` (result.json, table.md, curve.png) and the curve shown in the summary."""
    from ..models.fashion import load_checkpoint

    options = options or ctx.options.get("guidance")
    if options is None:
        return None
    checkpoint = load_checkpoint(ctx.training[-1])
    shown: dict[float, np.ndarray] = {}

    def keep(rows: list[dict], images: np.ndarray) -> None:
        write_results(ctx.out / "guidance", rows, options)
        r = rows[-1]
        if r["seed"] == options.seeds[0] and r["rho"] == 0 and (r["through_model"] == options.through_model
                                                                 or r["scale"] == 0):
            shown[r["scale"]] = images

    rows = sweep(checkpoint, options, on_row=keep)
    scales = sorted(shown)
    grid = grid_png([shown[s] for s in scales], options.per_prompt, min(4, options.per_prompt), n_rows=6,
                    gap=128)  # grey: the frames are white
    atomic_write_bytes(ctx.out / "guidance" / "samples.png", grid)
    figures = [["guidance/curve.png", "Over the guidance scale (rho = 0): the per-prompt distance to the "
                                      "reference and the significant modes on the guided and on the control "
                                      "prompts (a line through the mean over seeds, a dot per seed)."],
               ["guidance/samples.png", f"Samples at guidance scales {', '.join(f'{s:g}' for s in scales)} "
                                        f"(blocks, left to right; seed {options.seeds[0]}); rows: trouser, "
                                        "sandal, bag (guided), T-shirt, sneaker, dress (control)."]]
    return DemoSection("Guiding the generator toward a reference (PromptSplit guidance, section 5.4)",
                       section_text(rows, options), TABLE_HEADERS, table_rows(rows), figures=figures)
