"""A fake paper package, written into a temp folder, registered through ICML26_EXTRA_PAPERS."""

import json
import sys
import textwrap

import pytest

FAKE_EXPERIMENT = '''
import numpy as np
from icml26.results import Claim, Result
from icml26.common.plotting import new_figure

CONFIGS = {
    "smoke": {"seed": 0, "n": 4, "lr": 0.5, "name": "tiny", "flag": False, "sizes": [1, 2], "fail": False},
    "small": {"seed": 0, "n": 8, "lr": 0.5, "name": "tiny", "flag": False, "sizes": [1, 2], "fail": False},
}

def run(config):
    if config["fail"]:
        raise RuntimeError("deliberate failure")
    rng = np.random.default_rng(config["seed"])
    x = rng.normal(size=config["n"])
    mean = float(np.abs(x).mean())
    res = Result(slug="fakepaper", scale=config["scale"], config=config, metrics={"mean_abs": mean})
    res.claims.append(Claim("C1", "the mean absolute value is positive", "mean |x|", mean, "> 0", mean > 0))
    res.claims.append(Claim("C2", "the mean absolute value exceeds 10", "mean |x|", mean, "> 10", mean > 10,
                            gate=False, details="expected to fail"))
    fig, ax = new_figure()
    ax.plot(x)
    res.add_figure("values", fig)
    return res
'''


@pytest.fixture
def fake_paper(tmp_path, monkeypatch):
    pkg = tmp_path / "fakepkg" / "fakepaper"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "experiment.py").write_text(textwrap.dedent(FAKE_EXPERIMENT))
    monkeypatch.syspath_prepend(str(tmp_path / "fakepkg"))
    import os

    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "fakepkg") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("ICML26_EXTRA_PAPERS", json.dumps(
        [{"slug": "fakepaper", "title": "A fake paper", "arxiv": "n/a", "package": "fakepaper"}]))
    from icml26 import registry

    monkeypatch.setattr(registry, "PAPERS", dict(registry.PAPERS))
    registry._register_extra_papers()
    # the CLI module looks PAPERS up through its own import; keep it in sync
    from icml26 import cli

    monkeypatch.setattr(cli, "PAPERS", registry.PAPERS)
    yield tmp_path / "runs"
    sys.modules.pop("fakepaper.experiment", None)
    sys.modules.pop("fakepaper", None)
