"""Tiny randomly initialised diffusers denoisers for the sampler and guidance tests (no downloads)."""

from __future__ import annotations


def tiny_class_unet(seed: int = 0, size: int = 8, classes: int = 3):
    """A UNet2DModel over 1 x size x size images with ``classes`` + 1 class embeddings (the last: null)."""
    import torch
    from diffusers import UNet2DModel

    torch.manual_seed(seed)
    return UNet2DModel(sample_size=size, in_channels=1, out_channels=1, block_out_channels=(8, 16),
                       layers_per_block=1, down_block_types=("DownBlock2D", "DownBlock2D"),
                       up_block_types=("UpBlock2D", "UpBlock2D"), norm_num_groups=4,
                       num_class_embeds=classes + 1).eval()


def ddpm(steps: int = 100):
    from diffusers import DDPMScheduler

    return DDPMScheduler(num_train_timesteps=steps)
