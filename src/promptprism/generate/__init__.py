"""Generations for the comparison methods: prompts file -> model -> a manifest every command reads.

* :func:`generate_text`: any OpenAI-compatible chat endpoint (hosted, vLLM, llama.cpp, the bundled local
  server of :mod:`promptprism.generate.llm_server`);
* :func:`generate_images`: a Python callable or a diffusers pipeline saved in a local folder.

Both are resumable and write the manifest atomically (:mod:`promptprism.generate.run`).
"""

from .images import generate_images
from .llm_server import LocalServer, bundled_smollm2, local_llm_server, server_available
from .prompts import PromptRow, read_prompts
from .run import GenerateResult
from .text import generate_text

__all__ = ["GenerateResult", "LocalServer", "PromptRow", "bundled_smollm2", "generate_images",
           "generate_text", "local_llm_server", "read_prompts", "server_available"]
