"""An encoder that is built on first use, so that input and endpoint errors come before any model is read."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class LazyClip:
    """A CLIP embedder (``embed_images``/``embed_texts``) loaded on first use.

    ``spec``: a local CLIP folder or a hub name already in the local cache (loaded with
    :class:`~promptprism.methods.compcon.embedding.TransformersClip`), or ``module:factory`` naming a class or
    object with ``embed_images``/``embed_texts``.
    """

    def __init__(self, spec: str) -> None:
        self.name = spec
        self._model: Any = None

    def _get(self) -> Any:
        if self._model is None:
            if ":" in self.name and not Path(self.name).exists():
                from ..methods.compcon.generators import import_object

                obj = import_object(self.name, what="CLIP embedder")
                self._model = obj() if isinstance(obj, type) or not hasattr(obj, "embed_images") else obj
            else:
                from ..methods.compcon.embedding import TransformersClip

                self._model = TransformersClip(self.name)
        return self._model

    def embed_images(self, images: Any) -> Any:
        """Image embeddings (n x d), loading the model first if needed."""
        return self._get().embed_images(images)

    def embed_texts(self, texts: Any) -> Any:
        """Text embeddings (n x d), loading the model first if needed."""
        return self._get().embed_texts(texts)
