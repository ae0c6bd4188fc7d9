"""MuRGAt-Score: the fact-level attribution evaluator of Wan, Wang et al. (ICML 2026, arXiv 2602.11509), spec §2.3.

For a response with sentences R = {r_i} (after optional decontextualization, step 1):

  2. R_v  = {r_i : verifiable(r_i)}                 R_vc = {r_i in R_v : r_i has >= 1 fact with a citation}
  3. facts(r_i) = decomposition of r_i in R_v, each fact a with its citations C_a = {c_1..c_K}
  4. recall(a) = E(a, C_a)                          (is the union of the cited segments sufficient?)
     precision, "alce" (default; the paper's wording "check whether each cited segment is needed"):
        c_k precise  iff  recall(a) = 1  and  ( E(a, {c_k}) = 1  or  E(a, C_a \\ {c_k}) = 0 )
        precision(a) = mean_k precise_k
     precision, "individual" (the released code): precision(a) = mean_k E(a, {c_k});
        recall(a) = precision(a) if K = 1 else E(a, C_a)          (for K = 1 both modes agree)
     Invalid citations (bad time, reversed range, past the duration, unknown modality) stay in the denominator and
     are judged unsupported; E over a set uses its valid members; E(a, {}) = 0 without a judge call.
     A fact whose media could not be extracted (MediaExtractionError) gets P = R = None and is skipped.
  5. coverage = |R_vc| / |R_v| (0.0 when |R_v| = 0; `n_verifiable` is exposed so callers can filter)
     P = mean precision(a), R = mean recall(a) over the pooled cited facts; F1 = 2PR / (P + R) (0 if P + R = 0)
     MuRGAt-Score = coverage x F1.

Facts with no citation are excluded from the P/R pools (official behaviour). A sentence the verifiability judge
cannot read, or a fact the entailment judge cannot fully read (judges that know a fixed vocabulary say so through
an optional `parse_problem(text) -> str` method), is never dropped silently: it is listed in
`ResponseScore.unparsed` (role, text, reason) and counted in `n_unparsed`; `strict=True` raises instead. Judge calls are memoised per
response on (fact text, set of citations), so ALCE precision costs at most 1 + 2K calls per fact and fewer when
subsets repeat. `aggregate_sentences` and `attribute_fact` are shared with the simulated human, so both sides use
the same formula.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from icml26.common.validation import check_choice
from icml26.murgat.citations import (
    DEFAULT_MODALITIES,
    Citation,
    answer_letter,
    clean_output,
    extract_answer,
    extract_reasoning,
    split_sentences,
    strip_citations,
)
from icml26.murgat.judges import (
    AtomicFact,
    Decomposer,
    Decontextualizer,
    EntailmentJudge,
    MediaExtractionError,
    VerifiabilityJudge,
)
from icml26.murgat.schema import BenchmarkItem, Media, Response
from icml26.murgat.temporal import temporal_iou

__all__ = ["FactTrace", "SentenceTrace", "ResponseScore", "DatasetReport", "MurgatEvaluator", "attribute_fact",
           "aggregate_sentences", "PRECISION_MODES"]

PRECISION_MODES = ("alce", "individual")


@dataclass
class FactTrace:
    """One atomic fact: its text, citations (as written), P/R (None when skipped) and per-citation judgments
    (raw citation -> E(a, {c}); None where it was not needed)."""

    text: str
    citations: list[str]
    precision: float | None = None
    recall: float | None = None
    judgments: dict[str, bool | None] = field(default_factory=dict)
    precise: list[bool] = field(default_factory=list)
    iou: float | None = None
    unparsed: str = ""  # why the entailment judge could not fully read the fact ("" when it could)


@dataclass
class SentenceTrace:
    text: str
    verifiable: bool
    covered: bool = False
    facts: list[FactTrace] = field(default_factory=list)
    unparsed: str = ""  # why the verifiability judge could not read the sentence ("" when it could)


@dataclass
class ResponseScore:
    """Scores of one response (all in [0, 1]) with the per-sentence and per-fact trace."""

    coverage: float
    precision: float
    recall: float
    f1: float
    murgat_score: float
    n_sentences: int
    n_verifiable: int
    n_covered: int
    n_facts: int = 0
    n_judge_calls: int = 0
    mean_iou: float | None = None
    sentences: list[SentenceTrace] = field(default_factory=list)
    unparsed: list[dict[str, str]] = field(default_factory=list)  # {"role", "text", "reason"} per unread text

    @property
    def n_unparsed(self) -> int:
        """Sentences (verifier) and cited facts (entailment judge) that a judge could not fully read."""
        return len(self.unparsed)

    def to_dict(self, trace: bool = True) -> dict[str, Any]:
        d = asdict(self)
        d["n_unparsed"] = self.n_unparsed
        if not trace:
            d.pop("sentences")
        return d


def attribute_fact(judge: Callable[[tuple[int, ...]], bool], valid: Sequence[bool], mode: str = "alce"
                   ) -> tuple[float, float, list[bool | None], list[bool]]:
    """Precision and recall of one fact (step 4).

    Args:
        judge: subset of citation indices -> E(a, subset); only ever called with non-empty subsets of valid ones.
        valid: validity of each of the fact's K >= 1 citations.
        mode: "alce" or "individual".
    Returns:
        (precision, recall, per-citation E(a, {c_k}) (None where not evaluated), per-citation precise flags).
    """
    check_choice(mode, "precision_mode", PRECISION_MODES)
    K = len(valid)
    if K == 0:
        raise ValueError("valid must describe at least one citation (uncited facts are excluded before this)")
    memo: dict[tuple[int, ...], bool] = {}

    def E(subset: Iterable[int]) -> bool:
        s = tuple(sorted(set(subset)))
        if not s:
            return False
        if s not in memo:
            memo[s] = bool(judge(s))
        return memo[s]

    vidx = [k for k in range(K) if valid[k]]
    singles: list[bool | None] = [None] * K
    if mode == "alce":
        rec = E(vidx)
        precise = []
        for k in range(K):
            if not valid[k]:
                singles[k] = False
                precise.append(False)
                continue
            if not rec:
                precise.append(False)
                continue
            singles[k] = E([k])
            precise.append(bool(singles[k] or not E([j for j in vidx if j != k])))
        return float(np.mean(precise)), float(rec), singles, precise
    for k in range(K):
        singles[k] = E([k]) if valid[k] else False
    prec = float(np.mean([bool(s) for s in singles]))
    rec = prec if K == 1 else float(E(vidx))
    return prec, rec, singles, [bool(s) for s in singles]


def aggregate_sentences(sentences: Sequence[SentenceTrace]) -> dict[str, float | int]:
    """Step 5 (official `calculate_entry_scores`): coverage, pooled P and R, F1 and the MuRGAt-Score."""
    n_v = n_c = 0
    ps, rs = [], []
    for s in sentences:
        if not s.verifiable:
            continue
        n_v += 1
        cited = [f for f in s.facts if f.citations]
        if cited:
            n_c += 1
        for f in cited:
            if f.precision is not None:
                ps.append(f.precision)
            if f.recall is not None:
                rs.append(f.recall)
    coverage = n_c / n_v if n_v else 0.0
    p = float(np.mean(ps)) if ps else 0.0
    r = float(np.mean(rs)) if rs else 0.0
    f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return {"coverage": coverage, "precision": p, "recall": r, "f1": f1, "murgat_score": coverage * f1,
            "n_verifiable": n_v, "n_covered": n_c, "n_facts": sum(1 for s in sentences if s.verifiable
                                                                  for f in s.facts if f.citations)}


class MurgatEvaluator:
    """Scores responses with pluggable judges (spec §5 `murgat.evaluator`).

    Args:
        verifier: a `VerifiabilityJudge` (step 2).
        decomposer: a `Decomposer` (step 3).
        entailer: an `EntailmentJudge` (step 4); sees only the cited segments.
        decontextualizer: a `Decontextualizer` (step 1); default leaves the text unchanged.
        precision_mode: "alce" (default) or "individual" (released code).
        allowed_modalities: modality words of valid citations (default ("visual", "audio")).
        reasoning_only: score only the text between "Reasoning:" and "Answer:" (default True; the whole text
            when the markers are absent), after removing <think> blocks.
        strip_mode: how fact text is cleaned of citations before judging ("citations_only" or
            "all_parentheticals", the official cleaner).
        strict: raise ValueError when a judge cannot read a sentence or a cited fact (default False: such texts
            are scored as the judge decides and listed in `ResponseScore.unparsed`).
    """

    def __init__(self, verifier: VerifiabilityJudge, decomposer: Decomposer, entailer: EntailmentJudge,
                 decontextualizer: Decontextualizer | None = None, precision_mode: str = "alce",
                 allowed_modalities: Iterable[str] | None = DEFAULT_MODALITIES, reasoning_only: bool = True,
                 strip_mode: str = "citations_only", strict: bool = False):
        self.verifier = verifier
        self.decomposer = decomposer
        self.entailer = entailer
        self.decontextualizer = decontextualizer
        self.precision_mode = precision_mode
        self.allowed_modalities = allowed_modalities
        self.reasoning_only = reasoning_only
        self.strip_mode = strip_mode
        self.strict = strict
        self._validate()
        self.n_judge_calls = 0
        self._front: dict[tuple, tuple[str, list[tuple[str, bool, list[AtomicFact]]]]] = {}

    def with_entailer(self, entailer: EntailmentJudge) -> MurgatEvaluator:
        """A copy with another entailment judge that shares this evaluator's steps 1-3 and their memo (ablations
        re-use the decontextualization, verifiability and decomposition of each response)."""
        ev = MurgatEvaluator(self.verifier, self.decomposer, entailer, self.decontextualizer, self.precision_mode,
                             self.allowed_modalities, self.reasoning_only, self.strip_mode, self.strict)
        ev._front = self._front
        return ev

    def analyse(self, text: str) -> tuple[str, list[tuple[str, bool, list[AtomicFact], str]]]:
        """Steps 1-3 of one response: (decontextualized body, [(sentence, verifiable, facts, parse problem)]),
        the parse problem being the verifier's reason for not reading the sentence ("" if it could). Memoised per text
        (judges are assumed deterministic; the memo holds up to 20000 texts and is keyed on the judges' identity and
        fit version, so replacing or refitting a judge is seen)."""
        if not isinstance(text, str):
            raise ValueError(f"text must be a str, got {type(text).__name__}")
        # identity and fit version of the judges: replacing or refitting one invalidates its memo entries
        key = tuple((id(j), getattr(j, "_version", 0)) for j in (self.verifier, self.decomposer,
                                                                  self.decontextualizer)) + (self.reasoning_only, text)
        hit = self._front.get(key)
        if hit is not None:
            return hit
        body = clean_output(text)
        if self.reasoning_only:
            body = extract_reasoning(body)
        if self.decontextualizer is not None:
            body = self.decontextualizer.rewrite(body)
            if not isinstance(body, str):
                raise TypeError(f"decontextualizer.rewrite must return a str, got {type(body).__name__}")
        out = []
        problem = getattr(self.verifier, "parse_problem", None)
        for sent in split_sentences(body):
            ok = bool(self.verifier.is_verifiable(sent, body))
            why = str(problem(sent, body) or "") if callable(problem) else ""
            facts: list[AtomicFact] = []
            if ok:
                facts = self.decomposer.decompose(sent, body)
                if not isinstance(facts, list):
                    raise TypeError(f"decomposer.decompose must return a list of AtomicFact, got "
                                    f"{type(facts).__name__}")
                for fact in facts:
                    if not isinstance(fact, AtomicFact):
                        raise TypeError(f"decomposer.decompose must return AtomicFact objects, got "
                                        f"{type(fact).__name__}")
            out.append((sent, ok, facts, why))
        if len(self._front) >= 20000:
            self._front.clear()
        self._front[key] = (body, out)
        return body, out

    def _validate(self) -> None:
        for name, proto, meth in (("verifier", VerifiabilityJudge, "is_verifiable"),
                                  ("decomposer", Decomposer, "decompose"), ("entailer", EntailmentJudge, "entails")):
            if not callable(getattr(getattr(self, name), meth, None)):
                raise TypeError(f"{name} must implement {proto.__name__}.{meth}(), got "
                                f"{type(getattr(self, name)).__name__}")
        if self.decontextualizer is not None and not callable(getattr(self.decontextualizer, "rewrite", None)):
            raise TypeError("decontextualizer must implement rewrite(text) or be None")
        check_choice(self.precision_mode, "precision_mode", PRECISION_MODES)
        check_choice(self.strip_mode, "strip_mode", ("citations_only", "all_parentheticals"))
        if not isinstance(self.reasoning_only, bool):
            raise TypeError(f"reasoning_only must be True or False, got {self.reasoning_only!r}")
        if not isinstance(self.strict, bool):
            raise TypeError(f"strict must be True or False, got {self.strict!r}")
        if self.allowed_modalities is not None:
            mods = (self.allowed_modalities,) if isinstance(self.allowed_modalities, str) else \
                tuple(self.allowed_modalities)
            if not mods or not all(isinstance(m, str) and m.strip() for m in mods):
                raise ValueError("allowed_modalities must be non-empty strings (or None for any word)")

    def _fact_citations(self, fact: AtomicFact, media: Media) -> list[Citation]:
        """Re-check validity against this media's duration and the allowed modalities."""
        allowed = None if self.allowed_modalities is None else \
            {m.lower() for m in ((self.allowed_modalities,) if isinstance(self.allowed_modalities, str)
                                 else self.allowed_modalities)}
        out = []
        for c in fact.citations:
            if c.valid and (c.end > media.duration or (allowed is not None and c.modality not in allowed)):
                reason = "time beyond the media duration" if c.end > media.duration else "modality not allowed"
                c = Citation(c.modality, c.start, c.end, c.raw, False, reason)
            out.append(c)
        return out

    def score_response(self, text: str, media: Media, evidence: Sequence[str] | None = None) -> ResponseScore:
        """Score one response on its media.

        Args:
            text: the model's full output (str).
            media: the `Media` the response cites.
            evidence: optional ids of gold events; each cited fact then reports its best temporal IoU against the
                gold events of the same modality, and `mean_iou` their mean.
        """
        if not isinstance(text, str):
            raise ValueError(f"text must be a str, got {type(text).__name__}")
        if not isinstance(media, Media):
            raise TypeError(f"media must be a Media, got {type(media).__name__}")
        self._validate()
        gold = []
        if evidence is not None:
            if isinstance(evidence, str):
                raise TypeError("evidence must be a list of event ids, got a str")
            gold = [media.event(e) for e in evidence]
        _, parsed = self.analyse(text)
        sentences = [p[0] for p in parsed]
        calls = 0
        traces: list[SentenceTrace] = []
        ious: list[float] = []
        unparsed: list[dict[str, str]] = []
        problem = getattr(self.entailer, "parse_problem", None)
        for sent, ok, facts, why in parsed:
            st = SentenceTrace(sent, ok, unparsed=why)
            if why:
                self._unparsed(unparsed, "verifier", sent, why)
            if ok:
                for fact in facts:
                    cites = self._fact_citations(fact, media)
                    ft = FactTrace(fact.text, [c.raw for c in cites])
                    if cites:
                        fact_text = strip_citations(fact.text, self.strip_mode, self.allowed_modalities)
                        if callable(problem):
                            ft.unparsed = str(problem(fact_text) or "")
                            if ft.unparsed:
                                self._unparsed(unparsed, "entailer", fact_text, ft.unparsed)
                        n_before = [0]

                        def judge(subset: tuple[int, ...], _c=cites, _t=fact_text, _n=n_before) -> bool:
                            _n[0] += 1
                            return bool(self.entailer.entails(_t, [_c[i] for i in subset], media))

                        try:
                            p, r, singles, precise = attribute_fact(judge, [c.valid for c in cites],
                                                                    self.precision_mode)
                            ft.precision, ft.recall, ft.precise = p, r, precise
                            ft.judgments = {c.raw: s for c, s in zip(cites, singles)}
                        except MediaExtractionError:
                            ft.precision = ft.recall = None
                        calls += n_before[0]
                        if gold:
                            best = [max((temporal_iou((c.start, c.end), (g.start, g.end)) for g in gold
                                         if g.modality == c.modality), default=0.0) for c in cites if c.valid]
                            ft.iou = float(np.mean(best)) if best else 0.0
                            ious.append(ft.iou)
                    st.facts.append(ft)
                st.covered = any(f.citations for f in st.facts)
            traces.append(st)
        agg = aggregate_sentences(traces)
        self.n_judge_calls += calls
        return ResponseScore(coverage=agg["coverage"], precision=agg["precision"], recall=agg["recall"],
                             f1=agg["f1"], murgat_score=agg["murgat_score"], n_sentences=len(sentences),
                             n_verifiable=int(agg["n_verifiable"]), n_covered=int(agg["n_covered"]),
                             n_facts=int(agg["n_facts"]), n_judge_calls=calls,
                             mean_iou=float(np.mean(ious)) if ious else None, sentences=traces, unparsed=unparsed)

    def _unparsed(self, out: list[dict[str, str]], role: str, text: str, reason: str) -> None:
        if self.strict:
            judge = self.verifier if role == "verifier" else self.entailer
            raise ValueError(f"text: the {role} ({type(judge).__name__}) cannot read {text!r}: {reason} "
                             "(strict=True; pass strict=False to score it and list it in ResponseScore.unparsed)")
        out.append({"role": role, "text": text, "reason": reason})

    def score_dataset(self, items: Sequence[BenchmarkItem], responses: Sequence[Response],
                      progress: str | None = None) -> DatasetReport:
        """Score every response against its item (matched by `item_id`); also answer accuracy per model."""
        if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
            raise TypeError("items must be a list of BenchmarkItem")
        if isinstance(responses, (str, bytes)) or not isinstance(responses, Iterable):
            raise TypeError("responses must be a list of Response")
        by_id: dict[str, BenchmarkItem] = {}
        for i, it in enumerate(items):
            if not isinstance(it, BenchmarkItem):
                raise TypeError(f"items[{i}] must be a BenchmarkItem, got {type(it).__name__}")
            if it.id in by_id:
                raise ValueError(f"items has the id {it.id!r} twice")
            by_id[it.id] = it
        responses = list(responses)
        for i, r in enumerate(responses):
            if not isinstance(r, Response):
                raise TypeError(f"responses[{i}] must be a Response, got {type(r).__name__}")
            if r.item_id not in by_id:
                raise ValueError(f"responses[{i}].item_id {r.item_id!r} is not an item id")
        from tqdm.auto import tqdm

        t0 = time.perf_counter()
        rows = []
        for r in tqdm(responses, desc=progress, disable=progress is None, leave=False):
            it = by_id[r.item_id]
            sc = self.score_response(r.text, it.media, evidence=it.evidence or None)
            letter = answer_letter(extract_answer(r.text), len(it.options))
            rows.append({"item_id": r.item_id, "model": r.model, "correct": letter == it.answer,
                         "answer": letter, "score": sc})
        return DatasetReport(rows, seconds=time.perf_counter() - t0)


