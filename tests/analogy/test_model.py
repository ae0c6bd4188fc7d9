"""Correctness tests of spec section 8: gradient, typed softmax, worlds, chance at init, equivariance,
determinism, errors."""

import numpy as np
import pytest
import torch

from icml26.analogy import (
    AnalogyWorld,
    CurriculumTrainer,
    FactorizedTransformer,
    Premise,
    TokenIndexError,
    TwoHopWorld,
    analogical_accuracy,
    conclusion_prob,
    feature_resemblance,
    fit,
    predict,
    premise_retention,
    two_hop_accuracy,
)


def _model(world, seed=0, **kw):
    return FactorizedTransformer(world.vocab_size, answer_sets=world.answer_sets, seed=seed, **kw)


def test_finite_difference_gradient():
    w = AnalogyWorld(n_groups=3, group_size=2, n_individual=1, seed=1)
    m = _model(w, d_model=5, init_std=0.3)
    X, mask = m.encode(w.premises)
    y = torch.tensor([p.target for p in w.premises])

    def loss():
        return torch.nn.functional.cross_entropy(m.logits_from_counts(X, mask), y)

    gE, gU = torch.autograd.grad(loss(), [m.E, m.U])
    rng = np.random.default_rng(0)
    eps = 1e-6
    for P, G in ((m.E, gE), (m.U, gU)):
        for _ in range(15):
            idx = tuple(int(rng.integers(s)) for s in P.shape)
            with torch.no_grad():
                old = P[idx].item()
                P[idx] = old + eps
                lp = loss().item()
                P[idx] = old - eps
                lm = loss().item()
                P[idx] = old
            fd = (lp - lm) / (2 * eps)
            assert abs(fd - G[idx].item()) <= 1e-6 * max(1e-3, abs(fd)) + 1e-10


def test_typed_softmax_never_predicts_outside_the_answer_set():
    w = AnalogyWorld(seed=3)
    m = _model(w, init_std=1.0)
    z = m(w.premises + w.test)
    p = torch.softmax(z, dim=1)
    for i, prem in enumerate(w.premises + w.test):
        allowed = w.answer_sets[prem.inputs[-1]]
        outside = np.setdiff1d(np.arange(w.vocab_size), allowed)
        assert torch.isinf(z[i, outside]).all() and torch.isfinite(z[i, allowed]).all()
        assert abs(p[i, allowed].sum().item() - 1) < 1e-12
        assert int(z[i].argmax()) in set(allowed.tolist())
    # untyped: every token can be predicted
    u = FactorizedTransformer(w.vocab_size, answer_sets=None, init_std=1.0)
    assert torch.isfinite(u(w.test)).all()


def test_analogy_world_invariants():
    w = AnalogyWorld(n_groups=5, group_size=3, n_features=2, n_individual=2, seed=4)
    assert w.vocab_size == 5 * 3 + 5 * 2 + 5 + 5 * 3 * 2 + 3
    assert sorted(w.layout.values()) == list(range(w.vocab_size))
    train = {(p.inputs, p.target) for p in w.premises}
    assert not train & {(p.inputs, p.target) for p in w.test}
    assert not {p.inputs for p in w.premises} & {p.inputs for p in w.test}  # no test prompt is ever trained
    sources = {p.inputs[0] for p in w.attribution}
    feats = {}
    for p in w.similarity:
        feats.setdefault(p.inputs[0], set()).add(p.target)
    for t in w.test:
        e = t.inputs[0]
        sharing = [s for s in sources if feats[s] & feats[e]]
        assert len(sharing) == 1  # exactly one source entity shares a feature with each test entity
        src_attr = [p.target for p in w.attribution if p.inputs[0] == sharing[0]]
        assert src_attr == [t.target]
    vals = {}
    for p in w.individual:
        vals.setdefault(p.inputs[0], []).append(p.target)
    allv = [v for vs in vals.values() for v in vs]
    assert len(allv) == len(set(allv)) == 5 * 3 * 2 and all(len(v) == 2 for v in vals.values())


def test_two_hop_world_bridges_iff_bridge():
    on, off = TwoHopWorld(n_chains=6, bridge=True), TwoHopWorld(n_chains=6, bridge=False)
    assert sum(p.inputs[-1] == on.EQ for p in on.facts) == 6
    assert all(p.inputs[0] == p.target for p in on.facts if p.inputs[-1] == on.EQ)
    assert not any(p.inputs[-1] == off.EQ for p in off.facts)
    assert len(on.test_composed) == len(on.test_analogical) == 6
    assert all(len(p.inputs) == 3 for p in on.test_composed)


