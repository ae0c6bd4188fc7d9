import pytest

from icml26.cli import main
from icml26.registry import PAPERS
from icml26.results import load_result


def test_list_shows_all_19_papers(capsys, tmp_path):
    assert main(["list", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert len(PAPERS) == 19
    for slug in PAPERS:
        assert slug in out


def test_unknown_slug_is_one_line_error(capsys):
    assert main(["run", "no_such_paper"]) == 2
    err = capsys.readouterr().err
    assert "unknown paper 'no_such_paper'" in err and "Traceback" not in err and err.count("\n") == 1


def test_unimplemented_paper_is_clear_error(capsys, monkeypatch):
    from icml26 import registry

    monkeypatch.setattr(registry.Paper, "is_implemented", lambda self: False)
    assert main(["run", "murgat"]) == 2
    err = capsys.readouterr().err
    assert "not implemented" in err and "Traceback" not in err


def test_run_saves_result_and_prints_claims(fake_paper, capsys):
    rc = main(["run", "fakepaper", "--scale", "smoke", "--seed", "3", "--set", "n=5", "--set", "flag=true",
               "--set", "sizes=[3,4]", "--out", str(fake_paper)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "C1" in out and "not held" in out  # C2 does not hold and is reported as such
    r = load_result(fake_paper / "fakepaper" / "smoke")
    assert r.config["seed"] == 3 and r.config["n"] == 5 and r.config["flag"] is True
    assert r.config["sizes"] == [3, 4] and r.config["scale"] == "smoke"
    assert r.figures == ["values.png"] and (fake_paper / "fakepaper" / "smoke" / "values.png").exists()
    assert r.runtime_s > 0 and r.versions["torch"]


@pytest.mark.parametrize("arg, msg", [
    ("nokey=1", "unknown key"),
    ("n=abc", "expected a int"),
    ("flag=maybe", "expected a bool"),
    ("sizes=5", "expected a list"),
    ("noequals", "key=value"),
])
def test_bad_set_is_one_line_error(fake_paper, capsys, arg, msg):
    assert main(["run", "fakepaper", "--scale", "smoke", "--set", arg, "--out", str(fake_paper)]) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err


def test_bad_scale_is_clear_error(fake_paper, capsys):
    assert main(["run", "fakepaper", "--scale", "huge", "--out", str(fake_paper)]) == 2
    assert "--scale" in capsys.readouterr().err


def test_reproduce_reuses_runs_and_survives_failures(fake_paper, capsys):
    root = str(fake_paper)
    assert main(["reproduce", "fakepaper", "--scale", "smoke", "--out", root]) == 0
    first = load_result(fake_paper / "fakepaper" / "smoke").created
    capsys.readouterr()
    assert main(["reproduce", "fakepaper", "--scale", "smoke", "--out", root]) == 0
    assert "reusing" in capsys.readouterr().out
    assert load_result(fake_paper / "fakepaper" / "smoke").created == first
    assert (fake_paper / "report.html").exists() and (fake_paper / "report.md").exists()


def test_reproduce_reports_a_failing_paper_and_continues(fake_paper, capsys):
    # the child process re-imports the experiment: make its small config raise
    src = fake_paper.parent / "fakepkg" / "fakepaper" / "experiment.py"
    text = src.read_text()
    assert '"fail": False},\n}' in text
    src.write_text(text.replace('"fail": False},\n}', '"fail": True},\n}'))
    rc = main(["reproduce", "fakepaper", "--scale", "small", "--out", str(fake_paper)])
    assert rc == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and (fake_paper / "report.html").exists()


def test_python_m_entry_point(fake_paper):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "icml26", "list", "--out", str(fake_paper)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "fakepaper" in out.stdout
