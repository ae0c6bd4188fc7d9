"""One smoke run of the reproduction: structure of the Result and that every claim was computed."""

import copy
import json

import numpy as np

from icml26.cqacp import experiment
from icml26.results import Result


def test_smoke_run_structure():
    cfg = copy.deepcopy(experiment.CONFIGS["smoke"])
    cfg["scale"] = "smoke"
    res = experiment.run(cfg)
    assert isinstance(res, Result) and res.slug == "cqacp" and res.scale == "smoke"
    assert [c.id for c in res.claims] == ["C1", "C1-cqacp", "C2", "C3", "C3-aci", "C5-cond", "C4"]
    for c in res.claims:
        assert c.measured is not None and c.threshold and c.verdict in ("held", "not held", "inconclusive")
        assert c.gate == (c.id in ("C1", "C2", "C3", "C4"))
    assert res.claims[3].verdict == "inconclusive"  # C3 on one seed per simulated series
    table = res.metrics["table"]
    assert set(table) == {"hetero_ar/s0", "infl/s0"}
    for cell in table.values():
        assert set(cell) == set(experiment.METHODS)
        for m, v in cell.items():
            assert len(v["coverage"]) == 2 and 0 <= v["nestedness"] <= 1
            if m.startswith("CQACP") and not m.endswith("+ACI"):
                assert v["nestedness"] == 1.0
    assert set(res.metrics["seconds_per_update"]) == set(experiment.METHODS)
    assert set(res._pending_figures) == {"intervals_over_time", "coverage_width_by_series"}
    assert "| series | method |" in res.notes
    json.dumps(res.to_dict(), allow_nan=True)  # serialisable
    # claims are computed from the table, not constants
    c4 = res.claims[6]
    ratios = [table[f"{n}/s0"]["CQACP(QRF-SPCI)"]["width"][1] / table[f"{n}/s0"]["SPCI"]["width"][1]
              for n in ("hetero_ar", "infl")]
    assert c4.measured["mean_ratio"] == np.mean(ratios)


def test_paper_code_path_joblib_and_csv(tmp_path):
    """The paper-scale engine (joblib over cells) and user CSV series, on a tiny configuration."""
    from icml26.cqacp.data import simulate_hetero_ar

    y, _ = simulate_hetero_ar(T=300, seed=9)
    (tmp_path / "user.csv").write_text("t,value\n" + "\n".join(f"{i},{v}" for i, v in enumerate(y)))
    cfg = copy.deepcopy(experiment.CONFIGS["smoke"])
    cfg.update(scale="smoke", real_series=[], backend="joblib", workers=1, timing_steps=0, csv_dir=str(tmp_path),
               csv_lags=4, methods=["CQACP(QRF-SPCI)", "SPCI", "NexCP"])
    res = experiment.run(cfg)
    assert set(res.metrics["table"]) == {"hetero_ar/s0", f"csv:{tmp_path / 'user.csv'}/s0"}
    assert [c.id for c in res.claims] == ["C4"]
    assert set(experiment.CONFIGS["paper"]) == set(experiment.CONFIGS["small"])
