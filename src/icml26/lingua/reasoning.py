"""The Belief-Action-Verification machinery of LINGUA (spec sections 2.3-2.4).

- `infer_goal_type`: the 6-way goal taxonomy of a question (keyword rules; the official code asks the LLM first).
- `ExpectedUtilityRanker`: EU_k = Rel_k * E[rho_k] - Risk_k + lambda_info * H(Beta(alpha_k, beta_k)),
  lambda_info = 0.1, where Rel_k is the mean over preconditions of the best (clipped) cosine to an observed
  description, Risk_k the mean clipped cosine of the script text to this question's failure narratives, H the
  differential entropy of the Beta posterior (<= 0, maximal at Beta(1, 1): a relative bonus for uncertain
  scripts, spec section 9 - the sign is intended). `requires_mention(x)` / `NOT_mention(y)` (added by contrastive
  refinement) are evaluated as predicates: 1 when x is mentioned / y is not, else 0.
- `ActionVerifier`: c_post = share of postconditions matched (cosine > gamma_post = 0.8) by an observed outcome
  (1 if there are none, 0 if nothing was observed); c_temp = share of observed durations in mu +- 2 sigma of the
  matching action (1 without constraints). Grounded iff c_post >= 0.8 and c_temp >= 0.5.
- `ReflectionMonitor`: reflection triggers over the last 3 decisions (all failed; all coverage < 0.3; mean
  pairwise 1 - cosine of their hypotheses > 0.7).
- `ContrastiveRefiner`: per-script success/failure descriptions; with min(|S|, |F|) >= 3, discriminators (LLM, or
  the frequency rule) give version v+1 with requires_mention / NOT_mention predicates.
- `should_consolidate`: a reflected hypothesis enters episodic memory iff success, confidence > 0.6, novelty > 0.3.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from icml26.common.validation import check_float, check_int
from icml26.lingua.memory import EpisodicEntry, ProceduralMemory, ReliabilityTracker, Script
from icml26.lingua.text import stem

__all__ = ["GOAL_TYPES", "infer_goal_type", "ExpectedUtilityRanker", "ActionVerifier", "GroundingResult",
           "ReflectionMonitor", "ContrastiveRefiner", "should_consolidate", "frequency_discriminators"]

GOAL_TYPES = ("identify_causal_event", "verify_temporal_sequence", "identify_agent", "trace_action_sequence",
              "locate_object", "general_qa")


def infer_goal_type(question: str) -> str:
    """The 6-way goal hypothesis of a question by keywords (the official fallback of its LLM goal inferencer)."""
    if not isinstance(question, str):
        raise TypeError(f"question must be a str, got {type(question).__name__}")
    q = " " + re.sub(r"[^a-z ]", " ", question.lower()) + " "
    if re.search(r" (why|because|reason|purpose|cause) ", q):
        return "identify_causal_event"
    if re.search(r" (before|after|then|first|last|next|previous|while|when) ", q):
        return "verify_temporal_sequence"
    if re.search(r" who ", q):
        return "identify_agent"
    if re.search(r" (how|steps|sequence|procedure) ", q):
        return "trace_action_sequence"
    if re.search(r" where ", q):
        return "locate_object"
    return "general_qa"


_MENTION = re.compile(r"^(requires_mention|NOT_mention)\((.+)\)$")


class ExpectedUtilityRanker:
    """Ranks scripts by expected utility (spec 2.3).

    Args: embedder (`TextEmbedder`), lambda_info (default 0.1).
    """

    def __init__(self, embedder, lambda_info: float = 0.1) -> None:
        self.embedder = embedder
        self.lambda_info = check_float(lambda_info, "lambda_info")

    def relevance(self, script: Script, observed: Sequence[str], _cache: tuple | None = None) -> float:
        """Rel_k: mean over preconditions of max(0, best cosine to an observed description); 0 without either."""
        pre = script.preconditions
        if not pre or not observed:
            return 0.0
        words, obs = _cache if _cache is not None else self._observed(observed)
        sem = [p for p in pre if not _MENTION.match(p)]
        vals = []
        for p in pre:
            m = _MENTION.match(p)
            if m:
                x = m[2].strip().lower()
                hit = x in words or stem(x) in words
                vals.append(float(hit if m[1] == "requires_mention" else not hit))
        if sem:
            P = self.embedder.encode(sem)
            vals += list(np.clip((P @ obs.T).max(1), 0.0, None))
        return float(np.mean(vals))

    def _observed(self, observed: Sequence[str]) -> tuple[set[str], np.ndarray]:
        words: set[str] = set()  # raw words and their stems (mention predicates test either)
        for o in observed:
            raw = re.findall(r"[a-z0-9]+", o.lower())
            words.update(raw)
            words.update(stem(w) for w in raw)
        return words, self.embedder.encode(list(observed))

    def risk(self, script: Script, failures: Sequence[str]) -> float:
        """Risk_k: mean max(0, cosine) between the script text and the failure narratives; 0 without failures."""
        if not failures:
            return 0.0
        s = self.embedder.encode([script.text])[0]
        F = self.embedder.encode(list(failures))
        return float(np.mean(np.clip(F @ s, 0.0, None)))

    def utility(self, script: Script, tracker: ReliabilityTracker, observed: Sequence[str],
                failures: Sequence[str] = (), _cache: tuple | None = None) -> tuple[float, dict[str, float]]:
        """(EU_k, its parts {rel, rho, risk, entropy})."""
        rel = self.relevance(script, observed, _cache)
        rho = tracker.expected(script.script_id)
        risk = self.risk(script, failures)
        h = tracker.entropy(script.script_id)
        eu = rel * rho - risk + self.lambda_info * h
        return float(eu), {"rel": rel, "rho": rho, "risk": risk, "entropy": h}

    def rank(self, scripts: Sequence[Script], tracker: ReliabilityTracker, observed: Sequence[str],
             failures: Sequence[str] = ()) -> list[tuple[Script, float, dict[str, float]]]:
        """Scripts sorted by EU, best first (ties: script id)."""
        cache = self._observed(observed) if observed else None
        scored = [(s, *self.utility(s, tracker, observed, failures, cache)) for s in scripts]
        return sorted(scored, key=lambda x: (-x[1], x[0].script_id))


@dataclass
class GroundingResult:
    """Outcome of verifying one script against the observations around the cited evidence."""

    script_id: str | None
    post_coverage: float
    temporal_consistency: float
    grounded: bool
    span: tuple[float, float] | None
    observed_outcomes: list[str] = field(default_factory=list)
    observed_durations: list[float] = field(default_factory=list)


class ActionVerifier:
    """Postcondition coverage and temporal consistency (spec 2.3).

    Args: embedder, gamma_post (default 0.8), c_temp_min (default 0.5), window_s: observations within this many
    seconds of the evidence are checked (default 8 s; the official code checks the last 5 entries of the video,
    which ignores where the evidence is).
    """

    def __init__(self, embedder, gamma_post: float = 0.8, c_temp_min: float = 0.5, window_s: float = 8.0) -> None:
        self.embedder = embedder
        self.gamma_post = check_float(gamma_post, "gamma_post", min=-1.0, max=1.0)
        self.c_temp_min = check_float(c_temp_min, "c_temp_min", min=0.0, max=1.0)
        self.window_s = check_float(window_s, "window_s", min=0.0)

    def postcondition_coverage(self, expected: Sequence[str], observed: Sequence[str]) -> float:
        """|{phi in expected: some observed outcome has cosine > gamma_post}| / |expected|; 1 if expected is empty,
        0 if nothing was observed."""
        expected = [e for e in expected if isinstance(e, str)]
        if not expected:
            return 1.0
        observed = [o for o in observed if isinstance(o, str) and o]
        if not observed:
            return 0.0
        E = self.embedder.encode(list(expected))
        obs = self.embedder.encode(observed)
        return float(np.mean((E @ obs.T).max(1) > self.gamma_post))

    @staticmethod
    def temporal_consistency(durations: Sequence[float], stats: Sequence[tuple[float, float] | None]) -> float:
        """Share of durations d_i with mu_i - 2 sigma_i <= d_i <= mu_i + 2 sigma_i (bounds inclusive); a duration
        whose stats are None is not constrained. 1.0 when nothing is constrained."""
        if len(durations) != len(stats):
            raise ValueError(f"durations and stats must have equal length, got {len(durations)} and {len(stats)}")
        ok = n = 0
        for d, st in zip(durations, stats):
            if st is None:
                continue
            mu, sd = st
            n += 1
            # a tiny tolerance so a duration exactly at mu +- 2 sigma counts despite float rounding
            ok += (mu - 2 * sd) - 1e-9 <= d <= (mu + 2 * sd) + 1e-9
        return 1.0 if n == 0 else ok / n

    def verify(self, script: Script, evidence: EpisodicEntry, entries: Sequence[EpisodicEntry]) -> GroundingResult:
        """Verify `script` against the entries within `window_s` of `evidence` (spec 2.3)."""
        lo, hi = evidence.t_s - self.window_s, evidence.t_e + self.window_s
        near = [e for e in entries if e.t_e >= lo and e.t_s <= hi]
        outcomes = [e.outcome for e in near if e.outcome]
        c_post = self.postcondition_coverage(script.postconditions, outcomes)
        durs = [e.duration for e in near if e.roles in script.durations]
        stats = [script.durations[e.roles] for e in near if e.roles in script.durations]
        c_temp = self.temporal_consistency(durs, stats)
        grounded = c_post >= self.gamma_post and c_temp >= self.c_temp_min
        return GroundingResult(script.script_id, c_post, c_temp, bool(grounded), (evidence.t_s, evidence.t_e),
                               outcomes, durs)


class ReflectionMonitor:
    """Meta-reflection triggers over the last `window` decisions (spec 2.4).

    Args: embedder, window (3), coverage_trigger (0.3), drift_trigger (0.7).
    """

    def __init__(self, embedder, window: int = 3, coverage_trigger: float = 0.3, drift_trigger: float = 0.7) -> None:
        self.embedder = embedder
        self.window = check_int(window, "window", min=1)
        self.coverage_trigger = check_float(coverage_trigger, "coverage_trigger", min=0.0, max=1.0)
        self.drift_trigger = check_float(drift_trigger, "drift_trigger", min=0.0, max=2.0)
        self.decisions: list[tuple[str, float, bool]] = []

    def add(self, hypothesis: str, coverage: float, success: bool) -> None:
        if not isinstance(hypothesis, str):
            raise TypeError("hypothesis must be a str")
        self.decisions.append((hypothesis, check_float(coverage, "coverage", min=0.0, max=1.0), bool(success)))
        del self.decisions[:-50]

    def reset(self) -> None:
        self.decisions.clear()

    def triggers(self) -> list[str]:
        """Names of the triggers that fire ("failures", "low_coverage", "drift"); [] with fewer than `window`."""
        recent = self.decisions[-self.window:]
        if len(recent) < self.window:
            return []
        out = []
        if not any(s for _, _, s in recent):
            out.append("failures")
        if all(c < self.coverage_trigger for _, c, _ in recent):
            out.append("low_coverage")
        if len(recent) >= 2:
            E = self.embedder.encode([h for h, _, _ in recent])
            iu = np.triu_indices(len(recent), 1)
            if float(np.mean(1.0 - (E @ E.T)[iu])) > self.drift_trigger:
                out.append("drift")
        return out

    def should_reflect(self) -> bool:
        return bool(self.triggers())


def frequency_discriminators(successes: Sequence[str], failures: Sequence[str],
                             max_terms: int = 5) -> tuple[list[str], list[str]]:
    """The fallback discriminator rule of spec 2.4: words longer than 3 letters among the 10 most frequent of one
    set that are absent from the other or have less than half its count there; at most `max_terms` each."""
    def counts(texts):
        return Counter(w for t in texts for w in re.findall(r"[a-z]+", t.lower()) if len(w) > 3)

    cs, cf = counts(successes), counts(failures)

    def pick(a, b):
        top = [w for w, _ in sorted(a.items(), key=lambda x: (-x[1], x[0]))[:10]]
        return [w for w in top if b.get(w, 0) == 0 or b[w] < 0.5 * a[w]][:max_terms]

    return pick(cs, cf), pick(cf, cs)


class ContrastiveRefiner:
    """Success/failure descriptions per script and refinement into a new version (spec 2.4).

    Args: n_contrast (3), max_terms (5), llm: optional LLM asked for the discriminators (its reply must hold
    lines "positive: a, b" and "negative: c"); without one (default) the frequency rule is used.
    """

    def __init__(self, n_contrast: int = 3, max_terms: int = 5, llm=None) -> None:
        self.n_contrast = check_int(n_contrast, "n_contrast", min=1)
        self.max_terms = check_int(max_terms, "max_terms", min=1)
        self.llm = llm
        self.examples: dict[str, dict[str, list[str]]] = defaultdict(lambda: {"S": [], "F": []})

    def add(self, script_id: str, description: str, success: bool) -> None:
        if not isinstance(description, str):
            raise TypeError("description must be a str")
        self.examples[script_id]["S" if success else "F"].append(description)

    def can_refine(self, script_id: str) -> bool:
        ex = self.examples.get(script_id)
        return ex is not None and min(len(ex["S"]), len(ex["F"])) >= self.n_contrast

    def discriminators(self, script_id: str) -> tuple[list[str], list[str]]:
        ex = self.examples[script_id]
        if self.llm is not None:
            prompt = ("Successful uses of a script:\n" + "\n".join(f"- {s}" for s in ex["S"][-10:])
                      + "\nFailed uses:\n" + "\n".join(f"- {s}" for s in ex["F"][-10:])
                      + "\nList words that discriminate them.\npositive: <words of the successes>\n"
                        "negative: <words of the failures>")
            reply = self.llm.generate(prompt, 64, 0.1)
            pos = re.search(r"positive:\s*(.*)", reply, re.I)
            neg = re.search(r"negative:\s*(.*)", reply, re.I)
            if pos or neg:
                def words(m):
                    return [w for w in re.findall(r"[a-z]+", m[1].lower()) if len(w) > 3][: self.max_terms] if m else []

                return words(pos), words(neg)
        return frequency_discriminators(ex["S"], ex["F"], self.max_terms)

    def refine(self, procedural: ProceduralMemory, tracker: ReliabilityTracker, script_id: str) -> Script | None:
        """New version of `script_id` when it can be refined and discriminators exist (alpha/beta copied to it,
        parent deactivated); the examples restart for the new version. None otherwise."""
        if not self.can_refine(script_id) or script_id not in procedural.scripts:
            return None
        pos, neg = self.discriminators(script_id)
        if not pos and not neg:
            return None
        child = procedural.add_version(script_id, pos, neg)
        tracker.copy(script_id, child.script_id)
        self.examples.pop(script_id, None)
        return child

    def to_dict(self) -> dict:
        return {k: dict(v) for k, v in self.examples.items()}

    def load_dict(self, d: dict) -> None:
        self.examples = defaultdict(lambda: {"S": [], "F": []})
        for k, v in d.items():
            self.examples[k] = {"S": list(v.get("S", [])), "F": list(v.get("F", []))}


def should_consolidate(success: bool, confidence: float, novelty: float, min_confidence: float = 0.6,
                       min_novelty: float = 0.3) -> bool:
    """Spec 2.4: consolidate a reflected hypothesis iff success and confidence > 0.6 and novelty > 0.3."""
    return bool(success) and float(confidence) > min_confidence and float(novelty) > min_novelty
