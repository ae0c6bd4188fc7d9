"""Thin, optional adapter from TIE to vLLM (V1 engine). Importing this module never imports vLLM.

Two ways to use TIE in a real deployment:

(a) Zero-patch priority path. Start vLLM with `--scheduling-policy priority` and send each request with
    `priority = int(round(TIE score))` computed in your front-end (`tie_priorities`, or `openai_extra_body` for
    the OpenAI-compatible server; offline: `LLM.generate(prompts, params, priority=tie_priorities(...))`).
    Differences from the paper: the score is static (no starvation decay: β and γ^(t/τ) are frozen at submission),
    and vLLM's priority policy also *preempts* a running request when a higher-priority one waits and memory runs
    out, which TIE's "ua" policy does not (it changes only the waiting order).

(b) Faithful request-queue path. `VLLMTIERequestQueue` implements vLLM V1's `RequestQueue` interface
    (add_request, pop_request, peek_request, prepend_request(s), remove_request(s), __bool__, __len__, __iter__,
    __reversed__) by delegating to `icml26.tie.TIEQueue` (lazy-deletion heap, adaptive β, starvation decay,
    clock = time.time like vLLM's arrival_time). `TIEScheduler` (resolved lazily, needs vLLM) is a
    `vllm.v1.core.sched.scheduler.Scheduler` subclass that swaps its waiting queue for it; pass
    `scheduler_cls="icml26.tie.vllm_adapter.TIEScheduler"` to the engine and set `ICML26_TIE_PREDICTOR` (a file
    saved by `LogTLengthPredictor.save`) and `ICML26_TIE_ENCODER` ("minilm", "hashing" is not saved-state safe,
    or an HF encoder path). Admission, KV blocks and preemption stay vLLM's.
    Differences from the official fork: prediction is synchronous at add time (the fork uses a background thread
    with batches of up to 128 and enters requests at score 2048 until predicted; set async_predict=True for that
    behaviour on the next queue read), and a preempted request keeps its score (the fork re-predicts it).

Version: written against the V1 `RequestQueue` interface of vLLM (the interface the official TIE fork patches);
vLLM internals move fast, so pin the version you validate (docs/tie.md). Not exercised against a real vLLM here
(no vLLM in the CPU environment); the unit tests drive it with vLLM-shaped request objects.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from icml26.tie.sched import Request, TIEQueue
from icml26.tie.score import adaptive_beta

__all__ = ["tie_priorities", "openai_extra_body", "VLLMTIERequestQueue", "TIEScheduler"]


def tie_priorities(predictor: Any, prompts: Sequence[str], beta: float | str = 0.1, queue_len: int = 0,
                   max_num_seqs: int = 32, alpha: float = 0.9) -> list[int]:
    """Integer vLLM priorities (smaller = served first) = round(TIE score) for `prompts` (path (a))."""
    if isinstance(beta, str):
        beta = adaptive_beta(queue_len, max_num_seqs)
    scores = predictor.predict_score(list(prompts), beta=beta, alpha=alpha)
    return [int(round(float(s))) for s in np.asarray(scores)]


def openai_extra_body(predictor: Any, prompt: str, **kw) -> dict[str, int]:
    """`extra_body` for the OpenAI client against `vllm serve --scheduling-policy priority`."""
    return {"priority": tie_priorities(predictor, [prompt], **kw)[0]}


class VLLMTIERequestQueue:
    """vLLM V1 `RequestQueue` backed by `TIEQueue` (path (b)).

    Args:
        predictor: `predict_params(list[str]) -> (mu, sigma)` (e.g. a fitted `LogTLengthPredictor`).
        tokenizer: decodes `request.prompt_token_ids` to text for the predictor (vLLM's engine core has no text).
        **queue_kwargs: forwarded to `TIEQueue` (alpha, beta, max_num_seqs, starvation, rebuild_every_s, ...).
    vLLM request objects need `request_id`, `prompt_token_ids`, `arrival_time` and `sampling_params.max_tokens`.
    """

    def __init__(self, predictor: Any, tokenizer: Any = None, **queue_kwargs: Any) -> None:
        queue_kwargs.setdefault("clock", time.time)  # vLLM arrival_time is wall-clock time.time()
        self.tokenizer = tokenizer
        self._q = TIEQueue(predictor, **queue_kwargs)
        self._vllm: dict[Any, Any] = {}

    def _wrap(self, request: Any) -> Request:
        ids = list(getattr(request, "prompt_token_ids", None) or [])
        text = getattr(request, "prompt", None)
        if text is None and self.tokenizer is not None and ids:
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
        sp = getattr(request, "sampling_params", None)
        max_tokens = getattr(sp, "max_tokens", None) or self._q.max_tokens
        return Request(request.request_id, max(1, len(ids)), float(request.arrival_time), int(max_tokens),
                       prompt=text if text is not None else "")

    # RequestQueue interface ------------------------------------------------------------------------------
    def add_request(self, request: Any) -> None:
        self._vllm[request.request_id] = request
        self._q.add(self._wrap(request))

    def pop_request(self) -> Any:
        return self._vllm.pop(self._q.pop().id)

    def peek_request(self) -> Any:
        return self._vllm[self._q.peek().id]

    def prepend_request(self, request: Any) -> None:  # a heap has no front: ordered by score like any add
        self.add_request(request)

    def prepend_requests(self, requests: Iterable[Any]) -> None:
        for r in list(requests):
            self.add_request(r)

    def remove_request(self, request: Any) -> None:
        if request.request_id in self._vllm:
            self._q.remove(request.request_id)
            del self._vllm[request.request_id]

    def remove_requests(self, requests: Iterable[Any]) -> None:
        for r in list(requests):
            self.remove_request(r)

    def __bool__(self) -> bool:
        return len(self._q) > 0

    def __len__(self) -> int:
        return len(self._q)

    def __iter__(self) -> Iterator[Any]:
        return iter([self._vllm[r.id] for r in self._q])

    def __reversed__(self) -> Iterator[Any]:
        return reversed([self._vllm[r.id] for r in self._q])


def _load_predictor_from_env():
    from icml26.tie.encoders import HFEncoder, MiniLMEncoder
    from icml26.tie.predictors import LogTLengthPredictor

    path = os.environ.get("ICML26_TIE_PREDICTOR")
    if not path:
        raise RuntimeError("set ICML26_TIE_PREDICTOR to a file saved by LogTLengthPredictor.save")
    enc_name = os.environ.get("ICML26_TIE_ENCODER", "minilm")
    encoder = MiniLMEncoder() if enc_name == "minilm" else HFEncoder(enc_name)
    return LogTLengthPredictor.load(path, encoder)


def _build_scheduler_cls():
    try:
        from vllm.v1.core.sched.scheduler import Scheduler
    except ImportError as e:  # pragma: no cover - exercised only with vLLM installed
        raise ImportError("TIEScheduler needs vLLM (V1 engine): pip install vllm") from e

    class _TIEScheduler(Scheduler):  # pragma: no cover - needs vLLM
        """vLLM V1 scheduler whose waiting queue is ordered by TIE (everything else unchanged)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            tok = None
            try:
                from transformers import AutoTokenizer

                tok = AutoTokenizer.from_pretrained(self.vllm_config.model_config.tokenizer)
            except Exception:  # noqa: BLE001 - fall back to prompt text when available
                pass
            q = VLLMTIERequestQueue(_load_predictor_from_env(), tok,
                                    max_num_seqs=self.scheduler_config.max_num_seqs,
                                    max_tokens=int(os.environ.get("ICML26_TIE_MAX_TOKENS", "2048")))
            for r in list(self.waiting):
                q.add_request(r)
            self.waiting = q

    _TIEScheduler.__name__ = _TIEScheduler.__qualname__ = "TIEScheduler"
    return _TIEScheduler


def __getattr__(name: str):
    if name == "TIEScheduler":
        return _build_scheduler_cls()
    raise AttributeError(name)