@pytest.mark.slow  # covered by tests/analogy/test_experiment.py's gate tests (joint held, attribute_only not held)
def test_chance_at_init_and_attribute_only():
    accs, probs = [], []
    for s in range(20):
        w = AnalogyWorld(seed=s)
        m = _model(w, seed=s, init_std=1e-8)
        accs.append(analogical_accuracy(m, w))
        probs.append(conclusion_prob(m, w))
    assert abs(np.mean(probs) - 1 / 8) < 1e-6  # logits ~ 1e-16: uniform over the 8 attributes
    assert abs(np.mean(accs) - 1 / 8) < 3 * np.sqrt(1 / 8 * 7 / 8 / (20 * 24))
    trained = []
    for s in range(3):
        w = AnalogyWorld(seed=s)
        m = _model(w, seed=s)
        CurriculumTrainer(m, "attribute_only", steps_per_stage=800).run(w)
        assert premise_retention(m, w.attribution) == 1.0  # it did learn "a is c"
        trained.append(analogical_accuracy(m, w))
    assert np.mean(trained) < 0.35  # no similarity premises: no transfer (chance 0.125, 72 items)


@pytest.mark.slow  # covered by tests/analogy/test_experiment.py's gate tests (joint held, attribute_only not held)
def test_joint_transfers_and_attr_first_does_not():
    w = AnalogyWorld(seed=0)
    j, a = _model(w), _model(w)
    CurriculumTrainer(j, "joint", steps_per_stage=1500).run(w)
    CurriculumTrainer(a, "attr_then_sim", steps_per_stage=1500).run(w)
    assert analogical_accuracy(j, w) >= 0.95 and analogical_accuracy(a, w) <= 0.6
    same, cross = feature_resemblance(j, w)
    assert same > cross + 0.2
    assert premise_retention(a, w) == 1.0


def test_two_hop_bridge_makes_the_difference():
    res = {}
    for b in (True, False):
        w = TwoHopWorld(bridge=b, seed=1)
        m = _model(w, seed=1)
        fit(m, w.facts, 600)
        res[b] = (two_hop_accuracy(m, w, "composed"), two_hop_accuracy(m, w, "analogical"))
    assert min(res[True]) >= 0.9 and max(res[False]) <= 0.35


def _relabel(w0, w1, perm):
    """Token map w0 -> w1 sending group g of w0 to group perm[g] of w1."""
    out = np.empty(w0.vocab_size, dtype=np.int64)
    for name, t in w0.layout.items():
        if name[0] in ("entity", "feature", "attribute", "value"):
            name = (name[0], int(perm[name[1]])) + name[2:]
        out[t] = w1.layout[name]
    return out


def test_equivariance_under_group_relabelling():
    w0, w1 = AnalogyWorld(n_groups=4, seed=0), AnalogyWorld(n_groups=4, seed=7)
    perm = np.array([2, 0, 3, 1])
    tm = _relabel(w0, w1, perm)
    m0 = _model(w0, init_std=0.05)
    m1 = _model(w1, init_std=0.05)
    with torch.no_grad():
        m1.E[:, tm] = m0.E
        m1.U[tm] = m0.U
    premises1 = [Premise(tuple(int(tm[t]) for t in p.inputs), int(tm[p.target])) for p in w0.premises]
    l0 = fit(m0, w0.premises, 300)
    l1 = fit(m1, premises1, 300)
    np.testing.assert_allclose(l0, l1, rtol=1e-9)
    test1 = [tuple(int(tm[t]) for t in p.inputs) for p in w0.test + w0.premises]
    assert np.array_equal(tm[predict(m0, w0.test + w0.premises)], predict(m1, test1))


def test_determinism_same_seed_same_losses():
    w = AnalogyWorld(seed=2)
    m = _model(w, seed=5)
    t = CurriculumTrainer(m, "sim_then_attr", steps_per_stage=200)
    r1 = t.run(w)
    E1 = m.representations()
    r2 = t.run(w)  # run re-draws the init: same answer
    assert r1["losses"] == r2["losses"] and torch.equal(E1, m.representations())
    m2 = _model(AnalogyWorld(seed=2), seed=5)
    assert CurriculumTrainer(m2, "sim_then_attr", steps_per_stage=200).run(AnalogyWorld(seed=2))["losses"] == \
        r1["losses"]


