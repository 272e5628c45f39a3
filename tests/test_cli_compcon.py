"""``promptprism compcon`` from the command line: bad inputs (exit 2, a clear message, no result.json) and
a full run against a scripted local chat server (a PROTOCOL test: scripted answers, a fake CLIP)."""

from __future__ import annotations

import json
import socket

import pytest

from compcon_fakes import (
    ATTRIBUTES_ANSWER,
    BANK_PROMPTS,
    EMPTY_ATTRIBUTES_ANSWER,
    ScriptedServer,
    description_answer,
    is_sad,
    prompt_list,
    write_bank,
)
from promptprism import load_result
from promptprism.cli import main
from promptprism.methods.promptsplit import Mode, PromptLoading, PromptSplitResult


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _args(dirs, bank, out, base_url, *extra):
    return [
        "compcon",
        str(dirs["A"]),
        str(dirs["B"]),
        "--prompt-bank",
        str(bank),
        "--out",
        str(out),
        "--base-url",
        base_url,
        "--api-key-env",
        "",
        "--timeout",
        "0.5",
        "--retries",
        "1",
        "--clip-model",
        "compcon_fakes:FakeClip",
        "--discovery-prompts",
        "3",
        "-q",
        *extra,
    ]


def script(body, stage, n):
    if stage == "attributes":
        return ATTRIBUTES_ANSWER
    if stage == "describe":
        return description_answer()
    if stage == "generate":
        return prompt_list(5)
    if stage == "judge":
        return "The two are close. <rating>3</rating>" if n % 2 == 0 else "<rating>2</rating>"
    return "?"


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_unreachable_endpoint_exit_2_names_url(tmp_path, capsys):
    dirs, bank = write_bank(tmp_path / "in", BANK_PROMPTS)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    out = tmp_path / "out"
    assert main(_args(dirs, bank, out, url)) == 2
    err = capsys.readouterr().err
    assert f"{url}/chat/completions unreachable" in err and "error:" in err
    assert len(err.strip().splitlines()) == 1
    assert not (out / "result.json").exists()


def test_prompts_without_images_for_one_model(tmp_path, capsys):
    missing = ["a lonely tree on a hill", "a busy office"]
    dirs, bank = write_bank(tmp_path / "in", BANK_PROMPTS, missing={"B": missing})
    out = tmp_path / "out"
    # no server is needed: the check comes before any request (the URL is a closed port)
    assert main(_args(dirs, bank, out, f"http://127.0.0.1:{closed_port()}/v1")) == 2
    err = capsys.readouterr().err
    assert "model B has no images for 2 of the 12 prompts" in err
    assert all(repr(p) in err for p in missing) and "--skip-missing" in err
    assert "model A" not in err
    assert not out.exists() or not (out / "result.json").exists()


def test_skip_missing_runs_and_lists_the_skipped(tmp_path):
    missing = ["a lonely tree on a hill", "a busy office"]
    dirs, bank = write_bank(tmp_path / "in", BANK_PROMPTS, missing={"B": missing})
    out = tmp_path / "out"
    with ScriptedServer(script) as server:
        assert main(_args(dirs, bank, out, server.base_url, "--skip-missing")) == 0
    r = load_result(out)
    assert r.skipped_prompts == {"B": missing} and r.n_prompts == 10


def test_empty_attribute_list_exit_2(tmp_path, capsys):
    dirs, bank = write_bank(tmp_path / "in", BANK_PROMPTS)
    out = tmp_path / "out"
    with ScriptedServer(lambda body, stage, n: EMPTY_ATTRIBUTES_ANSWER) as server:
        assert main(_args(dirs, bank, out, server.base_url)) == 2
    err = capsys.readouterr().err
    assert "proposed no attribute" in err and "3 sampled prompt(s)" in err
    assert not (out / "result.json").exists()


def test_bad_options_and_files_exit_2(tmp_path, capsys):
    dirs, bank = write_bank(tmp_path / "in", BANK_PROMPTS)
    out = tmp_path / "out"
    assert main(_args(dirs, tmp_path / "nope.txt", out, "http://127.0.0.1:9/v1")) == 2
    assert "nope.txt: no such prompt bank file" in capsys.readouterr().err
    assert main(_args(dirs, bank, out, "not-a-url")) == 2
    assert "--base-url must look like" in capsys.readouterr().err
    assert main(_args({"A": tmp_path / "missing", "B": dirs["B"]}, bank, out, "http://127.0.0.1:9/v1")) == 2
    assert "no such image bank" in capsys.readouterr().err
    assert not (out / "result.json").exists()


