"""Queues and the continuous-batching simulator (spec §8)."""

import numpy as np
import pytest

from icml26.tie import (EngineConfig, FCFSQueue, Request, ScoreQueue, ServingSimulator, StepTimeModel, TIEQueue,
                        Workload, poisson_arrivals, starvation_decay, tie_terms)


class FakeClock:
    def __init__(self, t=0.0):
        self.t = t

    def __call__(self):
        return self.t


def _req(i, mu, sigma, arrival=0.0):
    return Request(i, 10, arrival, 2048, {"mu": mu, "sigma": sigma})


def test_tiequeue_pops_in_effective_score_order():
    clock = FakeClock(100.0)
    q = TIEQueue(beta=0.1, clock=clock, starvation=(0.9, 30.0))
    rng = np.random.default_rng(0)
    mus, sig, arr = rng.uniform(2, 7, 30), rng.uniform(0.2, 1.5, 30), rng.uniform(0, 100, 30)
    for i in range(30):
        q.add(_req(i, mus[i], sig[i], arr[i]))
    clock.t = 160.0
    q.refresh()
    m, c = tie_terms(mus, sig)
    eff = starvation_decay(m + 0.1 * c, 160.0 - arr)
    assert [q.pop().id for _ in range(30)] == list(np.argsort(eff, kind="stable"))
    assert len(q) == 0


def test_tiequeue_starvation_rebuild_only_every_period():
    clock = FakeClock(0.0)
    q = TIEQueue(beta=0.0, clock=clock, starvation=(0.5, 1.0), rebuild_every_s=5.0)
    q.add(_req("long", 6.5, 0.3, 0.0))  # E ~ 720 tokens
    assert q.peek().id == "long"
    clock.t = 4.0
    q.add(_req("short", 5.0, 0.3, 4.0))  # E ~ 155 tokens
    # true effective scores now: long 720*0.5^4 = 45 < short 155, but keys are only refreshed every 5 s
    assert q.peek().id == "short"
    clock.t = 5.0  # rebuild: long 720*0.5^5 = 22.5 < short 155*0.5 = 77
    assert q.peek().id == "long"
    q2 = TIEQueue(beta=0.0, clock=clock, starvation=None)
    q2.add(_req("long", 6.5, 0.3, 0.0))
    q2.add(_req("short", 5.0, 0.3, 4.0))
    clock.t = 1e6
    assert q2.peek().id == "short"  # without starvation prevention the long request waits forever


def test_tiequeue_lazy_deletion_and_len():
    q = TIEQueue(beta=0.1, clock=FakeClock(), starvation=None)
    for i in range(10):
        q.add(_req(i, 3 + 0.3 * i, 0.5))
    q.remove(0)
    q.remove(_req(5, 0, 1))
    assert len(q) == 8
    with pytest.raises(KeyError):
        q.remove(0)
    ids = [r.id for r in q]
    assert ids == [1, 2, 3, 4, 6, 7, 8, 9]
    assert [q.pop().id for _ in range(8)] == ids
    with pytest.raises(IndexError):
        q.pop()


def test_tiequeue_unpredicted_requests_default_to_max_tokens():
    class SlowPredictor:
        def predict_params(self, prompts):
            return np.full(len(prompts), 3.0), np.full(len(prompts), 0.5)

    clock = FakeClock(0.0)
    q = TIEQueue(SlowPredictor(), async_predict=True, predict_latency_s=1.0, clock=clock, starvation=None)
    q.add(Request("a", 5, 0.0, 2048, prompt="hello"))
    assert q.score(Request("a", 5)) == 2048.0
    q.add(_req("b", 6.0, 0.5))  # has features: scored at once
    assert q.peek().id == "b"
    clock.t = 1.5
    assert q.peek().id == "a"  # prediction delivered: short request jumps ahead
    assert q.score(Request("a", 5)) < 100


def test_tiequeue_adaptive_beta_uses_queue_length():
    q = TIEQueue(beta="adaptive", max_num_seqs=2, clock=FakeClock(), starvation=None)
    for i in range(12):
        q.add(_req(i, 4.0, 0.8))
    m, c = tie_terms(4.0, 0.8)
    assert q.score(_req(0, 0, 1)) == pytest.approx(m + 0.1 * c)
    assert q.score(_req(11, 0, 1)) == pytest.approx(m + 0.5 * c)  # 0.1*11/2 = 0.55 -> capped at 0.5


