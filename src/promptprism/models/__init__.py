"""Models trained by promptprism itself, to run the methods on real generations (in the manner of
``torchvision.models`` and ``diffusers.models``: the model, its training recipe and its packaged weights).

:mod:`promptprism.models.fashion` is a class-prompted diffusion model of Fashion-MNIST (a diffusers
``UNet2DModel`` with a null class for classifier-free guidance); :mod:`promptprism.models.fashion_train`
is its seeded training recipe; :mod:`promptprism.models.fashion_guidance` its guided samples for section
5.4; :mod:`promptprism.models.quality` the k-NN quality of samples. They import torch and diffusers lazily;
nothing in the core imports them (the demos and the command line do). Until the next release the old import
path ``promptprism.generators`` still works, with a DeprecationWarning.
"""
