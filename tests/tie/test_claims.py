"""The claim checks of the experiment can fail: a deliberately broken arm makes each gate "not held", a single seed
makes it "inconclusive" (same `_claims` the run uses), and `validate_config` rejects bad configs naming the key."""

import copy

import pytest

from icml26.tie import experiment as E

CFG = dict(E.CONFIGS["small"], n_seeds=3, loads=[0.8, 0.9, 0.95], kv_tokens=[60000], workloads=["W1", "W2"])


def _sims(tie_over_fcfs=0.2, tie_over_best=0.95, n_seeds=3, jitter=0.0):
    out = []
    for w in CFG["workloads"]:
        for si in range(n_seeds):
            for ld in CFG["loads"]:
                fcfs = 0.1 * (1 + 0.01 * si)
                tie = tie_over_fcfs * fcfs * (1 + jitter * (si - 1))
                pol = {p: {"per_token_latency": tie / tie_over_best, "e2e_max": 50.0} for p in E.POLICIES}
                pol["fcfs"] = {"per_token_latency": fcfs, "e2e_max": 60.0}
                pol["tie"] = {"per_token_latency": tie, "e2e_max": 50.0}
                pol["tie_nostarv"] = {"per_token_latency": tie, "e2e_max": 50.0}
                out.append({"workload": w, "seed_idx": si, "load": ld, "kv": 60000, "policies": pol})
    return out


def _c3(coverage=0.8, nll_gap=-0.1, rho=0.9):
    return {"coverage80": [coverage] * 3, "nll_logt": [5.8 + nll_gap] * 3, "nll_lognormal": [5.8] * 3,
            "spearman": [rho] * 3, "mu_mae": [0.2] * 3, "mu_mae_family_mean": [0.4] * 3}


def _starve(ratio=0.5, change=0.01, wait_over_wstar=2.0):
    out = []
    for si in range(3):
        off = {"e2e_max": 2000.0, "per_token_latency": 0.3, "wait_max": 1500.0}
        on = {"e2e_max": ratio * 2000.0, "per_token_latency": 0.3 * (1 + change), "wait_max": 700.0}
        out.append({"seed_idx": si, "n_requests": 100, "w_star_p99_s": 1500.0 / wait_over_wstar,
                    "policies": {"tie": on, "tie_nostarv": off}})
    return out


def _held(sims=None, c3=None, starve=None, cfg=CFG, extra=None):
    cl = E._claims(cfg, sims or _sims(), c3 or _c3(), starve or _starve(), extra)
    assert [c.id for c in cl] == ["C1", "C2", "C3", "C4", "C4-regime"] and all(c.paper for c in cl)
    assert [c.kind for c in cl] == ["gate"] * 4 + ["sanity"]
    return {c.id: c.verdict for c in cl}, {c.id: c for c in cl}


def test_good_arms_hold_every_gate():
    held, claims = _held()
    assert all(v == "held" for v in held.values()), held
    assert "held" in claims["C4"].details and claims["C4"].interval is not None


def test_one_seed_is_inconclusive():
    cfg = dict(CFG, n_seeds=1, c1_streams=1)
    held, claims = _held(sims=_sims(n_seeds=1), c3={k: v[:1] for k, v in _c3().items()},
                         starve=_starve()[:1], cfg=cfg)
    assert all(v == "inconclusive" for v in held.values()), held
    assert "at least 3 streams" in claims["C1"].details and "at least 3 seeds" in claims["C2"].details


def test_c1_extra_streams_decide_a_noisy_cell():
    # 3 noisy seeds near the 0.6 bar at rho 0.9 cannot decide; 12 streams with the same spread can
    sims = _sims(tie_over_fcfs=0.5, jitter=0.2)
    held3, _ = _held(sims=sims)
    assert held3["C1"] == "inconclusive"
    extra = [{"workload": w, "stream": j,
              "loads": {ld: {"fcfs": 1.0, "tie": 0.5 * (1 + 0.2 * ((j % 3) - 1))} for ld in (0.9, 0.95)}}
             for w in CFG["workloads"] for j in range(3, 12)]
    held12, claims = _held(sims=sims, extra=extra, cfg=dict(CFG, c1_streams=12))
    assert claims["C1"].measured["n_streams"] == 12
    # the top-load part (mean 0.5 vs 0.35) is now decided "not held", and that decides C1
    assert held12["C1"] == "not held"


@pytest.mark.parametrize("kwargs,cid", [
    ({"sims": _sims(tie_over_fcfs=0.7)}, "C1"),             # no HOL relief
    ({"sims": _sims(tie_over_best=1.5)}, "C2"),             # TIE much worse than the point SJF baselines
    ({"c3": _c3(coverage=0.5)}, "C3"),                       # miscalibrated interval
    ({"c3": _c3(nll_gap=+0.1)}, "C3"),                       # log-normal fits better
    ({"c3": _c3(rho=0.5)}, "C3"),                            # poor ranking
    ({"starve": _starve(ratio=1.0)}, "C4"),                  # decay does not bound the worst latency
    ({"starve": _starve(change=0.2)}, "C4"),                 # decay costs mean per-token latency
])
def test_a_broken_arm_flips_its_gate(kwargs, cid):
    held, _ = _held(**kwargs)
    assert held[cid] == "not held"
    assert all(v == "held" for k, v in held.items() if k != cid)


def test_c4_regime_sanity_says_when_the_workload_is_not_in_the_starvation_regime():
    held, claims = _held(starve=_starve(wait_over_wstar=0.5))
    assert held["C4-regime"] == "not held" and claims["C4-regime"].kind == "sanity"


def test_wait_to_overtake_known_answer():
    # 0.9^(w/30) = 1/e  ->  w = 30 / ln(1/0.9)
    assert E.wait_to_overtake(2.718281828459045, 1.0, 0.9, 30.0) == pytest.approx(30 / 0.10536051565782628)
    assert E.wait_to_overtake(1.0, 2.0, 0.9, 30.0) == 0.0
    assert E.wait_to_overtake(2.0, 1.0, 1.0, 30.0) == float("inf")


@pytest.mark.parametrize("key,value,exc", [
    ("n_seeds", 0, ValueError), ("n_seeds", 1.5, ValueError), ("n_train", 8, ValueError),
    ("loads", [], TypeError), ("loads", [0.9, -1.0], ValueError), ("workloads", ["W3"], ValueError),
    ("alpha", 1.0, ValueError), ("gamma", 0.0, ValueError), ("encoder", "bert", ValueError),
    ("max_tokens", 512, ValueError), ("kv_tokens", [8], ValueError), ("starve_window_s", 0.0, ValueError),
    ("smollm2", True, ValueError), ("seed", -1, ValueError), ("epochs", "20", TypeError),
    ("c1_streams", 2, ValueError), ("n_seedz", 3, ValueError),
])
def test_validate_config_names_the_bad_key(key, value, exc):
    cfg = copy.deepcopy(E.CONFIGS["small"])
    cfg[key] = value
    with pytest.raises(exc, match=key):
        E.validate_config(cfg)
    with pytest.raises(exc, match=key):
        E.run(cfg)  # run validates before any compute


def test_config_contract():
    for scale, cfg in E.CONFIGS.items():
        E.validate_config(dict(cfg, scale=scale))
        assert set(cfg) <= set(E.CONFIG_HELP), set(cfg) - set(E.CONFIG_HELP)
    assert set(E.EXPECTED_RUNTIME_S) == set(E.CONFIGS)
    with pytest.raises(ValueError, match="missing"):
        E.validate_config({"seed": 0})
