"""LINGUA's typed memories (spec section 2.2) and the script reliability tracker.

- `RuleBasedSRL`: semantic roles of a caption (Agent, Action, Patient, Location/target, Goal). The official code
  uses spaCy dependency heuristics (nsubj -> Agent, first verb lemma -> Action, dobj/pobj -> Patient, at/in/on/near
  pobj -> Location, to/for pobj -> Goal); `en_core_web_sm` is not on PyPI, so the default parser applies the same
  rules to a `Lexicon` of verbs and objects, with a lexicon-free fallback (spec section 9).
- `EpisodicEntry` / `EpisodicMemory`: one entry per kept frame, interval [t, t + 1 s]; adjacent entries merge iff
  gap < 2 s AND embedding cosine > 0.85 AND the later description carries a continuity marker.
- `AffordanceFrame` / `SemanticEntry` / `SemanticMemory`: per-object affordance frames, fuzzy retrieval
  (cosine > gamma_aff = 0.75) and consolidation (an object seen in >= 3 episodes gets its 3 most frequent
  co-occurring actions as affordance frames).
- `Script` / `ProceduralMemory`: scripts mined from a persistent episode bank by frame-aware agglomerative
  clustering (cosine, average linkage) -> canonical schema -> validation (>= n_min = 5 instances, sigma/mu <= 0.5);
  versioned by contrastive refinement.
- `ReliabilityTracker`: Beta(alpha, beta) per script, prior (1, 1), E[rho] = alpha / (alpha + beta), differential
  entropy H(Beta), JSON save/load.

Deviations (also in docs/lingua.md):
- Merge similarity uses the TEXT embedding of the descriptions (the official code prefers the VideoMAE frame
  embedding when present). With event-driven frames the frame embedding cannot work: a frame is kept because
  cos(v_t, v_{t-1}) < 1 - tau_Delta = 0.85, so two consecutive kept frames of one action are almost never > 0.85
  similar. `merge_embedding="frame"` restores the official choice.
- Clustering is cut at a cosine distance (`cluster_distance`, default 0.4) instead of "at most 5 clusters"
  (review note 6: a bank over 8 activities cannot be described by 5 goals); `max_clusters` restores the official
  rule. Average linkage is computed on the distinct frame texts with their multiplicities (identical to average
  linkage on all bank entries; tested against scipy) so that mining a 1,500-entry bank stays cheap.
- The frame text of an episode is "action patient [target]" plus "frame(object)" for every affordance frame of its
  objects; the object names enter through the frame arguments (the official text holds frame names only, which
  cannot separate "open fridge" from "open oven", the pair the spec builds to be told apart by objects).
- The temporal-variance validation (sigma/mu <= 0.5) is applied to each action of a script's sequence, whose
  (mu_i, sigma_i) the script stores, not to the pooled durations of all its instances: frame-aware clusters hold
  whole procedures (open fridge > put bottle > close fridge), and pooling a 1-s step with a 5-s step of the same
  procedure exceeds 0.5 however regular the procedure is.
- Mining is a function of the bank's contents, not of its order (issue 35): frame texts are clustered in sorted
  order, ties between actions are broken by name, and a script the latest mining of the bank no longer finds is
  deactivated (the official code re-mines the current video only, so the question does not arise there).
- Postconditions Phi are the outcomes seen in more than half of the instances of each of the script's actions
  (the spec: "the set of observed outcomes"): a plain set grows with every captioning error in the bank, and the
  coverage of a script would then fall as it gathers evidence.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from icml26.common.validation import check_float, check_int
from icml26.lingua.text import Lexicon, has_continuity_marker, stem, strip_continuity_marker

__all__ = ["RuleBasedSRL", "EpisodicEntry", "EpisodicMemory", "AffordanceFrame", "SemanticEntry", "SemanticMemory",
           "Script", "ProceduralMemory", "ReliabilityTracker", "average_linkage_labels", "beta_entropy"]


# ============================================================================================ SRL
_PREPS_LOC = ("into", "in", "on", "onto", "at", "near", "inside")
_PREPS_GOAL = ("to", "for")
_DETS = {"the", "a", "an", "his", "her", "their", "its", "some"}
_SUBJECT_WORDS = {"person", "someone", "man", "woman", "he", "she", "they", "people", "somebody", "boy", "girl"}


class RuleBasedSRL:
    """PropBank-style roles of a one-sentence caption.

    `parse(text)` -> {"Agent", "Action", "Patient", "Location", "Goal", "marker"}; Action is a verb lemma, Patient
    and Location are object words ("" when absent), marker tells whether a continuity marker was present.
    With a `Lexicon` the verb is the longest known surface form ("pulls open" -> open) and objects are the
    lexicon's; without one the first word after the subject is the verb (stemmed) and the next content word the
    patient.
    """

    def __init__(self, lexicon: Lexicon | None = None) -> None:
        if lexicon is not None and not isinstance(lexicon, Lexicon):
            raise TypeError(f"lexicon must be a Lexicon or None, got {type(lexicon).__name__}")
        self.lexicon = lexicon
        self._cache: dict[str, dict[str, Any]] = {}

    def parse(self, text: str) -> dict[str, Any]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        hit = self._cache.get(text)
        if hit is not None:
            return dict(hit)
        body, marker = strip_continuity_marker(text)
        words = re.findall(r"[a-z0-9]+", body.lower())
        roles = {"Agent": "", "Action": "", "Patient": "", "Location": "", "Goal": "", "marker": marker}
        i = 0
        # Agent: subject phrase
        while i < len(words) and words[i] in _DETS:
            i += 1
        if i < len(words) and words[i] in _SUBJECT_WORDS:
            roles["Agent"] = words[i]
            i += 1
        lex = self.lexicon
        # Action
        if lex is not None:
            j, hit_v = i, None
            while j < len(words) and hit_v is None and j <= i + 2:
                hit_v = lex.match_verb(words, j)
                if hit_v is None:
                    j += 1
            if hit_v is not None:
                roles["Action"], n = hit_v
                i = j + n
        if not roles["Action"] and i < len(words):
            roles["Action"] = stem(words[i])
            i += 1
        # Patient, then a location/target after a preposition, a goal after to/for
        rest = words[i:]
        k = 0
        while k < len(rest):
            w = rest[k]
            if w in _PREPS_LOC or w in _PREPS_GOAL:
                tail = [x for x in rest[k + 1:] if x not in _DETS]
                if w in _PREPS_GOAL and w == "to" and tail and (lex is None or not lex.is_object(tail[0])):
                    roles["Goal"] = " ".join(rest[k + 1:])
                    break
                obj = self._first_object(tail)
                if obj and not roles["Location"]:
                    roles["Location"] = obj
                k += 1
                continue
            if not roles["Patient"] and w not in _DETS:
                if lex is None or lex.is_object(w):
                    roles["Patient"] = w
            k += 1
        self._cache[text] = dict(roles)
        return roles

    def _first_object(self, words: list[str]) -> str:
        for w in words:
            if self.lexicon is None or self.lexicon.is_object(w):
                return w
        return ""


# ============================================================================================ episodic
@dataclass
class EpisodicEntry:
    """m_i = <Agent, Action, Patient, t_s, t_e, Location, Goal, Outcome, O_i, d_i, v_i, alpha_i, beta_i>.

    Times in seconds. `objects` = O_i (detected object labels), `description` = d_i (the narrative),
    `embedding` = v_i (the frame embedding of the first kept frame, or None). `location` holds the target/location
    role. `goal` is empty until feedback reveals it (review note 6). `video` and `entry_id` identify the entry.
    """

    agent: str
    action: str
    patient: str
    t_s: float
    t_e: float
    location: str = ""
    goal: str = ""
    outcome: str = ""
    objects: list[str] = field(default_factory=list)
    description: str = ""
    embedding: np.ndarray | None = None
    alpha: float = 1.0
    beta: float = 1.0
    frames: list[int] = field(default_factory=list)
    video: str = ""
    entry_id: str = ""

    @property
    def duration(self) -> float:
        return self.t_e - self.t_s

    @property
    def roles(self) -> str:
        """"action patient [location]", the compact role string shown to the LLM."""
        return " ".join(x for x in (self.action, self.patient, self.location) if x)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["objects"], d["frames"] = list(self.objects), list(self.frames)
        d["embedding"] = None if self.embedding is None else np.asarray(self.embedding, dtype=float).tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EpisodicEntry:
        d = dict(d)
        if d.get("embedding") is not None:
            d["embedding"] = np.asarray(d["embedding"], dtype=np.float32)
        return cls(**d)


def outcome_of(action: str, patient: str) -> str:
    """The outcome text of an action on a patient ("" without a patient)."""
    return f"{action}({patient}) completed" if action and patient else ""


class EpisodicMemory:
    """The episodic entries of one video, sorted by start time.

    Args:
        embedder: a `TextEmbedder` (descriptions are embedded for merging and text queries).
        merge_gap_s: Δt_merge (default 2.0 s). merge_sim: cosine threshold (default 0.85).
        merge_embedding: "text" (descriptions; default) or "frame" (v_i, the official choice; see module notes).
    """

    def __init__(self, embedder, merge_gap_s: float = 2.0, merge_sim: float = 0.85,
                 merge_embedding: str = "text") -> None:
        self.embedder = embedder
        self.merge_gap_s = check_float(merge_gap_s, "merge_gap_s", min=0.0)
        self.merge_sim = check_float(merge_sim, "merge_sim", min=-1.0, max=1.0)
        if merge_embedding not in ("text", "frame"):
            raise ValueError(f"merge_embedding must be 'text' or 'frame', got {merge_embedding!r}")
        self.merge_embedding = merge_embedding
        self.entries: list[EpisodicEntry] = []

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, entry: EpisodicEntry) -> None:
        if not isinstance(entry, EpisodicEntry):
            raise TypeError(f"entry must be an EpisodicEntry, got {type(entry).__name__}")
        if not (math.isfinite(entry.t_s) and math.isfinite(entry.t_e)) or entry.t_e < entry.t_s:
            raise ValueError(f"entry interval must be finite with t_e >= t_s, got [{entry.t_s}, {entry.t_e}]")
        self.entries.append(entry)
        self.entries.sort(key=lambda e: e.t_s)

    def _sim(self, a: EpisodicEntry, b: EpisodicEntry) -> float:
        if self.merge_embedding == "frame" and a.embedding is not None and b.embedding is not None:
            na, nb = np.linalg.norm(a.embedding), np.linalg.norm(b.embedding)
            return float(a.embedding @ b.embedding / (na * nb)) if na > 0 and nb > 0 else 0.0
        e = self.embedder.encode([a.description, b.description])
        return float(e[0] @ e[1])

    def merge_reasons(self, prev: EpisodicEntry, cur: EpisodicEntry) -> dict[str, bool]:
        """The three merge conditions of spec 2.2 for (prev, cur)."""
        return {"gap": cur.t_s - prev.t_e < self.merge_gap_s,
                "similar": self._sim(prev, cur) > self.merge_sim,
                "marker": has_continuity_marker(cur.description)}

    def merge(self) -> int:
        """Merge adjacent entries in time order (spec 2.2); returns the number of merges."""
        if len(self.entries) < 2:
            return 0
        out = [self.entries[0]]
        n = 0
        for cur in self.entries[1:]:
            prev = out[-1]
            if all(self.merge_reasons(prev, cur).values()):
                prev.t_e = max(prev.t_e, cur.t_e)
                prev.description = prev.description.rstrip(". ") + ", " + cur.description
                prev.objects = list(dict.fromkeys(prev.objects + cur.objects))
                prev.frames = prev.frames + cur.frames
                prev.outcome = cur.outcome or prev.outcome
                n += 1
            else:
                out.append(cur)
        self.entries = out
        return n

    def query_time(self, t0: float, t1: float) -> list[EpisodicEntry]:
        """Entries overlapping [t0, t1]."""
        t0 = check_float(t0, "t0")
        t1 = check_float(t1, "t1")
        if t1 < t0:
            raise ValueError(f"t1 must be >= t0, got [{t0}, {t1}]")
        return [e for e in self.entries if e.t_e >= t0 and e.t_s <= t1]

    def query_text(self, text: str, k: int = 3) -> list[EpisodicEntry]:
        """The k entries whose description (plus roles) is most similar to `text` (ties: earlier first)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        k = check_int(k, "k", min=1)
        if not self.entries:
            return []
        q = self.embedder.encode([text])[0]
        m = self.embedder.encode([f"{e.roles} {e.description}" for e in self.entries])
        s = m @ q
        order = np.argsort(-s, kind="stable")[:k]
        return [self.entries[i] for i in order]


