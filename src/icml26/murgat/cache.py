"""A dict-like on-disk cache for judge and generator calls: one JSON line {"k": key, "v": value} per entry.

Keys are any strings (hashed to 40 hex characters on disk, so very long prompts are fine); values must be JSON
serialisable. Appends are flushed line by line under a lock, so parallel request threads can share one cache and
an interrupted run keeps every finished call; a rerun with the same inputs makes no new calls (spec §7).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

__all__ = ["JsonlCache"]


def _h(key: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"cache keys must be str, got {type(key).__name__}")
    return hashlib.sha1(key.encode("utf-8")).hexdigest()


class JsonlCache(MutableMapping):
    """Persistent string-keyed cache in a JSONL file (created on first write)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._data: dict[str, Any] = {}
        if self.path.exists():
            lines = self.path.read_text(encoding="utf-8").splitlines()
            for i, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    self._data[rec["k"]] = rec["v"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    if i == len(lines):
                        continue  # a torn last line from an interrupted run
                    raise ValueError(f"{self.path}: line {i} is not a cache record") from None

    def __getitem__(self, key: str) -> Any:
        return self._data[_h(key)]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and _h(key) in self._data

    def __setitem__(self, key: str, value: Any) -> None:
        line = json.dumps({"k": _h(key), "v": value}, ensure_ascii=False)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
            self._data[_h(key)] = value

    def __delitem__(self, key: str) -> None:
        raise TypeError("JsonlCache is append-only; delete the file to reset it")

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)
