"""The experiment's claim checks can fail: a deliberately broken arm makes each gate "not held", one seed makes them
"inconclusive" (the same `_claims` the run uses), and `validate_config` rejects bad configs naming the key."""

import copy

import numpy as np
import pytest

from icml26.matching_bandits import experiment as E

T = 8000
CPS = E._checkpoints(T).tolist()


@pytest.fixture(autouse=True)
def _fewer_resamples(monkeypatch):
    monkeypatch.setattr(E, "N_BOOT", 200)  # the intervals' logic, not their last digit, is under test here


def _summ(curve, inst_curve=None, n_refine=0, late=0, gap=None, seed=0):
    c = [float(curve(t)) for t in CPS]
    i = [float((inst_curve or curve)(t)) for t in CPS]
    return {"checkpoints": CPS, "sum_regret": c, "abs_regret": [abs(v) * 1.2 for v in c], "max_regret": c,
            "instability": i, "n_refine_curve": [min(t, n_refine) for t in CPS], "n_refine": n_refine,
            "n_refine_last_quarter": late, "last_quarter_rounds": T // 4, "min_gap": gap, "seed": seed,
            "last_refine_round": n_refine, "T": T, "wall_s": 1.0, "mismatch_rounds": 0}


def _by(adaptive=None, etc300=None, e2_hi=300, opt_inst=None, etc_inst=None, n_seeds=5):
    adaptive = adaptive or (lambda t: 0.1 * min(t, 1000) + 1)
    etc300 = etc300 or (lambda t: 0.5 * min(t, 300) + 300)
    opt_inst = opt_inst or (lambda t: np.sqrt(t))
    etc_inst = etc_inst or (lambda t: t / 10)
    by = {}
    for s in range(n_seeds):
        wob = 1 + 0.01 * s
        by.setdefault(("E1", "adaptive"), []).append(_summ(lambda t: wob * adaptive(t), n_refine=800, seed=s))
        by.setdefault(("E1", "random"), []).append(_summ(lambda t: 0.5 * t * wob, seed=s))
        by.setdefault(("E1", "etc300"), []).append(_summ(lambda t: wob * etc300(t), seed=s))
        by.setdefault(("E2_gap0.06", "adaptive"), []).append(_summ(adaptive, n_refine=1200, gap=0.07, seed=s))
        by.setdefault(("E2_gap0.2", "adaptive"), []).append(_summ(adaptive, n_refine=e2_hi, gap=0.21, seed=s))
        by.setdefault(("E4", "optimistic"), []).append(_summ(lambda t: 5.0, opt_inst, seed=s))
        by.setdefault(("E4", "random"), []).append(_summ(lambda t: 0.3 * t, seed=s))
        by.setdefault(("E4", "etc300"), []).append(_summ(lambda t: 5.0, etc_inst, seed=s))
    return by


def _held(extra=None, **kw):
    claims, _ = E._claims(_by(**kw), T, extra)
    gates = {c.id: c for c in claims if c.gate}
    assert set(gates) == {"C1", "C2", "C3", "C4"} and all(c.paper for c in claims)
    assert {c.id for c in claims if c.kind == "sanity"} == {"C1-random", "C4-random"}
    return {k: c.verdict for k, c in gates.items()}


def test_good_arms_hold_every_gate():
    assert all(v == "held" for v in _held().values())


def test_one_seed_is_inconclusive():
    assert all(v == "inconclusive" for v in _held(n_seeds=1).values())


def test_c2_extra_markets_enter_the_paired_comparison():
    # a noisy adaptive/ETC ratio near the bar: 5 markets cannot decide it; the extras are paired by seed
    by = _by(n_seeds=1)
    extra = {("E1", "adaptive"): [], ("E1", "etc300"): []}
    for s in range(1, 30):
        f = 0.25 if s % 2 else 0.2
        extra[("E1", "adaptive")].append(_summ(lambda t, f=f: f * 450, seed=s))
        extra[("E1", "etc300")].append(_summ(lambda t: 450.0, seed=s))
    claims, _ = E._claims(by, T, extra)
    c2 = next(c for c in claims if c.id == "C2")
    assert c2.measured["n_markets"] == 30 and c2.verdict == "held"
    assert c2.interval.method.startswith("bootstrap")


@pytest.mark.parametrize("kw,cid", [
    ({"adaptive": lambda t: 0.015 * t + 1}, "C1"),                   # never stops refining: linear regret
    ({"etc300": lambda t: 0.1 * min(t, 1000) + 30}, "C2"),            # a well-sized ETC: no adaptivity gain
    ({"e2_hi": 1200}, "C3"),                                          # refine rounds do not depend on the gap
    ({"opt_inst": lambda t: 0.05 * t}, "C4"),                         # linear instability regret
    ({"etc_inst": lambda t: min(t, 3000) / 10}, "C4"),                # ETC stops accumulating after the switch
])
def test_a_broken_arm_flips_its_gate(kw, cid):
    held = _held(**kw)
    assert held[cid] == "not held"
    assert all(v == "held" for k, v in held.items() if k != cid)


@pytest.mark.parametrize("path,value,exc", [
    (("n_seeds",), 0, ValueError), (("T",), 4, ValueError), (("T",), 100.5, ValueError),
    (("backend",), "mpi", ValueError), (("lam",), 0.0, ValueError), (("instances",), {}, TypeError),
    (("instances", "E1", "policies"), ["adaptive", "psychic"], ValueError),
    (("instances", "E1", "n_players"), 0, ValueError), (("instances", "E1", "colour"), "red", ValueError),
    (("c2_seeds",), 3, ValueError), (("n_seedz",), 5, ValueError),
])
def test_validate_config_names_the_bad_key(path, value, exc):
    cfg = copy.deepcopy(E.CONFIGS["small"])
    d = cfg
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    with pytest.raises(exc, match=path[-1] if path[-1] != "colour" else "unknown keys"):
        E.validate_config(cfg)
    with pytest.raises(exc):
        E.run(dict(cfg, scale="small"))


def test_config_contract():
    for scale, cfg in E.CONFIGS.items():
        E.validate_config(dict(cfg, scale=scale))
        assert set(cfg) <= set(E.CONFIG_HELP)
    assert set(E.EXPECTED_RUNTIME_S) == set(E.CONFIGS)
