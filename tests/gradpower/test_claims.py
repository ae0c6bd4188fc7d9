"""gradpower's claim checks can fail: M measured through the optimizer (a wrong power or no transform flips it),
G/P from paired gaps, R from the noise scale; plus known answers of the noise-scale estimator."""

from __future__ import annotations

import pytest
import torch

from icml26.gradpower import AdamWPower, TinyLlama
from icml26.gradpower.experiment import MECH_HIGH, mechanism_check, paired_claims, regime_claim
from icml26.gradpower.mechanism import gradient_noise_scale
from icml26.gradpower.theory import normalized_drift

FAST = dict(coords=2048, steps=1000, burn_in=200)
BROKEN = dict(coords=2048, steps=500, burn_in=100)  # enough to see a 6 % error


def test_claim_m_holds_for_adamwpower_and_fails_for_a_wrong_power_or_no_transform():
    mech, good, sanity = mechanism_check(20_000, **FAST)
    assert good.verdict == "held" and good.gate and good.measured["max_rel_err_vs_closed_form"] < 0.02
    assert sanity.kind == "sanity" and sanity.held and sanity.decision.exact
    key = f"mu={MECH_HIGH[0]:g},sigma={MECH_HIGH[1]:g}"
    for p in (1.0, 1.5):  # the measured drift sits within 4 standard errors of the closed form
        got, se = mech["optimizer"]["drift"][key][f"{p:g}"], mech["optimizer"]["se"][key][f"{p:g}"]
        assert abs(got - normalized_drift(*MECH_HIGH, p)) < 4 * se and se < 0.01 * got

    def wrong_power(groups, lr, betas, eps):  # a broken arm: applies p + 0.3 where the check expects p
        return AdamWPower([{**g, "power": g["power"] + 0.3} for g in groups], lr=lr, betas=betas, eps=eps,
                          weight_decay=0.0)

    _, bad, _ = mechanism_check(20_000, optimizer_factory=wrong_power, **BROKEN)
    assert bad.verdict == "not held" and bad.measured["max_rel_err_vs_closed_form"] > 0.02

    def no_transform(groups, lr, betas, eps):  # plain AdamW: every p gives the p = 1 drift
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, weight_decay=0.0)

    _, plain, _ = mechanism_check(20_000, optimizer_factory=no_transform, **BROKEN)
    assert plain.verdict == "not held"
    _, tiny, _ = mechanism_check(20_000, coords=8, steps=20, burn_in=5)  # the right optimizer, too few draws
    assert tiny.verdict == "inconclusive"


def test_claim_g_through_paired_claims_held_not_held_inconclusive():
    la = {0: 1.80, 1: 1.80, 2: 1.80}
    d = {0: 0.010, 1: 0.004, 2: 0.006}
    good, rep = paired_claims(d, la, {s: la[s] - d[s] for s in la}, "regime")
    assert good.verdict == "held" and good.per_seed == [0.010, 0.004, 0.006] and good.paper
    assert good.interval.method == "t" and good.interval.n == 3 and rep.kind == "report"
    assert rep.verdict == "inconclusive"  # mean 0.0067 > 0, but 3 seeds do not bound it away from 0
    # a deliberately broken AdamWPower arm (e.g. a power that diverges): 0.05 nats/byte worse on every seed
    broken = {0: 1.85, 1: 1.86, 2: 1.855}
    bad_g, bad_p = paired_claims({s: la[s] - broken[s] for s in la}, la, broken, "regime")
    assert bad_g.verdict == "not held" and bad_p.verdict == "not held"
    # one seed (a tiny sample): never decided, and the details say what would decide it
    one, _ = paired_claims({0: 0.010}, {0: 1.80}, {0: 1.79}, "regime", cost_per_seed_s=60.0)
    assert one.verdict == "inconclusive" and "medium" in one.details and "3 seeds" in one.details
    # the small run's gaps: inconclusive, with the seeds and the time that would decide it
    obs, _ = paired_claims({0: 0.0109, 1: -0.0349, 2: -0.0206}, la, {0: 1.7941, 1: 1.8349, 2: 1.8206}, "regime",
                           cost_per_seed_s=60.0)
    assert obs.verdict == "inconclusive" and "seeds (now 3) would decide it" in obs.details and "min" in obs.details


