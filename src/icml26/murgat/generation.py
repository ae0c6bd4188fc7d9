"""Generation side (spec §2.4, §7): prompt builders for the paper's settings, an MLLM responder around any chat
generator, and chat backends (an OpenAI-compatible HTTP client for vLLM/Ollama/hosted APIs, a transformers model).

Styles of `build_prompt(item, style)` (our own wording of the official prompts' rules):
- "base": reason step by step, then answer; no citations.
- "cited": every sentence that states something observable ends with `(modality, M:SS)` or
  `(modality, M:SS-M:SS)` citations; several citations share one parenthetical separated by ";"; no timestamps in
  the prose.
- "posthoc": a second pass over a draft (`draft=`) that only repairs citation format, placement and timestamps and
  keeps the reasoning and the answer.
- "program": the model first lists numbered evidence lines `[k] modality, M:SS-M:SS: what happens` (what a
  find/describe tool plan would return), then reasons citing `[k]`; `rewrite_index_markers` turns the markers
  into `(modality, time)` citations. This is a one-call simplification of the official multi-call program
  execution (no sampled self-verification); stated in docs/murgat.md.

A generator is `generate_fn(messages) -> str` with OpenAI chat messages. With `media.path` the responder sends the
video as a `video_url` part (vLLM's format for Qwen2.5/3-Omni, Qwen-VL); without it (synthetic items) it sends a
caption transcript of every modality, so a text-only LM can play the responder.
"""

from __future__ import annotations

import base64
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from icml26.common.hf import load_smollm2  # noqa: F401 - re-exported: the offline SmolLM2 judge/responder
from icml26.common.validation import check_choice, check_float, check_int
from icml26.murgat.citations import format_timestamp
from icml26.murgat.schema import BenchmarkItem, Response

__all__ = ["STYLES", "build_prompt", "rewrite_index_markers", "MLLMResponder", "OpenAIChat", "TransformersChat",
           "load_smollm2", "parallel_map", "media_transcript"]

STYLES = ("base", "cited", "posthoc", "program")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

_CITE_RULES = (
    "Citation rules: every sentence that states something you can see or hear in the video must end with a "
    "citation in parentheses naming the modality (visual or audio) and the time, e.g. (visual, 0:12) for a moment "
    "or (audio, 1:05-1:09) for a span. Put several citations in one parenthetical separated by semicolons, e.g. "
    "(visual, 0:12; audio, 0:12-0:14). Never write timestamps anywhere else in your sentences. Sentences that only "
    "reason about the options need no citation.")


def _question_block(item: BenchmarkItem) -> str:
    opts = "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(item.options))
    return f"Question: {item.question}\nOptions:\n{opts}"


def media_transcript(item: BenchmarkItem) -> str:
    """A time-stamped caption transcript of every modality of `item.media` (one line per caption run)."""
    lines = []
    for m, rows in sorted(item.media.observations.items()):
        runs: list[list[Any]] = []
        for a, b, cap in sorted(rows):
            if runs and runs[-1][2] == cap and a <= runs[-1][1]:
                runs[-1][1] = b
            else:
                runs.append([a, b, cap])
        for a, b, cap in runs:
            lines.append(f"[{m} {format_timestamp(a)}-{format_timestamp(b)}] {cap}")
    return "\n".join(lines)


def build_prompt(item: BenchmarkItem, style: str = "cited", draft: str | None = None) -> str:
    """The instruction text for one item in one generation setting (see the module docstring)."""
    if not isinstance(item, BenchmarkItem):
        raise TypeError(f"item must be a BenchmarkItem, got {type(item).__name__}")
    check_choice(style, "style", STYLES)
    q = _question_block(item)
    fmt = "Write 'Reasoning:' followed by your step-by-step reasoning, then a last line 'Answer: <letter>'."
    if style == "base":
        return f"Watch the video and answer the multiple-choice question.\n{q}\n{fmt}"
    if style == "cited":
        return f"Watch the video and answer the multiple-choice question.\n{q}\n{_CITE_RULES}\n{fmt}"
    if style == "posthoc":
        if not isinstance(draft, str) or not draft.strip():
            raise ValueError("draft must be the first-pass response (a non-empty str) for style='posthoc'")
        return (f"Here is a response to a question about the video. Fix only its citations: add missing ones, "
                f"correct their format, placement and timestamps so they match the video. Do not change the "
                f"reasoning or the answer.\n{_CITE_RULES}\n{q}\nResponse:\n{draft}\n{fmt}")
    return (f"Answer the multiple-choice question about the video in two parts. First list the evidence you "
            f"need as numbered lines '[k] <visual or audio>, <M:SS-M:SS>: <what happens>', one per event you "
            f"locate. Then write 'Reasoning:' citing evidence only by its number, like [1] or [2][3], and a last "
            f"line 'Answer: <letter>'.\n{q}")