def test_full_run_writes_result_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PP_TEST_KEY", "topsecret")
    dirs, bank = write_bank(tmp_path / "in", BANK_PROMPTS)
    out = tmp_path / "out"
    with ScriptedServer(script) as server:
        assert (
            main(
                _args(
                    dirs,
                    bank,
                    out,
                    server.base_url,
                    "--seed",
                    "3",
                    "--api-key-env",
                    "PP_TEST_KEY",
                    "--chat-cache",
                    str(tmp_path / "cache"),
                )
            )
            == 0
        )
        assert server.headers[0]["Authorization"] == "Bearer topsecret"
        n_requests = len(server.requests)
        # same run again: every answer comes from the on-disk cache, the result is the same
        assert (
            main(
                _args(
                    dirs,
                    bank,
                    tmp_path / "out2",
                    server.base_url,
                    "--seed",
                    "3",
                    "--api-key-env",
                    "PP_TEST_KEY",
                    "--chat-cache",
                    str(tmp_path / "cache"),
                )
            )
            == 0
        )
        assert len(server.requests) == n_requests
    assert load_result(tmp_path / "out2").attributes == load_result(out).attributes
    data = json.loads((out / "result.json").read_text())
    assert data["kind"] == "compcon" and data["seed"] == 3
    top = data["attributes"][0]
    assert top["attribute"] == "Blue rain tint" and set(top["diverging_prompts"]) == {
        p for p in BANK_PROMPTS if is_sad(p)
    }
    assert {"score", "n_diverging", "threshold"} <= set(top)
    desc = data["descriptions"][0]
    assert desc["best"]["key_concepts"] == ["sadness", "loneliness", "solitude"]
    assert desc["iterations"][0]["score"] is None  # image banks cannot render new prompts
    assert data["models"]["llm"]["base_url"] == server.base_url
    assert "topsecret" not in (out / "result.json").read_text()
    assert not any("topsecret" in f.read_text() for f in (tmp_path / "cache").rglob("*.json"))


def _split_result(path, prompts, side="test"):
    loads = [
        PromptLoading(
            prompt=p, contribution=0.1 if side == "test" else -0.1, mean_score=1.0, n_test=5, n_reference=5
        )
        for p in prompts
    ]
    loads.append(
        PromptLoading(
            prompt="a busy office",
            contribution=-0.01 if side == "test" else 0.01,
            mean_score=0.1,
            n_test=5,
            n_reference=5,
        )
    )
    modes = [
        Mode(
            rank=1,
            eigenvalue=0.5 if side == "test" else -0.5,
            side=side,
            top_samples=[],
            top_samples_other=[],
            top_prompts=loads,
        )
    ]
    PromptSplitResult(
        eigenvalues=[0.5, -0.1],
        modes=modes,
        distance=0.26,
        method="exact",
        n_test=60,
        n_reference=60,
        seed=0,
        config={},
    ).save(path)


def test_from_split_describes_the_mode_prompts(tmp_path):
    dirs, bank = write_bank(tmp_path / "in", BANK_PROMPTS)
    seeds = ["a sad harbour at dusk", "a gloomy train station", "a lonely tree on a hill"]
    _split_result(tmp_path / "split", seeds)
    out = tmp_path / "out"
    with ScriptedServer(script) as server:
        assert (
            main(
                _args(
                    dirs, bank, out, server.base_url, "--from-split", str(tmp_path / "split"), "--mode", "1"
                )
            )
            == 0
        )
        described = server.stage_requests("describe")[0]["messages"][0]["content"]
    r = load_result(out)
    assert r.seeded_from["mode"] == 1 and r.seeded_from["prompts"] == seeds and not r.seeded_from["swapped"]
    assert r.descriptions[0]["diverging_set"] == seeds  # the office (wrong sign) is not in the mode
    assert {d["prompt"] for d in r.discovery} == set(seeds)
    head = described.split("non-diverging prompts")[0]
    assert all(p in head for p in seeds) and "a busy office" not in head


def test_from_split_bad_mode_and_bad_result(tmp_path, capsys):
    dirs, bank = write_bank(tmp_path / "in", BANK_PROMPTS)
    _split_result(tmp_path / "split", ["a sad harbour at dusk"])
    out = tmp_path / "out"
    url = f"http://127.0.0.1:{closed_port()}/v1"
    assert main(_args(dirs, bank, out, url, "--from-split", str(tmp_path / "split"), "--mode", "-2")) == 2
    assert "no negative mode 2" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{}")
    assert main(_args(dirs, bank, out, url, "--from-split", str(tmp_path / "bad.json"))) == 2
    assert "unknown result kind" in capsys.readouterr().err
    assert not (out / "result.json").exists()


