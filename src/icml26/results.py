"""`Result` and `Claim` records of a reproduction, with atomic JSON save/load.

A run returns a `Result`; `save_result` writes `<dir>/result.json` and one PNG per figure, each through a
temporary file and a rename, so an interrupted run never leaves a half-written result behind.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import math

from icml26.common import stats as _stats
from icml26.common.stats import Decision, Interval

SCALES = ("smoke", "small", "medium", "paper")


KINDS = ("gate", "report", "sanity")
SCHEMA = 2  # 2: three-valued verdicts from icml26.common.stats (Claim.decision, Claim.kind)


@dataclass
class Claim:
    """One of the paper's claims, re-measured, with its verdict.

    Attributes:
        id: short name from the spec, e.g. "C1" or "A".
        statement: the paper's claim in one sentence.
        metric: what was measured, with units.
        measured: the measured value(s) from this run (a number or a name -> number mapping); the headline
            number is `decision.estimate`.
        threshold: the pass condition in words, e.g. ">= 0.15 nats/byte".
        decision: the verdict with the estimate, interval and threshold that decided it, made by
            `icml26.common.stats.decide` / `exact` / `all_of` (never by hand).
        kind: "gate" (the spec's gating checks), "report" (measured, not gated) or "sanity" (holds by
            construction or checks the plumbing: shown apart, never counted as evidence for the paper).
        details: free-text context: per-seed values, which parts can fail, what would decide an inconclusive
            verdict, and the explanation when it does not hold.
        paper: the paper's own figure for this claim, e.g. "2.31x lower per-token latency than FCFS".
        per_seed: the claim's headline quantity for each seed, in seed order; empty when the claim has no seeds.
    """

    id: str
    statement: str
    metric: str
    measured: Any
    threshold: str
    decision: Decision | None = None
    kind: str = "gate"
    details: str = ""
    paper: str = ""
    per_seed: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if isinstance(self.decision, dict):
            self.decision = Decision.from_dict(self.decision)
        if not isinstance(self.decision, Decision):
            raise TypeError(f"Claim {self.id!r}: decision must be an icml26.common.stats.Decision (from decide, "
                            f"exact or all_of), got {type(self.decision).__name__}")
        if self.kind not in KINDS:
            raise ValueError(f"Claim {self.id!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "gate" and self.decision.verdict == _stats.MEASURED:
            raise ValueError(f"Claim {self.id!r}: a gate needs a threshold; a 'measured' decision is for "
                             "kind='report'")
        for name in ("id", "statement", "metric", "threshold", "details", "paper"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Claim {self.id!r}: {name} must be a string, got {type(getattr(self, name)).__name__}")
        self.measured = _plain(self.measured)
        self.per_seed = [float(x) for x in _plain(list(self.per_seed))]

    @property
    def verdict(self) -> str:
        """"held", "not held" or "inconclusive"."""
        return self.decision.verdict

    @property
    def held(self) -> bool:
        """True only for a decided "held"."""
        return self.decision.verdict == "held"

    @property
    def gate(self) -> bool:
        return self.kind == "gate"

    @property
    def interval(self) -> Interval | None:
        return self.decision.interval

    @property
    def seed_summary(self) -> tuple[float, float, int] | None:
        """(mean, sample std, n) of `per_seed`, or None without seeds."""
        vals = [v for v in self.per_seed if v == v]
        if not vals:
            return None
        n = len(vals)
        mean = sum(vals) / n
        std = (sum((v - mean) ** 2 for v in vals) / (n - 1)) ** 0.5 if n > 1 else 0.0
        return mean, std, n

    def to_dict(self) -> dict[str, Any]:
        d = {"id": self.id, "statement": self.statement, "metric": self.metric, "measured": self.measured,
             "threshold": self.threshold, "kind": self.kind, "verdict": self.verdict, "held": self.held,
             "decision": self.decision.to_dict(), "details": self.details, "paper": self.paper,
             "per_seed": self.per_seed}
        return _plain(d)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Claim:
        keep = ("id", "statement", "metric", "measured", "threshold", "decision", "kind", "details", "paper",
                "per_seed")
        c = cls(**{k: d[k] for k in keep if k in d})
        if "verdict" in d and d["verdict"] != c.verdict:
            raise ResultSchemaError(f"claim {c.id!r}: stored verdict {d['verdict']!r} disagrees with its decision "
                                    f"({c.verdict!r})")
        return c


def legacy_claim(d: dict[str, Any]) -> Claim:
    """A claim saved before schema 2 (a bare `held` boolean): read as inconclusive, never as held."""
    dec = _stats.decide(float("nan"), _stats.Interval(-math.inf, math.inf, n=0), 0.0)
    dec = dataclasses.replace(dec, hint="saved before three-valued verdicts (result schema 1): re-run")
    kind = "gate" if d.get("gate", True) else "report"
    return Claim(id=str(d.get("id", "?")), statement=str(d.get("statement", "")), metric=str(d.get("metric", "")),
                 measured=d.get("measured"), threshold=str(d.get("threshold", "")), decision=dec, kind=kind,
                 details=str(d.get("details", "")), paper=str(d.get("paper", "")),
                 per_seed=[x for x in d.get("per_seed", []) if isinstance(x, (int, float))])


@dataclass
class Result:
    """Everything a reproduction produced.

    `figures` holds the PNG file names (relative to the result folder) once saved; experiments add
    matplotlib figures with `add_figure`, which `save_result` renders.
    """

    slug: str
    scale: str
    config: dict[str, Any]
    metrics: dict[str, Any] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    runtime_s: float = 0.0
    versions: dict[str, str] = field(default_factory=dict)
    created: str = ""
    notes: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)  # commit, code hash, machine, command (set by the CLI)
    overrides: dict[str, Any] = field(default_factory=dict)  # --seed/--set values that differ from CONFIGS[scale]
    figure_captions: dict[str, str] = field(default_factory=dict)  # PNG file name -> caption
    schema: int = SCHEMA  # results older than SCHEMA read as stale (their claims as inconclusive)
    _pending_figures: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {self.scale!r}")
        # converted in place: a list the caller keeps a reference to stays the Result's list
        self.claims[:] = [c if isinstance(c, Claim) else Claim.from_dict(c) for c in self.claims]
        if not self.versions:
            self.versions = library_versions()
        if not self.created:
            self.created = datetime.now(timezone.utc).isoformat(timespec="seconds")

    def add_figure(self, name: str, fig: Any, caption: str = "") -> None:
        """Attach a matplotlib figure; saved as `<name>.png` next to result.json, shown with `caption` (or the
        figure's suptitle / first axes title when no caption is given)."""
        if not name or any(c in name for c in "/\\ "):
            raise ValueError(f"figure name must be a plain file stem, got {name!r}")
        if not caption:
            sup = getattr(fig, "_suptitle", None)
            caption = sup.get_text() if sup is not None else ""
            if not caption and getattr(fig, "axes", None):
                caption = fig.axes[0].get_title()
        self._pending_figures[name] = fig
        if caption:
            self.figure_captions[f"{name}.png"] = caption

    @property
    def config_hash(self) -> str:
        return config_hash(self.config)

    @property
    def gates_held(self) -> bool:
        """True when every gate is a decided "held"."""
        return all(c.held for c in self.claims if c.gate)

    def counts(self) -> dict[str, int]:
        """Gates only: {"held": h, "not held": n, "inconclusive": i}."""
        out = {v: 0 for v in _stats.VERDICTS}
        for c in self.claims:
            if c.gate and c.verdict in out:
                out[c.verdict] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if not f.name.startswith("_")}
        d["claims"] = [c.to_dict() for c in self.claims]
        d["config_hash"] = self.config_hash
        return _plain(d)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Result:
        """Build a Result from its JSON form, checking the schema; raises `ResultSchemaError` naming the field."""
        check_schema(d)
        names = {f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")}
        kw = {k: v for k, v in d.items() if k in names}
        try:
            if d.get("schema", 1) < SCHEMA:  # older results: claims read as inconclusive, the result as stale
                kw["claims"] = [legacy_claim(c) for c in d["claims"]]
                kw["schema"] = d.get("schema", 1)
            return cls(**kw)
        except (TypeError, ValueError, KeyError) as e:
            raise ResultSchemaError(str(e)) from None


class ResultSchemaError(ValueError):
    """A result.json that parses but does not match the Result/Claim schema."""


_RESULT_TYPES: dict[str, type | tuple[type, ...]] = {
    "slug": str, "scale": str, "config": dict, "metrics": dict, "claims": list, "figures": list,
    "runtime_s": (int, float), "versions": dict, "created": str, "notes": str, "provenance": dict,
    "overrides": dict, "figure_captions": dict, "schema": int,
}
_CLAIM_TYPES: dict[str, type | tuple[type, ...]] = {
    "id": str, "statement": str, "metric": str, "threshold": str, "held": bool, "gate": bool, "details": str,
    "paper": str, "per_seed": list, "kind": str, "verdict": str, "decision": dict,
}
_REQUIRED = ("slug", "scale", "config", "claims")
_CLAIM_REQUIRED = ("id", "statement", "metric", "measured", "threshold")
_CLAIM_REQUIRED_V2 = ("decision", "kind")


def check_schema(d: Any) -> None:
    """Raise `ResultSchemaError` unless `d` is a dict in the Result schema (booleans are JSON booleans)."""
    if not isinstance(d, dict):
        raise ResultSchemaError(f"expected a JSON object, got a JSON {type(d).__name__}")
    for k in _REQUIRED:
        if k not in d:
            raise ResultSchemaError(f"missing field '{k}'")
    for k, t in _RESULT_TYPES.items():
        if k in d and (not isinstance(d[k], t) or (t == (int, float) and isinstance(d[k], bool))):
            raise ResultSchemaError(f"field '{k}' must be {_tname(t)}, got {type(d[k]).__name__}")
    if d["scale"] not in SCALES:
        raise ResultSchemaError(f"field 'scale' must be one of {SCALES}, got {d['scale']!r}")
    for i, c in enumerate(d["claims"]):
        if not isinstance(c, dict):
            raise ResultSchemaError(f"claims[{i}] must be an object, got {type(c).__name__}")
        for k in _CLAIM_REQUIRED + (_CLAIM_REQUIRED_V2 if d.get("schema", 1) >= SCHEMA else ()):
            if k not in c:
                raise ResultSchemaError(f"claims[{i}] is missing '{k}'")
        for k, t in _CLAIM_TYPES.items():
            if k in c and not isinstance(c[k], t):
                raise ResultSchemaError(f"claims[{i}].{k} must be {_tname(t)}, got {type(c[k]).__name__} {c[k]!r}")


def _tname(t) -> str:
    names = {str: "a string", dict: "an object", list: "a list", bool: "a boolean (true/false)"}
    return names.get(t, "a number") if not isinstance(t, tuple) else "a number"


def config_hash(config: dict[str, Any]) -> str:
    """Stable short hash of a config (used to decide whether a saved result can be reused)."""
    blob = json.dumps(_plain(config), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def library_versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in ("icml26", "numpy", "scipy", "torch", "matplotlib"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` via a temporary file in the same folder and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; results and reports are meant to be shared
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_result(result: Result, out_dir: str | Path) -> Path:
    """Write figures (PNG) then `result.json` into `out_dir`; returns the JSON path.

    The JSON is written last, so its presence means the run finished and its figures exist.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if result._pending_figures:
        import io

        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        for name, fig in result._pending_figures.items():
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
            plt.close(fig)
            atomic_write_bytes(out_dir / f"{name}.png", buf.getvalue())
            if f"{name}.png" not in result.figures:
                result.figures.append(f"{name}.png")
        result._pending_figures.clear()
    path = out_dir / "result.json"
    atomic_write_bytes(path, json.dumps(result.to_dict(), indent=2, allow_nan=True).encode())
    return path


def load_result(path: str | Path) -> Result:
    """Load a `Result` from a result.json file or the folder holding it.

    Strict: a file that does not parse raises `json.JSONDecodeError`, one that does not match the schema raises
    `ResultSchemaError` (both `ValueError`s), so a damaged result is never silently read as something else.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "result.json"
    with open(path) as f:
        return Result.from_dict(json.load(f))


def _plain(x: Any) -> Any:
    """Convert numpy/torch scalars and arrays, tuples and Paths into JSON-friendly Python values."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (bool, int, str)) or x is None:
        return x
    if isinstance(x, float):
        return x  # NaN/inf are kept; json writes them as NaN/Infinity
    if isinstance(x, Path):
        return str(x)
    if hasattr(x, "tolist"):  # numpy / torch
        return _plain(x.tolist())
    if hasattr(x, "item"):
        return x.item()
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _plain(dataclasses.asdict(x))
    return str(x)
