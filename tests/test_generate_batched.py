"""``generate`` with a batched generator: lists in, one call per batch, the same images as one by one."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.data.manifest import read_manifest
from promptprism.errors import InputError, OptionError
from promptprism.generate import generate_images
from promptprism.generate.images import batched
from promptprism.generate.run import journal_path


def _prompts(tmp_path, n=5):
    p = tmp_path / "prompts.txt"
    p.write_text("".join(f"prompt {i}\n" for i in range(n)), encoding="utf-8")
    return p


def _image(prompt: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, len(prompt)])
    return rng.integers(0, 256, (4, 4), dtype=np.uint8)


def one_by_one(prompt, seed=0):
    """The per-image form of the generator below."""
    return _image(prompt, seed)


class Recorder:
    """A batched generator that records the batch sizes it was called with (and fails when told to)."""

    def __init__(self, fail_on_call=None, wrong_count=False):
        self.calls, self.fail_on_call, self.wrong_count = [], fail_on_call, wrong_count

    def __call__(self, prompts, seeds):
        self.calls.append(len(prompts))
        if self.fail_on_call == len(self.calls):
            raise RuntimeError("out of memory")
        images = [_image(p, s) for p, s in zip(prompts, seeds, strict=True)]
        return images[:-1] if self.wrong_count else images


def _pixels(manifest):
    from PIL import Image

    return {r.id: np.asarray(Image.open(r.image)) for r in read_manifest(manifest).rows}


def test_batched_calls_and_the_same_images_as_one_by_one(tmp_path):
    prompts = _prompts(tmp_path)
    rec = batched(Recorder(), 4)
    res = generate_images(prompts, out=tmp_path / "b.jsonl", generator=rec, samples=3, progress=False)
    assert res.n_rows == 15 and rec.calls == [4, 4, 4, 3]
    generate_images(prompts, out=tmp_path / "o.jsonl", generator=one_by_one, samples=3, progress=False)
    a, b = _pixels(tmp_path / "b.jsonl"), _pixels(tmp_path / "o.jsonl")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_a_failed_batch_keeps_earlier_rows_and_resume_runs_only_the_rest(tmp_path):
    prompts, out = _prompts(tmp_path), tmp_path / "r.jsonl"
    with pytest.raises(InputError, match=r"a batch of 4, .*raised RuntimeError: out of memory"):
        generate_images(prompts, out=out, generator=batched(Recorder(fail_on_call=2), 4), samples=2,
                        progress=False)
    assert len(journal_path(out).read_text().splitlines()) == 4
    rec = batched(Recorder(), 4)
    res = generate_images(prompts, out=out, generator=rec, samples=2, progress=False)
    assert (res.n_generated, res.n_reused) == (6, 4) and rec.calls == [4, 2]


def test_wrong_image_count_and_bad_batch_size_are_clear_errors(tmp_path):
    prompts = _prompts(tmp_path, 3)
    with pytest.raises(InputError, match="returned 2 images for 3 prompts"):
        generate_images(prompts, out=tmp_path / "w.jsonl", generator=batched(Recorder(wrong_count=True), 8),
                        progress=False)
    with pytest.raises(OptionError, match="batch_size must be a positive integer"):
        batched(Recorder(), 0)
    bad = Recorder()
    bad.batch_size = "many"
    with pytest.raises(OptionError, match="batch_size attribute must be a positive integer"):
        generate_images(prompts, out=tmp_path / "x.jsonl", generator=bad, progress=False)