def test_compcon_eval_with_a_judge(tmp_path):
    preds = {
        "0": {"attributes": ["Chrysler building", "skyline", "taxi"], "descriptions": [["new york"]]},
        "bats": {"attributes": ["bats"], "descriptions": [["halloween"], ["spooky"]]},
    }
    (tmp_path / "preds.json").write_text(json.dumps(preds))
    out = tmp_path / "eval"
    with ScriptedServer(script) as server:
        code = main(
            [
                "compcon-eval",
                str(tmp_path / "preds.json"),
                "--out",
                str(out),
                "--judge-base-url",
                server.base_url,
                "--api-key-env",
                "",
                "--timeout",
                "2",
                "-q",
            ]
        )
        judged = server.stage_requests("judge")
    assert code == 0
    r = json.loads((out / "result.json").read_text())
    # judge alternates 3, 2, 3, 2... in request order: split 0 attributes 3,2,3 then description 2;
    # split 'bats' attribute 3, descriptions 2, 3
    rows = {row["split"]: row for row in r["per_split"]}
    assert rows[0]["attribute_ratings"] == [3, 2, 3] and rows[0]["description_ratings"] == [2]
    assert rows[60 - 2]["attribute_ratings"] == [3] and rows[58]["description_ratings"] == [2, 3]
    assert r["summary"]["attribute_top1"] == 1.0 and r["summary"]["description_top1"] == 0.5
    assert r["summary"]["description_top5"] == 0.75
    assert '("the Chrysler Building", "Chrysler building")' in judged[0]["messages"][0]["content"]
    page = (out / "report.html").read_text()  # compcon-eval writes its report too
    assert page.startswith("<!DOCTYPE html>") or "<html" in page[:200]


@pytest.mark.parametrize("bad", ["[]", "{", '{"999": {"attributes": ["x"]}}'])
def test_compcon_eval_bad_predictions(tmp_path, capsys, bad):
    (tmp_path / "p.json").write_text(bad)
    assert (
        main(
            [
                "compcon-eval",
                str(tmp_path / "p.json"),
                "--out",
                str(tmp_path / "o"),
                "--judge-base-url",
                f"http://127.0.0.1:{closed_port()}/v1",
                "-q",
            ]
        )
        == 2
    )
    assert "error:" in capsys.readouterr().err
    assert not (tmp_path / "o" / "result.json").exists()


def test_from_split_negative_mode_swaps_the_models(tmp_path):
    dirs, bank = write_bank(tmp_path / "in", BANK_PROMPTS)
    seeds = ["a sad harbour at dusk", "a gloomy train station"]
    _split_result(tmp_path / "split", seeds, side="reference")
    out = tmp_path / "out"
    with ScriptedServer(script) as server:
        args = _args(
            dirs, bank, out, server.base_url, "--from-split", str(tmp_path / "split"), "--mode", "-1"
        )
        assert main(args) == 0
    r = load_result(out)
    assert r.seeded_from["swapped"] and r.seeded_from["side"] == "reference"
    assert r.models["A"]["name"] == "B" and r.models["B"]["name"] == "A"  # B's images are now the top row
    # B never shows the blue tint A shows, so with the roles swapped it diverges nowhere
    top = next(a for a in r.attributes if a["attribute"] == "Blue rain tint")
    assert top["n_diverging"] == 0
    assert r.descriptions[0]["diverging_set"] == seeds


def test_callable_generators_from_the_cli_score_and_iterate(tmp_path):
    bank = tmp_path / "bank.txt"
    bank.write_text("\n".join(BANK_PROMPTS))
    out = tmp_path / "out"

    def respond(body, stage, n):
        return prompt_list(15) if stage == "generate" else script(body, stage, n)

    with ScriptedServer(respond) as server:
        args = _args(
            {"A": "compcon_fakes:model_a", "B": "compcon_fakes:model_b"},
            bank,
            out,
            server.base_url,
            "--iterations",
            "2",
            "--generated-prompts",
            "20",
        )
        assert main(args) == 0
    d = load_result(out).descriptions[0]
    assert d["scored"] and d["n_iterations"] == 2
    assert [it["score"] for it in d["iterations"]] == [0.75, 0.75]  # 15 sad of the first 20 prompts
    assert len(d["iterations"][0]["generated_prompts"]) == 20


def test_compcon_eval_says_when_the_judge_could_not_rate_a_split(tmp_path):
    """A split the judge could not rate counts 0 in the summary: the terminal said nothing of it (only
    result.json's failures did); now one warning line names how many and the first."""
    from _cli_run import run_cli

    preds = {"0": {"attributes": ["skyline"], "descriptions": [["new york"]]}}
    (tmp_path / "preds.json").write_text(json.dumps(preds))
    with ScriptedServer(lambda body, stage, n: "no rating here") as server, \
            pytest.warns(UserWarning, match=r"1 split\(s\) the judge could not rate") as said:
        code, _, err = run_cli("compcon-eval", tmp_path / "preds.json", "--out", tmp_path / "eval",
                               "--judge-base-url", server.base_url, "--api-key-env", "", "--timeout", "2",
                               "--retries", "0")
    r = json.loads((tmp_path / "eval" / "result.json").read_text())
    assert code == 0 and len(r["failures"]) == 1, err
    assert "see 'failures' in result.json" in str(said[-1].message)
