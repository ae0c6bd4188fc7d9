"""The experiment's config contract, a smoke run, and the gates' ability to fail (same claim functions)."""

import copy

import pytest

from icml26.meshtok import experiment as E
from icml26.meshtok.claims import make_claims, ratio_check


def test_smoke_run(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    cfg = {**copy.deepcopy(E.CONFIGS["smoke"]), "scale": "smoke", "arms": ["meshtok", "random", "coarse"]}
    res = E.run(cfg)
    ids = [c.id for c in res.claims]
    assert ids[:3] == ["M1", "M2", "M3"] and {c.id for c in res.claims if c.gate} == {"M1", "M2", "M3"}
    t = res.metrics["arms"]
    assert t["meshtok"]["tokens_per_frame"] == 16 + 3 * 4 and t["coarse"]["tokens_per_frame"] == 16
    assert t["meshtok"]["gflops_window"] > t["coarse"]["gflops_window"]
    m1 = res.claims[0]
    assert m1.measured["ratio"] == pytest.approx(t["meshtok"]["rel_l2_mean"] / t["coarse"]["rel_l2_mean"])
    assert set(res._pending_figures) == {"error_vs_flops", "refinement_maps"}
    assert (tmp_path / "meshtok").is_dir()  # data were cached


def _runs(e_mesh, e_rand, e_coarse, pers=0.2):
    runs = []
    for arm, vals, tok, gf in (("meshtok", e_mesh, 112, 0.4), ("random", e_rand, 112, 0.4),
                               ("coarse", e_coarse, 64, 0.3)):
        for s, v in enumerate(vals):
            runs.append({"arm": arm, "seed": s, "rel_l2": v, "persistence": pers, "tokens_per_frame": tok,
                         "gflops_window": gf, "grad_energy_share": 0.8 if arm == "meshtok" else 0.25,
                         "rel_l2_inside": v, "rel_l2_outside": v})
    return runs


def test_gates_can_fail():
    good = {c.id: c for c in make_claims(_runs([0.049, 0.050, 0.048], [0.059, 0.058, 0.060], [0.058, 0.057, 0.058]),
                                         [0, 1, 2],
                                         ["meshtok", "random", "coarse"], {"shock_patch_fraction": 0.18})}
    assert good["M1"].held and good["M2"].held and good["M3"].held and good["M1"].measured["decidable"]
    # a tokenizer that refines the wrong places: MeshTok no better than the baselines
    bad = {c.id: c for c in make_claims(_runs([0.058, 0.057], [0.059, 0.058], [0.058, 0.057]), [0, 1],
                                        ["meshtok", "random", "coarse"], {"shock_patch_fraction": 0.18})}
    assert not bad["M1"].held and not bad["M2"].held
    # a broken model worse than persistence
    worse = {c.id: c for c in make_claims(_runs([0.3, 0.3], [0.3, 0.3], [0.3, 0.3]), [0, 1],
                                          ["meshtok", "random", "coarse"], {"shock_patch_fraction": 0.18})}
    assert not worse["M3"].held


def test_ratio_check_says_when_it_cannot_decide():
    c = ratio_check([0.050, 0.046], [0.055, 0.056], 0.9)  # per-seed 0.909 and 0.821 straddle 0.9
    assert not c["decidable"]
    m1 = make_claims(_runs([0.050, 0.046], [0.1, 0.1], [0.055, 0.056]), [0, 1], ["meshtok", "random", "coarse"],
                     {"shock_patch_fraction": 0.1})[0]
    assert "CANNOT DECIDE" in m1.details and m1.measured["decidable"] is False
    assert ratio_check([0.04, 0.041, 0.039], [0.06, 0.06, 0.061], 0.92)["decidable"]
    assert not ratio_check([0.04], [0.06], 0.92)["decidable"]  # one seed: spread unknown
    with pytest.raises(ValueError, match="same length"):
        ratio_check([1.0], [1.0, 2.0], 0.9)


@pytest.mark.parametrize("key,value,exc", [
    ("steps", 2.5, ValueError), ("steps", 0, ValueError), ("arms", "meshtok", TypeError),
    ("arms", ["coarse"], ValueError), ("arms", ["meshtok", "bogus"], ValueError), ("patch", 7, ValueError),
    ("refine_ratio", 0.1, ValueError), ("context", 12, ValueError), ("lr", float("nan"), ValueError),
    ("heads", 3, ValueError), ("cache", 1, TypeError), ("rollout_steps", 9, ValueError),
])
def test_validate_config_names_the_key(key, value, exc):
    cfg = {**copy.deepcopy(E.CONFIGS["small"]), key: value}
    with pytest.raises(exc, match=key.split("_")[0]):
        E.validate_config(cfg)


def test_configs_are_valid_and_documented():
    for scale in ("smoke", "small", "paper"):
        E.validate_config({**E.CONFIGS[scale], "scale": scale})
    assert set(E.CONFIGS["small"]) <= set(E.CONFIG_HELP) | {"scale"}
    with pytest.raises(ValueError, match="config is missing"):
        E.validate_config({"seed": 0})
