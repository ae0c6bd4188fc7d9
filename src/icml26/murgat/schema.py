"""Benchmark schema (spec §5): media with gold events and per-modality observations, items, responses; JSONL I/O.

    Event(id, modality, start, end, slots, text)        a gold event of the timeline (seconds)
    Media(duration, events, observations, path)          observations[m] = [(start, end, caption), ...]
    BenchmarkItem(id, media, question, options, answer, evidence, qtype)
    Response(item_id, model, text, trace)

`Media.observations` is what an automatic judge may read: captions of each modality's track (written with a
lexicon other than the responders'); `Media.events` are the gold events, read only by the oracle judge and the
simulated human. `Media.path` points to a real video for the paper-scale path (then observations may be empty).
One JSON object per line; `load_*` validates every record and names the line of a bad one.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Event", "Media", "BenchmarkItem", "Response", "save_jsonl", "load_jsonl", "save_benchmark",
           "load_benchmark", "save_responses", "load_responses"]

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _num(x: Any, name: str, *, min: float | None = None) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(x).__name__} {x!r}")
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {x}")
    if min is not None and v < min:
        raise ValueError(f"{name} must be >= {min}, got {v}")
    return v


def _str(x: Any, name: str, *, empty: bool = False) -> str:
    if not isinstance(x, str):
        raise TypeError(f"{name} must be a str, got {type(x).__name__}")
    if not empty and not x.strip():
        raise ValueError(f"{name} must not be empty")
    return x


@dataclass
class Event:
    """A gold event: `modality` track, [start, end] seconds, `slots` (e.g. agent/action/object), `text`."""

    id: str
    modality: str
    start: float
    end: float
    slots: dict[str, Any] = field(default_factory=dict)
    text: str = ""

    def __post_init__(self) -> None:
        _str(self.id, "Event.id")
        self.modality = _str(self.modality, "Event.modality").strip().lower()
        self.start = _num(self.start, "Event.start", min=0.0)
        self.end = _num(self.end, "Event.end")
        if self.end < self.start:
            raise ValueError(f"Event.end must be >= Event.start, got {self.start}..{self.end} (event {self.id})")
        if not isinstance(self.slots, dict):
            raise TypeError(f"Event.slots must be a dict, got {type(self.slots).__name__}")
        _str(self.text, "Event.text", empty=True)

    @property
    def length(self) -> float:
        return self.end - self.start

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "modality": self.modality, "start": self.start, "end": self.end,
                "slots": self.slots, "text": self.text}


@dataclass
class Media:
    """A multimodal source: its duration (s), gold events, per-modality observation captions, optional file."""

    duration: float
    events: list[Event] = field(default_factory=list)
    observations: dict[str, list[tuple[float, float, str]]] = field(default_factory=dict)
    path: str | None = None

    def __post_init__(self) -> None:
        self.duration = _num(self.duration, "Media.duration", min=0.0)
        if self.duration <= 0:
            raise ValueError(f"Media.duration must be > 0, got {self.duration}")
        if isinstance(self.events, (str, bytes, Mapping)) or not isinstance(self.events, Iterable):
            raise TypeError("Media.events must be a list of Event")
        self.events = [e if isinstance(e, Event) else Event(**e) for e in self.events]
        ids = [e.id for e in self.events]
        if len(set(ids)) != len(ids):
            raise ValueError("Media.events must have unique ids")
        for e in self.events:
            if e.end > self.duration + 1e-9:
                raise ValueError(f"Media.events: event {e.id} ends at {e.end} s, after the duration {self.duration}")
        if not isinstance(self.observations, Mapping):
            raise TypeError("Media.observations must be a dict modality -> list, got "
                            f"{type(self.observations).__name__}")
        obs: dict[str, list[tuple[float, float, str]]] = {}
        for m, rows in self.observations.items():
            mm = _str(m, "Media.observations key").strip().lower()
            out = []
            for i, row in enumerate(rows):
                if not isinstance(row, (list, tuple)) or len(row) != 3:
                    raise ValueError(f"Media.observations[{m!r}][{i}] must be (start, end, caption)")
                a = _num(row[0], f"Media.observations[{m!r}][{i}].start", min=0.0)
                b = _num(row[1], f"Media.observations[{m!r}][{i}].end")
                if b < a:
                    raise ValueError(f"Media.observations[{m!r}][{i}] has end < start")
                out.append((a, b, _str(row[2], f"Media.observations[{m!r}][{i}].caption", empty=True)))
            obs[mm] = out
        self.observations = obs
        if self.path is not None:
            self.path = os.fspath(self.path)
        self._by_id: dict[str, Event] | None = None
        self._key: str | None = None

    def event(self, event_id: str) -> Event:
        """The gold event with this id (ValueError if absent)."""
        if self._by_id is None:
            self._by_id = {e.id: e for e in self.events}
        try:
            return self._by_id[event_id]
        except KeyError:
            raise ValueError(f"event_id {event_id!r} is not an event of this media") from None

    @property
    def key(self) -> str:
        """A stable content key (the path when set, else a hash of duration + observations), for judge caches."""
        if self._key is None:
            import hashlib

            if self.path:
                self._key = "path:" + self.path
            else:
                blob = json.dumps([self.duration, sorted(self.observations.items())], separators=(",", ":"))
                self._key = "obs:" + hashlib.sha1(blob.encode()).hexdigest()[:20]
        return self._key

    def to_dict(self) -> dict[str, Any]:
        return {"duration": self.duration, "events": [e.to_dict() for e in self.events],
                "observations": {m: [list(r) for r in rows] for m, rows in self.observations.items()},
                "path": self.path}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Media:
        return cls(duration=d["duration"], events=[Event(**e) for e in d.get("events", [])],
                   observations={m: [tuple(r) for r in rows] for m, rows in d.get("observations", {}).items()},
                   path=d.get("path"))


@dataclass
class BenchmarkItem:
    """One question over one media: `options` (2..26 strings), `answer` the gold option letter, `evidence` the
    ids of the gold events the answer needs."""

    id: str
    media: Media
    question: str
    options: list[str]
    answer: str
    evidence: list[str] = field(default_factory=list)
    qtype: str = ""

    def __post_init__(self) -> None:
        _str(self.id, "BenchmarkItem.id")
        if isinstance(self.media, Mapping):
            self.media = Media.from_dict(self.media)
        if not isinstance(self.media, Media):
            raise TypeError(f"BenchmarkItem.media must be a Media, got {type(self.media).__name__}")
        _str(self.question, "BenchmarkItem.question")
        if isinstance(self.options, (str, bytes)) or not isinstance(self.options, Sequence):
            raise TypeError("BenchmarkItem.options must be a list of strings")
        self.options = [_str(o, f"BenchmarkItem.options[{i}]") for i, o in enumerate(self.options)]
        if not 2 <= len(self.options) <= 26:
            raise ValueError(f"BenchmarkItem.options must have 2..26 entries, got {len(self.options)}")
        a = _str(self.answer, "BenchmarkItem.answer").strip().upper()
        if len(a) != 1 or a not in LETTERS[:len(self.options)]:
            raise ValueError(f"BenchmarkItem.answer must be an option letter in A..{LETTERS[len(self.options) - 1]}, "
                             f"got {self.answer!r}")
        self.answer = a
        if isinstance(self.evidence, (str, bytes)):
            raise TypeError("BenchmarkItem.evidence must be a list of event ids, got a str")
        self.evidence = [_str(e, "BenchmarkItem.evidence[]") for e in self.evidence]
        if self.media.events:
            for e in self.evidence:
                self.media.event(e)  # raises if unknown
        _str(self.qtype, "BenchmarkItem.qtype", empty=True)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "media": self.media.to_dict(), "question": self.question, "options": self.options,
                "answer": self.answer, "evidence": self.evidence, "qtype": self.qtype}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BenchmarkItem:
        required = ("id", "media", "question", "options", "answer")
        return cls(**{k: d[k] for k in required}, **{k: d[k] for k in ("evidence", "qtype") if k in d})


@dataclass
class Response:
    """A model's free-text response to item `item_id`; `trace` is the generator's gold record (synthetic only)."""

    item_id: str
    model: str
    text: str
    trace: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        _str(self.item_id, "Response.item_id")
        _str(self.model, "Response.model")
        _str(self.text, "Response.text", empty=True)
        if self.trace is not None and not isinstance(self.trace, dict):
            raise TypeError(f"Response.trace must be a dict or None, got {type(self.trace).__name__}")

    def to_dict(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "model": self.model, "text": self.text, "trace": self.trace}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Response:
        return cls(item_id=d["item_id"], model=d["model"], text=d["text"], trace=d.get("trace"))


def save_jsonl(records: Iterable[Mapping[str, Any]], path: str | os.PathLike) -> Path:
    """Write dicts (or objects with `to_dict`) one per line, atomically (temp file + rename)."""
    from icml26.results import atomic_write_bytes

    lines = []
    for r in records:
        d = r.to_dict() if hasattr(r, "to_dict") else r
        if not isinstance(d, Mapping):
            raise TypeError(f"records must hold dicts or objects with to_dict(), got {type(r).__name__}")
        lines.append(json.dumps(d, ensure_ascii=False))
    path = Path(path)
    atomic_write_bytes(path, ("\n".join(lines) + ("\n" if lines else "")).encode())
    return path


def load_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file (blank lines skipped); a bad line raises ValueError naming it."""
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: line {i} is not JSON ({e.msg})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}: line {i} must be a JSON object")
            out.append(obj)
    return out