def _noise(ratio):
    def entry(k):
        r = ratio * k / 4000
        return {"noise_to_signal": r, "frac_coords_noise_dominated": 0.5, "excess_noise": (r - 1) * 1e-3,
                "excess_noise_se": 1e-5}

    return {f"{arm}_s{s}": {str(k): entry(k) for k in (1000, 2000, 3000, 4000)}
            for arm in ("adamw", "adamwpower") for s in (0, 1)}


def test_regime_claim_flips_with_the_noise_scale():
    noisy, summary = regime_claim(_noise(10.0), [0, 1], 4000, 16)
    assert noisy.verdict == "held" and noisy.kind == "report" and "noise-dominated" in summary
    assert noisy.measured["min_noise_to_signal_late"] == pytest.approx(5.0)  # steps >= 2000 only
    quiet, summary = regime_claim(_noise(1.5), [0, 1], 4000, 16)
    assert quiet.verdict == "not held" and "NOT noise-dominated" in summary
    vague = _noise(10.0)
    vague["adamw_s0"]["2000"] = {"noise_to_signal": 1.2, "noise_to_signal_se": 0.3, "excess_noise": 1e-4,
                                 "excess_noise_se": 1e-4, "frac_coords_noise_dominated": 0.5}
    claim, _ = regime_claim(vague, [0, 1], 4000, 16)
    assert claim.verdict == "inconclusive" and "adamw_s0@2000" in claim.details


def test_gradient_noise_scale_known_answers():
    torch.manual_seed(0)
    model = TinyLlama(64, 16, 1, 2, 16, d_ff=32)
    g = torch.Generator().manual_seed(0)
    w = torch.randint(0, 64, (1, 17), generator=g).repeat(6, 1)  # one sequence with a few tokens changed: signal
    w[torch.arange(6), torch.randint(0, 17, (6,), generator=g)] = torch.randint(0, 64, (6,), generator=g)
    dup = gradient_noise_scale(model, w[:1].repeat(5, 1), 4)  # identical examples: no noise at all
    assert dup["trace_cov"] == pytest.approx(0.0, abs=1e-12) and dup["b_noise"] == pytest.approx(0.0, abs=1e-9)
    out = gradient_noise_scale(model, w, 4)
    # independent reference: per-example gradients, tr(Sigma) = n/(n-1) (mean |g_i|^2 - |mean g|^2)
    grads = []
    for i in range(6):
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(w[i:i + 1, :-1])[0], w[i, 1:]).backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()]).double())
    G = torch.stack(grads)
    mean = G.mean(0)
    trace = float(6 / 5 * ((G ** 2).sum(1).mean() - (mean ** 2).sum()))
    g2 = float((mean ** 2).sum()) - trace / 6
    assert out["trace_cov"] == pytest.approx(trace, rel=1e-6) and out["grad_norm_sq"] == pytest.approx(g2, rel=1e-6)
    assert g2 > 0 and out["noise_to_signal"] == pytest.approx(trace / g2 / 4, rel=1e-6)
    assert out["excess_noise"] == pytest.approx(trace / 4 - g2, rel=1e-6)
    noisy = gradient_noise_scale(model, torch.randint(0, 64, (3, 17), generator=g), 4)
    if noisy["grad_norm_sq"] <= 0:  # the unbiased |G|^2 estimate fell below zero: no measurable signal
        assert noisy["b_noise"] == float("inf")
    with pytest.raises(ValueError, match="at least 2"):
        gradient_noise_scale(model, w[:1], 4)
    with pytest.raises(TypeError, match="windows must hold integer"):
        gradient_noise_scale(model, w.float(), 4)
    with pytest.raises(ValueError, match="windows must hold token ids"):
        gradient_noise_scale(model, w + 64, 4)
    with pytest.raises(ValueError, match="windows must hold token ids"):
        gradient_noise_scale(model, w - 100, 4)
