"""Hostile and careless inputs to every sub-command (table-driven fuzz).

For every case: exit 0 or 2, no traceback, at most one error line (exactly one, and nothing but notes and
warnings beside it, on exit 2), an earlier result.json/report.html left intact on exit 2, and no staging or
temporary files left behind. Runs in this process (fast); the few cases that could crash the interpreter run
in a subprocess. ``PROMPTPRISM_FUZZ_TABLE=path`` writes the outcome of every case as JSON.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from _cli_run import run_cli
from _fault_server import FAULTS, SLOW, FaultServer
from promptprism.cli._output import OUTPUTS_LIST

pytestmark = pytest.mark.slow
OUTCOMES: dict[str, tuple[int, str]] = {}
SENTINEL_RESULT = '{"sentinel": "earlier result"}'
SENTINEL_REPORT = "<html>earlier report</html>"
EARLIER: dict[Path, str] = {}  # result.json written before a case, where it is not SENTINEL_RESULT


# ----------------------------------------------------------------------------------------------- inputs
def _npz(path, p=None, o=None, *, n=24, d=6, seed=0, prompts=None, **extra):
    rng = np.random.default_rng(seed)
    p = rng.standard_normal((n, d)) if p is None else p
    o = rng.standard_normal((n, d)) if o is None else o
    prompts = [f"prompt {i % 4}" for i in range(len(p))] if prompts is None else prompts
    np.savez(path, prompt_embeddings=p, output_embeddings=o, prompts=np.array(prompts), **extra)
    return path


def _png_header_only(path, width, height):
    """A PNG whose header claims width x height (a decompression bomb; PIL refuses it on open)."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )
    return path


def _png(path, arr, mode=None):
    from PIL import Image

    Image.fromarray(arr, mode=mode).save(path) if mode else Image.fromarray(arr).save(path)
    return path


