"""The experiment's config contract, a smoke run, and the gates' ability to fail (same claim functions)."""

import copy

import pytest

from icml26.meshtok import experiment as E
from icml26.meshtok.claims import make_claims, ratio_decision


def test_smoke_run(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    cfg = {**copy.deepcopy(E.CONFIGS["smoke"]), "scale": "smoke", "arms": ["meshtok", "random", "coarse"]}
    res = E.run(cfg)
    ids = [c.id for c in res.claims]
    assert ids[:3] == ["M1", "M2", "M3"] and {c.id for c in res.claims if c.kind == "gate"} == {"M1", "M2"}
    assert res.claims[2].kind == "sanity" and {"D1", "D2", "D3", "D4"} <= set(ids)
    assert all(c.verdict == "inconclusive" for c in res.claims if c.kind == "gate")  # one seed bounds nothing
    assert "one seed cannot bound" in res.claims[0].details and "--scale medium" in res.claims[0].details
    t = res.metrics["arms"]
    assert t["meshtok"]["tokens_per_frame"] == 16 + 3 * 4 and t["coarse"]["tokens_per_frame"] == 16
    assert t["meshtok"]["gflops_window"] > t["coarse"]["gflops_window"]
    assert res.metrics["boundary"] == "periodic" and res.metrics["device"] == "cpu"  # Burgers is periodic
    m1 = res.claims[0]
    assert m1.measured["ratio_of_means"] == pytest.approx(t["meshtok"]["rel_l2_mean"] / t["coarse"]["rel_l2_mean"])
    assert set(res._pending_figures) == {"error_vs_flops", "refinement_maps"}
    assert (tmp_path / "meshtok").is_dir()  # data were cached


def test_medium_at_toy_size(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    med = E.CONFIGS["medium"]
    assert med["n_seeds"] == 5 and "fine" in med["arms"] and med["device"] == "auto"
    assert {k: v for k, v in med.items() if k not in ("n_seeds", "arms", "device")} == \
        {k: v for k, v in E.CONFIGS["small"].items() if k not in ("n_seeds", "arms", "device")}
    toy = ("workers", "n_train", "n_test", "grid", "n_frames", "dim", "depth", "heads", "ffn", "dec_width", "steps",
           "batch_size", "rollout_steps", "rollout_n")
    small_sizes = {k: E.CONFIGS["smoke"][k] for k in toy}
    cfg = {**copy.deepcopy(med), **small_sizes, "n_seeds": 2, "device": "cpu", "scale": "medium"}
    res = E.run(cfg)
    c = {x.id: x for x in res.claims}
    assert c["M4"].kind == "gate" and c["M4"].decision.parts[0].exact  # the FLOP ratio is an exact count
    assert c["M4"].decision.parts[0].verdict == ("held" if c["M4"].measured["gflops_ratio"] <= 0.6 else "not held")
    assert len(c["M1"].per_seed) == 2 and res.metrics["seeds"] == [0, 1]


def _runs(e_mesh, e_rand, e_coarse, pers=0.2, e_fine=None):
    runs = []
    arms = [("meshtok", e_mesh, 112, 0.4), ("random", e_rand, 112, 0.4), ("coarse", e_coarse, 64, 0.3)]
    if e_fine is not None:
        arms.append(("fine", e_fine, 256, 1.0))
    for arm, vals, tok, gf in arms:
        for s, v in enumerate(vals):
            runs.append({"arm": arm, "seed": s, "rel_l2": v, "persistence": pers, "tokens_per_frame": tok,
                         "gflops_window": gf, "grad_energy_share": 0.8 if arm == "meshtok" else 0.25,
                         "rel_l2_inside": v, "rel_l2_outside": v})
    return runs


ARMS = ["meshtok", "random", "coarse"]
DIAG = {"shock_patch_fraction": 0.18}


def _claims(*a, arms=ARMS, **kw):
    n = len(a[0])
    return {c.id: c for c in make_claims(_runs(*a, **kw), list(range(n)), arms, DIAG, cost_per_seed_s=60.0,
                                         medium="the medium scale")}


def test_gates_held_not_held_inconclusive():
    good = _claims([0.049, 0.0495, 0.0485], [0.059, 0.0595, 0.0585], [0.058, 0.0585, 0.0575])
    assert good["M1"].verdict == "held" and good["M2"].verdict == "held" and good["M3"].verdict == "held"
    assert good["M1"].interval.method == "t" and good["M1"].interval.n == 3
    # a broken arm: a tokenizer that refines the wrong places is no better than the baselines
    bad = _claims([0.0585, 0.058, 0.0585], [0.058, 0.0575, 0.058], [0.058, 0.057, 0.058])
    assert bad["M1"].verdict == "not held" and bad["M2"].verdict == "not held"
    # a tiny sample: two seeds whose ratios (0.82, 0.91) straddle M1's 0.92 band -> inconclusive, with the hint
    tiny = _claims([0.0451, 0.0519], [0.1, 0.1], [0.055, 0.057])
    m1 = tiny["M1"]
    assert m1.verdict == "inconclusive" and not m1.held
    assert "would decide it" in m1.details and "the medium scale" in m1.details and "min" in m1.details
    one = _claims([0.040], [0.06], [0.06])  # one seed: the spread is unknown
    assert one["M1"].verdict == "inconclusive" and "one seed cannot bound" in one["M1"].details
    # a broken model worse than persistence fails the sanity claim
    worse = _claims([0.3, 0.31, 0.29], [0.3, 0.3, 0.3], [0.3, 0.3, 0.31])
    assert worse["M3"].verdict == "not held" and worse["M3"].kind == "sanity"


def test_m4_flops_exact_and_error_ratio():
    c = _claims([0.049, 0.0495, 0.0485], [0.059, 0.0595, 0.0585], [0.058, 0.0585, 0.0575], e_fine=[0.047, 0.048, 0.046],
                arms=ARMS + ["fine"])["M4"]
    assert c.kind == "gate" and c.verdict == "held" and c.measured["gflops_ratio"] == pytest.approx(0.4)
    worse = _claims([0.049, 0.050, 0.048], [0.059, 0.058, 0.060], [0.058, 0.057, 0.058],
                    e_fine=[0.030, 0.031, 0.029], arms=ARMS + ["fine"])["M4"]
    assert worse.verdict == "not held"  # 1.6x the fine grid's error


def test_ratio_decision_checks_input():
    d, per = ratio_decision([0.04, 0.041, 0.039], [0.06, 0.06, 0.061], 0.92)
    assert d.verdict == "held" and len(per) == 3 and d.estimate == pytest.approx(sum(per) / 3)
    with pytest.raises(ValueError, match="same length"):
        ratio_decision([1.0], [1.0, 2.0], 0.9)
    with pytest.raises(ValueError, match="den"):
        ratio_decision([1.0], [0.0], 0.9)


@pytest.mark.parametrize("key,value,exc", [
    ("steps", 2.5, ValueError), ("steps", 0, ValueError), ("arms", "meshtok", TypeError),
    ("arms", ["coarse"], ValueError), ("arms", ["meshtok", "bogus"], ValueError), ("patch", 7, ValueError),
    ("refine_ratio", 0.1, ValueError), ("context", 12, ValueError), ("lr", float("nan"), ValueError),
    ("heads", 3, ValueError), ("cache", 1, TypeError), ("rollout_steps", 9, ValueError),
    ("boundary", "wrap", ValueError), ("device", "tpu", ValueError),
])
def test_validate_config_names_the_key(key, value, exc):
    cfg = {**copy.deepcopy(E.CONFIGS["small"]), key: value}
    with pytest.raises(exc, match=key.split("_")[0]):
        E.validate_config(cfg)


def test_configs_are_valid_and_documented():
    for scale in ("smoke", "small", "medium", "paper"):
        E.validate_config({**E.CONFIGS[scale], "scale": scale})
        assert scale in E.EXPECTED_RUNTIME_S
    assert set(E.CONFIGS["small"]) <= set(E.CONFIG_HELP) | {"scale"}
    with pytest.raises(ValueError, match="config is missing"):
        E.validate_config({"seed": 0})
    with pytest.raises(ValueError, match="n_seed"):  # a typo'd key fails before any compute
        E.validate_config({**E.CONFIGS["small"], "n_seed": 5})
