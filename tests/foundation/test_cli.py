"""The CLI as a user meets it: fast list, one-line errors before compute, provenance-keyed reuse, overrides
saved beside the canonical result, Ctrl-C that stops within seconds."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from icml26 import registry
from icml26.cli import main
from icml26.results import load_result


def _one_line_error(capsys, *must):
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    for m in must:
        assert m in err, err
    return err


def test_list_shows_all_19_papers(capsys, tmp_path):
    assert main(["list", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert len(registry.PAPERS) == 19
    for slug in registry.PAPERS:
        assert slug in out


def test_list_imports_no_paper_and_no_torch_and_is_fast(tmp_path):
    code = ("import sys, time; t = time.perf_counter(); from icml26.cli import main; main(['list', '--out', %r]); "
            "dt = time.perf_counter() - t; bad = sorted(m for m in sys.modules if m == 'torch' or "
            "any(m.startswith('icml26.' + s) for s in %r)); print('RESULT', dt, bad)")
    code %= (str(tmp_path), list(registry.PAPERS))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    dt, bad = out.split("RESULT", 1)[1].split(" ", 2)[1:]
    assert bad.strip() == "[]", f"list imported {bad}"
    assert float(dt) < 1.0, f"list took {dt} s"


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    import icml26

    assert capsys.readouterr().out.strip() == f"icml26 {icml26.__version__}"


def test_unknown_slug_is_one_line_error(capsys):
    assert main(["run", "no_such_paper"]) == 2
    _one_line_error(capsys, "unknown paper 'no_such_paper'")


def test_unimplemented_paper_is_clear_error(capsys, monkeypatch):
    from icml26 import registry

    monkeypatch.setattr(registry.Paper, "is_implemented", lambda self: False)
    assert main(["run", "murgat"]) == 2
    _one_line_error(capsys, "not implemented")


def test_missing_extra_is_named_before_import(fake_paper, capsys):
    assert main(["run", "needsextra", "--scale", "smoke", "--out", str(fake_paper)]) == 2
    _one_line_error(capsys, "no-such-distribution-icml26", "pip install 'icml26[needsextra]'")
    assert "fakepaper.experiment" not in sys.modules  # nothing was imported, nothing computed
    assert not (fake_paper / "needsextra").exists()


def test_missing_extra_in_real_metadata_names_the_extra(monkeypatch):
    from icml26 import registry

    p = registry.PAPERS["usb"]
    assert "pot" in [d.lower() for d in p.extra_requirements()]  # read from the installed icml26 metadata
    real = registry.metadata.version
    monkeypatch.setattr(registry.metadata, "version",
                        lambda d: (_ for _ in ()).throw(registry.metadata.PackageNotFoundError(d))
                        if d.lower() == "pot" else real(d))
    with pytest.raises(registry.MissingExtraError, match=r"pip install 'icml26\[usb\]'"):
        p.load_experiment()


def test_reproduce_lists_a_paper_it_cannot_run(fake_paper, capsys):
    rc = main(["reproduce", "fakepaper", "needsextra", "--scale", "smoke", "--out", str(fake_paper)])
    out = capsys.readouterr().out
    assert rc == 1  # something asked for could not be run
    assert "needsextra" in out and "not run: needs no-such-distribution-icml26" in out
    assert load_result(fake_paper / "fakepaper" / "smoke").claims


def test_run_saves_result_with_provenance(fake_paper, capsys):
    assert main(["run", "fakepaper", "--scale", "smoke", "--out", str(fake_paper)]) == 0
    out = capsys.readouterr().out
    assert "C1" in out and "not held" in out and "positive on every seed" in out
    assert "plumbing only" in out  # smoke verdicts are labelled
    r = load_result(fake_paper / "fakepaper" / "smoke")
    assert r.figures == ["values.png"] and r.figure_captions["values.png"] == "the sampled values"
    prov = r.provenance
    assert len(prov["code_hash"]) == 16 and prov["icml26"]
    assert prov["machine"]["cores"] >= 1 and prov["machine"]["cpu"]
    assert "run fakepaper" in prov["command"] or "pytest" in prov["command"]
    if (Path(__file__).resolve().parents[2] / ".git").exists():
        assert len(prov["commit"]) == 40 and isinstance(prov["dirty"], bool)
    assert r.overrides == {} and r.runtime_s > 0 and r.versions["torch"]


def test_overrides_are_saved_beside_not_over_the_canonical_result(fake_paper, capsys):
    root = str(fake_paper)
    assert main(["run", "fakepaper", "--scale", "smoke", "--out", root]) == 0
    canon = load_result(fake_paper / "fakepaper" / "smoke")
    rc = main(["run", "fakepaper", "--scale", "smoke", "--seed", "3", "--set", "n=5", "--set", "flag=true",
               "--set", "sizes=[3,4]", "--out", root])
    assert rc == 0
    assert load_result(fake_paper / "fakepaper" / "smoke").created == canon.created
    assert load_result(fake_paper / "fakepaper" / "smoke").config == canon.config
    folders = sorted(p.name for p in (fake_paper / "fakepaper").iterdir())
    assert len(folders) == 2 and folders[0] == "smoke" and folders[1].startswith("smoke+")
    r = load_result(fake_paper / "fakepaper" / folders[1])
    assert r.overrides == {"seed": 3, "n": 5, "flag": True, "sizes": [3, 4]}
    assert r.config["seed"] == 3 and r.config["scale"] == "smoke"
    capsys.readouterr()
    assert main(["report", "--out", root]) == 0
    html = (fake_paper / "report.html").read_text()
    assert "Run with overrides" in html


@pytest.mark.parametrize("arg, msg", [
    ("nokey=1", "unknown key"),
    ("n=abc", "expected a int"),
    ("flag=maybe", "expected a bool"),
    ("sizes=5", "expected a list"),
    ("noequals", "key=value"),
    ("n=0", "invalid config for 'fakepaper': n must be >= 1"),  # the experiment's own validate_config
])
def test_bad_config_is_one_line_error(fake_paper, capsys, arg, msg):
    assert main(["run", "fakepaper", "--scale", "smoke", "--set", arg, "--out", str(fake_paper)]) == 2
    _one_line_error(capsys, msg)
    assert not (fake_paper / "fakepaper").exists()


def test_unwritable_out_fails_before_compute(fake_paper, capsys):
    t = time.perf_counter()
    assert main(["run", "fakepaper", "--scale", "smoke", "--set", "sleep_jobs=2", "--out", "/proc/icml26"]) == 2
    assert time.perf_counter() - t < 5  # the 30 s jobs never started
    _one_line_error(capsys, "--out /proc/icml26: cannot write")
    assert not os.listdir(os.environ["FAKE_MARKERS"])


def test_bad_scale_is_clear_error(fake_paper, capsys):
    assert main(["run", "fakepaper", "--scale", "huge", "--out", str(fake_paper)]) == 2
    _one_line_error(capsys, "--scale")


def test_reproduce_reuses_fresh_results_and_reruns_stale_ones(fake_paper, capsys):
    root = str(fake_paper)
    assert main(["reproduce", "fakepaper", "--scale", "smoke", "--out", root]) == 0
    assert "paper 1/1: fakepaper" in capsys.readouterr().out  # the progress line
    first = load_result(fake_paper / "fakepaper" / "smoke").created
    assert main(["reproduce", "fakepaper", "--scale", "smoke", "--out", root]) == 0
    assert "reusing" in capsys.readouterr().out
    assert load_result(fake_paper / "fakepaper" / "smoke").created == first
    # the paper's code changes (here: a comment): the saved result is stale and is re-run
    src = fake_paper.parent / "fakepkg" / "fakepaper" / "experiment.py"
    src.write_text(src.read_text() + "\n# changed\n")
    time.sleep(1.1)  # `created` has one-second resolution
    assert main(["reproduce", "fakepaper", "--scale", "smoke", "--out", root]) == 0
    out = capsys.readouterr().out
    assert "stale: the code changed" in out and "reusing" not in out
    assert load_result(fake_paper / "fakepaper" / "smoke").created != first
    assert (fake_paper / "report.html").exists() and (fake_paper / "report.md").exists()


def test_reproduce_reports_a_failing_paper_and_continues(fake_paper, capsys):
    # the child process re-imports the experiment: make its small config raise
    src = fake_paper.parent / "fakepkg" / "fakepaper" / "experiment.py"
    text = src.read_text()
    assert '"fail": False,\n              "sleep_jobs": 0},\n}' in text
    src.write_text(text.replace('"fail": False,\n              "sleep_jobs": 0},\n}',
                                '"fail": True,\n              "sleep_jobs": 0},\n}'))
    rc = main(["reproduce", "fakepaper", "--scale", "small", "--out", str(fake_paper)])
    assert rc == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and (fake_paper / "report.html").exists()


def test_list_and_show_flag_unreadable_and_stale_results(fake_paper, capsys):
    root = fake_paper
    assert main(["run", "fakepaper", "--scale", "smoke", "--out", str(root)]) == 0
    f = root / "fakepaper" / "smoke" / "result.json"
    d = json.loads(f.read_text())
    d["claims"][0]["held"] = "false"  # a string would count as held
    f.write_text(json.dumps(d))
    capsys.readouterr()
    assert main(["list", "--out", str(root)]) == 0
    assert "unreadable" in capsys.readouterr().out
    from icml26.cli import _status_line

    line = _status_line(root, registry.PAPERS["fakepaper"])
    assert line.startswith("smoke: unreadable: claims[0].held must be a boolean")
    assert main(["show", "fakepaper", "--out", str(root)]) == 0
    out = capsys.readouterr().out
    assert "number of samples" in out and "expected runtime ~1 s" in out and "unreadable" in out


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _spawn(args, env):
    # A test run started in the background of a non-interactive shell (`pytest &`) has SIGINT ignored, which
    # the child would inherit (Python then installs no KeyboardInterrupt handler): give the child the default
    # disposition a terminal user has.
    return subprocess.Popen([sys.executable, "-m", "icml26", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_default_sigint)


def _wait_for_markers(markers: Path, n: int, proc, timeout: float = 60) -> list[int]:
    t = time.time()
    while len(os.listdir(markers)) < n:
        if proc.poll() is not None:
            raise AssertionError(f"run ended early: {proc.communicate()}")
        if time.time() - t > timeout:
            raise AssertionError("workers never started")
        time.sleep(0.2)
    return [int(name.split(".")[1]) for name in os.listdir(markers)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by init) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("command", ["run", "reproduce"])
def test_ctrl_c_stops_a_parallel_run_within_seconds(fake_paper, command):
    """SIGINT to a run whose 6 jobs of 30 s run in 2 workers: exit 130 in a few seconds, workers gone, no file."""
    markers = Path(os.environ["FAKE_MARKERS"])
    root = fake_paper
    if command == "run":
        args = ["run", "fakepaper", "--scale", "smoke", "--set", "sleep_jobs=6", "--out", str(root)]
    else:  # reproduce runs the paper in a child process; its small config is made slow here
        src = fake_paper.parent / "fakepkg" / "fakepaper" / "experiment.py"
        src.write_text(src.read_text().replace('"fail": False,\n              "sleep_jobs": 0},\n}',
                                               '"fail": False,\n              "sleep_jobs": 6},\n}'))
        args = ["reproduce", "fakepaper", "--scale", "small", "--out", str(root)]
    proc = _spawn(args, dict(os.environ))
    pids = _wait_for_markers(markers, 2, proc)
    t = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    dt = time.perf_counter() - t
    assert proc.returncode == 130, err
    assert dt < 10, f"took {dt:.1f} s to stop"
    assert "interrupted" in err
    time.sleep(0.5)
    assert not any(_alive(p) for p in pids), "worker processes survived Ctrl-C"
    assert len(os.listdir(markers)) == 2  # queued jobs were cancelled, not run
    leftovers = [p for p in root.rglob("*") if p.is_file() and p.suffix in (".json", ".tmp", ".png")]
    assert leftovers == [], leftovers


def test_python_m_entry_point(fake_paper):
    out = subprocess.run([sys.executable, "-m", "icml26", "list", "--out", str(fake_paper)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "fakepaper" in out.stdout


def test_show_prints_the_install_hint_with_its_brackets(fake_paper, capsys):
    assert main(["show", "needsextra", "--out", str(fake_paper)]) == 0
    out = capsys.readouterr().out
    assert "pip install 'icml26[needsextra]'" in out  # not eaten as rich markup
    assert "no-such-distribution-icml26" in out
