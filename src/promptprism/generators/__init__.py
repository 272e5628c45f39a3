"""Small image generators trained by promptprism itself, to run the methods on real generations.

:mod:`promptprism.generators.fashion` is a class-prompted diffusion model of Fashion-MNIST (a diffusers
``UNet2DModel`` with a null class for classifier-free guidance); :mod:`promptprism.generators.fashion_train`
is its seeded training recipe. Both import torch and diffusers lazily; nothing in the core imports them.
"""
