"""Engine-agnostic waiting queues: FCFS, score-ordered SJF, and the TIE queue (spec §2.6).

Every queue implements the small `WaitingQueue` protocol the simulator and the vLLM adapter use:
`add(request)`, `pop()`, `peek()`, `remove(request_or_id)`, `__len__`, `__iter__` (current priority order) and
`priority(request)` (a sortable key, smaller = served first; the engine preempts the running request with the
largest key). Only the waiting order changes; admission and preemption stay the engine's.

`TIEQueue` follows the official `request_queue.py`: a min-heap on the effective score with lazy deletion of
versioned entries (stale entries are skipped when they reach the top), ties broken by arrival time. A request's
TIE score is computed once, when it enters (β from the queue length at that moment, Eq. 12); the starvation
decay TIE·γ^(t_wait/τ) is applied when entries are (re)keyed, and the whole heap is re-keyed at most every
`rebuild_every_s` seconds (`refresh()` forces it). With `async_predict=True` a request first enters with score
`max_tokens` (back of the queue, as in the official code) and gets its prediction, in a batch with the other
pending requests, once `predict_latency_s` has passed on the queue's clock — a deterministic stand-in for the
official background prediction thread (max batch 128).
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from icml26.common.validation import check_bool, check_float, check_int
from icml26.tie.score import adaptive_beta, check_decay, tie_terms

__all__ = ["Request", "WaitingQueue", "FCFSQueue", "ScoreQueue", "TIEQueue"]


@dataclass
class Request:
    """One inference request.

    Attributes:
        id: unique id (int or str).
        prompt_tokens: prompt length in tokens (>= 1).
        arrival: arrival time in seconds (on the engine's clock).
        max_tokens: generation cap L (>= 1).
        features: anything a scorer needs, e.g. {"mu": .., "sigma": ..} or {"score": ..}.
        prompt: the prompt text (used by a predictor when no precomputed features are given).
    """

    id: Any
    prompt_tokens: int
    arrival: float = 0.0
    max_tokens: int = 2048
    features: dict[str, Any] = field(default_factory=dict)
    prompt: str | None = None

    def __post_init__(self) -> None:
        try:
            hash(self.id)
        except TypeError:
            raise TypeError(f"id must be hashable (an int or a str), got {type(self.id).__name__}") from None
        self.prompt_tokens = check_int(self.prompt_tokens, "prompt_tokens", min=1)
        self.max_tokens = check_int(self.max_tokens, "max_tokens", min=1)
        self.arrival = check_float(self.arrival, "arrival", min=0.0)
        if not isinstance(self.features, dict):
            raise TypeError(f"features must be a dict, got {type(self.features).__name__}")
        if self.prompt is not None and not isinstance(self.prompt, str):
            raise TypeError(f"prompt must be a str or None, got {type(self.prompt).__name__}")


@runtime_checkable
class WaitingQueue(Protocol):
    def add(self, request: Request) -> None: ...
    def pop(self) -> Request: ...
    def peek(self) -> Request: ...
    def remove(self, request: Request | Any) -> None: ...
    def priority(self, request: Request) -> tuple: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Request]: ...


class _HeapQueue:
    """Min-heap of (key, arrival, seq, id) with lazy deletion: an entry is live iff its seq is the id's
    current version."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, float, int, Any]] = []
        self._live: dict[Any, Request] = {}
        self._version: dict[Any, int] = {}
        self._seq = itertools.count()

    def reset(self) -> None:
        """Forget every request and every per-request state (scores, predictions): the queue is as new.

        `ServingSimulator.run` calls it first, so one queue can serve several runs; a queue that kept the scores
        of a previous run would order a new workload whose ids repeat by the old requests' scores.
        """
        self._heap.clear()
        self._live.clear()
        self._version.clear()
        self._seq = itertools.count()

    def _push(self, request: Request, key: float) -> None:
        seq = next(self._seq)
        self._version[request.id] = seq
        self._live[request.id] = request
        heapq.heappush(self._heap, (float(key), float(request.arrival), seq, request.id))

    def _clean_top(self) -> None:
        h = self._heap
        while h and (h[0][3] not in self._live or self._version.get(h[0][3]) != h[0][2]):
            heapq.heappop(h)

    def _before_read(self) -> None:  # hook: TIEQueue re-keys here
        pass

    def peek(self) -> Request:
        """The request `pop` would return (IndexError when empty)."""
        self._before_read()
        self._clean_top()
        if not self._heap:
            raise IndexError("peek from an empty queue")
        return self._live[self._heap[0][3]]

    def pop(self) -> Request:
        """Remove and return the head request (IndexError when empty)."""
        self._before_read()
        self._clean_top()
        if not self._heap:
            raise IndexError("pop from an empty queue")
        *_, rid = heapq.heappop(self._heap)
        del self._version[rid]
        return self._live.pop(rid)

    def remove(self, request: Request | Any) -> None:
        """Drop a waiting request (by object or id) in O(1); its heap entry is skipped later (KeyError if absent)."""
        rid = request.id if isinstance(request, Request) else request
        if rid not in self._live:
            raise KeyError(f"request {rid!r} is not in the queue")
        del self._live[rid]
        del self._version[rid]
        if len(self._heap) > 64 and len(self._heap) > 4 * len(self._live):  # compact stale entries
            self._heap = [e for e in self._heap if self._version.get(e[3]) == e[2]]
            heapq.heapify(self._heap)

    def __contains__(self, request: Request | Any) -> bool:
        return (request.id if isinstance(request, Request) else request) in self._live

    def __len__(self) -> int:
        return len(self._live)

    def __iter__(self) -> Iterator[Request]:
        """Live requests in pop order (a snapshot)."""
        self._before_read()
        live = sorted(e for e in self._heap if self._version.get(e[3]) == e[2])
        return iter([self._live[e[3]] for e in live])


class FCFSQueue(_HeapQueue):
    """First come, first served (vLLM's default): ordered by arrival time; a preempted request that re-enters
    keeps its arrival and so goes back near the front, like vLLM's `prepend_request`."""

    def add(self, request: Request) -> None:
        _check_request(request)
        if request.id in self._live:
            raise ValueError(f"request {request.id!r} is already in the queue")
        self._push(request, request.arrival)

    def priority(self, request: Request) -> tuple:
        return (float(request.arrival), str(request.id))


class ScoreQueue(_HeapQueue):
    """Shortest-predicted-job-first on a static score: `score_fn(request) -> float` (smaller first), evaluated
    once per request (a preempted request keeps its score). Ties by arrival time.

    Baselines: SSJF (predicted length), LTR (rank score), SJF-median (e^μ), Oracle (true length)."""

    def __init__(self, score_fn: Callable[[Request], float]) -> None:
        if not callable(score_fn):
            raise TypeError(f"score_fn must be callable, got {type(score_fn).__name__}")
        super().__init__()
        self.score_fn = score_fn
        self._score: dict[Any, float] = {}

    def reset(self) -> None:
        super().reset()
        self._score.clear()

    def score(self, request: Request) -> float:
        if request.id not in self._score:
            s = float(self.score_fn(request))
            if not np.isfinite(s):
                raise ValueError(f"score_fn returned a non-finite score {s} for request {request.id!r}")
            self._score[request.id] = s
        return self._score[request.id]

    def add(self, request: Request) -> None:
        _check_request(request)
        if request.id in self._live:
            raise ValueError(f"request {request.id!r} is already in the queue")
        self._push(request, self.score(request))

    def priority(self, request: Request) -> tuple:
        return (self.score(request), float(request.arrival))


class TIEQueue(_HeapQueue):
    """The TIE waiting queue: min-heap on TIE·γ^(t_wait/τ) (paper Eq. 11-12, §5).

    Args:
        predictor: object with `predict_params(list[str]) -> (mu, sigma)` (e.g. `LogTLengthPredictor`); used for
            requests without precomputed features. A request may instead carry features {"mu", "sigma"} or
            the two score terms {"tie_mean", "tie_cvar"} (then no predictor is needed).
        alpha: CVaR level (0.9).
        beta: "adaptive" (Eq. 12 with max_num_seqs) or a fixed float >= 0 (0 = SJF on E[min(X, L)]).
        max_num_seqs: B, the engine's max running batch size.
        starvation: (gamma, tau_s) of the decay, or None to disable it.
        rebuild_every_s: re-key period of the heap (seconds on `clock`).
        async_predict: new requests wait at score max_tokens until predicted (after `predict_latency_s`).
        predict_latency_s: virtual prediction delay for async mode.
        clock: `() -> seconds`; the simulator passes its virtual clock, tests a fake one.
        nu, max_tokens: log-t degrees of freedom and the censoring point L.
    """

    def __init__(self, predictor: Any = None, alpha: float = 0.9, beta: float | str = "adaptive",
                 max_num_seqs: int = 32, starvation: tuple[float, float] | None = (0.9, 30.0),
                 rebuild_every_s: float = 5.0, async_predict: bool = False, predict_latency_s: float = 0.0,
                 clock: Callable[[], float] = time.monotonic, nu: float = 3.5, max_tokens: int = 2048,
                 max_predict_batch: int = 128) -> None:
        super().__init__()
        if isinstance(beta, str):
            if beta != "adaptive":
                raise ValueError(f"beta must be 'adaptive' or a float >= 0, got {beta!r}")
        else:
            beta = check_float(beta, "beta", min=0.0)
        alpha = check_float(alpha, "alpha", min=0.0, max=1.0, min_open=True, max_open=True)
        max_num_seqs = check_int(max_num_seqs, "max_num_seqs", min=1)
        if starvation is not None:
            if not isinstance(starvation, (tuple, list)) or len(starvation) != 2:
                raise TypeError(f"starvation must be a (gamma, tau_s) pair or None, got {starvation!r}")
            starvation = check_decay(*starvation)
        rebuild_every_s = check_float(rebuild_every_s, "rebuild_every_s", min=0.0, min_open=True)
        async_predict = check_bool(async_predict, "async_predict")
        predict_latency_s = check_float(predict_latency_s, "predict_latency_s", min=0.0)
        if not callable(clock):
            raise TypeError("clock must be a callable returning seconds")
        nu = check_float(nu, "nu", min=0.0, min_open=True)
        max_tokens = check_int(max_tokens, "max_tokens", min=1)
        max_predict_batch = check_int(max_predict_batch, "max_predict_batch", min=1)
        if predictor is not None and not callable(getattr(predictor, "predict_params", None)):
            raise TypeError(f"predictor must have predict_params(list[str]) -> (mu, sigma), got "
                            f"{type(predictor).__name__}")
        self.predictor, self.alpha, self.beta = predictor, alpha, beta
        self.max_num_seqs, self.starvation = max_num_seqs, starvation
        self.rebuild_every_s, self.async_predict = rebuild_every_s, async_predict
        self.predict_latency_s, self.clock = predict_latency_s, clock
        self.nu, self.max_tokens, self.max_predict_batch = nu, max_tokens, max_predict_batch
        self._score: dict[Any, float] = {}
        self._beta_used: dict[Any, float] = {}
        self._pending: dict[Any, float] = {}  # id -> time it entered (async mode)
        self._last_rebuild: float | None = None

    def reset(self) -> None:
        """Forget every request, score, pending prediction and the rebuild time (see `_HeapQueue.reset`)."""
        super().reset()
        self._score.clear()
        self._beta_used.clear()
        self._pending.clear()
        self._last_rebuild = None

    # scoring -----------------------------------------------------------------------------------------------
    def current_beta(self) -> float:
        """β for a request scored now (Eq. 12 with the current queue length, or the fixed value)."""
        if self.beta == "adaptive":
            return adaptive_beta(len(self), self.max_num_seqs)
        return float(self.beta)

    def _terms(self, requests: list[Request]) -> list[tuple[float, float]]:
        out: list[tuple[float, float] | None] = [None] * len(requests)
        need_params, need_pred = [], []
        for i, r in enumerate(requests):
            f = r.features
            if "tie_mean" in f and "tie_cvar" in f:
                out[i] = (check_float(f["tie_mean"], f"request {r.id!r} features['tie_mean']", min=0.0),
                          check_float(f["tie_cvar"], f"request {r.id!r} features['tie_cvar']", min=0.0))
            elif "mu" in f and "sigma" in f:
                need_params.append(i)
            else:
                need_pred.append(i)
        mu = [check_float(requests[i].features["mu"], f"request {requests[i].id!r} features['mu']")
              for i in need_params]
        sg = [check_float(requests[i].features["sigma"], f"request {requests[i].id!r} features['sigma']",
                          min=0.0, min_open=True) for i in need_params]
        if need_pred:
            if self.predictor is None:
                raise ValueError(f"request {requests[need_pred[0]].id!r} has no mu/sigma features and the "
                                 "TIEQueue has no predictor")
            prompts = [requests[i].prompt for i in need_pred]
            if any(p is None for p in prompts):
                raise ValueError("requests scored by the predictor need their prompt text (Request.prompt)")
            pm, ps = self.predictor.predict_params(prompts)
            pm, ps = np.asarray(pm, float), np.asarray(ps, float)
            if pm.shape != (len(prompts),) or ps.shape != (len(prompts),):
                raise ValueError(f"predictor.predict_params returned shapes {pm.shape}, {ps.shape} for "
                                 f"{len(prompts)} prompts")
            mu += list(pm)
            sg += list(ps)
        idx = need_params + need_pred
        if idx:
            family = getattr(self.predictor, "family", "logt") if need_pred else "logt"
            m, c = tie_terms(np.asarray(mu, float), np.asarray(sg, float), alpha=self.alpha, nu=self.nu,
                             max_tokens=self.max_tokens, family=family)
            for j, i in enumerate(idx):
                out[i] = (float(m[j]), float(c[j]))
        return out  # type: ignore[return-value]

    def _effective(self, rid: Any, now: float) -> float:
        s = self._score[rid]
        if self.starvation is None:
            return s
        wait = max(0.0, now - float(self._live[rid].arrival))
        g, tau = self.starvation
        return s * g ** (wait / tau)  # starvation_decay (validated parameters, scalar fast path)

    def score(self, request: Request) -> float:
        """The request's TIE score (without decay); KeyError if it was never added."""
        return self._score[request.id]

    def add(self, request: Request) -> None:
        """Enqueue; a request seen before (e.g. preempted) keeps its score, a new one is scored now."""
        _check_request(request)
        if request.id in self._live:
            raise ValueError(f"request {request.id!r} is already in the queue")
        now = self.clock()
        if request.id not in self._score:
            if self.async_predict and not self._has_features(request):
                self._score[request.id] = float(self.max_tokens)
                self._pending[request.id] = now
            else:
                (m, c), = self._terms([request])
                b = self.current_beta()
                self._beta_used[request.id] = b
                self._score[request.id] = m + b * c
        self._live[request.id] = request
        self._push(request, self._effective(request.id, now))

    @staticmethod
    def _has_features(r: Request) -> bool:
        return ("tie_mean" in r.features and "tie_cvar" in r.features) or ("mu" in r.features and
                                                                          "sigma" in r.features)

    def flush_predictions(self, force: bool = False) -> int:
        """Score pending (async) requests whose prediction is due; returns how many were scored."""
        if not self._pending:
            return 0
        now = self.clock()
        due = [rid for rid, t in self._pending.items()
               if rid in self._live and (force or now - t >= self.predict_latency_s)]
        if not force:
            due = due[: self.max_predict_batch]
        if not due:
            return 0
        terms = self._terms([self._live[rid] for rid in due])
        b = self.current_beta()
        for rid, (m, c) in zip(due, terms):
            self._pending.pop(rid, None)
            self._beta_used[rid] = b
            self._score[rid] = m + b * c
            self._push(self._live[rid], self._effective(rid, now))
        return len(due)

    # heap maintenance --------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-key every waiting request with its current effective (decayed) score and re-heapify."""
        now = self.clock()
        ids = list(self._live)
        arr = np.fromiter((self._live[rid].arrival for rid in ids), float, len(ids))
        key = np.fromiter((self._score[rid] for rid in ids), float, len(ids))
        if self.starvation is not None:  # starvation_decay over the whole queue at once
            g, tau = self.starvation
            key = key * np.power(g, np.maximum(0.0, now - arr) / tau)
        self._heap = [(k, a, self._version[rid], rid) for k, a, rid in zip(key.tolist(), arr.tolist(), ids)]
        heapq.heapify(self._heap)
        self._last_rebuild = now

    def _before_read(self) -> None:
        if self._pending:
            self.flush_predictions()
        if self.starvation is None:
            return
        now = self.clock()
        if self._last_rebuild is None:
            self._last_rebuild = now
        elif now - self._last_rebuild >= self.rebuild_every_s:
            self.refresh()

    def pop(self) -> Request:
        r = super().pop()
        self._pending.pop(r.id, None)
        return r

    def remove(self, request: Request | Any) -> None:
        rid = request.id if isinstance(request, Request) else request
        super().remove(rid)
        self._pending.pop(rid, None)

    def priority(self, request: Request) -> tuple:
        """Static TIE score (no decay) then arrival: the engine preempts the largest."""
        return (self._score.get(request.id, float(self.max_tokens)), float(request.arrival))


def _check_request(request: Any) -> None:
    if not isinstance(request, Request):
        raise TypeError(f"request must be a Request, got {type(request).__name__}")
