"""The experiment's claim checks can fail: a deliberately broken arm flips each gate (the same `_part_*` functions
the run uses), the L1-C statistic uses the SE of its independent-replica design, and `validate_config` rejects bad
configs naming the key."""

import copy
import math

import numpy as np
import pytest
from scipy.special import erfc

from icml26.lsd import experiment as E
from icml26.lsd.data import harmonic_exact_law

CFG = dict(E.CONFIGS["small"], a_dims=[1], b_A=[0.05, 0.2, 0.5], b_lookahead=[16], c_replicas=8)


# ------------------------------------------------------------------------------------------ L1-A
def _harmonic(shift=0.0, draft_shift=0.5, n=6000, seed=0):
    rng = np.random.default_rng(seed)
    mean, cov = harmonic_exact_law(1.0, 1.0, 1.0, 1.0, 0.1, 1.5, 0.0, CFG["a_steps"])
    sd_x, sd_w = math.sqrt(cov[0, 0]), math.sqrt(cov[1, 1])
    part = {"x": mean[0] + shift + sd_x * rng.standard_normal((n, 1)), "w": mean[1] + sd_w * rng.standard_normal((n, 1)),
            "accepted": np.ones(10, bool), "deltas": np.zeros(10), "steps": 30 * n, "rounds": 5 * n}
    base = {"serial": mean[0] + sd_x * rng.standard_normal(n),
            "draft_only": mean[0] + draft_shift + sd_x * rng.standard_normal(n)}
    return {"harmonic": {1: [part]}, "harmonic_baselines": {1: base}}


def test_l1a_holds_for_the_exact_law_and_fails_for_a_shifted_chain_or_a_powerless_test():
    c = E._part_a(CFG, _harmonic(), {})
    assert c.verdict == "held" and c.gate and c.paper
    mean, cov = harmonic_exact_law(1.0, 1.0, 1.0, 1.0, 0.1, 1.5, 0.0, CFG["a_steps"])
    broken = E._part_a(CFG, _harmonic(shift=0.1 * math.sqrt(cov[0, 0])), {})  # LSD law shifted by 0.1 sd
    assert broken.verdict == "not held"
    assert E._part_a(CFG, _harmonic(draft_shift=0.0), {}).verdict == "not held"  # the test cannot see the draft
    tiny = E._part_a(CFG, _harmonic(n=40), {})  # 40 replicas cannot bound a bias to 0.05 sd
    assert tiny.verdict == "inconclusive"


# ------------------------------------------------------------------------------------------ L1-C
def _equilibrium(bias=0.0, seed=0, n_rep=8, n=400):
    rng = np.random.default_rng(seed)
    out = []
    for method, b in (("serial", 0.0), ("lsd", bias), ("draft_only", 0.3)):
        for _ in range(n_rep):
            e = np.empty(n)  # AR(1) series, as MD observables are autocorrelated
            e[0] = rng.standard_normal()
            for t in range(1, n):
                e[t] = 0.9 * e[t - 1] + math.sqrt(1 - 0.81) * rng.standard_normal()
            out.append({"method": method, "energy": -47.0 + b + 0.1 * e, "rg": 1.06 + 0.1 * b + 0.01 * e[::-1],
                        "stats": {"steps_per_round": 6.0, "acceptance_rate": 0.8, "target_evals_per_step": 2.6}})
    return {"equilibrium": out}


def test_l1c_holds_for_the_same_law_and_fails_for_a_biased_arm():
    cfg = dict(CFG, c_thin=10)
    c, _ = E._part_c(cfg, _equilibrium(n=8000), {})
    assert c.verdict == "held" and "independent" in c.details and c.interval.method == "welch-t"
    bad, _ = E._part_c(cfg, _equilibrium(bias=0.2), {})  # a broken LSD arm, biased by 2 per-frame sd
    assert bad.verdict == "not held"
    tiny, _ = E._part_c(cfg, _equilibrium(n_rep=3, n=60), {})  # 3 short replicas: the interval spans the margin
    assert tiny.verdict == "inconclusive"


def test_compare_to_serial_uses_the_unpaired_se_of_replica_means():
    a = [np.full(5, v) for v in (1.0, 2.0, 3.0)]
    b = [np.full(5, v) for v in (2.0, 2.5, 3.0, 4.5)]
    got = E.compare_to_serial(a, b, thin=1)
    ma, mb = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.5, 3.0, 4.5])
    se = math.sqrt(ma.var(ddof=1) / 3 + mb.var(ddof=1) / 4)
    assert got["se"] == pytest.approx(se) and got["diff_over_se"] == pytest.approx(abs(ma.mean() - mb.mean()) / se)
    with pytest.raises(ValueError, match="replicas"):
        E.compare_to_serial(a[:1], b, thin=1)