def test_queue_bad_inputs():
    with pytest.raises(ValueError, match="beta"):
        TIEQueue(beta=-1.0)
    with pytest.raises(ValueError, match="alpha"):
        TIEQueue(alpha=1.5)
    with pytest.raises(ValueError, match="gamma"):
        TIEQueue(starvation=(1.5, 30.0))
    with pytest.raises(ValueError, match="max_tokens"):
        Request(0, 5, 0.0, max_tokens=0)
    with pytest.raises(ValueError, match="prompt_tokens"):
        Request(0, 0)
    q = TIEQueue(clock=FakeClock())
    with pytest.raises(ValueError, match="predictor"):
        q.add(Request(0, 5))


def _workload(n=300, seed=0, rate=None, lens=None):
    rng = np.random.default_rng(seed)
    T = lens if lens is not None else np.clip(np.rint(np.exp(rng.normal(4.0, 1.0, n))), 1, 2048).astype(int)
    P = rng.integers(5, 300, n)
    arr = poisson_arrivals(n, rate, seed + 1) if rate else np.zeros(n)
    return Workload(P, T, arr)


@pytest.mark.parametrize("kv", [60_000, 6_000])
def test_sim_conserves_tokens_and_respects_kv(kv):
    w = _workload(400, rate=12.0)
    cfg = EngineConfig(kv_capacity_tokens=kv)
    m = ServingSimulator(cfg, FCFSQueue()).run(w)
    assert np.all(np.isfinite(m.finish)) and np.all(m.finish >= m.first_token) and np.all(m.first_token > w.arrival)
    # the engine loop's own tallies (per request, and step by step) must equal the workload's lengths: a loop
    # that overshot a finish or dropped tokens in the multi-step fast path would fail here
    np.testing.assert_array_equal(m.emitted, w.true_len)
    assert m.tokens_generated == w.true_len.sum() == m["tokens_generated"]
    assert m.peak_kv_blocks <= cfg.num_blocks
    if kv == 60_000:
        assert m["n_preemptions"] == 0 and m["recomputed_tokens"] == 0
    else:
        assert m["n_preemptions"] > 0 and m["recomputed_tokens"] > 0


@pytest.mark.parametrize("kv", [60_000, 6_000])
def test_fast_path_equals_step_by_step(kv):
    w = _workload(250, seed=3, rate=10.0)
    st = StepTimeModel(c_ctx=1e-7)
    w = w.with_features([{"mu": float(np.log(t)) + 0.3, "sigma": 0.8} for t in w.true_len])
    for make in (FCFSQueue, lambda: ScoreQueue(lambda r: w.true_len[r.id]),
                 lambda: TIEQueue(starvation=(0.9, 3.0), rebuild_every_s=0.5)):
        a = ServingSimulator(EngineConfig(kv_capacity_tokens=kv), make(), st, fast=True).run(w)
        b = ServingSimulator(EngineConfig(kv_capacity_tokens=kv), make(), st, fast=False).run(w)
        np.testing.assert_allclose(a.finish, b.finish, rtol=1e-9)
        assert a.summary["n_preemptions"] == b.summary["n_preemptions"]
        assert a.summary["n_steps"] == b.summary["n_steps"]


def test_single_request_latency_is_analytic():
    st = StepTimeModel(c0=0.01, c_prefill=1e-4, c_decode=2e-4, c_ctx=1e-6)
    P, n = 100, 37
    w = Workload([P], [n], [2.5])
    m = ServingSimulator(EngineConfig(), FCFSQueue(), st).run(w)
    expect = st(P, 0, 0) + sum(st(0, 1, P + g) for g in range(1, n))
    assert m.finish[0] - 2.5 == pytest.approx(expect, rel=1e-12)
    assert m.first_token[0] - 2.5 == pytest.approx(st(P, 0, 0))


def test_batch1_oracle_equals_nonpreemptive_sjf():
    rng = np.random.default_rng(4)
    T = rng.integers(1, 200, 40)
    w = Workload(np.full(40, 10), T, np.zeros(40))
    m = ServingSimulator(EngineConfig(max_num_seqs=1), ScoreQueue(lambda r: T[r.id])).run(w)
    assert list(m.completion_order()) == list(np.lexsort((np.arange(40), T)))


def test_fcfs_order_preserved_with_equal_lengths():
    w = _workload(200, seed=5, rate=30.0, lens=np.full(200, 50))
    m = ServingSimulator(EngineConfig(max_num_seqs=8), FCFSQueue()).run(w)
    assert np.all(np.diff(m.finish[np.argsort(w.arrival, kind="stable")]) >= -1e-12)