_EVIDENCE_LINE = re.compile(r"^\s*\[(\d+)\]\s*([A-Za-z]+)\s*,\s*(\d+:\d+(?::\d+)?(?:\s*-\s*\d+:\d+(?::\d+)?)?)\s*:",
                            re.M)


def rewrite_index_markers(text: str) -> str:
    """Program style: replace `[k]` markers after "Reasoning:" by the `(modality, time)` of evidence line k (unknown
    indices are dropped, consecutive markers merge into one parenthetical)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    evidence = {m.group(1): f"{m.group(2).lower()}, {m.group(3).replace(' ', '')}"
                for m in _EVIDENCE_LINE.finditer(text)}
    _, sep, body = text.partition("Reasoning:")
    if not sep:
        body = text

    def sub(m: re.Match) -> str:
        keys = re.findall(r"\[(\d+)\]", m.group(0))
        cites = [evidence[k] for k in keys if k in evidence]
        return f" ({'; '.join(cites)})" if cites else ""

    body = re.sub(r"\s*(?:\[\d+\])+", sub, body)
    return "Reasoning:" + body if sep else body


class MLLMResponder:
    """A real (multimodal) model as a responder: `respond(item, rng=None) -> Response`.

    Args:
        generate_fn: messages -> str (see `OpenAIChat`, `TransformersChat`).
        style: one of STYLES; "posthoc" drafts with `draft_style` first, then repairs the citations.
        name: model name recorded in the Response (default "mllm-<style>").
        video_part: callable(path) -> content part; default a `video_url` part with a file:// URL.
        draft_style: first-pass style for "posthoc" ("base" or "cited").
    """

    def __init__(self, generate_fn: Callable[[list[dict[str, Any]]], str], style: str = "cited",
                 name: str | None = None, video_part: Callable[[str], dict[str, Any]] | None = None,
                 draft_style: str = "cited"):
        if not callable(generate_fn):
            raise TypeError("generate_fn must be callable (messages -> str)")
        self.generate_fn = generate_fn
        self.style = check_choice(style, "style", STYLES)
        self.draft_style = check_choice(draft_style, "draft_style", ("base", "cited"))
        self.name = name or f"mllm-{style}"
        self.video_part = video_part or (lambda p: {"type": "video_url",
                                                    "video_url": {"url": Path(p).resolve().as_uri()}})

    def _messages(self, item: BenchmarkItem, prompt: str) -> list[dict[str, Any]]:
        if item.media.path:
            return [{"role": "user", "content": [self.video_part(item.media.path), {"type": "text", "text": prompt}]}]
        return [{"role": "user", "content": f"Video transcript (what can be seen and heard):\n"
                                            f"{media_transcript(item)}\n\n{prompt}"}]

    def _ask(self, messages: list[dict[str, Any]]) -> str:
        out = self.generate_fn(messages)
        return out if isinstance(out, str) else ("" if out is None else str(out))

    def respond(self, item: BenchmarkItem, rng: Any = None) -> Response:
        if not isinstance(item, BenchmarkItem):
            raise TypeError(f"item must be a BenchmarkItem, got {type(item).__name__}")
        if self.style == "posthoc":
            draft = self._ask(self._messages(item, build_prompt(item, self.draft_style)))
            text = self._ask(self._messages(item, build_prompt(item, "posthoc", draft=draft)))
        else:
            text = self._ask(self._messages(item, build_prompt(item, self.style)))
            if self.style == "program":
                text = rewrite_index_markers(text)
        return Response(item.id, self.name, text, {"style": self.style})


class OpenAIChat:
    """`messages -> str` over any OpenAI-compatible /chat/completions endpoint (vLLM `vllm serve`, Ollama,
    llama.cpp server, hosted APIs), with retries. Standard library only.

    Args:
        base_url: e.g. "http://localhost:8000/v1". model: the served model name.
        api_key: sent as a Bearer token when given. max_tokens, temperature: decoding.
        extra_body: merged into the request JSON (e.g. {"chat_template_kwargs": {"enable_thinking": False}},
            or a thinking budget).
        timeout_s, retries: per-request limit and attempts on connection errors / 5xx / 429.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, max_tokens: int = 1024,
                 temperature: float = 0.0, extra_body: Mapping[str, Any] | None = None, timeout_s: float = 300.0,
                 retries: int = 3):
        if not isinstance(base_url, str) or not re.match(r"^https?://", base_url):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not isinstance(model, str) or not model:
            raise ValueError("model must be a non-empty str")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.api_key = model, api_key
        self.max_tokens = check_int(max_tokens, "max_tokens", min=1)
        self.temperature = check_float(temperature, "temperature", min=0.0)
        self.extra_body = dict(extra_body or {})
        self.timeout_s = check_float(timeout_s, "timeout_s", min=0.0, min_open=True)
        self.retries = check_int(retries, "retries", min=1)
        self.n_requests = 0

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        if not isinstance(messages, list) or not messages:
            raise TypeError("messages must be a non-empty list of chat messages")
        body = {"model": self.model, "messages": messages, "max_tokens": self.max_tokens,
                "temperature": self.temperature, **self.extra_body}
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last: Exception | None = None
        for attempt in range(self.retries):
            req = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                self.n_requests += 1
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    out = json.loads(resp.read().decode())
                return out["choices"][0]["message"].get("content") or ""
            except urllib.error.HTTPError as e:
                last = e
                if e.code not in (429, 500, 502, 503, 504):
                    raise RuntimeError(f"{self.url} answered HTTP {e.code}: {e.read()[:300]!r}") from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                last = e
            except (KeyError, IndexError, json.JSONDecodeError) as e:
                raise RuntimeError(f"{self.url} returned an unexpected body: {e}") from None
            time.sleep(min(8.0, 0.5 * 2 ** attempt))
        raise RuntimeError(f"{self.url} failed after {self.retries} attempts: {last}")