class Inputs:
    """Every input file a case may need, written once per module."""

    def __init__(self, root: Path):
        self.root = root
        rng = np.random.default_rng(0)
        r = root
        self.good = _npz(r / "good.npz")
        self.good2 = _npz(r / "good2.npz", seed=1)
        self.nan = _npz(r / "nan.npz", p=np.where(np.eye(24, 6) > 0, np.nan, 1.0))
        big = rng.standard_normal((24, 6))
        big[3] *= 1e300
        self.huge_row = _npz(r / "huge_row.npz", p=big)
        self.tiny = _npz(
            r / "tiny.npz", p=1e-300 * rng.standard_normal((24, 6)), o=1e-300 * rng.standard_normal((24, 6))
        )
        self.zeros = _npz(r / "zeros.npz", p=np.zeros((24, 6)), o=np.zeros((24, 6)))
        self.neardup = _npz(
            r / "neardup.npz",
            p=np.ones((24, 6)) + 1e-12 * rng.standard_normal((24, 6)),
            o=np.ones((24, 6)) + 1e-12 * rng.standard_normal((24, 6)),
        )
        self.neardup2 = _npz(
            r / "neardup2.npz",
            p=np.ones((24, 6)) + 1e-12 * rng.standard_normal((24, 6)),
            o=np.ones((24, 6)) + 1e-12 * rng.standard_normal((24, 6)),
        )
        self.dup_rows = _npz(
            r / "dup.npz",
            p=np.repeat(rng.standard_normal((4, 6)), 6, axis=0),
            o=np.repeat(rng.standard_normal((4, 6)), 6, axis=0),
        )
        self.one_prompt = _npz(r / "one_prompt.npz", prompts=["same"] * 24)
        self.other_dim = _npz(r / "dim5.npz", d=5)
        self.one_row = _npz(r / "one.npz", n=1)
        self.empty_rows = _npz(r / "empty_rows.npz", p=np.zeros((0, 6)), o=np.zeros((0, 6)), prompts=[])
        self.int_rows = _npz(r / "ints.npz", p=np.arange(144).reshape(24, 6), o=np.ones((24, 6), dtype=int))
        self.strings = _npz(r / "strings.npz", p=np.full((24, 6), "x"))
        self.three_d = _npz(r / "3d.npz", p=rng.standard_normal((24, 6, 2)))
        self.prompt_count = _npz(r / "prompt_count.npz", prompts=["a"] * 5)
        self.markup = _npz(r / "markup.npz", prompts=["[/] closes", "[bold]x", ":smile: face", "a\x00b"] * 6)
        np.savez(r / "wrong_keys.npz", x=np.ones((3, 3)))
        self.wrong_keys = r / "wrong_keys.npz"
        self.garbage = r / "garbage.npz"
        self.garbage.write_bytes(os.urandom(2048))
        self.empty_file = r / "empty.npz"
        self.empty_file.write_bytes(b"")
        self.missing = r / "missing.npz"
        self.folder = r / "empty_folder"
        self.folder.mkdir()
        self.unsupported = r / "data.xyz"
        self.unsupported.write_text("1,2,3\n")
        # manifests (image prompts and outputs, pixel encoder: no model needed)
        imgs = r / "imgs"
        imgs.mkdir()
        for i in range(8):
            _png(imgs / f"x{i}.png", rng.integers(0, 255, (8, 8, 3), dtype=np.uint8))
        rows = [
            {"id": f"r{i}", "prompt_image": f"imgs/x{i}.png", "image": f"imgs/x{(i + 1) % 8}.png"}
            for i in range(8)
        ]
        self.manifest = self._jsonl("good.jsonl", rows)
        self.dup_ids = self._jsonl("dup_ids.jsonl", [dict(row, id="same") for row in rows])
        self.missing_image = self._jsonl(
            "missing_image.jsonl", rows + [{"prompt_image": "imgs/x0.png", "image": "imgs/nope.png"}]
        )
        _png_header_only(imgs / "bomb.png", 20000, 20000)
        self.bomb = self._jsonl(
            "bomb.jsonl", rows + [{"prompt_image": "imgs/x0.png", "image": "imgs/bomb.png"}]
        )
        _png(imgs / "deep.png", (np.arange(64, dtype=np.uint16).reshape(8, 8) * 1024))
        self.png16 = self._jsonl(
            "png16.jsonl", rows + [{"prompt_image": "imgs/x0.png", "image": "imgs/deep.png"}]
        )
        (imgs / "not_an_image.png").write_bytes(b"GIF89a nonsense")
        self.bad_image = self._jsonl(
            "bad_image.jsonl", rows + [{"prompt_image": "imgs/x0.png", "image": "imgs/not_an_image.png"}]
        )
        self.surrogate = r / "surrogate.jsonl"
        self.surrogate.write_text('{"prompt": "a \\ud800 b", "output": "x"}\n' * 4, encoding="utf-8")
        self.latin1 = r / "latin1.csv"
        self.latin1.write_bytes("prompt,output\ncaf\xe9,th\xe9\n".encode("latin-1") * 3)
        self.question_answer = r / "qa.csv"
        self.question_answer.write_text("question,answer\n" + "".join(f"q{i},a{i}\n" for i in range(8)))
        self.bad_json_line = r / "bad_line.jsonl"
        self.bad_json_line.write_text('{"prompt": "a", "output": "b"}\n{"prompt": \n')
        self.empty_manifest = r / "empty.jsonl"
        self.empty_manifest.write_text("")
        self.no_columns = self._jsonl("no_columns.jsonl", [{"x": 1}, {"x": 2}])
        self.nested = r / "nested.jsonl"
        self.nested.write_text('{"prompt": ' + "[" * 5000 + "]" * 5000 + ', "output": "x"}\n')
        # regions: image arrays
        self.real = self._npy("real.npy", rng.random((12, 6, 6)))
        self.gen = self._npy("gen.npy", rng.random((12, 6, 6)))
        self.gen_huge = self._npy("gen_huge.npy", np.full((12, 6, 6), 1e300))
        self.gen_nan = self._npy("gen_nan.npy", np.where(rng.random((12, 6, 6)) > 0.5, np.nan, 0.5))
        self.gen_size = self._npy("gen_size.npy", rng.random((12, 5, 6)))
        self.gen_channels = self._npy("gen_channels.npy", rng.random((12, 6, 6, 3)))
        self.gen_one = self._npy("gen_one.npy", rng.random((1, 6, 6)))
        self.gen_empty = self._npy("gen_empty.npy", np.zeros((0, 6, 6)))
        self.gen_const = self._npy("gen_const.npy", np.zeros((12, 6, 6)))
        self.gen_tiny = self._npy("gen_tiny.npy", 1e-300 * rng.random((12, 6, 6)))
        self.bomb_folder = r / "bomb_folder"
        self.bomb_folder.mkdir()
        _png_header_only(self.bomb_folder / "a.png", 20000, 20000)
        # compcon / compcon-eval / report
        from compcon_fakes import BANK_PROMPTS, write_bank

        self.cc_dirs, self.cc_bank = write_bank(r / "cc", BANK_PROMPTS)
        self.bank = r / "bank.txt"
        self.bank.write_text("a cat\na dog\n")
        self.bank_latin1 = r / "bank_latin1.txt"
        self.bank_latin1.write_bytes("caf\xe9 au lait\n".encode("latin-1"))
        self.bank_empty = r / "bank_empty.txt"
        self.bank_empty.write_text("\n\n")
        self.bank_binary = r / "bank.bin"
        self.bank_binary.write_bytes(os.urandom(512))
        self.pred_int = self._json("pred_int.json", {"0": 5})
        self.pred_string_attrs = self._json("pred_str.json", {"0": {"attributes": "red"}})
        self.pred_list = self._json("pred_list.json", [1, 2])
        self.pred_empty = self._json("pred_empty.json", {})
        self.pred_missing_result = self._json("pred_missing.json", {"0": "nowhere/result.json"})
        self.pred_ok = self._json(
            "pred_ok.json", {"0": {"attributes": ["red"], "descriptions": [["red things"]]}}
        )
        self.not_json = r / "not.json"
        self.not_json.write_text("{nope")
        self.binary = r / "binary.json"
        self.binary.write_bytes(b"\xff\xfe\x00\x81" * 64)
        self.results = {}
        for name, content in {
            "wrong_types": {"kind": "promptsplit", "distance": "x", "modes": 3},
            "unknown_kind": {"kind": "nope"},
            "list": [1, 2],
            "nulls": {"kind": "regions"},
        }.items():
            d = r / f"res_{name}"
            d.mkdir()
            (d / "result.json").write_text(json.dumps(content))
            self.results[name] = d
        d = r / "res_binary"
        d.mkdir()
        (d / "result.json").write_bytes(b"\x89\xff\x00" * 50)
        self.results["binary"] = d
        self.results["empty"] = r / "res_empty"
        self.results["empty"].mkdir()
        self._generate_inputs(r)

    def _generate_inputs(self, r: Path) -> None:
        """Prompts files for ``generate`` (good, edge and broken) and the loopback endpoints."""
        self.server = FaultServer().__enter__()
        self.silent_port = _silent_port()
        self.prompts_txt = r / "prompts.txt"
        self.prompts_txt.write_text("hello\nworld\n")
        self.prompts = {
            "bom.txt": b"\xef\xbb\xbfhello\nworld\n",
            "list.json": json.dumps(["hello", "world"]).encode(),
            "objects.json": json.dumps([{"id": "a", "prompt": "hello"}]).encode(),
            "bom.csv": b"\xef\xbb\xbfid,prompt\na,hello\n",
            "dup_header.csv": b"id,prompt,prompt\na,hello,world\n",
            "latin1.txt": "caf\xe9\n".encode("latin-1"),
            "utf16.txt": "hello\n".encode("utf-16"),
            "blank_line.txt": b"hello\n\nworld\n",
            "empty.txt": b"",
            "numbers.json": b"[1, 2]",
            "broken.json": b'["hello", ',
            "dup_ids.jsonl": b'{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n',
            "collide_ids.jsonl": "".join(json.dumps({"id": i, "prompt": f"p {i}"}, ensure_ascii=False) + "\n"
                                         for i in ("a b", "a_b", "a/b", "a?b", "猫", "犬")).encode(),
            "surrogate.jsonl": b'{"prompt": "a \\ud800 b"}\n',
            "no_prompt.csv": b"id,question\na,hello\n",
        }
        for name, content in self.prompts.items():
            (r / "gen_prompts").mkdir(exist_ok=True)
            (r / "gen_prompts" / name).write_bytes(content)

    def _jsonl(self, name, rows):
        path = self.root / name
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        return path

    def _npy(self, name, arr):
        path = self.root / name
        np.save(path, arr)
        return path

    def _json(self, name, obj):
        path = self.root / name
        path.write_text(json.dumps(obj))
        return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    made = Inputs(tmp_path_factory.mktemp("fuzz-inputs"))
    yield made
    made.server.__exit__(None, None, None)
    made.silent_port.close()


