"""What scripts get from the CLI (``--json`` on success and failure) and what a results folder may hold."""

from __future__ import annotations

import json

import numpy as np
import pytest

from promptprism.cli import main


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    root = tmp_path_factory.mktemp("scripts")
    rng = np.random.default_rng(1)
    p, o = rng.standard_normal((80, 4)), rng.standard_normal((80, 4))
    shifted = o.copy()
    shifted[:40] += 3
    prompts = np.array([f"p{i % 4}" for i in range(80)])
    np.savez(root / "a.npz", prompt_embeddings=p, output_embeddings=shifted, prompts=prompts)
    np.savez(root / "b.npz", prompt_embeddings=p, output_embeddings=o, prompts=prompts)
    return root / "a.npz", root / "b.npz"


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_split_json_has_modes_p_values_and_the_verdict(sets, tmp_path, capsys):
    a, b = sets
    code, out, _ = _run(capsys, "split", a, b, "--out", tmp_path / "o", "-q", "--no-report", "--json",
                        "--modes", "2")
    summary = json.loads(out)
    assert code == 0 and summary["modes"]
    assert all("p_value" in m and "significant" in m for m in summary["modes"])
    saved = json.loads((tmp_path / "o" / "result.json").read_text())
    assert [m["p_value"] for m in summary["modes"]] == [m["p_value"] for m in saved["modes"]]
    assert summary["verdict"] == saved["significance"]["verdict"]
    assert "differ significantly" in summary["verdict"]


def test_multi_model_diversity_json_has_every_models_scores(sets, tmp_path, capsys):
    a, b = sets
    code, out, _ = _run(capsys, "diversity", a, b, "--out", tmp_path / "o", "-q", "--no-report", "--json")
    summary = json.loads(out)
    assert code == 0 and [m["name"] for m in summary["models"]] == ["a", "b"]
    assert all(isinstance(m["scendi"], float) and isinstance(m["vendi"], float) for m in summary["models"])


def test_a_failed_json_run_prints_a_json_error(sets, tmp_path, capsys):
    a, _ = sets
    code, out, err = _run(capsys, "split", tmp_path / "missing.npz", a, "--out", tmp_path / "o", "--json")
    assert code == 2 and json.loads(out) == {"error": f"{tmp_path / 'missing.npz'}: no such file or folder",
                                             "exit_status": 2}
    assert err.startswith("error: ")
    code, out, _ = _run(capsys, "split", a, a, "--bogus", "--json")
    assert code == 2 and json.loads(out)["exit_status"] == 2 and "--bogus" in json.loads(out)["error"]


def test_columns_with_embeddings_is_refused(sets, tmp_path, capsys):
    a, b = sets
    code, _, err = _run(capsys, "split", a, b, "--columns", "prompt=q", "--out", tmp_path / "o", "-q")
    assert code == 2 and "--columns cannot be used with" in err and "holds embeddings" in err


def test_out_folder_of_another_command_or_with_foreign_files_is_refused(sets, tmp_path, capsys):
    a, b = sets
    out = tmp_path / "o"
    assert _run(capsys, "diversity", a, "--out", out, "-q")[0] == 0
    code, _, err = _run(capsys, "split", a, b, "--out", out, "-q", "--no-report")
    assert code == 2 and "holds the result of `promptprism diversity`" in err
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("my own work")
    code, _, err = _run(capsys, "split", a, b, "--out", mine, "-q", "--no-report")
    assert code == 2 and "holds files promptprism did not write ('thesis.tex')" in err
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]


def test_a_result_json_promptprism_did_not_write_does_not_open_the_folder(sets, tmp_path, capsys):
    a, b = sets
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "result.json").write_text('{"my": "own data"}')
    (theirs / "report.html").write_text("<html>my own page</html>")
    code, _, err = _run(capsys, "split", a, b, "--out", theirs, "-q", "--no-report")
    assert code == 2 and "holds files promptprism did not write" in err and "'result.json'" in err
    assert (theirs / "result.json").read_text() == '{"my": "own data"}'
    assert (theirs / "report.html").read_text() == "<html>my own page</html>"


@pytest.mark.slow
def test_no_report_removes_the_stale_report(sets, tmp_path, capsys):
    a, b = sets
    out = tmp_path / "o"
    assert _run(capsys, "split", a, b, "--out", out, "-q")[0] == 0
    assert (out / "report.html").is_file()
    assert _run(capsys, "split", b, a, "--out", out, "-q", "--no-report")[0] == 0
    assert not (out / "report.html").exists() and (out / "result.json").is_file()


