"""The estimator, the resolve step, the MPA demo, the baselines and the tasks (spec section 8)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from icml26.sparse_transfer import (
    AnchoredSparseTransfer,
    AnchorResolver,
    NotFittedError,
    OTMap,
    PairedRegression,
    anchor_genericity,
    choose_anchor,
    gauss_swap,
    jacobian_support_f1,
    label_preservation_acc,
    make_baseline,
    make_mpa,
    mmd2,
    signed_permutations,
    translation_error,
    uniform_dependent,
)

TASK = gauss_swap(n_train=300, n_test=200, seed=0)


def _fit(**kw):
    kw = {"steps": 15, "batch_size": 32, "lambda_cyc": 0.0, "hidden": (16,), "seed": 0, **kw}
    i = choose_anchor(TASK.Y_train_paired, 0)
    return AnchoredSparseTransfer(**kw).fit(TASK.X_train, TASK.Y_train,
                                            anchors=(TASK.X_train[i], TASK.Y_train_paired[i]))


def test_task_ground_truth():
    assert np.allclose(TASK.f_star(TASK.X_test), TASK.Y_test, atol=1e-10)
    J = TASK.f_star_jacobian(TASK.X_test)
    assert ((np.abs(J).mean(0) > 0) == TASK.support).all() and TASK.support.sum() == 3
    # finite differences of f* agree with the analytic Jacobian
    e = 1e-6
    num = (TASK.f_star(TASK.X_test[:5] + [e, 0, 0]) - TASK.f_star(TASK.X_test[:5])) / e
    assert np.allclose(num, J[:5, :, 0], atol=1e-4)
    l1 = np.abs(J).sum((1, 2)).mean() / 3
    assert 1.0 < l1 < 1.15  # spec: ~1.08
    ud = uniform_dependent(200, 50, seed=1)
    assert np.allclose(ud.f_star(ud.X_test), ud.Y_test, atol=1e-10)


def test_mpa_demo_marginal_kept_correspondence_scrambled():
    task = gauss_swap(n_train=10, n_test=400, seed=3)
    X, Y = task.X_test, task.Y_test
    Yp = np.random.default_rng(9).standard_normal((400, 3))
    base = float(mmd2(torch.as_tensor(Y), torch.as_tensor(Yp)))
    J = task.f_star_jacobian(X)
    l1 = np.abs(J).sum((1, 2)).mean()
    mm, te, ratio = [], [], []
    for s in range(20):
        Q = make_mpa("rotation", 3, seed=s).matrix
        QY = Y @ Q.T
        mm.append(float(mmd2(torch.as_tensor(QY), torch.as_tensor(Yp))))
        te.append(translation_error(QY, Y))
        ratio.append(np.abs(np.einsum("ij,njk->nik", Q, J)).sum((1, 2)).mean() / l1)
    assert np.median(mm) < 2 * base + 0.002
    assert np.median(te) > 0.8 and np.median(ratio) > 1.3
    Q = make_mpa("rotation", 3, seed=0).matrix
    assert np.allclose(Q @ Q.T, np.eye(3)) and np.linalg.det(Q) == pytest.approx(1.0)
    refl = make_mpa("quantile", 3, Y_ref=np.random.default_rng(1).standard_normal((20000, 3)))
    inner = np.abs(Y).max(1) < 2  # the quantile reflection of a symmetric law is ~ t -> -t (tails: few samples)
    assert np.allclose(refl(Y)[inner], -Y[inner], atol=0.1)


def test_signed_permutations_and_genericity():
    mats = signed_permutations(3)
    assert mats.shape == (48, 3, 3) and np.allclose(mats[0], np.eye(3))
    assert len({m.tobytes() for m in mats}) == 48
    assert anchor_genericity(np.array([1.0, 1.0, 0.3])) == pytest.approx(0.0)  # swap 0 <-> 1 fixes it
    assert anchor_genericity(np.array([0.6, -1.7, 2.5])) > 0.5


def test_resolver_recovers_a_known_signed_permutation():
    rng = np.random.default_rng(0)
    Y = rng.standard_normal((400, 3))
    M = signed_permutations(3)[17]
    fx = Y @ M.T  # a DM-optimal map h o f* with h = M
    res = AnchorResolver(Y, seed=0)
    assert len(res.candidates) == 48  # all signed permutations preserve N(0, I)
    ya = np.array([[0.6, -1.7, 2.5]])
    res.fit(ya @ M.T, ya)
    assert translation_error(res.transform(fx), Y) < 1e-12
    assert np.allclose(res.inverse_transform(res.transform(fx)), fx)
    # a non-symmetric target removes candidates through the MMD filter
    Yu = np.abs(rng.standard_normal((400, 3))) * [1.0, 2.0, 3.0]
    assert len(AnchorResolver(Yu, seed=0).candidates) < 48


def test_fit_is_deterministic_and_refit_starts_fresh():
    kw = dict(jac_mode="fd", lambda_jac=0.05, anchor_mode="resolve")
    a, b = _fit(**kw), _fit(**kw)
    assert np.array_equal(a.transform(TASK.X_test), b.transform(TASK.X_test))
    c = _fit(**kw, seed=1)
    assert not np.array_equal(a.transform(TASK.X_test), c.transform(TASK.X_test))
    pa = a.transform(TASK.X_test)
    a.fit(TASK.X_train, TASK.Y_train)  # refit without anchors: same start, no resolve step
    assert a.resolver_ is None
    assert np.array_equal(a.transform(TASK.X_test), b.transform(TASK.X_test, resolved=False))
    assert pa.shape == (200, 3)


def test_not_fitted_and_modes():
    est = AnchoredSparseTransfer()
    with pytest.raises(NotFittedError):
        est.transform(TASK.X_test)
    with pytest.raises(NotFittedError):
        est.score(TASK.X_test, TASK.Y_test)
    m = _fit(jac_mode="exact", anchor_mode="resolve")
    assert m.resolver_ is not None and m.score(TASK.X_test, TASK.Y_test) <= 0
    J = m.jacobian(TASK.X_test[:7])
    assert J.shape == (7, 3, 3)
    with pytest.raises(NotFittedError, match="inverse"):
        m.inverse_transform(TASK.Y_test)
    g = _fit(lambda_cyc=1.0, jac_on="both", jac_mode="exact", anchor_mode="joint")
    assert g.inverse_transform(TASK.Y_test).shape == (200, 3) and g.resolver_ is None
    gan = _fit(dm="gan", lambda_cyc=1.0, jac_on="inverse", jac_mode="exact", jac_hinge=0.5)
    assert np.isfinite(gan.transform(TASK.X_test)).all()


def test_dimension_groups_and_baselines():
    lab = lambda Y: (Y[:, 0] > 0).astype(int)
    dim = make_baseline("dimension", steps=10, batch_size=32, lambda_cyc=0.0, hidden=(8,))
    dim.fit(TASK.X_train, TASK.Y_train, conditional_groups=(lab(TASK.Y_train_paired), lab(TASK.Y_train)))
    assert dim.transform(TASK.X_test).shape == (200, 3)
    with pytest.raises(ValueError, match="same group labels"):
        dim.fit(TASK.X_train, TASK.Y_train, conditional_groups=(lab(TASK.Y_train_paired), lab(TASK.Y_train) + 5))
    ot = OTMap(max_samples=300).fit(TASK.X_train, TASK.Y_train)
    # x has independent coordinates, so the Brenier map is coordinate-wise monotone: a cyclic permutation of y
    assert translation_error(ot.transform(TASK.X_test), TASK.Y_test[:, [1, 2, 0]]) < 0.3
    assert translation_error(ot.transform(TASK.X_test), TASK.Y_test) > 1.0
    one = PairedRegression(1).fit(TASK.X_train, TASK.Y_train_paired)
    assert np.allclose(one.transform(TASK.X_test), TASK.Y_train_paired[0])  # one pair: the constant map y_a
    hundred = PairedRegression(100).fit(TASK.X_train, TASK.Y_train_paired)
    assert translation_error(hundred.transform(TASK.X_test), TASK.Y_test) < 0.1
    with pytest.raises(ValueError, match="n_pairs"):
        PairedRegression(1000).fit(TASK.X_train, TASK.Y_train_paired)


def test_metrics():
    J = np.zeros((3, 3))
    J[1, 0] = J[2, 1] = J[0, 2] = 1.0
    assert jacobian_support_f1(J, TASK.support) == 1.0
    assert jacobian_support_f1(np.ones((3, 3)), TASK.support) == pytest.approx(0.5)
    assert translation_error(TASK.Y_test, TASK.Y_test) == 0.0
    assert label_preservation_acc(lambda y: np.eye(2)[[0, 1, 1]], None, [0, 1, 0]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="same shape"):
        translation_error(TASK.Y_test, TASK.Y_test[:, :2])


def test_one_training_loop_serves_the_estimator_and_the_image_path(monkeypatch):
    from icml26.sparse_transfer import scale, training, transfer

    calls = []
    real = training.train_loop

    def spy(obj, *a, **k):
        calls.append(obj.disc is not None)
        return real(obj, *a, **k)

    monkeypatch.setattr(transfer, "train_loop", spy)
    monkeypatch.setattr(scale, "train_loop", spy)
    X, Y = np.random.default_rng(0).standard_normal((2, 40, 2))
    AnchoredSparseTransfer(steps=2, batch_size=8, hidden=(4,), lambda_cyc=0.0).fit(X, Y)
    cfg = {**scale.PAPER_CONFIG, "data": "synthetic", "n_synthetic": 8, "image_size": 8, "width": 2, "steps": 2,
           "batch_size": 2, "n_probes": 1, "out_dir": "", "device": "cpu"}
    scale.train_translator(cfg, scale.load_image_domains(cfg), 0.01)
    assert calls == [False, True]
    with pytest.raises(ValueError, match="d_opt"):
        training.train_loop(training.TransferObjective(f=nn.Linear(2, 2), disc=nn.Linear(2, 1)), None,
                            lambda s: (torch.zeros(2, 2), torch.zeros(2, 2)), 1)
