"""A fake paper package, written into a temp folder, registered through ICML26_EXTRA_PAPERS."""

import json
import os
import sys
import textwrap

import pytest

FAKE_EXPERIMENT = '''
import os
import time

import numpy as np
from icml26.common import run_parallel
from icml26.common.plotting import new_figure
from icml26.common import stats
from icml26.results import Claim, Result

CONFIGS = {
    "smoke": {"seed": 0, "n": 4, "lr": 0.5, "name": "tiny", "flag": False, "sizes": [1, 2], "fail": False,
              "sleep_jobs": 0},
    "small": {"seed": 0, "n": 8, "lr": 0.5, "name": "tiny", "flag": False, "sizes": [1, 2], "fail": False,
              "sleep_jobs": 0},
}
CONFIG_HELP = {"n": "number of samples", "sleep_jobs": "jobs of 30 s each run in 2 worker processes"}
EXPECTED_RUNTIME_S = {"smoke": 1, "small": 2}


def validate_config(config):
    if config["n"] < 1:
        raise ValueError(f"n must be >= 1, got {config['n']}")


def _sleepy(i, marker_dir):
    open(os.path.join(marker_dir, f"job{i}.{os.getpid()}"), "w").close()
    time.sleep(30)
    return i


def run(config):
    validate_config(config)
    if config["fail"]:
        raise RuntimeError("deliberate failure")
    if config["sleep_jobs"]:
        marker_dir = os.environ["FAKE_MARKERS"]
        run_parallel(_sleepy, [{"i": i, "marker_dir": marker_dir} for i in range(config["sleep_jobs"])],
                     workers=2)
    rng = np.random.default_rng(config["seed"])
    x = rng.normal(size=config["n"])
    mean = float(np.abs(x).mean())
    res = Result(slug="fakepaper", scale=config["scale"], config=config, metrics={"mean_abs": mean},
                 notes="| arm | value |\\n|---|---|\\n| a | 1 |\\n")
    per = [mean, mean + 0.1, mean + 0.2]
    res.claims.append(Claim("C1", "the mean absolute value is positive", "mean |x|", mean, "> 0",
                            stats.decide(float(np.mean(per)), stats.t_interval(per), 0.0, ">="),
                            paper="positive on every seed", per_seed=per))
    res.claims.append(Claim("C2", "the mean absolute value exceeds 10", "mean |x|", mean, "> 10",
                            stats.exact(mean, 10.0, ">="), kind="report", details="expected to fail"))
    fig, ax = new_figure()
    ax.plot(x)
    res.add_figure("values", fig, caption="the sampled values")
    return res
'''


def _register(monkeypatch, tmp_path, entries):
    monkeypatch.setenv("ICML26_EXTRA_PAPERS", json.dumps(entries))
    from icml26 import registry

    monkeypatch.setattr(registry, "PAPERS", dict(registry.PAPERS))
    registry._register_extra_papers()
    # the CLI and report modules look PAPERS up through their own imports; keep them in sync
    from icml26 import cli, report

    monkeypatch.setattr(cli, "PAPERS", registry.PAPERS)
    monkeypatch.setattr(report, "PAPERS", registry.PAPERS)


@pytest.fixture
def fake_paper(tmp_path, monkeypatch):
    pkg = tmp_path / "fakepkg" / "fakepaper"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "experiment.py").write_text(textwrap.dedent(FAKE_EXPERIMENT))
    monkeypatch.syspath_prepend(str(tmp_path / "fakepkg"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "fakepkg") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv("FAKE_MARKERS", str(markers))
    _register(monkeypatch, tmp_path, [
        {"slug": "fakepaper", "title": "A fake paper", "arxiv": "n/a", "package": "fakepaper", "requires": []},
        {"slug": "needsextra", "title": "A paper whose extra is missing", "arxiv": "n/a", "package": "fakepaper",
         "extra": "needsextra", "requires": ["no-such-distribution-icml26"]},
    ])
    yield tmp_path / "runs"
    sys.modules.pop("fakepaper.experiment", None)
    sys.modules.pop("fakepaper", None)
