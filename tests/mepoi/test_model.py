"""Spec section 8: time features, windowing, contrastive loss, visit encoder, trainer behaviour."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from icml26.mepoi import (MEPOI, MEPOITrainer, POITable, VisitEncoder, VisitTable, contrastive_loss, gather_batch,
                          make_windows, time_features, visit_features)

torch.set_num_threads(1)


def test_time_features_known_values_and_time_zone():
    df = pd.DataFrame({"arrival": pd.to_datetime(["2024-01-01 00:00", "2024-01-03 12:00"]),  # Monday, Wednesday
                       "departure": pd.to_datetime(["2024-01-01 06:00", "2024-01-03 18:00"])})
    tf = time_features(df)
    np.testing.assert_allclose(tf[["arr_h", "arr_w"]].to_numpy(), [[0, 0], [0.5, (2 + 0.5) / 7]], atol=1e-12)
    np.testing.assert_allclose(tf["dep_h"], [0.25, 0.75], atol=1e-12)
    # naive timestamps read as UTC, converted to Los Angeles (UTC-8 in January): Monday 00:00 UTC = Sunday 16:00
    la = time_features(df, tz="America/Los_Angeles")
    np.testing.assert_allclose(la["arr_h"].iloc[0], 16 / 24, atol=1e-12)
    np.testing.assert_allclose(la["arr_w"].iloc[0], (6 + 16 / 24) / 7, atol=1e-12)
    # numeric hours since Monday 00:00 give the same features
    num = time_features(pd.DataFrame({"arrival": [0.0, 60.0], "departure": [6.0, 66.0]}))
    np.testing.assert_allclose(num[["arr_h", "arr_w", "dep_h"]].to_numpy(),
                               tf[["arr_h", "arr_w", "dep_h"]].to_numpy(), atol=1e-12)
    with pytest.raises(ValueError, match="tz"):
        time_features(df, tz="Mars/Olympus")


def test_windows_released_and_keep_tail():
    users = np.r_[np.zeros(40, int), np.ones(10, int)]
    w = make_windows(users, 16)
    assert w.index.tolist() == [list(range(16)), list(range(16, 32))]  # 2 windows in time order
    assert w.n_dropped == 8 + 10
    t = make_windows(users, 16, keep_tail=True)
    assert len(t) == 4 and t.n_dropped == 0
    assert t.index[2].tolist() == list(range(32, 40)) + [-1] * 8
    with pytest.raises(ValueError, match="contiguous"):
        make_windows([0, 1, 0], 2)
    with pytest.raises(ValueError, match="window"):
        make_windows(users, 0)


def test_contrastive_loss_known_answers():
    torch.manual_seed(0)
    E = torch.nn.functional.normalize(torch.randn(5, 8), dim=1) * 30  # distinct POIs, large scale
    target = torch.tensor([0, 1, 2, 3, 4, 2, 0])
    h = E[target]
    assert contrastive_loss(h, E, target, tau=0.1).item() < 1e-6
    # permuting the candidate POIs (and the targets with them) leaves the loss unchanged
    h2, cand = torch.randn(7, 8), torch.randn(5, 8)
    perm = torch.tensor([3, 0, 4, 1, 2])
    inv = torch.argsort(perm)
    a = contrastive_loss(h2, cand, target, 0.1)
    b = contrastive_loss(h2, cand[perm], inv[target], 0.1)
    assert torch.allclose(a, b, atol=1e-6)
    # all-equal candidates: loss = log(U)
    assert abs(contrastive_loss(h2, torch.ones(5, 8), target, 0.1).item() - np.log(5)) < 1e-5


def _toy(n_poi=6, n_users=3, per_user=10, seed=0):
    rng = np.random.default_rng(seed)
    pois = pd.DataFrame({"poi_id": [f"p{i}" for i in range(n_poi)], "name": [f"Place {i}" for i in range(n_poi)],
                         "category": ["cafe", "bar", "gym"] * (n_poi // 3),
                         "lat": rng.uniform(60.15, 60.2, n_poi), "lon": rng.uniform(24.9, 25.0, n_poi)})
    rows = []
    for u in range(n_users):
        t = rng.uniform(0, 10)
        for _ in range(per_user):
            d = rng.uniform(0.5, 3)
            rows.append((u, f"p{rng.integers(n_poi)}", t, t + d))
            t += d + rng.uniform(1, 12)
    return pois, pd.DataFrame(rows, columns=["user_id", "poi_id", "arrival", "departure"])


def _batch(pois, visits, W=4, keep_tail=True):
    P = POITable.from_frame(pois)
    V = VisitTable.from_frame(visits, P)
    feats = visit_features(V, P)
    win = make_windows(V.frame["user_id"], W, keep_tail=keep_tail)
    return P, feats, gather_batch(feats, win.index)


def test_visit_encoder_shape_padding_and_no_poi_id():
    pois, visits = _toy(per_user=7)
    P, feats, batch = _batch(pois, visits)
    enc = VisitEncoder(len(P.categories), d=16, layers=1, heads=2, ffn=32, dropout=0.0, loc_dropout=0.0).eval()
    h = enc(batch)
    B, W = batch["mask"].shape
    assert h.shape == (B, W, 16)
    assert torch.all(h[~batch["mask"]] == 0) and torch.all(h[batch["mask"]].abs().sum(-1) > 0)
    # the POI id never enters the token: new ids with identical attributes give identical h_v
    b2 = dict(batch)
    b2["poi"] = (batch["poi"] + 3) % 6
    assert torch.equal(enc(b2), h)
    # padded positions do not influence real ones: garbage in the padding leaves h unchanged
    b3 = {k: v.clone() for k, v in batch.items()}
    for k in ("arr_h", "arr_w", "dep_h", "dep_w", "arr_days"):
        b3[k][~batch["mask"]] = 0.77
    assert torch.allclose(enc(b3), h, atol=1e-6)


def test_mepoi_forward_padding_does_not_contribute():
    pois, visits = _toy(per_user=7)
    P, feats, batch = _batch(pois, visits)
    torch.manual_seed(0)
    m = MEPOI(len(P), len(P.categories), d=16, layers=1, heads=2, ffn=32, dropout=0.0, n_scales=3, bins=100).eval()
    m.encoder.loc.net[-1].p = 0.0
    out = m(batch)
    assert set(out) >= {"loss", "cl", "kl_sparse"} and torch.isfinite(out["loss"])
    b2 = {k: v.clone() for k, v in batch.items()}
    b2["poi"][~batch["mask"]] = 5  # padded slots pointing at a POI change nothing
    assert torch.allclose(m(b2)["loss"], out["loss"], atol=1e-6)


def test_trainer_fit_deterministic_and_lambda_zero_ablation():
    pois, visits = _toy(n_poi=9, n_users=4, per_user=20)
    kw = dict(d=16, layers=1, heads=2, ffn=32, window=8, epochs=2, batch_size=4, min_visits=8, prior_batch=4,
              optimizer="adamw", seed=1, absolute_time_days=7.0)
    a = MEPOITrainer(**kw).fit(visits, pois)
    b = MEPOITrainer(**kw).fit(visits, pois)
    np.testing.assert_array_equal(a.embeddings_, b.embeddings_)
    assert a.embeddings_.shape == (9, 16) and a.n_windows_ == 8
    assert a.priors_.is_anchor.any() and (~a.priors_.is_anchor).any()
    c = MEPOITrainer(**{**kw, "lambda_kl": 0.0}).fit(visits, pois)
    assert not np.array_equal(a.embeddings_, c.embeddings_)
    np.testing.assert_array_equal(a.transform(["p3", "p0"]), a.embeddings_[[3, 0]])
    h = a.encode_visits(visits)
    assert h.shape == (len(visits), 16) and np.isfinite(h).all()
    with pytest.raises(ValueError, match="poi_ids"):
        a.transform(["nope"])


def test_trainer_save_load_roundtrip(tmp_path):
    pois, visits = _toy(n_poi=6, n_users=2, per_user=10)
    tr = MEPOITrainer(d=8, layers=1, heads=2, ffn=16, window=5, epochs=1, batch_size=2, min_visits=3,
                      optimizer="adamw", absolute_time_days=7.0).fit(visits, pois)
    back = MEPOITrainer.load(tr.save(tmp_path / "m.pt"))
    np.testing.assert_array_equal(back.embeddings_, tr.embeddings_)
    np.testing.assert_allclose(back.encode_visits(visits), tr.encode_visits(visits), atol=1e-6)


def test_trainer_rejects_bad_input_also_after_set_params():
    pois, visits = _toy()
    with pytest.raises(ValueError, match="heads"):
        MEPOITrainer(d=10, heads=4)
    tr = MEPOITrainer(d=8, layers=1, heads=2, ffn=16, window=4, epochs=1)
    tr.set_params(window=2.5)
    with pytest.raises((TypeError, ValueError), match="window"):
        tr.fit(visits, pois)
    tr.set_params(window=4, tau=float("nan"))
    with pytest.raises(ValueError, match="tau"):
        tr.fit(visits, pois)
    tr.set_params(tau=0.1)
    bad = visits.copy()
    bad.loc[0, "poi_id"] = "ghost"
    with pytest.raises(ValueError, match="poi_id"):
        tr.fit(bad, pois)
    bad = visits.copy()
    bad.loc[0, "departure"] = bad.loc[0, "arrival"] - 1
    with pytest.raises(ValueError, match="departure"):
        tr.fit(bad, pois)
    with pytest.raises(ValueError, match="window"):
        MEPOITrainer(d=8, layers=1, heads=2, window=500, epochs=1).fit(visits, pois)
    with pytest.raises(ValueError, match="not fitted"):
        MEPOITrainer().transform(["p0"])


@pytest.mark.parametrize("lr, wd, skip_every", [(1e-2, 0.01, 0), (1e-3, 1e-10, 0), (1e-2, 0.0, 0), (1e-2, 0.01, 3)])
def test_fast_adamw_is_bit_identical_to_torch_adamw(lr, wd, skip_every):
    """The probe / CPU trainer optimizer replays torch.optim.AdamW's single-tensor update exactly: the _foreach_
    path (every parameter at one step count), the per-tensor path (a parameter without a gradient every
    `skip_every` steps falls behind), and the skipped decay multiply where (1 - lr * wd) is 1.0 in float32."""
    import torch

    from icml26.mepoi.probe import _AdamW

    def run(make):
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))
        opt = make(net.parameters())
        g = torch.Generator().manual_seed(1)
        for i in range(25):
            x = torch.randn(8, 5, generator=g)
            loss = net(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            if skip_every and i % skip_every == 0:
                net[0].bias.grad = None
            opt.step()
        return [p.detach().clone() for p in net.parameters()]

    a = run(lambda ps: torch.optim.AdamW(ps, lr=lr, weight_decay=wd))
    b = run(lambda ps: _AdamW(ps, lr=lr, weight_decay=wd))
    assert all(torch.equal(x.view(torch.int32), y.view(torch.int32)) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, run(lambda ps: _AdamW(ps, lr=lr * 1.01, weight_decay=wd))))


def test_probe_functional_forward_equals_the_modules():
    """EmbedProbe's net runs its layers as functional calls: the same outputs and dropout draws as calling the
    modules, in train and eval mode, for every modality and architecture."""
    import torch

    from icml26.mepoi.probe import _Net

    for mod in ("text", "poi", "both"):
        for arch in ("mlp", "linear"):
            torch.manual_seed(0)
            net = _Net(mod, 6, 4, 3, 8, 0.5, arch)
            t = torch.randn(10, 6) if mod != "poi" else None
            p = torch.randn(10, 4) if mod != "text" else None
            for train in (True, False):
                net.train(train)
                torch.manual_seed(1)
                got = net(t, p)
                torch.manual_seed(1)
                if arch == "linear":
                    want = net.head(torch.cat([x for x in (p, t) if x is not None], 1))
                elif mod == "both":
                    want = net.head(torch.cat([net.poi(p), net.text(t)], 1))
                else:
                    want = net.head(t if mod == "text" else p)
                assert torch.equal(got, want), (mod, arch, train)
