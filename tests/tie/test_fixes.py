"""Regression tests of the bad-input and reuse fixes (issue 14): each failed before its fix."""

import numpy as np
import pytest

from icml26.tie import (EngineConfig, FCFSQueue, HashingEncoder, ListMLERanker, LogT, LogTLengthPredictor,
                        PointLengthRegressor, Request, ScoreQueue, ServingSimulator, TIEQueue, Workload, capacity_rps,
                        fit_logt, piecewise_poisson_arrivals, poisson_arrivals, tie_score)


def _busy_workload(seed, n=300):
    """A workload at 0.97 of capacity (a queue forms) whose TIE features are near-oracle."""
    rng = np.random.default_rng(seed)
    T = np.clip(np.rint(np.exp(rng.normal(4.5, 1.0, n))), 1, 2048).astype(int)
    arr = poisson_arrivals(n, 0.97 * capacity_rps(T.mean()), seed)
    feats = [{"mu": float(np.log(t) + rng.normal(0, 0.3)), "sigma": 0.6} for t in T]
    return Workload(rng.integers(5, 300, n), T, arr, features=feats)


@pytest.mark.parametrize("make", [lambda: TIEQueue(), lambda: TIEQueue(starvation=None, beta=0.0)])
def test_reused_tiequeue_gives_the_fresh_queue_answer(make):
    a, b = _busy_workload(0), _busy_workload(1)   # ids 0..299 repeat across the two workloads
    q = make()
    ServingSimulator(EngineConfig(), q).run(a)
    again = ServingSimulator(EngineConfig(), q).run(b)
    fresh = ServingSimulator(EngineConfig(), make()).run(b)
    np.testing.assert_array_equal(again.finish, fresh.finish)
    assert again["per_token_latency"] == fresh["per_token_latency"]
    # the same simulator object can run twice as well
    sim = ServingSimulator(EngineConfig(), make())
    sim.run(a)
    np.testing.assert_array_equal(sim.run(b).finish, fresh.finish)


def test_reused_scorequeue_resets_its_score_cache():
    a, b = _busy_workload(2), _busy_workload(3)
    q = ScoreQueue(lambda r: r.features["mu"])
    ServingSimulator(EngineConfig(), q).run(a)
    again = ServingSimulator(EngineConfig(), q).run(b)
    fresh = ServingSimulator(EngineConfig(), ScoreQueue(lambda r: r.features["mu"])).run(b)
    np.testing.assert_array_equal(again.finish, fresh.finish)


def test_queue_without_reset_is_refused_for_a_second_run():
    class Plain:  # a WaitingQueue with no reset(): per-request state could leak between runs
        def __init__(self):
            self.q = FCFSQueue()

        def add(self, r):
            self.q.add(r)

        def pop(self):
            return self.q.pop()

        def peek(self):
            return self.q.peek()

        def priority(self, r):
            return self.q.priority(r)

        def __len__(self):
            return len(self.q)

    w = _busy_workload(4, 50)
    sim = ServingSimulator(EngineConfig(), Plain())
    sim.run(w)
    with pytest.raises(ValueError, match="fresh queue"):
        sim.run(w)
    busy = Plain()
    busy.add(Request(99, 5))
    with pytest.raises(ValueError, match="empty queue"):
        ServingSimulator(EngineConfig(), busy).run(w)


def test_fit_logt_list_is_read_like_the_array():
    with pytest.raises(ValueError, match=r"samples must be 2-D.*shape \(4,\)"):
        fit_logt([30, 45, 60, 80])
    with pytest.raises(ValueError, match=r"samples must be 2-D.*shape \(4,\)"):
        fit_logt(np.array([30, 45, 60, 80]))
    rows = [[30, 45, 60, 80], [10, 12, 9, 30]]
    for got, want in zip(fit_logt(rows), fit_logt(np.array(rows, dtype=float))):
        np.testing.assert_array_equal(got, want)
    mu, _, _ = fit_logt([[30, 45, 60, 80]])
    assert mu.shape == (1,)


