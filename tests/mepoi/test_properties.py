"""Property tests (hypothesis): the public entry points, given generated bad and edge-case input, return a valid
answer or raise ValueError/TypeError naming the argument."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from icml26.mepoi import (EmbedProbe, MEPOITrainer, make_city, make_windows, mixture_prior, popular_times,
                          transfer_gaussian)

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                          HealthCheck.function_scoped_fixture])
NUMBERS = st.one_of(st.integers(-3, 40), st.floats(-3, 40), st.sampled_from([float("nan"), float("inf"), "4", True]),
                    st.none())
FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=32)


def _named(fn, names):
    try:
        return fn(), None
    except (ValueError, TypeError) as e:
        assert any(re.search(rf"\b{re.escape(n)}\b", str(e)) for n in names), \
            f"{type(e).__name__} does not name one of {names}: {e}"
        return None, e


@SETTINGS
@given(arr=st.lists(FLOATS, max_size=12), dur=st.lists(st.floats(-2, 30), max_size=12), bins=NUMBERS,
       method=st.sampled_from(["released", "exact", "x"]))
def test_popular_times(arr, dur, bins, method):
    n = min(len(arr), len(dur))
    a = np.asarray(arr[:n], float)
    d = a + np.asarray(dur[:n], float)
    if len(arr) != len(dur) and n:
        d = np.r_[d, 1.0]
    out, err = _named(lambda: popular_times(a, d, bins=bins, method=method),
                      ("arrival", "departure", "bins", "method", "smooth"))
    if err is None:
        assert out.shape == (int(bins),) and np.all(out >= 0) and abs(out.sum() - 1) < 1e-9


@SETTINGS
@given(ns=st.integers(0, 5), na=st.integers(0, 5), bins=st.integers(1, 6), sigma=NUMBERS,
       bad=st.sampled_from([None, "nan_xy", "neg_p", "shape"]))
def test_transfer_gaussian(ns, na, bins, sigma, bad):
    rng = np.random.default_rng(0)
    s, a, p = rng.normal(size=(ns, 2)), rng.normal(size=(na, 2)), rng.dirichlet(np.ones(bins), na)
    if bad == "nan_xy" and ns:
        s[0, 0] = np.nan
    if bad == "neg_p" and na:
        p[0, 0] = -1
    if bad == "shape":
        a = rng.normal(size=(na, 3))
    out, err = _named(lambda: transfer_gaussian(s, a, p, sigma), ("sparse_xy", "anchor_xy", "anchor_p", "sigma"))
    if err is None:
        assert out.shape == (ns, bins) and np.isfinite(out).all()
        sums = out.sum(1)
        assert np.all((np.abs(sums - 1) < 1e-9) | (sums == 0))


@SETTINGS
@given(n=st.integers(0, 4), k=st.integers(1, 4), alpha=FLOATS)
def test_mixture_prior(n, k, alpha):
    pri = np.random.default_rng(1).dirichlet(np.ones(5), (n, k))
    out, err = _named(lambda: mixture_prior(pri, np.full((n, k), alpha)), ("alpha", "priors"))
    if err is None:
        assert out.shape == (n, 5) and np.allclose(out.sum(1), 1)


@SETTINGS
@given(users=st.lists(st.integers(0, 3), max_size=30), window=NUMBERS, keep_tail=st.sampled_from([True, False, 1]))
def test_make_windows(users, window, keep_tail):
    users = sorted(users)
    out, err = _named(lambda: make_windows(users, window, keep_tail=keep_tail), ("window", "keep_tail", "users"))
    if err is None:
        real = out.index[out.index >= 0]
        assert len(np.unique(real)) == len(real) and len(real) + out.n_dropped == len(users)


_CITY = make_city(0, n_poi=30, n_agents=6, weeks=1)
_X = np.random.default_rng(0).normal(size=(30, 4)).astype(np.float32)


@settings(SETTINGS, max_examples=8)
@given(key=st.sampled_from(["d", "heads", "layers", "window", "epochs", "tau", "lambda_kl", "min_visits", "bins",
                            "dropout", "lr", "batch_size", "sigmas_km", "optimizer", "seed", "absolute_time_days"]),
       value=st.one_of(NUMBERS, st.sampled_from([[], [0.5, -1], "adamw", (1.0,)])))
@example(key="min_visits", value=20)  # above every POI's count: no anchor, the priors were zero and the KL NaN
def test_trainer_params_after_set_params(key, value):
    pois, visits, _ = _CITY
    tr = MEPOITrainer(d=8, layers=1, heads=2, ffn=8, window=4, epochs=1, batch_size=8, min_visits=3,
                      optimizer="adamw", absolute_time_days=7.0)
    tr.set_params(**{key: value})
    out, err = _named(lambda: tr.fit(visits, pois), (key, "heads", "d"))
    if err is None:
        assert out.embeddings_.shape[0] == len(pois) and np.isfinite(out.embeddings_).all()


@SETTINGS
@given(task=st.sampled_from(["opening_hours", "closure", "busyness", "price", "function", "nope"]),
       modality=st.sampled_from(["text", "poi", "both", "img"]), corrupt=st.sampled_from([None, "nan", "rows",
                                                                                             "labels", "list"]),
       hidden=NUMBERS)
def test_probe(task, modality, corrupt, hidden):
    _, _, labels = _CITY
    y = labels.get(task, labels["closure"])
    X = {"text": _X, "poi": _X[:, :3].copy()}
    if corrupt == "nan":
        X["poi"][0, 0] = np.nan
    if corrupt == "rows":
        X["text"] = _X[:20]
    if corrupt == "labels":
        y = np.asarray(y, float) + 7.5
    if corrupt == "list":
        X = {k: v.tolist() for k, v in X.items()}
    if modality != "both" and isinstance(X, dict):
        X = X.get(modality, X["poi"])
    out, err = _named(lambda: EmbedProbe(modality, task, hidden=hidden, max_epochs=2, patience=1).fit(X, y),
                      ("task", "modality", "hidden", "X", "y", "X['poi']", "X['text']"))
    if err is None:
        pred = out.predict_proba(X)
        assert len(pred) == 30 and np.isfinite(pred).all()


@SETTINGS
@given(drop=st.sampled_from(["user_id", "arrival", None]), nan_time=st.booleans(), ptype=st.sampled_from(["df", "list"]))
def test_trainer_tables(drop, nan_time, ptype):
    pois, visits, _ = _CITY
    v = visits.copy()
    if drop:
        v = v.drop(columns=[drop])
    if nan_time and "arrival" in v:
        v.loc[3, "arrival"] = np.nan
    p = pois if ptype == "df" else pois.to_dict("records")
    tr = MEPOITrainer(d=8, layers=1, heads=2, ffn=8, window=4, epochs=1, batch_size=8, min_visits=3,
                      optimizer="adamw", absolute_time_days=7.0)
    out, err = _named(lambda: tr.fit(v, p), ("visits", "pois", "visits.arrival"))
    if err is None:
        assert isinstance(p, pd.DataFrame) and out.embeddings_.shape == (len(pois), 8)