def test_errors():
    w = AnalogyWorld(seed=0)
    m = _model(w)
    with pytest.raises(ValueError, match="schedule"):
        CurriculumTrainer(m, "backwards")
    with pytest.raises(IndexError):
        fit(m, [Premise((w.vocab_size, w.IS), w.attr_tokens[0])], 1)
    with pytest.raises(TokenIndexError, match="target"):
        fit(m, [Premise((0, w.IS), w.vocab_size + 3)], 1)
    with pytest.raises(ValueError, match="group_size"):
        AnalogyWorld(group_size=1)
    with pytest.raises(ValueError, match="answer set"):
        fit(m, [Premise((w.groups[0, 0], w.IS), int(w.answer_sets[w.HAS][0]))], 1)
    with pytest.raises(ValueError, match="steps_per_stage"):
        CurriculumTrainer(m, "joint", steps_per_stage=2.5)
    with pytest.raises(ValueError, match="steps_per_stage"):
        CurriculumTrainer(m, "attr_then_sim", steps_per_stage=[100])
    with pytest.raises(TypeError, match="world"):
        CurriculumTrainer(m, "joint").run(TwoHopWorld())
    t = CurriculumTrainer(m, "joint")
    t.schedule = "nope"  # set after construction: still checked in run
    with pytest.raises(ValueError, match="schedule"):
        t.run(w)
    with pytest.raises(ValueError, match="lr"):
        fit(m, w.premises, 1, lr=float("nan"))
    with pytest.raises(TypeError, match="batch_inputs"):
        m(torch.zeros(2, 2))
    with pytest.raises(ValueError, match="relation"):
        m([[int(w.groups[0, 0]), int(w.groups[0, 1])]])


def test_metrics_refuse_a_model_built_for_another_world():
    small = AnalogyWorld(n_groups=3, group_size=2, n_individual=1)
    m = _model(small)
    big = AnalogyWorld()
    for f in (analogical_accuracy, conclusion_prob, feature_resemblance, premise_retention):
        with pytest.raises(ValueError, match="world"):
            f(m, big)
    with pytest.raises(ValueError, match="world"):
        two_hop_accuracy(m, TwoHopWorld(), "composed")


def test_freeze_holds_the_named_parameter_and_refuses_bad_names():
    w = AnalogyWorld(n_groups=3, group_size=2, n_individual=1, seed=0)
    m = _model(w)
    E0, U0 = m.E.detach().clone(), m.U.detach().clone()
    fit(m, w.premises, 5, freeze=("E",))
    assert torch.equal(m.E.detach(), E0) and not torch.equal(m.U.detach(), U0)
    out = CurriculumTrainer(m, "attr_then_sim", steps_per_stage=5, freeze=((), ("E",))).run(w)
    assert len(out["losses"]) == 2
    for bad, exc in ((("E", "U"), ValueError), (("W",), ValueError), ("E", TypeError)):
        with pytest.raises(exc, match="freeze"):
            fit(m, w.premises, 1, freeze=bad)
    with pytest.raises(ValueError, match="freeze"):
        CurriculumTrainer(m, "attr_then_sim", freeze=(("E",),))  # one entry per stage


@pytest.mark.parametrize("freeze", [(), ("E",), ("U",)])
def test_fast_gd_path_is_bit_identical_to_the_autograd_loop(freeze):
    # fit's plain-GD fast path (two-token prompts) against the autograd loop it replaces: torch SGD at lr = 1 runs
    # p - 1 * grad through autograd of the whole graph, the same arithmetic
    w = AnalogyWorld(4, 3, 1, 2, seed=3)
    a, b = (FactorizedTransformer(w.vocab_size, answer_sets=w.answer_sets, seed=3) for _ in range(2))
    la = fit(a, w.premises, 150, lr=1.0, freeze=freeze)
    lb = fit(b, w.premises, 150, lr=1.0, freeze=freeze, optimizer=lambda ps, lr: torch.optim.SGD(ps, lr=lr))
    assert la == lb
    assert torch.equal(a.E, b.E) and torch.equal(a.U, b.U)
