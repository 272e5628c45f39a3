"""A vision-language judge for images (issue 43 item 2): both images reach the endpoint as PNG data URLs in
``image_url`` parts, in both orders; a judge that prefers the brighter image gives the planted verdicts with
the right signs; a position-biased judge of same-quality images rejects no more often than alpha."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from promptprism.data import PairedSet
from promptprism.llm.client import ChatClient
from promptprism.methods.metrics import FindingPreference
from promptprism.methods.metrics.judge import DEFAULT_IMAGE_RUBRIC


def _brightness(url: str) -> float:
    """Mean pixel value of a ``data:image/png;base64,...`` URL."""
    assert url.startswith("data:image/png;base64,")
    return float(np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))).mean())


def _images_of(body_or_messages) -> tuple[float, float]:
    parts = body_or_messages[0]["content"]
    urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert len(urls) == 2 and [p["text"] for p in parts if p["type"] == "text"][1:3] == ["First image:",
                                                                                         "Second image:"]
    return _brightness(urls[0]), _brightness(urls[1])


def _brighter_wins(body, stage, n):
    """The scripted VLM endpoint: the brighter image wins, a tie within 2 grey levels."""
    first, second = _images_of(body["messages"])
    return "tie" if abs(first - second) < 2 else "first" if first > second else "second"


def _image_set(folder, name, levels, rng, per_prompt=4):
    """Grey 8x8 images; prompt family f's images have mean level ``levels[f]`` (+- noise)."""
    folder.mkdir(parents=True, exist_ok=True)
    prompts, paths = [], []
    for f, level in enumerate(levels):
        for q in range(5):
            for k in range(per_prompt):
                pixels = np.clip(level + rng.normal(0, 3, size=(8, 8, 3)), 0, 255).astype(np.uint8)
                path = folder / f"{name}_{f}_{q}_{k}.png"
                Image.fromarray(pixels).save(path)
                prompts.append(f"family {f + 1} prompt {q}")
                paths.append(str(path))
    n = len(paths)
    return PairedSet(rng.normal(size=(n, 2)), rng.normal(size=(n, 2)), prompts=prompts, outputs=paths,
                     name=name)


def _families():
    return [{"id": f"family {f}", "prompts": [f"family {f} prompt {q}" for q in range(5)]} for f in (1, 2)]


def test_a_vlm_endpoint_sees_both_images_and_gives_both_planted_verdicts(tmp_path):
    """A brighter than B on family 1, darker on family 2: the judge prefers A there and B here."""
    from compcon_fakes import ScriptedServer

    rng = np.random.default_rng(0)
    models = {"A": _image_set(tmp_path / "a", "A", [180, 60], rng),
              "B": _image_set(tmp_path / "b", "B", [60, 180], rng)}
    with ScriptedServer(_brighter_wins) as server:
        client = ChatClient(base_url=server.base_url, model="fake-vlm", api_key_env=None, retries=0)
        record = FindingPreference(pairs=10, modality="image", seed=0).fit(_families(), models, client)
        assert len(server.requests) == 2 * 2 * 10  # two findings x ten pairs x both orders
        texts = [p["text"] for p in server.requests[0]["messages"][0]["content"] if p["type"] == "text"]
    assert DEFAULT_IMAGE_RUBRIC in texts[-1] and record["rubric"] == DEFAULT_IMAGE_RUBRIC
    by_id = {e["id"]: e for e in record["findings"]}
    assert by_id["family 1"]["preferred"] == "A" and by_id["family 2"]["preferred"] == "B"
    assert by_id["family 1"]["comparisons"][0]["wins"] == 10
    assert by_id["family 2"]["comparisons"][0]["losses"] == 10


class BiasedImageJudge:
    """In-process VLM: 'first' with probability ``bias`` whatever the images, else the brighter image; the
    images of both models come from one distribution, so no model is better."""

    model = "biased"

    def __init__(self, seed: int, bias: float):
        self.rng, self.bias = np.random.default_rng(seed), bias

    def chat(self, messages):
        first, second = _images_of(messages)
        if self.rng.random() < self.bias:
            return "first"
        return "first" if first > second else "second"


def test_a_first_position_judge_of_images_prefers_neither():
    rng = np.random.default_rng(1)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        models = {"A": _image_set(Path(d) / "a", "A", [120, 120], rng),
                  "B": _image_set(Path(d) / "b", "B", [180, 60], rng)}
        record = FindingPreference(pairs=10, modality="image").fit(_families(), models,
                                                                   BiasedImageJudge(0, bias=1.0))
    for e in record["findings"]:
        c = e["comparisons"][0]
        assert c["ties"] == c["pairs"] == c["cancelled"] == 10 and c["win_rate"] == 0.5
        assert e["preferred"] is None


@pytest.mark.slow
def test_a_position_biased_image_judge_is_calibrated(tmp_path):
    """Same-quality images, a judge with 30% position bias: over 200 simulated sets the sign test at 0.05
    rejects at most alpha + 2 s.e. of the time."""
    alpha, runs, hits = 0.05, 200, 0
    rng = np.random.default_rng(2)
    finding = [{"id": "all", "prompts": [f"family 1 prompt {q}" for q in range(5)]}]
    for r in range(runs):
        models = {m: _image_set(tmp_path / f"{r}{m}", m, [120], rng, per_prompt=4) for m in "AB"}
        record = FindingPreference(pairs=20, modality="image", seed=r).fit(finding, models,
                                                                           BiasedImageJudge(r, bias=0.3))
        hits += record["findings"][0]["comparisons"][0]["p_value"] <= alpha
    assert hits / runs <= alpha + 2 * np.sqrt(alpha * (1 - alpha) / runs), hits


def test_an_unknown_modality_is_one_clear_error():
    from promptprism.errors import OptionError

    with pytest.raises(OptionError, match="modality"):
        FindingPreference(modality="audio").fit([], {}, BiasedImageJudge(0, 0.0))