def _silent_port() -> socket.socket:
    """A listening TCP port that accepts and never says a word (not a dask scheduler)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ------------------------------------------------------------------------------------------------ cases
FAST = ["-q", "--no-report"]
PIX = ["--image-model", "pixels:8", "--no-cache"]
SPLIT_OPTIONS = {
    "seed text": ["--seed", "abc"],
    "seed negative": ["--seed", "-1"],
    "features 0": ["--method", "rff", "--features", "0"],
    "features 1e9": ["--method", "rff", "--features", "1000000000"],
    "features odd": ["--method", "rff", "--features", "7"],
    "sigma 1e-300": ["--sigma-prompt", "1e-300"],
    "sigma 1e300": ["--sigma-output", "1e300"],
    "sigma nan": ["--sigma-prompt", "nan"],
    "sigma -1": ["--sigma-prompt", "-1"],
    "sigma rule garbage": ["--sigma-prompt", "3*median*"],
    "eta 1e308 exact": ["--eta", "1e308", "--method", "exact"],
    "eta 1e308 rff": ["--eta", "1e308", "--method", "rff", "--features", "200"],
    "eta -1": ["--eta", "-1"],
    "eta nan": ["--eta", "nan"],
    "eta inf": ["--eta", "inf"],
    "workers 0": ["--workers", "0"],
    "batch-size 0": ["--batch-size", "0"],
    "chunk-size 0": ["--chunk-size", "0"],
    "modes 0": ["--modes", "0"],
    "top-k -1": ["--top-k", "-1"],
    "unknown option": ["--bogus"],
    "method bogus": ["--method", "magic"],
    "kernel bogus": ["--kernel", "laplace"],
    "columns malformed": ["--columns", "prompt"],
    "scheduler and workers": ["--scheduler", "tcp://x:1", "--workers", "2"],
    "scheduler unreachable": ["--scheduler", "tcp://127.0.0.1:1"],
    "scheduler bare word": ["--scheduler", "bogus"],
    "scheduler [::1": ["--scheduler", "[::1"],
    "scheduler tls://": ["--scheduler", "tls://"],
    "scheduler inproc://": ["--scheduler", "inproc://"],
    "scheduler ftp://": ["--scheduler", "ftp://127.0.0.1:21"],
    "scheduler non-dask port": ["--scheduler", "SILENT"],
    "rff cosine": ["--method", "rff", "--kernel", "cosine"],
    "partition-rows 0": ["--partition-rows", "0"],
}
DATA_KINDS = [
    "good",
    "nan",
    "huge_row",
    "tiny",
    "zeros",
    "neardup",
    "dup_rows",
    "one_prompt",
    "other_dim",
    "one_row",
    "empty_rows",
    "int_rows",
    "strings",
    "three_d",
    "prompt_count",
    "markup",
    "wrong_keys",
    "garbage",
    "empty_file",
    "missing",
    "folder",
    "unsupported",
]
MANIFEST_KINDS = [
    "manifest",
    "dup_ids",
    "missing_image",
    "bomb",
    "png16",
    "bad_image",
    "surrogate",
    "latin1",
    "question_answer",
    "bad_json_line",
    "empty_manifest",
    "no_columns",
    "nested",
]


def _cases():
    cases = []
    for kind in DATA_KINDS:
        cases.append(("split", f"data: {kind}", lambda i, k=kind: ["split", getattr(i, k), i.good2, *FAST]))
        cases.append(("diversity", f"data: {kind}", lambda i, k=kind: ["diversity", getattr(i, k), *FAST]))
        cases.append(("embed", f"data: {kind}", lambda i, k=kind: ["embed", getattr(i, k), "-q"]))
    for kind in ("neardup", "huge_row", "tiny", "dup_rows"):
        cases.append(
            (
                "split",
                f"data: {kind} (rff)",
                lambda i, k=kind: [
                    "split",
                    getattr(i, k),
                    getattr(i, "neardup2" if k == "neardup" else "good2"),
                    "--method",
                    "rff",
                    "--features",
                    "200",
                    *FAST,
                ],
            )
        )
        cases.append(
            (
                "diversity",
                f"data: {kind} (gaussian)",
                lambda i, k=kind: [
                    "diversity",
                    getattr(i, k),
                    "--kernel",
                    "gaussian",
                    "--features",
                    "200",
                    *FAST,
                ],
            )
        )
    cases.append(
        (
            "split",
            "data: neardup both (exact)",
            lambda i: ["split", i.neardup, i.neardup2, "--method", "exact", *FAST],
        )
    )
    for kind in MANIFEST_KINDS:
        cases.append(
            (
                "split",
                f"manifest: {kind}",
                lambda i, k=kind: ["split", getattr(i, k), i.manifest, *PIX, *FAST],
            )
        )
        cases.append(("embed", f"manifest: {kind}", lambda i, k=kind: ["embed", getattr(i, k), *PIX, "-q"]))
    cases.append(
        (
            "split",
            "manifest: question_answer + --columns",
            lambda i: [
                "split",
                i.question_answer,
                i.question_answer,
                "--columns",
                "prompt=question,output=answer",
                *FAST,
            ],
        )
    )
    cases.append(
        (
            "embed",
            "option: pixels:100000",
            lambda i: ["embed", i.manifest, "--image-model", "pixels:100000", "--no-cache", "-q"],
        )
    )
    cases.append(("embed", "option: out not .npz", lambda i: ["embed", i.good, "--out", i.root / "x.txt"]))
    for name, extra in SPLIT_OPTIONS.items():
        cases.append(("split", f"option: {name}", lambda i, e=extra: ["split", i.good, i.good2, *FAST, *[
            f"tcp://127.0.0.1:{i.silent_port.getsockname()[1]}" if x == "SILENT" else x for x in e]]))
    for name in (
        "seed text",
        "features 0",
        "features 1e9",
        "sigma 1e-300",
        "sigma nan",
        "workers 0",
        "batch-size 0",
        "chunk-size 0",
        "unknown option",
        "kernel bogus",
        "columns malformed",
    ):
        extra = SPLIT_OPTIONS[name]
        if name.startswith("features"):
            extra = ["--kernel", "gaussian", "--features", extra[-1]]
        if name.startswith("sigma"):
            extra = ["--kernel", "gaussian", *extra]
        cases.append(("diversity", f"option: {name}", lambda i, e=extra: ["diversity", i.good, *FAST, *e]))
    cases.append(
        ("diversity", "option: clusters 0", lambda i: ["diversity", i.good, "--clusters", "0", *FAST])
    )
    cases.append(("diversity", "data: same file twice", lambda i: ["diversity", i.good, i.good, *FAST]))
    # regions
    reg = lambda i, gen, *extra: ["regions", "--real", i.real, "--generated", gen, *FAST, *extra]  # noqa: E731
    for kind in (
        "gen",
        "gen_huge",
        "gen_nan",
        "gen_size",
        "gen_channels",
        "gen_one",
        "gen_empty",
        "gen_const",
        "gen_tiny",
        "bomb_folder",
        "garbage",
        "missing",
        "folder",
        "empty_file",
    ):
        cases.append(("regions", f"images: {kind}", lambda i, k=kind: reg(i, getattr(i, k))))
    for name, extra in {
        "regions 0": ["--regions", "0"],
        "regions abc": ["--regions", "abc"],
        "regions 1000": ["--regions", "1000"],
        "seed abc": ["--seed", "abc"],
        "gamma 1e-300": ["--gamma", "1e-300"],
        "gamma 1e308": ["--gamma", "1e308"],
        "gamma -1": ["--gamma", "-1"],
        "block-size 1": ["--block-size", "1"],
        "workers 0": ["--workers", "0"],
        "precision bogus": ["--precision", "float16"],
        "cka-images 0": ["--cka-images", "0"],
        "cka-images 1": ["--cka-images", "1"],  # (was refused as 'every real image is the same')
        "unknown option": ["--bogus"],
    }.items():
        cases.append(("regions", f"option: {name}", lambda i, e=extra: reg(i, i.gen, *e)))
    # compcon: everything that must fail before (or at) the network
    url = lambda: f"http://127.0.0.1:{_closed_port()}/v1"  # noqa: E731
    cc = lambda i, bank, *extra: [  # noqa: E731
        "compcon",
        i.cc_dirs["A"],
        i.cc_dirs["B"],
        "--prompt-bank",
        bank,  # noqa: E731
        "--base-url",
        url(),
        "--api-key-env",
        "",
        "--retries",
        "0",
        "--timeout",
        "0.5",
        *FAST,
        *extra,
    ]
    for kind in ("cc_bank", "bank_latin1", "bank_empty", "bank_binary", "missing", "folder"):
        cases.append(("compcon", f"bank: {kind}", lambda i, k=kind: cc(i, getattr(i, k))))
    for name, extra in {
        "description-prompts 0": ["--description-prompts", "0"],
        "null bogus": ["--null", "x"],
        "quantile 2": ["--quantile", "2"],
        "from-split garbage": ["--from-split", "GARBAGE"],
        "iterations -1": ["--iterations", "-1"],
        "base-url garbage": ["--base-url", "not a url"],
        "deprecated aliases": ["--batch-size", "3", "--cache", "CACHE"],
    }.items():

        def build(i, e=extra):
            e = [
                str(i.not_json) if x == "GARBAGE" else str(i.root / "chat") if x == "CACHE" else x for x in e
            ]
            return cc(i, i.cc_bank, *e)

        cases.append(("compcon", f"option: {name}", build))
    cases.append(
        (
            "compcon",
            "models: missing folder",
            lambda i: ["compcon", i.missing, i.cc_dirs["B"], "--prompt-bank", i.cc_bank, *FAST],
        )
    )
    cases.append(
        (
            "compcon",
            "models: folder without a manifest",
            lambda i: ["compcon", i.root / "imgs", i.cc_dirs["B"], "--prompt-bank", i.cc_bank, *FAST],
        )
    )
    # compcon-eval
    ce = lambda i, p, *extra: [  # noqa: E731
        "compcon-eval",
        p,
        "--judge-base-url",
        url(),
        "--api-key-env",
        "",
        "--retries",
        "0",  # noqa: E731
        "--timeout",
        "0.5",
        "-q",
        "--no-report",
        *extra,
    ]
    for kind in (
        "pred_int",
        "pred_string_attrs",
        "pred_list",
        "pred_empty",
        "pred_missing_result",
        "not_json",
        "binary",
        "missing",
    ):
        cases.append(("compcon-eval", f"predictions: {kind}", lambda i, k=kind: ce(i, getattr(i, k))))
    for k in ("0", "-1", "abc"):
        cases.append(("compcon-eval", f"option: k {k}", lambda i, k=k: ce(i, i.pred_ok, "--k", k)))
    cases.append(("compcon-eval", "endpoint unreachable", lambda i: ce(i, i.pred_ok)))
    # report
    for kind in ("wrong_types", "unknown_kind", "list", "nulls", "binary", "empty"):
        cases.append(("report", f"result: {kind}", lambda i, k=kind: ["report", i.results[k]]))
    cases.append(("report", "result: missing folder", lambda i: ["report", i.missing]))
    cases.append(
        ("report", "option: map-points 0", lambda i: ["report", i.results["empty"], "--map-points", "0"])
    )
    # demo
    for name, extra in {
        "per-prompt 1e8": ["--per-prompt", "100000000"],
        "per-prompt 0": ["--per-prompt", "0"],
        "per-prompt -1": ["--per-prompt", "-1"],
        "seed -1": ["--seed", "-1"],
        "seed abc": ["--seed", "abc"],
    }.items():
        cases.append(("demo", f"option: {name}", lambda i, e=extra: ["demo", *FAST, *e]))
    cases += _generate_cases()
    cases.append(("split", "option: --columns with .npz",
                  lambda i: ["split", i.good, i.good2, "--columns", "prompt=q", *FAST]))
    cases.append(("split", "option: --json on a failure",
                  lambda i: ["split", i.missing, i.good2, "--json", *FAST]))
    # the results folder itself (every command that writes one)
    writers = {
        "split": lambda i: ["split", i.good, i.good2, *FAST],
        "diversity": lambda i: ["diversity", i.good, *FAST],
        "regions": lambda i: reg(i, i.gen),
        "compcon-eval": lambda i: ce(i, i.pred_int),
        "demo": lambda i: ["demo", "--per-prompt", "2", *FAST],
    }
    for command, build in writers.items():
        for where in (
            "out is a file",
            "out under a file",
            "result.json is a folder",
            "markup in out path",
            "stale temporaries",
            "foreign files",
            "another command's result",
        ):
            cases.append((command, f"out: {where}", lambda i, b=build, w=where: [*b(i), "OUT:" + w]))
    return cases


def _generate_cases():
    """``generate``: every fault of the loopback endpoint, prompts files, options, image generators."""
    cases = []
    out = lambda i: ["--out", i.root / "gen" / f"m{next(_COUNTER)}.jsonl"]  # noqa: E731
    text = lambda i, url, prompts=None: ["generate", prompts or i.prompts_txt, *out(i), "--base-url", url,  # noqa: E731
                                         "--model", "m", "--retries", "0", "--timeout", "1", "-q"]
    for fault in [*FAULTS, *SLOW]:
        cases.append(("generate", f"endpoint: {fault}", lambda i, f=fault: text(i, i.server.url(f))))
    for name in INPUT_PROMPTS:
        cases.append(("generate", f"prompts: {name}", lambda i, n=name: text(
            i, i.server.url("ok"), i.root / "gen_prompts" / n)))
    cases.append(("generate", "prompts: missing", lambda i: text(i, i.server.url("ok"), i.missing)))
    for name, extra in {
        "samples 1e9": ["--samples", "1000000000"], "samples 0": ["--samples", "0"],
        "concurrency 0": ["--concurrency", "0"], "temperature -1": ["--temperature", "-1"],
        "timeout 0": ["--timeout", "0"], "max-tokens abc": ["--max-tokens", "abc"],
        "seed -1": ["--seed", "-1"],
        "retries -1": ["--retries", "-1"], "base-url garbage": ["--base-url", "not a url"],
    }.items():
        cases.append(("generate", f"option: {name}", lambda i, e=extra: [*text(i, i.server.url("ok")), *e]))
    cases.append(("generate", "option: out not .jsonl", lambda i: [
        "generate", i.prompts_txt, "--out", i.root / "m.txt", "--base-url", i.server.url("ok"),
        "--model", "m"]))
    cases.append(("generate", "option: endpoint and generator", lambda i: [
        *text(i, i.server.url("ok")), "--generator", "test_generate:painter"]))
    image = lambda i, spec, prompts=None: ["generate", prompts or i.prompts_txt, *out(i), "--generator", spec,  # noqa: E731
                                           "-q"]
    for spec in ("test_generate:painter", "test_generate_resume:sixteen_bit", "test_generate_resume:exits",
                 "test_generate_resume:interrupts", "test_generate_resume:empty", "test_generate:wrong_type",
                 "test_generate:raising", "test_generate:nothing_here", "no_such_module:fn", "nocolon"):
        cases.append(("generate", f"generator: {spec}", lambda i, g=spec: image(i, g)))
    cases.append(("generate", "generator: colliding ids", lambda i: image(
        i, "test_generate:painter", i.root / "gen_prompts" / "collide_ids.jsonl")))
    return cases


INPUT_PROMPTS = ["bom.txt", "list.json", "objects.json", "bom.csv", "dup_header.csv", "latin1.txt",
                 "utf16.txt", "blank_line.txt", "empty.txt", "numbers.json", "broken.json", "dup_ids.jsonl",
                 "collide_ids.jsonl",
                 "surrogate.jsonl", "no_prompt.csv"]
_COUNTER = itertools.count()
CASES = _cases()
MUST_SUCCEED = {"data: good", "manifest: manifest", "manifest: question_answer + --columns", "images: gen",
                "out: markup in out path", "out: stale temporaries", "data: neardup both (exact)",
                "data: markup", "endpoint: ok", "prompts: bom.txt", "prompts: list.json",
                "prompts: objects.json",
                "prompts: bom.csv", "prompts: collide_ids.jsonl", "generator: test_generate:painter",
                "generator: test_generate_resume:sixteen_bit", "generator: colliding ids"}
MUST_FAIL = {"out: foreign files", "out: another command's result", "option: --columns with .npz",
             "option: samples 1e9", "generator: test_generate_resume:exits",
             "generator: test_generate_resume:interrupts", "generator: test_generate_resume:empty"}


def _prepare_out(tmp_path: Path, argv: list, command: str) -> tuple[list, Path | None, bool]:
    """Resolve the OUT marker (or add --out), with an earlier result in place; returns (argv, folder, npz)."""
    where = next((a[4:] for a in argv if isinstance(a, str) and a.startswith("OUT:")), None)
    argv = [a for a in argv if not (isinstance(a, str) and a.startswith("OUT:"))]
    if command in ("report", "version") or "--out" in argv:
        return argv, None, False
    if command == "embed":
        out = tmp_path / "out.npz"
        out.write_bytes(b"earlier npz")
        return [*argv, "--out", out], out, True
    out = tmp_path / ("out [/] :smile:" if where == "markup in out path" else "out")
    out.mkdir(parents=True)
    (out / "result.json").write_text(SENTINEL_RESULT)
    (out / "report.html").write_text(SENTINEL_REPORT)
    # an earlier run of this command: its listing names what it wrote (a result.json alone does not open
    # a folder: it may be another tool's)
    (out / OUTPUTS_LIST).write_text(json.dumps({"command": command, "files": ["result.json", "report.html"]}))
    if where == "out is a file":
        out = tmp_path / "a-file"
        out.write_text("x")
    elif where == "out under a file":
        (tmp_path / "a-file").write_text("x")
        out = tmp_path / "a-file" / "sub"
    elif where == "result.json is a folder":
        (out / "result.json").unlink()
        (out / "result.json").mkdir()
    elif where == "stale temporaries":
        (out / ".result.json.k1ll3d.tmp").write_text("half")
        (out / ".promptprism-staging-k1ll3d").mkdir()
    elif where == "foreign files":
        (out / "result.json").unlink()
        (out / "report.html").unlink()
        (out / "my_notes.txt").write_text("mine")
    elif where == "another command's result":
        other = "regions" if command != "regions" else "promptsplit"
        EARLIER[out] = json.dumps({"kind": other, "sentinel": "earlier result"})
        (out / "result.json").write_text(EARLIER[out])
    return [*argv, "--out", out], out, False


def _check(code, out, err, folder, npz, label):
    text = out + err
    assert code in (0, 2), f"{label}: exit {code}\n{err}"
    assert "Traceback" not in text, f"{label}: traceback\n{err}"
    lines = [x for x in err.splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("error:")]
    assert len(errors) <= 1, f"{label}: {len(errors)} error lines\n{err}"
    if code == 2:
        assert len(errors) == 1, f"{label}: exit 2 without an error line\n{err}"
        others = [x for x in lines if not x.startswith(("error:", "note:", "warning:"))]
        assert not others, f"{label}: more than the error line on stderr: {others}"
        assert not [x for x in lines if x.startswith("warning:")], f"{label}: warnings before the error"
    if folder is not None and folder.is_dir():
        leftovers = [p.name for p in folder.iterdir() if p.name.endswith(".tmp") or "staging" in p.name]
        assert not leftovers, f"{label}: left behind {leftovers}"
        if code == 2 and (folder / "result.json").is_file():
            assert (folder / "result.json").read_text() == EARLIER.get(folder, SENTINEL_RESULT), (
                f"{label}: earlier result replaced"
            )
            assert (folder / "report.html").read_text() == SENTINEL_REPORT, (
                f"{label}: earlier report replaced"
            )
        if code == 0 and (folder / "result.json").is_file():
            json.loads((folder / "result.json").read_text())
    if npz and folder is not None and code == 2:
        assert folder.read_bytes() == b"earlier npz", f"{label}: earlier .npz replaced"


@pytest.mark.parametrize("command, kind, build", CASES, ids=[f"{c}|{k}" for c, k, _ in CASES])
def test_hostile_input(inputs, tmp_path, monkeypatch, command, kind, build):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("promptprism.scale.runner.CONNECT_SECONDS", 1.0)
    monkeypatch.setenv("PROMPTPRISM_CACHE", str(tmp_path / "cache"))
    argv, folder, npz = _prepare_out(tmp_path, build(inputs), command)
    code, out, err = run_cli(*argv)
    OUTCOMES[f"{command}|{kind}"] = (code, err.strip().splitlines()[-1] if err.strip() else "")
    # valid inputs among the hostile ones (else the suite would pass on "always exit 2")
    if kind in MUST_SUCCEED and command != "compcon-eval":
        assert code == 0, f"{command} {kind}: a valid input refused\n{err}"
    if kind in MUST_FAIL or kind.startswith("endpoint: ") and kind != "endpoint: ok":
        assert code == 2, f"{command} {kind}: accepted\n{err}"
    if "--json" in map(str, argv) and code == 2:
        assert json.loads(out)["exit_status"] == 2
    _check(code, out, err, folder, npz, f"{command} {kind}")


def test_segfault_prone_case_in_a_subprocess(inputs, tmp_path):
    """One input row scaled by 1e300, with the report (its t-SNE map): a crash cannot take pytest."""
    argv = ["split", inputs.huge_row, inputs.good2, "-q", "--out", tmp_path / "out"]
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "result.json").write_text(SENTINEL_RESULT)
    (tmp_path / "out" / "report.html").write_text(SENTINEL_REPORT)
    done = subprocess.run(
        [sys.executable, "-m", "promptprism", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PROMPTPRISM_CACHE=str(tmp_path / "cache")),
    )
    OUTCOMES["split|data: huge_row with report (subprocess)"] = (done.returncode, done.stderr.strip()[-200:])
    _check(done.returncode, done.stdout, done.stderr, tmp_path / "out", False, "split huge_row + report")


def teardown_module(module):
    path = os.environ.get("PROMPTPRISM_FUZZ_TABLE")
    if path:
        Path(path).write_text(json.dumps(OUTCOMES, indent=1))


# -------------------------------------------------------------------------- edited resumes, concurrency
RECORDING_GENERATOR = '''
import os
import numpy as np

def gen(prompt, seed=0):
    with open(os.environ["FUZZ_CALLS"], "a", encoding="utf-8") as fh:
        fh.write(prompt + "\\n")
    return np.full((4, 4, 3), seed % 256, dtype=np.uint8)
'''

EDITS = {
    "insert at the top": (["b", "c"], ["a", "b", "c"], ["a"]),
    "delete a line": (["a", "b", "c"], ["a", "c"], []),
    "reorder": (["a", "b", "c"], ["c", "a", "b"], []),
    "duplicate a line": (["a", "b"], ["a", "a", "b"], ["a"]),
    "delete then put back": (["a", "b"], ["b"], []),
    "colliding ids": (["a b", "a_b", "a/b", "a?b", "猫", "犬"],
                      ["猫", "a?b", "a b", "a/b", "犬", "a_b", "x"], ["x"]),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_generate_edited_resume(tmp_path, monkeypatch, edit):
    """A finished manifest, the prompts file edited, the same command again: only the new rows are made,
    every row points at its own image, and the manifest equals a clean run's."""
    before, after, made = EDITS[edit]
    (tmp_path / "recgen.py").write_text(RECORDING_GENERATOR)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("FUZZ_CALLS", str(tmp_path / "calls.log"))
    prompts, out = tmp_path / "p.txt", tmp_path / "m.jsonl"
    argv = ["generate", prompts, "--out", out, "--generator", "recgen:gen", "-q"]
    prompts.write_text("\n".join(before) + "\n", encoding="utf-8")
    assert run_cli(*argv)[0] == 0
    (tmp_path / "calls.log").unlink()
    prompts.write_text("\n".join(after) + "\n", encoding="utf-8")
    code, _, err = run_cli(*argv)
    OUTCOMES[f"generate|edited resume: {edit}"] = (code, err.strip())
    assert code == 0, err
    log = tmp_path / "calls.log"
    assert (log.read_text(encoding="utf-8").splitlines() if log.exists() else []) == made
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["prompt"] for r in rows] == after
    assert len({r["image"].casefold() for r in rows}) == len({(r["prompt"], r["content_key"]) for r in rows})
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "p.txt").write_text("\n".join(after) + "\n", encoding="utf-8")
    code, _, err = run_cli("generate", clean / "p.txt", "--out", clean / "m.jsonl", "--generator",
                           "recgen:gen", "-q")
    assert code == 0, err
    assert out.read_text(encoding="utf-8") == (clean / "m.jsonl").read_text(encoding="utf-8")