def test_regions_headline_is_eq4_and_the_u_form_is_labelled(tmp_path, capsys):
    rng = np.random.default_rng(0)
    real = rng.random((40, 6, 6))
    np.save(tmp_path / "real.npy", real)
    np.save(tmp_path / "gen.npy", real[:20] * 0.9 + 0.1 * rng.random((20, 6, 6)))
    code = main(["regions", "--real", str(tmp_path / "real.npy"), "--generated", str(tmp_path / "gen.npy"),
                 "--out", str(tmp_path / "o"), "--bootstrap", "30", "--no-report", "--regions", "2"])
    printed = capsys.readouterr().out
    assert code == 0
    result = json.loads((tmp_path / "o" / "result.json").read_text())
    iv = result["intervals"][0]
    header, row = (tmp_path / "o" / "curves.csv").read_text().splitlines()[:2]
    curves = dict(zip(header.split(","), row.split(","), strict=True))
    assert float(curves["cms"]) == result["cms"][0]  # eq. 4, as without --bootstrap
    assert float(curves["region_1"]) == result["region_cms"][0][1]
    assert float(curves["cms_uform"]) == pytest.approx(iv["cms"]["debiased"], rel=1e-9)
    assert float(curves["region_1_uform_low"]) == pytest.approx(iv["region_cms"][1]["low"], rel=1e-9)
    assert iv["cms"]["debiased"] != pytest.approx(result["cms"][0], rel=1e-6)  # two different estimates
    assert "CMS (eq. 4)" in printed and "CMS (U-form)" not in printed
    assert f"{result['cms'][0]:.4f}" in printed and f"U-form {iv['cms']['debiased']:.4f}" in printed


def test_compcon_reads_the_image_folder_layout_split_reads(tmp_path):
    from PIL import Image

    from promptprism.methods.compcon.image_sources import ImageBank

    for i in range(3):
        Image.new("RGB", (4, 4), (i * 80, 0, 0)).save(tmp_path / f"q{i}.png")
    (tmp_path / "prompts.csv").write_text("id,prompt\nq0,a red cat\nq1,a dog\nq2,a bird\n", encoding="utf-8")
    bank = ImageBank.load(tmp_path, name="A")
    assert sorted(bank.mapping) == ["a bird", "a dog", "a red cat"]
    assert bank.image_paths("a dog") == [str(tmp_path / "q1.png")]


def test_python_m_exits_with_the_commands_status_after_an_interrupt_it_handled(tmp_path):
    """A KeyboardInterrupt that escaped a string exec() and was then handled: ``python -m`` used to end the
    process by SIGINT (returncode -2) instead of the command's own status (the generator demo's Ctrl-C test
    saw this in about one run of ten: the interrupt landed in a lazy import's generated dataclass code)."""
    import os
    import subprocess
    import sys
    import textwrap

    (tmp_path / "handled_interrupt.py").write_text(textwrap.dedent("""
        import sys
        import promptprism.cli as cli

        command = cli.main

        def interrupted_then_handled(argv=None):
            code = command(argv)
            try:  # (how a Ctrl-C inside exec'd code leaves it, after the command's last exec)
                exec("raise KeyboardInterrupt")
            except KeyboardInterrupt:
                pass
            return code

        cli.main = interrupted_then_handled
        sys.argv = ["promptprism", "split", "missing-a.npz", "missing-b.npz", "--out", "o", "-q"]
        cli.run()
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    proc = subprocess.run([sys.executable, "-m", "handled_interrupt"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "missing-a.npz" in proc.stderr and "Traceback" not in proc.stderr


def test_signed_shares_print_without_a_negative_zero():
    from promptprism.report.html import fnum  # (the report's and the CLI's tables)

    assert [fnum(x, s) for x, s in ((-0.0004, ".0%"), (-0.0004, ".1%"), (-0.03, ".0%"), (1.25, ".0%"),
                                    (-1e-9, ".3g"), (-0.0, ".2f"))] == ["0%", "0.0%", "-3%", "125%", "-1e-09",
                                                                         "0.00"]


def test_workers_with_the_exact_route_warn_and_start_no_cluster(sets, tmp_path, capsys, monkeypatch):
    import promptprism.scale as scale

    started = []
    real = scale.execution
    monkeypatch.setattr("promptprism.cli.split.execution",
                        lambda **kw: started.append(kw) or real(**kw))
    a, b = sets
    with pytest.warns(UserWarning, match="--workers is not used by --method exact"):
        code, _, _ = _run(capsys, "split", a, b, "--method", "exact", "--workers", "2", "--out",
                          tmp_path / "o", "-q", "--no-report", "--permutations", "0")
    assert code == 0
    assert started == [{"scheduler": None, "workers": None}]


@pytest.mark.slow  # (a command stopped after 2 s: out of the quick loop)
def test_sigterm_stops_a_run_as_ctrl_c_does_and_exits_143(tmp_path):
    """``kill`` (SIGTERM) ended the process at once, exit 143 with no word, and left the lock file beside
    --out; now it stops the run as Ctrl-C does: one line, nothing half-written, no lock file left."""
    import os
    import signal
    import subprocess
    import sys
    import time

    rng = np.random.default_rng(0)
    for name, shift in (("a", 0.0), ("b", 0.5)):  # (a difference: the test draws every permutation, ~40 s)
        np.savez(tmp_path / f"{name}.npz", prompt_embeddings=rng.normal(size=(1200, 16)),
                 output_embeddings=rng.normal(size=(1200, 16)) + shift)
    proc = subprocess.Popen([sys.executable, "-m", "promptprism", "split", "a.npz", "b.npz", "--out", "out",
                             "--method", "exact", "--permutations", "20000", "--no-report", "-q"],
                            cwd=tmp_path, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PROMPTPRISM_THREADS": "1"})
    time.sleep(2.5)
    assert proc.poll() is None, proc.stderr.read()
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 143, (proc.returncode, err)
    assert "terminated: whatever was written is whole" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz", "b.npz"]  # no out/, no lock file