# ============================================================================================ semantic
@dataclass
class AffordanceFrame:
    """A FrameNet-style affordance frame of an object: its name (an action), roles, pre- and postconditions."""

    name: str
    roles: dict[str, str] = field(default_factory=dict)
    preconditions: list[str] = field(default_factory=list)
    postconditions: list[str] = field(default_factory=list)


@dataclass
class SemanticEntry:
    """<Object, A_j (affordance frames), P_j (properties), R_j (relations), s_j (embedding), c_j (confidence)>."""

    obj: str
    affordances: list[AffordanceFrame] = field(default_factory=list)
    properties: list[str] = field(default_factory=list)
    relations: dict[str, list[str]] = field(default_factory=dict)
    embedding: np.ndarray | None = None
    confidence: float = 0.5

    def to_dict(self) -> dict[str, Any]:
        return {"obj": self.obj, "affordances": [asdict(a) for a in self.affordances], "properties": self.properties,
                "relations": self.relations, "confidence": self.confidence}


class SemanticMemory:
    """Object -> `SemanticEntry`.

    Args:
        embedder: `TextEmbedder` for s_j. gamma_aff: fuzzy-retrieval threshold (default 0.75).
        min_episodes: an object seen in at least this many episodes is consolidated (default 3).
        n_affordances: affordance frames per consolidated object (default 3).
    """

    def __init__(self, embedder, gamma_aff: float = 0.75, min_episodes: int = 3, n_affordances: int = 3) -> None:
        self.embedder = embedder
        self.gamma_aff = check_float(gamma_aff, "gamma_aff", min=-1.0, max=1.0)
        self.min_episodes = check_int(min_episodes, "min_episodes", min=1)
        self.n_affordances = check_int(n_affordances, "n_affordances", min=1)
        self.entries: dict[str, SemanticEntry] = {}

    def get_or_create(self, obj: str) -> SemanticEntry:
        if not isinstance(obj, str) or not obj:
            raise ValueError(f"obj must be a non-empty string, got {obj!r}")
        e = self.entries.get(obj)
        if e is None:
            e = SemanticEntry(obj, embedding=self.embedder.encode([obj])[0])
            self.entries[obj] = e
        return e

    def retrieve_fuzzy(self, query: str, threshold: float | None = None) -> list[SemanticEntry]:
        """Entries with cosine(query, s_j) > threshold (default gamma_aff), most similar first."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        thr = self.gamma_aff if threshold is None else check_float(threshold, "threshold", min=-1.0, max=1.0)
        if not self.entries:
            return []
        q = self.embedder.encode([query])[0]
        scored = [(float(e.embedding @ q), e) for e in self.entries.values() if e.embedding is not None]
        return [e for s, e in sorted(scored, key=lambda x: -x[0]) if s > thr]

    def consolidate(self, episodes: Iterable[EpisodicEntry]) -> int:
        """Objects seen in >= min_episodes episodes get their n_affordances most frequent co-occurring actions as
        affordance frames (recomputed from `episodes`); returns how many entries were (re)built."""
        seen: Counter = Counter()
        acts: dict[str, Counter] = defaultdict(Counter)
        co: dict[str, Counter] = defaultdict(Counter)
        for ep in episodes:
            # sorted: set order depends on the process's hash seed, and ties below keep insertion order
            objs = sorted(set(ep.objects) | ({ep.patient} if ep.patient else set()))
            for o in objs:
                seen[o] += 1
                if ep.action:
                    acts[o][ep.action] += 1
                for o2 in objs:
                    if o2 != o:
                        co[o][o2] += 1
        n = 0
        for o, c in seen.items():
            if c < self.min_episodes:
                continue
            e = self.get_or_create(o)
            e.affordances = [AffordanceFrame(a, {"Agent": "person", "Patient": o},
                                             [f"HasAffordance({o}, {a})"], [f"{a}({o}) completed"])
                             for a, _ in sorted(acts[o].items(), key=lambda x: (-x[1], x[0]))[: self.n_affordances]]
            e.properties = [f"seen in {c} episodes"]
            e.relations = {"co_occurs_with": [x for x, _ in sorted(co[o].items(), key=lambda x: (-x[1], x[0]))[:3]]}
            e.confidence = float(c / (c + 1.0))
            n += 1
        return n

    def to_dict(self) -> dict[str, Any]:
        return {k: v.to_dict() for k, v in self.entries.items()}

    def load_dict(self, d: dict[str, Any]) -> None:
        self.entries = {}
        for k, v in d.items():
            e = self.get_or_create(k)
            e.affordances = [AffordanceFrame(**a) for a in v.get("affordances", [])]
            e.properties = list(v.get("properties", []))
            e.relations = {a: list(b) for a, b in v.get("relations", {}).items()}
            e.confidence = float(v.get("confidence", 0.5))


# ============================================================================================ procedural
@dataclass
class Script:
    """A procedural script <goal G, preconditions Psi, actions Pi, postconditions Phi, {mu_i, sigma_i}>.

    `base_preconditions` come from mining (HasAffordance(obj, frame), requires_goal(g)); `refinements` from
    contrastive refinement (requires_mention(x), NOT_mention(y)); `preconditions` is both. `durations` maps an
    action ("open fridge") to (mu, sigma) in seconds. Reliability lives in the `ReliabilityTracker`.
    """

    script_id: str
    name: str
    goal: str
    base_preconditions: list[str]
    actions: list[str]
    postconditions: list[str]
    durations: dict[str, tuple[float, float]]
    instance_count: int
    cv: float = 0.0
    refinements: list[str] = field(default_factory=list)
    version: int = 1
    parent_id: str | None = None
    active: bool = True
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def preconditions(self) -> list[str]:
        return self.base_preconditions + self.refinements

    @property
    def text(self) -> str:
        """name + preconditions: the script representation compared with failure narratives (Risk_k)."""
        return " ".join([self.name, *self.preconditions])

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["durations"] = {k: list(v) for k, v in self.durations.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Script:
        d = dict(d)
        d["durations"] = {k: (float(v[0]), float(v[1])) for k, v in d["durations"].items()}
        return cls(**d)


def average_linkage_labels(distance: np.ndarray, sizes: Sequence[int], cut: float | None = None,
                           n_clusters: int | None = None) -> np.ndarray:
    """Average-linkage (UPGMA) clustering of points with multiplicities.

    Args:
        distance: (n, n) symmetric distance matrix of the distinct points.
        sizes: (n,) how many identical copies each distinct point stands for.
        cut: merge while the smallest average distance is <= cut. n_clusters: or stop at this many clusters.
    Returns:
        (n,) int labels 0..k-1 (ordered by first occurrence). Identical to scipy's average linkage on the
        expanded data followed by `fcluster(criterion="distance")` / `("maxclust")`.
    """
    D = np.array(distance, dtype=np.float64)
    n = D.shape[0]
    if D.shape != (n, n):
        raise ValueError(f"distance must be square, got shape {D.shape}")
    w = np.asarray(sizes, dtype=np.float64)
    if w.shape != (n,) or np.any(w < 1):
        raise ValueError("sizes must hold one count >= 1 per point")
    if (cut is None) == (n_clusters is None):
        raise ValueError("give exactly one of cut and n_clusters")
    members = [[i] for i in range(n)]
    alive = np.ones(n, dtype=bool)
    np.fill_diagonal(D, np.inf)
    k = n
    while k > 1:
        flat = int(np.argmin(D))  # rows/columns of merged-away points hold inf
        i, j = divmod(flat, n)
        d = D[i, j]
        if n_clusters is not None and k <= n_clusters:
            break
        if cut is not None and not d <= cut:
            break
        if i > j:
            i, j = j, i
        # Lance-Williams update for UPGMA
        D[i, :] = (w[i] * D[i, :] + w[j] * D[j, :]) / (w[i] + w[j])
        D[:, i] = D[i, :]
        D[i, i] = np.inf
        w[i] += w[j]
        members[i] += members[j]
        alive[j] = False
        D[j, :] = np.inf
        D[:, j] = np.inf
        k -= 1
    labels = np.empty(n, dtype=int)
    order = sorted((min(m), m) for idx, m in enumerate(members) if alive[idx])
    for lab, (_, m) in enumerate(order):
        labels[m] = lab
    return labels


class ProceduralMemory:
    """Scripts mined from a persistent episode bank (spec 2.2 and section 9: the bank accumulates across videos,
    unlike the official code, which re-mines the current video only).

    Args:
        embedder: `TextEmbedder` of the frame texts.
        n_min: least instances of a valid script (default 5). max_cv: largest sigma/mu of its durations (0.5).
        cluster_distance: average-linkage cosine-distance cut (default 0.4). max_clusters: use the official
            "at most this many clusters" rule instead (default None).
        action_share: an action joins a script's sequence Pi when it covers at least this share of the cluster.
    """

    def __init__(self, embedder, n_min: int = 5, max_cv: float = 0.5, cluster_distance: float = 0.4,
                 max_clusters: int | None = None, action_share: float = 0.15) -> None:
        self.embedder = embedder
        self.n_min = check_int(n_min, "n_min", min=1)
        self.max_cv = check_float(max_cv, "max_cv", min=0.0)
        self.cluster_distance = check_float(cluster_distance, "cluster_distance", min=0.0, max=2.0)
        self.max_clusters = None if max_clusters is None else check_int(max_clusters, "max_clusters", min=1)
        self.action_share = check_float(action_share, "action_share", min=0.0, max=1.0)
        self.episode_bank: list[EpisodicEntry] = []
        self.scripts: dict[str, Script] = {}
        self.heads: dict[str, str] = {}  # mined base id -> id of its current (latest) version
        self.n_minings = 0

    def add_episodes(self, entries: Iterable[EpisodicEntry]) -> None:
        for e in entries:
            if not isinstance(e, EpisodicEntry):
                raise TypeError(f"episodes must be EpisodicEntry, got {type(e).__name__}")
            self.episode_bank.append(e)

    def active(self) -> list[Script]:
        return [s for s in self.scripts.values() if s.active]

    @staticmethod
    def frame_text(e: EpisodicEntry, semantic: SemanticMemory | None) -> str:
        """"action patient [location]" + "frame(object)" for every affordance frame of the episode's objects."""
        parts = [e.roles]
        objs = list(dict.fromkeys(([e.patient] if e.patient else []) + list(e.objects)))
        for o in objs:
            ent = semantic.entries.get(o) if semantic is not None else None
            if ent is not None:
                parts += [f"{a.name}({o})" for a in ent.affordances]
        return " ".join(parts)

    def cluster(self, episodes: Sequence[EpisodicEntry], semantic: SemanticMemory | None) -> list[list[int]]:
        """Frame-aware clustering (cosine distance, average linkage); lists of episode indices."""
        texts = [self.frame_text(e, semantic) for e in episodes]
        uniq = sorted(set(texts))  # sorted, not first-seen: the clusters depend on the bank, not on its order
        if len(uniq) == 1:
            return [list(range(len(episodes)))]
        idx = {t: i for i, t in enumerate(uniq)}
        sizes = np.bincount([idx[t] for t in texts], minlength=len(uniq))
        E = self.embedder.encode(uniq)
        D = np.clip(1.0 - E @ E.T, 0.0, 2.0)
        labels = average_linkage_labels(D, sizes, cut=None if self.max_clusters else self.cluster_distance,
                                        n_clusters=self.max_clusters)
        groups: dict[int, list[int]] = defaultdict(list)
        for i, t in enumerate(texts):
            groups[int(labels[idx[t]])].append(i)
        return [groups[k] for k in sorted(groups)]

    def _schema(self, inst: list[EpisodicEntry], semantic: SemanticMemory | None) -> Script:
        keys = Counter(e.roles for e in inst)
        total = len(inst)
        # order actions by their mean start time relative to the earliest instance of the cluster in each video
        first: dict[str, float] = {}
        for e in inst:
            first[e.video] = min(first.get(e.video, e.t_s), e.t_s)
        rel: dict[str, list[float]] = defaultdict(list)
        for e in inst:
            rel[e.roles].append(e.t_s - first[e.video])
        top = min(keys.items(), key=lambda x: (-x[1], x[0]))[0]  # ties by name: independent of the bank's order
        acts = [k for k, c in keys.items() if c / total >= self.action_share] or [top]
        acts.sort(key=lambda k: (float(np.mean(rel[k])), k))
        durations, post = {}, []
        for k in acts:
            d = np.array([e.duration for e in inst if e.roles == k])
            durations[k] = (float(d.mean()), float(d.std()))
            outs = Counter(e.outcome for e in inst if e.roles == k and e.outcome)
            n_k = int(keys[k])
            post += sorted(o for o, c in outs.items() if c > 0.5 * n_k)
        objs = Counter(o for e in inst for o in set(e.objects) | ({e.patient} if e.patient else set()))
        pre = []
        for o, c in sorted(objs.items(), key=lambda x: (-x[1], x[0])):
            if c > 0.5 * total:
                ent = semantic.entries.get(o) if semantic is not None else None
                frames = [a.name for a in ent.affordances[:2]] if ent is not None else []
                pre += [f"HasAffordance({o}, {f})" for f in frames] or [f"HasAffordance({o}, interaction)"]
        goals = Counter(e.goal for e in inst if e.goal)
        goal = min(goals.items(), key=lambda x: (-x[1], x[0]))[0] if goals else ""
        if goal:
            pre.append(f"requires_goal({goal})")
        # temporal-variance check per action of Pi (each has its own (mu_i, sigma_i)); see the module notes
        cvs = [sd / mu if mu > 0 else float("inf") for k, (mu, sd) in durations.items() if keys[k] >= 2]
        cv = float(max(cvs)) if cvs else 0.0
        base = top.replace(" ", "_")
        return Script(script_id=base, name=" > ".join(acts), goal=goal, base_preconditions=pre, actions=acts,
                      postconditions=post, durations=durations, instance_count=total, cv=cv)

    def mine(self, semantic: SemanticMemory | None = None, min_instances: int | None = None,
             max_cv: float | None = None, episodes: Sequence[EpisodicEntry] | None = None) -> list[Script]:
        """Re-mine scripts from the episode bank (or `episodes`); returns the validated scripts of this mining.

        A script whose base id already exists is updated in place, in its latest version (refinement predicates,
        version and reliability are kept); new ones are added. A script of the bank (`episodes=None`) that this
        mining no longer finds is deactivated (kept, with its reliability, and reactivated when found again), so
        the active scripts are those of the current bank whatever order it was filled in (issue 35); nothing is
        deleted.
        """
        n_min = self.n_min if min_instances is None else check_int(min_instances, "min_instances", min=1)
        cv_max = self.max_cv if max_cv is None else check_float(max_cv, "max_cv", min=0.0)
        eps = list(self.episode_bank if episodes is None else episodes)
        eps = [e for e in eps if e.patient]  # idle/walking entries carry no procedure
        self.n_minings += 1
        if len(eps) < n_min:
            return []
        out: list[Script] = []
        used_ids: Counter = Counter()
        for group in self.cluster(eps, semantic):
            if len(group) < n_min:
                continue
            s = self._schema([eps[i] for i in group], semantic)
            if not s.cv <= cv_max:
                continue
            used_ids[s.script_id] += 1
            if used_ids[s.script_id] > 1:
                s.script_id = f"{s.script_id}#{used_ids[s.script_id]}"
            head_id = self.heads.get(s.script_id)
            if head_id is not None and head_id in self.scripts:
                cur = self.scripts[head_id]
                cur.name, cur.goal, cur.base_preconditions = s.name, s.goal, s.base_preconditions
                cur.actions, cur.postconditions, cur.durations = s.actions, s.postconditions, s.durations
                cur.instance_count, cur.cv = s.instance_count, s.cv
                cur.active = True
                out.append(cur)
            else:
                self.scripts[s.script_id] = s
                self.heads[s.script_id] = s.script_id
                out.append(s)
        if episodes is None:
            found = {x.script_id for x in out}
            for head in self.heads.values():
                if head not in found and head in self.scripts:
                    self.scripts[head].active = False
        return out

    def add_version(self, parent_id: str, positives: Sequence[str], negatives: Sequence[str],
                    reason: str = "contrastive refinement") -> Script:
        """Version v+1 of `parent_id` with requires_mention(p) / NOT_mention(n) added; the parent is deactivated."""
        if parent_id not in self.scripts:
            raise KeyError(f"unknown script {parent_id!r}")
        p = self.scripts[parent_id]
        base = parent_id.split("_v")[0] if re.search(r"_v\d+$", parent_id) else parent_id
        new_id = f"{base}_v{p.version + 1}"
        extra = [f"requires_mention({x})" for x in positives] + [f"NOT_mention({x})" for x in negatives]
        # a newer predicate replaces an older one it contradicts (requires_mention(x) vs NOT_mention(x))
        flip = {f"NOT_mention({x})" for x in positives} | {f"requires_mention({x})" for x in negatives}
        kept = [r for r in p.refinements if r not in flip]
        child = Script(script_id=new_id, name=p.name, goal=p.goal, base_preconditions=list(p.base_preconditions),
                       actions=list(p.actions), postconditions=list(p.postconditions) + [
                           f"mentions({x})" for x in positives], durations=dict(p.durations),
                       instance_count=p.instance_count, cv=p.cv,
                       refinements=list(dict.fromkeys(kept + extra)), version=p.version + 1,
                       parent_id=parent_id, active=True,
                       history=p.history + [{"from": parent_id, "reason": reason, "positives": list(positives),
                                             "negatives": list(negatives)}])
        p.active = False
        self.scripts[new_id] = child
        for b, h in list(self.heads.items()):
            if h == parent_id:
                self.heads[b] = new_id
        return child

    def to_dict(self, with_bank: bool = True) -> dict[str, Any]:
        return {"scripts": {k: s.to_dict() for k, s in self.scripts.items()}, "heads": dict(self.heads),
                "n_minings": self.n_minings,
                "episode_bank": [e.to_dict() for e in self.episode_bank] if with_bank else []}

    def load_dict(self, d: dict[str, Any]) -> None:
        self.scripts = {k: Script.from_dict(v) for k, v in d.get("scripts", {}).items()}
        self.heads = dict(d.get("heads", {}))
        self.n_minings = int(d.get("n_minings", 0))
        self.episode_bank = [EpisodicEntry.from_dict(e) for e in d.get("episode_bank", [])]