LOCK_HOLDER = '''
import contextlib, sys, time
from pathlib import Path
from promptprism.io import exclusive_lock
gate = Path(sys.argv[1])
with contextlib.ExitStack() as stack:
    for target in sys.argv[2:]:
        stack.enter_context(exclusive_lock(target))
    (gate / "held").touch()
    while not (gate / "release").exists():
        time.sleep(0.05)
'''


def test_writers_on_a_place_another_process_is_writing(inputs, tmp_path):
    """Another process (real, holding the OS lock) writes each --out: every writer refuses in one line."""
    writers = {
        "split": lambda o: ["split", inputs.good, inputs.good2, *FAST, "--out", o],
        "diversity": lambda o: ["diversity", inputs.good, *FAST, "--out", o],
        "regions": lambda o: ["regions", "--real", inputs.real, "--generated", inputs.gen, *FAST, "--out", o],
        "demo": lambda o: ["demo", "--per-prompt", "2", *FAST, "--out", o],
        "embed": lambda o: ["embed", inputs.good, "-q", "--out", o],
        "generate": lambda o: ["generate", inputs.prompts_txt, "--out", o, "--generator",
                               "test_generate:painter", "-q"],
    }
    outs = {c: tmp_path / ("out.npz" if c == "embed" else "m.jsonl" if c == "generate" else f"out-{c}")
            for c in writers}
    src = str(Path(__file__).resolve().parents[1] / "src")
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(tmp_path), *map(str, outs.values())],
                              env=dict(os.environ, PYTHONPATH=src), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(2400):  # until the holder says it holds every lock (it cannot pass without it)
            if (tmp_path / "held").exists() or holder.poll() is not None:
                break
            time.sleep(0.05)
        assert (tmp_path / "held").exists(), holder.communicate()
        for command, build in writers.items():
            code, out, err = run_cli(*build(outs[command]))
            OUTCOMES[f"{command}|concurrency: --out held by another run"] = (code, err.strip())
            assert code == 2 and f"(pid {holder.pid}) is writing it now" in err, (command, err)
            _check(code, out, err, None, False, f"{command} concurrent")
            assert not outs[command].exists()
    finally:
        (tmp_path / "release").touch()
        holder.communicate(timeout=120)
