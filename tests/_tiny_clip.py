"""A tiny, randomly initialised CLIP checkpoint written with ``save_pretrained``, built fully offline.

The tokenizer is CLIP's byte-level BPE with no merges over a vocabulary of the 256 byte symbols (each also
with the end-of-word suffix) plus CLIP's two special tokens; the image processor resizes and crops to 32 px.
The folder has the layout of a real checkpoint, so the same loading code reads both.
"""

from __future__ import annotations

from pathlib import Path


def build_tiny_clip(folder: str | Path, seed: int = 0, image_size: int = 32) -> Path:
    import torch
    from tokenizers import pre_tokenizers
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    folder = Path(folder)
    symbols = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for s in symbols:
        vocab[s] = len(vocab)
    for s in symbols:
        vocab[s + "</w>"] = len(vocab)
    tokenizer = CLIPTokenizer(vocab=vocab, merges=[])
    image_processor = CLIPImageProcessor(size={"shortest_edge": image_size},
                                         crop_size={"height": image_size, "width": image_size})
    processor = CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer)
    config = CLIPConfig(
        text_config=dict(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, max_position_embeddings=64, bos_token_id=0, eos_token_id=1,
                         pad_token_id=1),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                           image_size=image_size, patch_size=8),
        projection_dim=16,
    )
    torch.manual_seed(seed)
    model = CLIPModel(config).eval()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
