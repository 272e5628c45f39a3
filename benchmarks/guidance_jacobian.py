"""Why the exact guidance gradient (through the UNet) moves the frame less than the one with the noise
prediction held constant: the two gradients of the same objective at the same latents, step by step.

    python benchmarks/guidance_jacobian.py [--per-prompt 8] [--reference-per-class 20] [--steps 20] [--seed 0]

Along the unguided DDIM trajectory of the packaged generator (section 5.4's set-up: reference = the model's
own samples framed on trouser/sandal/bag), prints per step the norm ratio exact / constant of grad_z of the
guidance objective on the frame pixels and on the interior pixels of the guided prompts' samples, and the
cosine between the two gradients. The exact gradient is grad_x0 L . dx0/dz with dx0/dz = (I - sqrt(1 - a)
d eps/dz) / sqrt(a); for a denoiser, dx0/dz is proportional to the posterior covariance of x0 given z
(Tweedie), small along directions the training images never vary in, such as a frame.
"""

from __future__ import annotations

import argparse

import numpy as np


def main() -> None:
    import torch
    from diffusers import DDIMScheduler

    from promptprism.guidance import PromptSplitGuidance, sample_seeds
    from promptprism.guidance.sampler import predicted_x0
    from promptprism.models import fashion_guidance as fg
    from promptprism.models.fashion import NULL_CLASS, load_checkpoint, packaged_checkpoint

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-prompt", type=int, default=8)
    ap.add_argument("--reference-per-class", type=int, default=20)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    ckpt = load_checkpoint(packaged_checkpoint())
    (ref, ref_cls), _ = fg.model_reference_sets(ckpt, a.reference_per_class, a.seed, a.steps)
    classes = np.repeat(fg.section_classes(), a.per_prompt)
    onehot = np.eye(NULL_CLASS)
    guide = PromptSplitGuidance(fg.pixel_rows(ref), onehot[ref_cls], onehot[classes],
                                sigma_prompt=fg.SIGMA_PROMPT)
    size = ckpt.image_size
    guide.start(len(classes), (1, size, size), torch.float32, "cpu")
    sched = DDIMScheduler.from_config({k: v for k, v in dict(ckpt.scheduler.config).items()
                                       if k != "_use_default_values"})
    sched.set_timesteps(a.steps)
    z = torch.stack([torch.randn((1, size, size), generator=torch.Generator().manual_seed(s))
                     for s in sample_seeds(a.seed, len(classes))])
    labels, null = torch.as_tensor(classes), torch.full((len(classes),), NULL_CLASS)
    frame = torch.zeros(size, size, dtype=torch.bool)
    frame[:fg.FRAME] = frame[-fg.FRAME:] = frame[:, :fg.FRAME] = frame[:, -fg.FRAME:] = True
    guided = torch.as_tensor(np.isin(classes, fg.section_classes(fg.GUIDED, ())))
    index = torch.arange(len(classes))

    def eps_of(zz, t):
        both = ckpt.unet(torch.cat([zz, zz]), t, class_labels=torch.cat([null, labels])).sample
        e_null, e_cond = both.chunk(2)
        return e_null + 2.0 * (e_cond - e_null)

    print("step | t | alpha_bar | frame exact/constant | interior exact/constant | cosine")
    for i, t in enumerate(sched.timesteps):
        grads = []
        for through in (True, False):
            zg = z.detach().requires_grad_(True)
            eps = eps_of(zg, t) if through else eps_of(z, t).detach()
            (g,) = torch.autograd.grad(guide.objective(predicted_x0(sched, eps, zg, t), index), zg)
            grads.append(g[guided][:, 0])
        exact, const = grads
        ratio = [float(exact[:, m].norm() / const[:, m].norm()) for m in (frame, ~frame)]
        cos = float((exact * const).sum() / exact.norm() / const.norm())
        alpha = float(sched.alphas_cumprod[int(t)])
        print(f"{i} | {int(t)} | {alpha:.3f} | {ratio[0]:.2f} | {ratio[1]:.2f} | {cos:.2f}", flush=True)
        with torch.no_grad():
            z = sched.step(eps_of(z, t), t, z).prev_sample


if __name__ == "__main__":
    main()