@dataclass
class DatasetReport:
    """Per-response rows {item_id, model, correct, answer, score: ResponseScore} with summaries."""

    rows: list[dict[str, Any]]
    seconds: float = 0.0

    _METRICS = ("murgat_score", "coverage", "precision", "recall", "f1")

    def means(self) -> dict[str, float]:
        """Dataset means of the scores and the answer accuracy (NaN when there are no rows)."""
        if not self.rows:
            return {**{k: math.nan for k in (*self._METRICS, "accuracy")}, "n_unparsed": 0}
        out = {k: float(np.mean([getattr(r["score"], k) for r in self.rows])) for k in self._METRICS}
        out["accuracy"] = float(np.mean([r["correct"] for r in self.rows]))
        out["n_unparsed"] = int(sum(r["score"].n_unparsed for r in self.rows))  # texts a judge could not read
        return out

    def per_model(self) -> dict[str, dict[str, float]]:
        """model -> means (and n)."""
        models = list(dict.fromkeys(r["model"] for r in self.rows))
        out = {}
        for m in models:
            sub = DatasetReport([r for r in self.rows if r["model"] == m])
            out[m] = {**sub.means(), "n": len(sub.rows)}
        return out

    def to_dataframe(self):
        """One row per response (pandas)."""
        import pandas as pd

        return pd.DataFrame([{"item_id": r["item_id"], "model": r["model"], "correct": r["correct"],
                              "answer": r["answer"], **r["score"].to_dict(trace=False)} for r in self.rows])

    def to_json(self, trace: bool = False) -> list[dict[str, Any]]:
        """JSON-ready records (with the per-sentence trace when `trace`)."""
        return [{"item_id": r["item_id"], "model": r["model"], "correct": r["correct"], "answer": r["answer"],
                 **r["score"].to_dict(trace=trace)} for r in self.rows]