# ============================================================================================ reliability
@lru_cache(maxsize=65536)
def beta_entropy(a: float, b: float) -> float:
    """Differential entropy of Beta(a, b) in nats (<= 0 for a, b >= 1, and 0 at Beta(1, 1))."""
    from scipy.stats import beta as beta_dist

    h = float(beta_dist(a, b).entropy())
    return h if math.isfinite(h) else 0.0


class ReliabilityTracker:
    """Beta(alpha, beta) reliability posterior per script id (prior (1, 1)).

    `update(id, success)` adds 1 to alpha on success, else to beta; `expected` = alpha / (alpha + beta);
    `entropy` = H(Beta(alpha, beta)); `frozen=True` makes updates no-ops (learning disabled).
    """

    def __init__(self, prior: tuple[float, float] = (1.0, 1.0)) -> None:
        a, b = prior
        self.prior = (check_float(a, "prior alpha", min=0.0, min_open=True),
                      check_float(b, "prior beta", min=0.0, min_open=True))
        self.params: dict[str, list[float]] = {}
        self.frozen = False
        self.n_updates = 0

    def get(self, script_id: str) -> tuple[float, float]:
        if not isinstance(script_id, str):
            raise TypeError(f"script_id must be a str, got {type(script_id).__name__}")
        a, b = self.params.get(script_id, self.prior)
        return float(a), float(b)

    def update(self, script_id: str, success: bool) -> None:
        if not isinstance(success, (bool, np.bool_)):
            raise TypeError(f"success must be a bool, got {type(success).__name__}")
        if not isinstance(script_id, str):
            raise TypeError(f"script_id must be a str, got {type(script_id).__name__}")
        if self.frozen:
            return
        a, b = self.get(script_id)
        self.params[script_id] = [a + 1.0, b] if success else [a, b + 1.0]
        self.n_updates += 1

    def copy(self, src: str, dst: str) -> None:
        self.params[dst] = list(self.get(src))

    def expected(self, script_id: str) -> float:
        a, b = self.get(script_id)
        return a / (a + b)

    def entropy(self, script_id: str) -> float:
        a, b = self.get(script_id)
        return beta_entropy(a, b)

    def to_dict(self) -> dict[str, Any]:
        return {"prior": list(self.prior), "params": {k: list(v) for k, v in self.params.items()}}

    def save(self, path: str | os.PathLike) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1))
        os.replace(tmp, path)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ReliabilityTracker:
        t = cls(tuple(d.get("prior", (1.0, 1.0))))
        for k, v in d.get("params", {}).items():
            a, b = float(v[0]), float(v[1])
            if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
                raise ValueError(f"reliability of {k!r} must be positive finite (alpha, beta), got {v}")
            t.params[k] = [a, b]
        return t

    @classmethod
    def load(cls, path: str | os.PathLike) -> ReliabilityTracker:
        return cls.from_dict(json.loads(Path(path).read_text()))

