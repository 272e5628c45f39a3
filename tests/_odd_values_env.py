"""The inputs of the odd-values sweep (tests/test_cli_odd_values.py), written once per module, and the one
local chat server every command talks to (:mod:`compcon_fakes`: scripted answers, only on 127.0.0.1)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from _cli_run import run_cli


def _npz(path, *, n=24, d=6, seed=0):
    rng = np.random.default_rng(seed)
    np.savez(path, prompt_embeddings=rng.standard_normal((n, d)),
             output_embeddings=rng.standard_normal((n, d)),
             prompts=np.array([f"prompt {i % 8}" for i in range(n)]))
    return path


class Env:
    """Every input the runs need, written once; the local chat server; a counter for fresh folders."""

    def __init__(self, root: Path, server_url: str):
        from PIL import Image

        from compcon_fakes import BANK_PROMPTS, write_bank
        from compcon_text_fakes import BANK

        self.root, self.url, self.count = root, server_url, 0
        self.a, self.b, self.c = (_npz(root / f"{n}.npz", seed=s) for s, n in enumerate("abc"))
        rng = np.random.default_rng(0)
        (root / "imgs").mkdir()
        rows = []
        for i in range(8):
            Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(root / "imgs" / f"{i}.png")
            rows.append({"id": f"r{i}", "prompt_image": f"imgs/{i}.png", "image": f"imgs/{(i + 1) % 8}.png"})
        self.manifest = root / "m.jsonl"
        self.manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
        np.save(root / "real.npy", rng.random((12, 6, 6)))
        np.save(root / "gen.npy", rng.random((12, 6, 6)))
        self.prompts = root / "p.txt"
        self.prompts.write_text("hello\nworld\n")
        self.dirs, self.bank = write_bank(root / "cc", BANK_PROMPTS)
        self.text_bank = root / "text_bank.txt"
        self.text_bank.write_text("\n".join(BANK) + "\n")
        self.preds = root / "preds.json"
        self.preds.write_text(json.dumps({"0": {"attributes": ["red"], "descriptions": [["red things"]]}}))

    @functools.cached_property
    def split_dir(self) -> Path:
        """A split result with modes to name (describe, report), made on first use."""
        from test_naming import _write_sets

        t, r = _write_sets(self.root)
        out = self.root / "split"
        code, _, err = run_cli("split", t, r, "--out", out, "--permutations", "50", "--modes", "2", "-q",
                               "--no-report")
        assert code == 0, err
        return out

    @functools.cached_property
    def quality_case(self) -> tuple[Path, Path]:
        """A split result with significant modes and real data on its prompts (quality), made on first use."""
        from promptprism.datasets import colored_digits
        from test_quality_verdicts import _correct

        paths = {}
        for name, s in (("qt", colored_digits(per_prompt=10, seed=0).test), ("qr", _correct(7, 10)),
                        ("qreal", _correct(5, 10))):
            paths[name] = self.root / f"{name}.npz"
            np.savez(paths[name], prompt_embeddings=s.prompt_embeddings,
                     output_embeddings=s.output_embeddings, prompts=np.array(s.prompts))
        out = self.root / "quality_split"
        code, _, err = run_cli("split", paths["qt"], paths["qr"], "--out", out, "--permutations", "50", "-q",
                               "--no-report")
        assert code == 0, err
        return out, paths["qreal"]

    @functools.cached_property
    def bank_split(self) -> Path:
        """A PromptSplit result over the CompCon bank's prompts (compcon --from-split)."""
        from compcon_fakes import BANK_PROMPTS
        from test_cli_compcon import _split_result

        _split_result(self.root / "bank_split", BANK_PROMPTS[:3])
        return self.root / "bank_split"

    @functools.cached_property
    def guided(self) -> Path | None:
        """A tiny random Fashion generator checkpoint and a guidance reference (None without diffusers); the
        fashion generator reads it from the environment (2 sampler steps)."""
        root = self.root
        try:
            from promptprism.models import fashion
        except ImportError:  # pragma: no cover - the fashion extra
            return None
        try:
            import diffusers  # noqa: F401
        except ImportError:  # pragma: no cover
            return None
        from PIL import Image

        ckpt = root / "ckpt"
        shape = fashion.UNetShape(image_size=8, channels=(8, 16), layers_per_block=1)
        fashion.save_checkpoint(ckpt, shape.build(seed=0), fashion.training_scheduler(),
                                {"image_size": 8, "epoch": 0, "seed": 0, "command": "test"})
        lines = []
        for i in range(2):
            Image.fromarray(np.full((8, 8), 240, np.uint8)).save(root / f"ref{i}.png")
            lines.append(json.dumps({"prompt": "a photo of a bag", "image": f"ref{i}.png"}))
        (root / "ref.jsonl").write_text("\n".join(lines) + "\n")
        (root / "bag.txt").write_text("a photo of a bag\n")
        os.environ.update(PROMPTPRISM_FASHION_CHECKPOINT=str(ckpt), PROMPTPRISM_FASHION_STEPS="2")
        return ckpt

    def fresh(self, suffix: str = "") -> Path:
        self.count += 1
        return self.root / "runs" / f"r{self.count}{suffix}"


# ---------------------------------------------------------------------------------------------- the server
def _respond(body, stage, n):
    """One local chat server for every command: CompCon's image and text scripts, the judge, generate."""
    from compcon_fakes import ATTRIBUTES_ANSWER, description_answer, prompt_list
    from compcon_text_fakes import script as text_script

    first = body["messages"][0]["content"]
    text = first if isinstance(first, str) else first[0]["text"]
    if stage == "attributes" and "Model A are displayed in the top row" in text:
        return ATTRIBUTES_ANSWER
    if stage == "describe":
        return description_answer()
    if stage == "generate":
        return prompt_list(5)
    if stage == "judge":
        return "<rating>2</rating>"
    if stage == "other":
        return "an answer"
    return text_script()(body, stage, n)


@contextlib.contextmanager
def open_env(root: Path) -> Iterator[Env]:
    """The inputs under ``root`` and the local chat server, with the environment variables the runs read
    set for the block (and put back after)."""
    from compcon_fakes import ScriptedServer

    names = ("PROMPTPRISM_CACHE", "PROMPTPRISM_FASHION_CHECKPOINT", "PROMPTPRISM_FASHION_STEPS")
    old = {k: os.environ.get(k) for k in names}
    os.environ["PROMPTPRISM_CACHE"] = str(root / "cache")
    try:
        with ScriptedServer(_respond) as server:
            # a request cut off by a tiny --timeout is the client's doing: the server stays quiet about it
            # (else its traceback would land in the next run's captured stderr)
            server.httpd.handle_error = lambda request, address: None
            yield Env(root, server.base_url)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
