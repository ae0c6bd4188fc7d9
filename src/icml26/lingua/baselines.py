"""The paper's baselines behind LINGUA's interface (spec sections 4 and 6.2).

- `DenseCaptionAgent`: caption EVERY frame (or every `stride`-th: uniform 1 fps at stride = fps), answer with the
  same LLM over the raw caption list: no typed memory, no scripts, no verification (LLoVi-style "dense-frame
  methods"). Grounding is post-hoc frame localisation as in the NExT-GQA baselines around the cited caption's
  frame t*: "pm1" = [t* - 1 s, t* + 1 s] (spec 6.2) and "threshold" = the run of frames around t* whose relevance
  (cosine of caption + its SRL roles and question + answer) is >= `rel_fraction` x the maximum, one-frame dips
  tolerated (review note 3: the gate compares against this stronger grounder; "pm1" is reported beside it).
- `UniformSamplingAgent`: LINGUA with `budget` evenly spaced frames instead of event-driven ones (isolates frame
  selection; everything else, memory included, is LINGUA's).
- LINGUA without learning is `LinguaAgent(LinguaConfig(learning=False))`; the ablations of spec section 4 are the
  `use_procedural`, `use_verification`, `use_reliability`, `use_merging` switches of `LinguaConfig`.
- `RevealedAnswers` + `WithRevealedAnswers(agent, memory)` (issue 35): the same revealed answers for every arm.
  After each stream question the true option is revealed; any agent wrapped with the memory answers a question it
  has seen revealed before, always with the same answer, with that answer (a lookup by question text), and
  otherwise answers itself. Without it only LINGUA would profit from feedback, and questions whose answer follows
  from their text alone (causal ones: "Why did the person open the fridge?") would count as memory.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from icml26.common.validation import check_choice, check_float, check_int
from icml26.lingua.backends import HashingEmbedder, RuleBasedLLM
from icml26.lingua.lingua import (AnswerResult, LinguaAgent, LinguaConfig, PerceptionReport, _check_question,
                                  perceive, uniform_indices)
from icml26.lingua.memory import RuleBasedSRL
from icml26.lingua.prompts import LETTERS, Observation, belief_prompt, parse_answer
from icml26.lingua.text import overlap, tokens

__all__ = ["DenseCaptionAgent", "UniformSamplingAgent", "RevealedAnswers", "WithRevealedAnswers"]


class DenseCaptionAgent:
    """Caption every `stride`-th frame and answer from the caption list.

    Args:
        captioner: `Captioner` (required). llm: `LLM` (default `RuleBasedLLM`). embedder: `TextEmbedder` for the
        relevance grounder (default `HashingEmbedder`). stride: caption every stride-th frame (default 1).
        grounding: which span `answer` returns, "threshold" (default) or "pm1"; both are in `alt_spans`.
        window_s: half width of the "pm1" span (1 s). rel_fraction: relevance cut of "threshold" (0.5).
        srl: caption parser for the roles column (default with the captioner's lexicon).
    """

    def __init__(self, captioner, llm=None, embedder=None, stride: int = 1, grounding: str = "threshold",
                 window_s: float = 1.0, rel_fraction: float = 0.5, srl: RuleBasedSRL | None = None,
                 max_tokens: int = 48, temperature: float = 0.1) -> None:
        if captioner is None or not hasattr(captioner, "caption"):
            raise TypeError("captioner must have a caption(frame, detections) method")
        self.captioner = captioner
        self.llm = llm if llm is not None else RuleBasedLLM()
        self.embedder = embedder if embedder is not None else HashingEmbedder()
        self.stride = check_int(stride, "stride", min=1)
        self.grounding = check_choice(grounding, "grounding", ("threshold", "pm1"))
        self.window_s = check_float(window_s, "window_s", min=0.0)
        self.rel_fraction = check_float(rel_fraction, "rel_fraction", min=0.0, max=1.0)
        self.srl = srl if srl is not None else RuleBasedSRL(getattr(captioner, "lexicon", None))
        self.max_tokens = check_int(max_tokens, "max_tokens", min=1)
        self.temperature = check_float(temperature, "temperature", min=0.0)
        self.report: PerceptionReport | None = None
        self._obs: list[Observation] = []

    def observe(self, video, fps: float | None = None) -> PerceptionReport:
        self.stride = check_int(self.stride, "stride", min=1)
        frames = getattr(video, "frames", video)
        n = len(frames) if hasattr(frames, "__len__") else 0
        if n < 1:
            raise ValueError("video must have at least one frame")
        report = perceive(video, None, None, self.captioner, LinguaConfig(), frame_idx=list(range(0, n, self.stride)),
                          fps=fps)
        self.ingest(report)
        return report

    def ingest(self, report: PerceptionReport) -> None:
        if not isinstance(report, PerceptionReport):
            raise TypeError(f"report must be a PerceptionReport, got {type(report).__name__}")
        if not report.kept_idx:
            raise ValueError("report has no captioned frame")
        dt = self.stride / report.fps
        obs = []
        for k, (i, cap) in enumerate(zip(report.kept_idx, report.captions)):
            r = self.srl.parse(cap)
            roles = " ".join(x for x in (r["Action"], r["Patient"], r["Location"]) if x)
            obs.append(Observation(k + 1, i / report.fps, i / report.fps + dt, roles, cap))
        self.report, self._obs = report, obs

    def answer(self, question: str, options: list[str]) -> AnswerResult:
        question, options = _check_question(question, options)
        if self.report is None:
            raise ValueError("call observe(video) before answer()")
        prompt = belief_prompt(question, options, self._obs)
        reply = self.llm.generate(prompt, self.max_tokens, self.temperature)
        if not isinstance(reply, str):
            raise TypeError(f"llm.generate returned {type(reply).__name__}, expected str")
        idx, ev = parse_answer(reply, len(options))
        if idx is None:
            rt = tokens(reply)
            idx = int(np.argmax([overlap(rt, tokens(o)) for o in options]))
        rel = self.relevance(question, options[idx])
        star = ev - 1 if ev is not None and 1 <= ev <= len(self._obs) else int(np.argmax(rel))
        t_star = self._obs[star].t_s
        pm1 = (max(0.0, t_star - self.window_s), t_star + self.window_s)
        thr = self._threshold_span(rel, star)
        spans = {"pm1": pm1, "threshold": thr}
        span = spans[self.grounding]
        trace = [f"prompt:\n{prompt}", f"reply: {reply}", f"t* = {t_star:.1f} s (observation {star + 1})",
                 f"spans: pm1 {pm1[0]:.1f}-{pm1[1]:.1f}, threshold {thr[0]:.1f}-{thr[1]:.1f}",
                 f"answer: {LETTERS[idx]}. {options[idx]}"]
        return AnswerResult(option_index=idx, text=options[idx], span=span, grounded=False, trace=trace,
                            question=question, options=options, alt_spans=spans)

    def relevance(self, question: str, answer: str) -> np.ndarray:
        """Cosine of every caption (with its SRL roles, as LINGUA's entries have) with "question + answer" (the
        NExT-GQA post-hoc localisation signal)."""
        q = self.embedder.encode([f"{question} {answer}"])[0]
        C = self.embedder.encode([f"{o.roles} {o.text}" for o in self._obs])
        return C @ q

    def _threshold_span(self, rel: np.ndarray, star: int) -> tuple[float, float]:
        cut = self.rel_fraction * float(rel.max()) if rel.size else 0.0
        if rel[star] < cut:  # the cited frame itself is not relevant: take the best frame instead
            star = int(np.argmax(rel))
        lo = hi = star
        n = len(rel)
        while lo - 1 >= 0 and (rel[lo - 1] >= cut or (lo - 2 >= 0 and rel[lo - 2] >= cut)):
            lo -= 1 if rel[lo - 1] >= cut else 2
        while hi + 1 < n and (rel[hi + 1] >= cut or (hi + 2 < n and rel[hi + 2] >= cut)):
            hi += 1 if rel[hi + 1] >= cut else 2
        return self._obs[lo].t_s, self._obs[hi].t_e


class UniformSamplingAgent(LinguaAgent):
    """LINGUA with `budget` evenly spaced frames per video instead of event-driven selection.

    `budget` is an int (frames per video) or a float in (0, 1] (a fraction of the frames); `observe(video,
    budget=...)` overrides it per video (the reproduction matches LINGUA's kept-frame count of each video).
    """

    def __init__(self, config: LinguaConfig | None = None, encoder=None, detector=None, captioner=None, llm=None,
                 embedder=None, srl: RuleBasedSRL | None = None, budget: int | float = 0.1) -> None:
        super().__init__(config, encoder, detector, captioner, llm, embedder, srl)
        self.budget = self._check_budget(budget)

    @staticmethod
    def _check_budget(budget) -> int | float:
        # a float is always a fraction (1.0 = every frame), an int a frame count
        if isinstance(budget, float):
            return check_float(budget, "budget", min=0.0, max=1.0, min_open=True)
        return check_int(budget, "budget", min=1)

    def frame_indices(self, n_frames: int, budget: int | float | None = None) -> list[int]:
        b = self._check_budget(self.budget if budget is None else budget)
        k = b if isinstance(b, int) else max(1, int(round(b * n_frames)))
        return uniform_indices(n_frames, k)

    def observe(self, video, fps: float | None = None, budget: int | float | None = None) -> PerceptionReport:
        if self.captioner is None:
            raise ValueError("observe needs a captioner")
        frames = getattr(video, "frames", video)
        n = len(frames) if hasattr(frames, "__len__") else 0
        if n < 1:
            raise ValueError("video must have at least one frame")
        report = perceive(video, None, self.detector, self.captioner, self.config,
                          frame_idx=self.frame_indices(n, budget), fps=fps)
        self.ingest(report)
        return report


class RevealedAnswers:
    """Answers revealed so far, by question text (lower-cased, whitespace collapsed).

    `add(question, answer_text)` records a revealed answer; `lookup(question, options)` returns the index of the
    revealed answer when the question was revealed at least `min_count` times, always with the same answer, and
    that answer is among `options`; otherwise None (the question's answer depends on the video, or it is new).
    Counts are order-free: any order of the same reveals gives the same lookups.
    """

    def __init__(self, min_count: int = 2) -> None:
        self.min_count = check_int(min_count, "min_count", min=1)
        self.counts: dict[str, dict[str, int]] = {}

    @staticmethod
    def _key(text: str) -> str:
        if not isinstance(text, str):
            raise TypeError(f"question must be a str, got {type(text).__name__}")
        return " ".join(text.lower().split())

    def add(self, question: str, answer: str) -> None:
        if not isinstance(answer, str) or not answer.strip():
            raise ValueError(f"answer must be a non-empty string, got {answer!r}")
        c = self.counts.setdefault(self._key(question), {})
        a = " ".join(answer.lower().split())
        c[a] = c.get(a, 0) + 1

    def lookup(self, question: str, options: list[str]) -> int | None:
        c = self.counts.get(self._key(question))
        if not c or len(c) != 1:
            return None
        (ans, n), = c.items()
        if n < self.min_count:
            return None
        norm = [" ".join(o.lower().split()) for o in options]
        return norm.index(ans) if ans in norm else None

    def __len__(self) -> int:
        return len(self.counts)


class WithRevealedAnswers:
    """Wrap any agent (LINGUA, its ablations, Dense, Uniform) with a `RevealedAnswers` memory.

    `answer` asks the wrapped agent, then replaces its option by the memory's when the memory has one (the span,
    the trace and the rest stay the agent's; `raw_index` keeps the agent's own option). `feedback(result, correct,
    answer_idx)` records the revealed answer and forwards the feedback (on the agent's own option) to agents that
    learn. Several wrappers may share one memory (every arm then sees the same reveals) or own one each.
    """

    def __init__(self, agent, memory: RevealedAnswers | None = None) -> None:
        if not hasattr(agent, "answer"):
            raise TypeError(f"agent must have an answer(question, options) method, got {type(agent).__name__}")
        if memory is not None and not isinstance(memory, RevealedAnswers):
            raise TypeError(f"memory must be a RevealedAnswers, got {type(memory).__name__}")
        self.agent = agent
        self.memory = memory if memory is not None else RevealedAnswers()

    def __getattr__(self, name):  # observe, ingest, freeze, memory_state ... of the wrapped agent
        if name in ("agent", "memory"):
            raise AttributeError(name)
        return getattr(self.agent, name)

    def answer(self, question: str, options: list[str]) -> AnswerResult:
        r = self.agent.answer(question, options)
        r.raw_index = r.option_index if r.raw_index is None else r.raw_index
        hit = self.memory.lookup(question, r.options or list(options))
        if hit is not None and hit != r.option_index:
            r.trace.append(f"revealed answer for this question: {LETTERS[hit]}. {r.options[hit]} "
                           f"(replaces {LETTERS[r.option_index]})")
            r.option_index, r.text = hit, r.options[hit]
        r.from_revealed = hit is not None
        return r

    def feedback(self, result: AnswerResult, correct: bool, answer_idx: int | None = None) -> None:
        if answer_idx is None:
            raise ValueError("answer_idx (the revealed option) is required")
        answer_idx = check_int(answer_idx, "answer_idx", min=0, max=len(result.options) - 1)
        self.memory.add(result.question, result.options[answer_idx])
        if hasattr(self.agent, "feedback"):
            own = result.option_index if result.raw_index is None else result.raw_index
            if own != result.option_index:  # the agent learns from its own answer, not the lookup's
                result = replace(result, option_index=own, text=result.options[own])
            self.agent.feedback(result, own == answer_idx, answer_idx)