# ------------------------------------------------------------------------------------------ L2 / L3
def _row(A, spr, kind="lj13", tag="grid", acc_mode="calibrated", pred_err=0.0, seed=0, n=12000, rounds=None):
    rng = np.random.default_rng(seed)
    rounds = 5000 // max(int(spr), 1) if rounds is None else rounds
    deltas = rng.uniform(0.0, 1.5, n)
    alpha = erfc(deltas / (2 * math.sqrt(2)))
    accepted = rng.random(n) < alpha if acc_mode == "calibrated" else np.ones(n, bool)
    return {"kind": kind, "A": A, "K": 16, "kT": 0.25, "friction": 1.0, "tag": tag, "steps_per_round": spr,
            "acceptance": float(accepted.mean()), "predicted_acceptance": float(alpha.mean()),
            "predicted_steps_per_round": spr * (1 + pred_err), "verified": n, "accepted": accepted, "deltas": deltas,
            "position": np.zeros(n, int), "target_evals_per_step": 2.0, "rms_force_error": 0.1 + A, "wall_time": 1.0,
            "steps": 5000, "round_length_sd": 1.0, "rounds": rounds,
            "round_lengths": rng.normal(spr, 1.0, rounds)}


def _cluster(**over):
    spr = {0.05: 12.0, 0.2: 6.0, 0.5: 2.5}
    spr.update(over.pop("spr", {}))
    lj38 = over.pop("lj38", 4.4)
    rows = [_row(A, v, **over) for A, v in spr.items()]
    rows += [_row(0.05, 11.0, kind="lj38", tag="lj38"), _row(0.2, lj38, kind="lj38", tag="lj38")]
    return {"cluster": rows}


def _b(res):
    (l2, l3), _ = E._part_b(CFG, res, {})
    return l2, l3


def test_l2_l3_hold_for_good_rows():
    l2, l3 = _b(_cluster())
    assert l2.verdict == "held" and l3.verdict == "held" and l2.paper and l3.paper


def test_l2_on_a_tiny_sample_is_inconclusive():
    # 3 rounds per run: the band at A = 0.2 (6 vs 4) and the trends cannot be told from noise of sd 1
    l2, _ = _b(_cluster(rounds=3))
    assert l2.verdict == "inconclusive"


@pytest.mark.parametrize("res", [_cluster(spr={0.2: 3.0}),          # below the band at A = 0.2
                                 _cluster(spr={0.5: 7.0}),          # not decreasing in A
                                 _cluster(lj38=8.0)])               # larger system accepts more
def test_l2_fails_for_a_broken_arm(res):
    assert _b(res)[0].verdict == "not held"


@pytest.mark.parametrize("res", [_cluster(acc_mode="all_accepted"),  # accept decisions ignore the deltas
                                 _cluster(pred_err=0.2)])           # the steps-per-round prediction is off by 20%
def test_l3_fails_for_a_broken_arm(res):
    assert _b(res)[1].verdict == "not held"


# ------------------------------------------------------------------------------------------ config
@pytest.mark.parametrize("key,value,exc", [
    ("c_replicas", 1, ValueError), ("a_replicas", 0, ValueError), ("b_steps", 2.5, ValueError),
    ("b_lookahead", [], TypeError), ("b_main_lookahead", 64, ValueError), ("b_A", [0.05, -0.1], ValueError),
    ("timestep", 0.0, ValueError), ("friction", "1", TypeError), ("device", "tpu", ValueError),
    ("e_target", "EMT", ValueError), ("seed", -1, ValueError), ("c_thin", 10**6, ValueError),
])
def test_validate_config_names_the_bad_key(key, value, exc):
    cfg = copy.deepcopy(E.CONFIGS["small"])
    cfg[key] = value
    with pytest.raises(exc, match=key):
        E.validate_config(cfg)
    with pytest.raises(exc, match=key):
        E.run(cfg)


def test_config_contract():
    for scale, cfg in E.CONFIGS.items():
        E.validate_config(dict(cfg, scale=scale))
        assert set(cfg) <= set(E.CONFIG_HELP), set(cfg) - set(E.CONFIG_HELP)
    assert set(E.EXPECTED_RUNTIME_S) == {"smoke", "small", "paper"}


def test_validate_config_refuses_an_unknown_key():
    for scale in ("smoke", "small"):
        with pytest.raises(ValueError, match="c_replica"):  # a typo of c_replicas fails before any compute
            E.validate_config({**E.CONFIGS[scale], "c_replica": 8, "scale": scale})