def test_sim_deterministic_and_sjf_beats_fcfs():
    w = _workload(400, seed=6, rate=15.0)
    a = ServingSimulator(EngineConfig(), FCFSQueue()).run(w)
    b = ServingSimulator(EngineConfig(), FCFSQueue()).run(w)
    np.testing.assert_array_equal(a.finish, b.finish)
    o = ServingSimulator(EngineConfig(), ScoreQueue(lambda r: w.true_len[r.id])).run(w)
    assert o["per_token_latency"] < a["per_token_latency"]


def test_simulator_drives_tiequeue_virtual_clock():
    w = _workload(200, seed=7, rate=12.0)
    feats = [{"mu": float(np.log(t)), "sigma": 0.5} for t in w.true_len]
    q = TIEQueue(starvation=(0.9, 30.0))
    sim = ServingSimulator(EngineConfig(), q)
    assert q.clock == sim.clock
    m = sim.run(w.with_features(feats))
    assert np.all(np.isfinite(m.finish)) and sim.now == pytest.approx(m.finish.max())


def test_sim_bad_inputs():
    with pytest.raises(ValueError, match="true_len"):
        Workload([5], [-3], [0.0])
    with pytest.raises(ValueError, match="max_tokens"):
        Workload([5], [3], [0.0], max_tokens=0)
    with pytest.raises(ValueError, match="kv_capacity_tokens"):
        ServingSimulator(EngineConfig(kv_capacity_tokens=64), FCFSQueue()).run(Workload([60], [40], [0.0]))
    with pytest.raises(ValueError, match="max_num_seqs"):
        EngineConfig(max_num_seqs=0)
    with pytest.raises(ValueError, match="rate"):
        poisson_arrivals(10, 0.0)
    with pytest.raises(TypeError, match="queue"):
        ServingSimulator(EngineConfig(), object())


def test_step_time_model_fit_recovers_coefficients():
    rng = np.random.default_rng(0)
    pre, dec, ctx = rng.integers(0, 4000, 50), rng.integers(0, 32, 50), rng.integers(0, 60000, 50)
    true = StepTimeModel(0.007, 1e-4, 3e-4, 2e-8)
    secs = [true(a, b, c) for a, b, c in zip(pre, dec, ctx)]
    fit = StepTimeModel.fit(pre, dec, ctx, secs)
    np.testing.assert_allclose([fit.c0, fit.c_prefill, fit.c_decode, fit.c_ctx],
                               [true.c0, true.c_prefill, true.c_decode, true.c_ctx], rtol=1e-6)


def test_vllm_adapter_request_queue_without_vllm():
    from types import SimpleNamespace

    from icml26.tie import vllm_adapter

    class Pred:
        def predict_params(self, prompts):
            return np.array([float(len(p.split())) for p in prompts]), np.full(len(prompts), 0.5)

        def predict_score(self, prompts, beta=0.1, alpha=0.9):
            from icml26.tie import tie_score

            mu, s = self.predict_params(prompts)
            return tie_score(mu, s, alpha=alpha, beta=beta)

    class Tok:
        def decode(self, ids, skip_special_tokens=True):
            return " ".join("w" for _ in ids)

    def vreq(rid, n_tokens, t):
        return SimpleNamespace(request_id=rid, prompt_token_ids=list(range(n_tokens)), arrival_time=t,
                               sampling_params=SimpleNamespace(max_tokens=2048))

    clock = FakeClock(10.0)
    q = vllm_adapter.VLLMTIERequestQueue(Pred(), Tok(), clock=clock, starvation=None)
    reqs = [vreq("a", 6, 1.0), vreq("b", 3, 2.0), vreq("c", 5, 3.0)]
    q.add_request(reqs[0])
    q.prepend_requests(reqs[1:])
    assert len(q) == 3 and bool(q)
    assert [r.request_id for r in q] == ["b", "c", "a"]
    assert [r.request_id for r in reversed(q)] == ["a", "c", "b"]
    q.remove_requests([reqs[2]])
    assert q.peek_request() is reqs[1] and q.pop_request() is reqs[1] and q.pop_request() is reqs[0]
    assert not q
    pr = vllm_adapter.tie_priorities(Pred(), ["a b c", "a"], beta=0.1)
    assert pr[1] < pr[0] and all(isinstance(p, int) for p in pr)
    assert vllm_adapter.openai_extra_body(Pred(), "a")["priority"] == pr[1]