class TransformersChat:
    """`messages -> str` with a Hugging Face causal LM (text only): chat template when the tokenizer has one,
    greedy decoding of up to `max_new_tokens`. Multimodal content parts are refused with a ValueError (use an
    OpenAI-compatible server for audio-visual models)."""

    def __init__(self, model: Any, tokenizer: Any, max_new_tokens: int = 64):
        if not hasattr(model, "generate") or not callable(tokenizer):
            raise TypeError("model must be a transformers causal LM and tokenizer its tokenizer")
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens = check_int(max_new_tokens, "max_new_tokens", min=1)
        self.n_calls = 0

    @staticmethod
    def _text(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
        out = []
        for i, m in enumerate(messages):
            c = m.get("content") if isinstance(m, Mapping) else None
            if isinstance(c, list):
                if any(not isinstance(p, Mapping) or p.get("type") != "text" for p in c):
                    raise ValueError(f"messages[{i}] has non-text content; TransformersChat is text-only")
                c = "\n".join(p["text"] for p in c)
            if not isinstance(c, str):
                raise TypeError(f"messages[{i}] must have str content")
            out.append({"role": m.get("role", "user"), "content": c})
        return out

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        import torch

        msgs = self._text(messages)
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            prompt = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        else:
            prompt = "\n".join(m["content"] for m in msgs) + "\n"
        enc = tok(prompt, return_tensors="pt")
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        with torch.no_grad():
            out = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False, pad_token_id=pad)
        self.n_calls += 1
        return tok.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True).strip()


def parallel_map(fn: Callable[[Any], Any], items: Sequence[Any], n_workers: int = 8, desc: str | None = None
                 ) -> list[Any]:
    """`[fn(x) for x in items]` with `n_workers` threads (for I/O-bound requests to a serving engine); order kept."""
    from tqdm.auto import tqdm

    n_workers = check_int(n_workers, "n_workers", min=1)
    items = list(items)
    if n_workers == 1 or len(items) <= 1:
        return [fn(x) for x in tqdm(items, desc=desc, disable=desc is None, leave=False)]
    with ThreadPoolExecutor(n_workers) as pool:
        return list(tqdm(pool.map(fn, items), total=len(items), desc=desc, disable=desc is None, leave=False))


def data_url(path: str | Path, mime: str) -> str:
    """A base64 data URL of a file (for servers that cannot read local paths)."""
    return f"data:{mime};base64," + base64.b64encode(Path(path).read_bytes()).decode()