def _load(path: str | os.PathLike, cls: Any) -> list[Any]:
    out = []
    for i, d in enumerate(load_jsonl(path), 1):
        try:
            out.append(cls.from_dict(d))
        except KeyError as e:
            raise ValueError(f"{path}: record {i} lacks the key {e.args[0]!r}") from None
        except (TypeError, ValueError) as e:
            raise type(e)(f"{path}: record {i}: {e}") from None
    return out


def save_benchmark(items: Iterable[BenchmarkItem], path: str | os.PathLike) -> Path:
    """Write benchmark items as JSONL."""
    items = list(items)
    for i, it in enumerate(items):
        if not isinstance(it, BenchmarkItem):
            raise TypeError(f"items[{i}] must be a BenchmarkItem, got {type(it).__name__}")
    return save_jsonl(items, path)


def load_benchmark(path: str | os.PathLike) -> list[BenchmarkItem]:
    """Read benchmark items from JSONL (validated)."""
    return _load(path, BenchmarkItem)


def save_responses(responses: Iterable[Response], path: str | os.PathLike) -> Path:
    """Write responses as JSONL."""
    responses = list(responses)
    for i, r in enumerate(responses):
        if not isinstance(r, Response):
            raise TypeError(f"responses[{i}] must be a Response, got {type(r).__name__}")
    return save_jsonl(responses, path)


def load_responses(path: str | os.PathLike) -> list[Response]:
    """Read responses from JSONL (validated)."""
    return _load(path, Response)
