"""The Stable Diffusion wiring of docs/guidance.md, on tiny randomly initialised pipeline components (a
UNet2DConditionModel, an AutoencoderKL, a CLIP text model and tokenizer; no downloads): the shared sampler
reproduces the pipeline's own DDIM + CFG latents, and PromptSplit guidance runs with the VAE decode and a
CLIP image tower in the loop."""

from importlib.util import find_spec

import numpy as np
import pytest

from _tiny_clip import build_tiny_clip
from promptprism.guidance import PromptSplitGuidance, sample, sample_seeds

# (looked up, not imported: collecting the suite stays free of these libraries' imports)
pytestmark = pytest.mark.skipif(any(find_spec(m) is None for m in ("torch", "diffusers", "transformers")),
                                reason="needs torch, diffusers and transformers")

PROMPTS = ["a red square", "a blue circle", "a red square"]


@pytest.fixture(scope="module")
def pipe(tmp_path_factory):
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPModel, CLIPTokenizer

    folder = build_tiny_clip(tmp_path_factory.mktemp("clip"))
    clip = CLIPModel.from_pretrained(folder, local_files_only=True).eval()
    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, block_out_channels=(16, 32), layers_per_block=1,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D",
                                                                                  "CrossAttnUpBlock2D"),
        cross_attention_dim=32, norm_num_groups=8, attention_head_dim=4).eval()
    vae = AutoencoderKL(in_channels=3, out_channels=3, block_out_channels=(16, 32), latent_channels=4,
                        down_block_types=("DownEncoderBlock2D",) * 2,
                        up_block_types=("UpDecoderBlock2D",) * 2, norm_num_groups=8, sample_size=16).eval()
    scheduler = DDIMScheduler(num_train_timesteps=100)
    tokenizer = CLIPTokenizer.from_pretrained(folder, local_files_only=True, model_max_length=16)
    p = StableDiffusionPipeline(vae=vae, text_encoder=_text_model(folder), tokenizer=tokenizer,
                                unet=unet, scheduler=scheduler, safety_checker=None, feature_extractor=None,
                                requires_safety_checker=False)
    p.set_progress_bar_config(disable=True)
    return p, clip


def _text_model(folder):
    from transformers import CLIPTextModel

    return CLIPTextModel.from_pretrained(folder, local_files_only=True).eval()


def _embeds(p):
    cond, uncond = p.encode_prompt(PROMPTS, "cpu", 1, True)
    return cond.detach(), uncond[:1].detach()


@pytest.mark.slow
def test_the_sampler_reproduces_the_pipeline(pipe):
    import torch

    p, _ = pipe
    cond, uncond = _embeds(p)
    seeds = sample_seeds(3, len(PROMPTS))
    with torch.no_grad():
        ours = sample(p.unet, p.scheduler, cond, null_condition=uncond[0], guidance_scale=5.0, steps=3,
                      seeds=seeds, batch_size=2)
        theirs = p(prompt_embeds=cond, negative_prompt_embeds=uncond.expand_as(cond), guidance_scale=5.0,
                   num_inference_steps=3, generator=[torch.Generator().manual_seed(s) for s in seeds],
                   output_type="latent").images
    assert ours.shape == theirs.shape == (3, 4, 8, 8)
    assert torch.allclose(ours, theirs, atol=1e-4)


@pytest.mark.slow
def test_guidance_through_the_vae_and_a_clip_image_tower(pipe):
    import torch

    p, clip = pipe
    cond, uncond = _embeds(p)
    vae = p.vae

    def decode(latents):  # what StableDiffusionPipeline does after its loop, here inside it
        return vae.decode(latents / vae.config.scaling_factor).sample

    def clip_image(images):  # a differentiable CLIP preprocessing: [-1, 1] -> CLIP's normalisation
        x = torch.nn.functional.interpolate((images + 1) / 2, size=(32, 32), mode="bilinear")
        mean = torch.tensor([0.4815, 0.4578, 0.4082]).view(1, 3, 1, 1)
        std = torch.tensor([0.2686, 0.2613, 0.2758]).view(1, 3, 1, 1)
        return clip.get_image_features(pixel_values=(x - mean) / std)

    def encode(images):
        out = clip_image(images)
        return out if torch.is_tensor(out) else out.pooler_output

    rng = np.random.default_rng(0)
    with torch.no_grad():
        ref = encode(torch.tensor(rng.uniform(-1, 1, (6, 3, 16, 16)), dtype=torch.float32)).numpy()
    text = np.eye(2)[[0, 1, 0, 0, 1, 1]]
    prompts = np.eye(2)[[0, 1, 0]]
    kw = dict(null_condition=uncond[0], guidance_scale=5.0, steps=2, seed=4, batch_size=3)
    base = sample(p.unet, p.scheduler, cond, **kw)
    guide = PromptSplitGuidance(ref, text, prompts, encoder=encode, decode=decode, scale=5.0, rho=0.5,
                                sigma_prompt=0.5)
    guided = sample(p.unet, p.scheduler, cond, guidance=guide, **kw)
    assert torch.isfinite(guided).all()
    assert not torch.allclose(guided, base, atol=1e-5)
    zero = PromptSplitGuidance(ref, text, prompts, encoder=encode, decode=decode, scale=0.0)
    assert torch.equal(sample(p.unet, p.scheduler, cond, guidance=zero, **kw), base)