def test_predictor_lengths_list_equals_array():
    from icml26.tie.predictors import _as_rows

    for lengths in ([3, 4, 5], [[3, 4], [5, 6], [7, 8]]):
        a = _as_rows(lengths, 3)
        b = _as_rows(np.asarray(lengths), 3)
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
    with pytest.raises(ValueError, match="lengths"):
        _as_rows([3.0, np.nan, 5.0], 3)


def test_workload_sizes_are_not_truncated_and_nan_is_named():
    with pytest.raises(ValueError, match="true_len.*not truncated"):
        Workload([5], [3.7], [0.0])
    with pytest.raises(ValueError, match="prompt_len"):
        Workload([5.5], [3], [0.0])
    with pytest.raises(ValueError, match="true_len"):
        Workload([5], [np.nan], [0.0])
    with pytest.raises(ValueError, match="arrival"):
        Workload([5], [3], [np.nan])
    assert Workload([5.0], [3.0], [0.0]).true_len.dtype == np.int64  # integral floats are fine


def test_errors_name_the_argument():
    with pytest.raises(TypeError, match="beta.*adaptive_beta"):
        tie_score(4.0, 0.5, beta="adaptive")
    with pytest.raises(ValueError, match="mu and sigma.*shapes"):
        tie_score([4.0, 3.0], [0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="mu and sigma"):
        LogT([4.0, 3.0], [0.5, 0.5, 0.5])
    with pytest.raises(TypeError, match="prompt_tokens"):
        Request(0, "abc")
    with pytest.raises(ValueError, match="prompt_tokens"):
        Request(0, 3.5)
    with pytest.raises(ValueError, match="mu"):
        LogT(np.nan, 0.5)
    with pytest.raises(ValueError, match="features\\['sigma'\\]"):
        TIEQueue().add(Request(0, 5, features={"mu": 3.0, "sigma": np.nan}))
    with pytest.raises(TypeError, match="request"):
        FCFSQueue().add("not a request")


def test_predictor_defaults_to_the_papers_20_epochs():
    from icml26.tie.data import make_prompts, sample_lengths

    ps = make_prompts(40, 0)
    enc = HashingEncoder(svd_dim=8)
    p = LogTLengthPredictor(enc).fit(ps.prompts, lengths=sample_lengths(ps, 4, 1))
    assert p.epochs == 20 and len(p.loss_history_) == 20
    assert PointLengthRegressor(enc).epochs == 20 and ListMLERanker(enc).epochs == 20


def test_hyperparameters_are_checked_again_in_fit():
    from icml26.tie.data import make_prompts, sample_lengths

    ps = make_prompts(20, 0)
    p = LogTLengthPredictor(HashingEncoder(svd_dim=8))
    p.epochs = 2.5  # changed after construction (as set_params would)
    with pytest.raises(ValueError, match="epochs"):
        p.fit(ps.prompts, lengths=sample_lengths(ps, 4, 1))


def test_piecewise_poisson_arrivals_counts_and_order():
    arr = piecewise_poisson_arrivals([10.0, 2.0], [100.0, 50.0], rng=0)
    assert arr[0] == 0 and np.all(np.diff(arr) >= 0) and arr[-1] < 150.0
    n1, n2 = np.sum(arr < 100.0) - 1, np.sum(arr >= 100.0)
    assert abs(n1 - 1000) < 4 * np.sqrt(1000) and abs(n2 - 100) < 4 * np.sqrt(100)
    with pytest.raises(ValueError, match="rates and durations"):
        piecewise_poisson_arrivals([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="durations"):
        piecewise_poisson_arrivals([1.0], [0.0])


def test_censored_fit_is_finite_when_a_row_is_all_censored():
    mu, sigma, ks = fit_logt([[1.0], [6.0]], nu=305.0, censor_at=6.0, n_iter=1)  # found by the property test
    assert np.all(np.isfinite(mu)) and np.all(sigma > 0) and np.all(np.isfinite(ks))
    mu2, _, _ = fit_logt([[3.0, 6.0, 6.0], [6.0, 6.0, 6.0]], censor_at=6.0)
    assert np.isfinite(mu2).all() and mu2[1] == pytest.approx(np.log(6.0))  # all censored: the lower bound
