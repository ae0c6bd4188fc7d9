"""The claim checks of the experiment can fail: a deliberately broken arm flips each gate (same `_claims` the run
uses), and `validate_config` rejects bad configs naming the key."""

import copy

import pytest

from icml26.tie import experiment as E

CFG = dict(E.CONFIGS["small"], n_seeds=3, loads=[0.8, 0.9, 0.95], kv_tokens=[60000], workloads=["W1", "W2"])


def _sims(tie_over_fcfs=0.2, tie_over_best=0.95):
    out = []
    for w in CFG["workloads"]:
        for si in range(3):
            for ld in CFG["loads"]:
                fcfs = 0.1 * (1 + 0.01 * si)
                tie = tie_over_fcfs * fcfs
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


def _held(sims=None, c3=None, starve=None):
    cl = E._claims(CFG, sims or _sims(), c3 or _c3(), starve or _starve())
    assert [c.id for c in cl] == ["C1", "C2", "C3", "C4"] and all(c.gate for c in cl) and all(c.paper for c in cl)
    return {c.id: c.held for c in cl}, {c.id: c for c in cl}


def test_good_arms_hold_every_gate():
    held, claims = _held()
    assert all(held.values())
    assert "decided at this size" in claims["C4"].details


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
    assert held[cid] is False
    assert all(v for k, v in held.items() if k != cid)


def test_c4_says_when_the_workload_is_not_in_the_starvation_regime():
    _, claims = _held(starve=_starve(wait_over_wstar=0.5))
    assert "cannot decide" in claims["C4"].details


def test_wait_to_overtake_known_answer():
    # 0.9^(w/30) = 1/e  ->  w = 30 / ln(1/0.9)
    assert E.wait_to_overtake(2.718281828459045, 1.0, 0.9, 30.0) == pytest.approx(30 / 0.10536051565782628)
    assert E.wait_to_overtake(1.0, 2.0, 0.9, 30.0) == 0.0
    assert E.wait_to_overtake(2.0, 1.0, 1.0, 30.0) == float("inf")


def test_seed_spread_decides_only_when_the_margin_beats_the_spread():
    assert E.seed_spread([0.2, 0.21, 0.19], 0.35)["decided"]
    assert not E.seed_spread([0.2, 0.5, 0.3], 0.35)["decided"]


@pytest.mark.parametrize("key,value,exc", [
    ("n_seeds", 0, ValueError), ("n_seeds", 1.5, ValueError), ("n_train", 8, ValueError),
    ("loads", [], TypeError), ("loads", [0.9, -1.0], ValueError), ("workloads", ["W3"], ValueError),
    ("alpha", 1.0, ValueError), ("gamma", 0.0, ValueError), ("encoder", "bert", ValueError),
    ("max_tokens", 512, ValueError), ("kv_tokens", [8], ValueError), ("starve_window_s", 0.0, ValueError),
    ("smollm2", True, ValueError), ("seed", -1, ValueError), ("epochs", "20", TypeError),
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
    assert set(E.EXPECTED_RUNTIME_S) == {"smoke", "small", "paper"}
    with pytest.raises(ValueError, match="missing"):
        E.validate_config({"seed": 0})
