"""Reference responders (spec §6.2) and the always-YES judge ablation (§6.4 check 5), behind one interface:
`responder.respond(item, rng) -> Response` with the gold record in `Response.trace`.

    OracleResponder               correct answer, exact citations (20% points at the event's middle second)
    HallucinatedCitationResponder answer correct w.p. 0.9; each citation shifted by N(0, 10 s), 30% wrong modality
    LowCoverageResponder          correct answer; only 25% of the observational sentences keep their citations
    OverbroadCitationResponder    correct answer; every citation is the whole video (0:00-end)
    ConfabulatingResponder        30% of observational sentences describe events that never happen (cited at the
                                  real event's time); answer correct w.p. 0.5
    ProgramAidedResponder         a noisy `find` tool returns each evidence event w.p. 0.8 (else nothing); only
                                  found evidence is stated (exactly cited) and used for the answer
    RandomResponder               random answer and random citation times (lengths kept)

Every response mixes observational sentences (some compound, some with embedded citations, some with pronouns),
reasoning sentences, general-knowledge sentences and a final "Therefore the answer is B." line, then `Answer: B`
(see `icml26.murgat.data.build_plan`). Each responder's knobs are dataclass fields.
`AlwaysYesEntailmentJudge` (re-exported from judges) accepts every cited fact.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from icml26.common.validation import check_choice, check_float, check_probability
from icml26.murgat.data import CiteSlot, build_plan, render_response
from icml26.murgat.judges import AlwaysYesEntailmentJudge
from icml26.murgat.schema import BenchmarkItem, Response

__all__ = ["OracleResponder", "HallucinatedCitationResponder", "LowCoverageResponder", "OverbroadCitationResponder",
           "ConfabulatingResponder", "ProgramAidedResponder", "RandomResponder", "AlwaysYesEntailmentJudge",
           "REFERENCE_RESPONDERS", "reference_responders"]

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _rng(rng: Any) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0:
        return np.random.default_rng(int(rng))
    raise TypeError(f"rng must be a numpy Generator or a non-negative int seed, got {type(rng).__name__}")


def _item(item: Any) -> BenchmarkItem:
    if not isinstance(item, BenchmarkItem):
        raise TypeError(f"item must be a BenchmarkItem, got {type(item).__name__}")
    if not item.evidence or not item.media.events:
        raise ValueError("item must come from the synthetic generator (gold events and evidence are needed)")
    return item


def _letter(item: BenchmarkItem, correct: bool, rng: np.random.Generator) -> str:
    if correct:
        return item.answer
    wrong = [LETTERS[i] for i in range(len(item.options)) if LETTERS[i] != item.answer]
    return wrong[rng.integers(len(wrong))]


def _random_letter(item: BenchmarkItem, rng: np.random.Generator) -> str:
    return LETTERS[rng.integers(len(item.options))]


@dataclass
class _Base:
    name: str = "base"
    templates: str = "all"
    point_prob: float = 0.2

    def _check(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("name must be a non-empty string")
        check_choice(self.templates, "templates", ("all", "train", "heldout"))
        check_probability(self.point_prob, "point_prob")

    def _finish(self, item: BenchmarkItem, plan, letter: str, slots=None, **extra: Any) -> Response:
        text, trace = render_response(plan, letter, slots)
        trace.update(responder=type(self).__name__, knobs=asdict(self), answer=letter,
                     answer_correct=letter == item.answer, **extra)
        return Response(item.id, self.name, text, trace)


@dataclass
class OracleResponder(_Base):
    name: str = "Oracle"

    def respond(self, item: BenchmarkItem, rng: Any) -> Response:
        self._check()
        item, rng = _item(item), _rng(rng)
        plan = build_plan(item, rng, templates=self.templates, point_prob=self.point_prob)
        return self._finish(item, plan, item.answer)


@dataclass
class HallucinatedCitationResponder(_Base):
    name: str = "HallucinatedCitation"
    correct_prob: float = 0.9
    shift_sd: float = 10.0
    wrong_modality_prob: float = 0.3

    def respond(self, item: BenchmarkItem, rng: Any) -> Response:
        self._check()
        check_probability(self.correct_prob, "correct_prob")
        check_float(self.shift_sd, "shift_sd", min=0.0)
        check_probability(self.wrong_modality_prob, "wrong_modality_prob")
        item, rng = _item(item), _rng(rng)
        plan = build_plan(item, rng, templates=self.templates, point_prob=self.point_prob)
        D = item.media.duration
        mods = ("visual", "audio")
        slots = []
        for sp in plan:
            row = []
            for sl in sp.slots:
                new = []
                for m, a, b in sl.cites:
                    length = b - a
                    start = float(np.clip(round(a + rng.normal(0.0, self.shift_sd)), 0, max(0.0, D - length)))
                    if rng.random() < self.wrong_modality_prob:
                        others = [x for x in mods if x != m]
                        m = others[rng.integers(len(others))]
                    new.append((m, start, start + length))
                row.append(CiteSlot(new))
            slots.append(row)
        return self._finish(item, plan, _letter(item, rng.random() < self.correct_prob, rng), slots)


@dataclass
class LowCoverageResponder(_Base):
    name: str = "LowCoverage"
    cite_prob: float = 0.25

    def respond(self, item: BenchmarkItem, rng: Any) -> Response:
        self._check()
        check_probability(self.cite_prob, "cite_prob")
        item, rng = _item(item), _rng(rng)
        plan = build_plan(item, rng, templates=self.templates, point_prob=self.point_prob)
        slots = [list(sp.slots) if (not sp.slots or rng.random() < self.cite_prob) else [None] * len(sp.slots)
                 for sp in plan]
        return self._finish(item, plan, item.answer, slots)


@dataclass
class OverbroadCitationResponder(_Base):
    name: str = "Overbroad"

    def respond(self, item: BenchmarkItem, rng: Any) -> Response:
        self._check()
        item, rng = _item(item), _rng(rng)
        plan = build_plan(item, rng, templates=self.templates, point_prob=self.point_prob)
        D = float(item.media.duration)
        slots = [[CiteSlot([(m, 0.0, D) for m, _, _ in sl.cites]) for sl in sp.slots] for sp in plan]
        return self._finish(item, plan, item.answer, slots)


@dataclass
class ConfabulatingResponder(_Base):
    name: str = "Confabulating"
    confab_prob: float = 0.3
    correct_prob: float = 0.5

    def respond(self, item: BenchmarkItem, rng: Any) -> Response:
        self._check()
        check_probability(self.confab_prob, "confab_prob")
        check_probability(self.correct_prob, "correct_prob")
        item, rng = _item(item), _rng(rng)
        plan = build_plan(item, rng, templates=self.templates, point_prob=self.point_prob, confab_prob=self.confab_prob)
        return self._finish(item, plan, _letter(item, rng.random() < self.correct_prob, rng))


@dataclass
class ProgramAidedResponder(_Base):
    name: str = "ProgramAided"
    find_prob: float = 0.8

    def respond(self, item: BenchmarkItem, rng: Any) -> Response:
        self._check()
        check_probability(self.find_prob, "find_prob")
        item, rng = _item(item), _rng(rng)
        found = {e for e in item.evidence if rng.random() < self.find_prob}
        plan = build_plan(item, rng, templates=self.templates, point_prob=self.point_prob, available=found,
                          extras=False, program=True)
        if item.qtype == "count":
            opt = str(len(found))
            letter = LETTERS[item.options.index(opt)] if found and opt in item.options else _random_letter(item, rng)
        elif len(found) == len(item.evidence):
            letter = item.answer
        else:
            letter = _random_letter(item, rng)
        return self._finish(item, plan, letter, found=sorted(found))


@dataclass
class RandomResponder(_Base):
    name: str = "Random"

    def respond(self, item: BenchmarkItem, rng: Any) -> Response:
        self._check()
        item, rng = _item(item), _rng(rng)
        plan = build_plan(item, rng, templates=self.templates, point_prob=self.point_prob)
        D = float(item.media.duration)
        slots = []
        for sp in plan:
            row = []
            for sl in sp.slots:
                new = []
                for m, a, b in sl.cites:
                    length = b - a
                    start = float(rng.integers(0, int(max(0.0, D - length)) + 1))
                    new.append((m, start, start + length))
                row.append(CiteSlot(new))
            slots.append(row)
        return self._finish(item, plan, _random_letter(item, rng), slots)


REFERENCE_RESPONDERS = ("Oracle", "HallucinatedCitation", "LowCoverage", "Overbroad", "Confabulating",
                        "ProgramAided", "Random")


def reference_responders(templates: str = "all") -> list[_Base]:
    """The seven reference responders of spec §6.2 with their default knobs."""
    return [cls(templates=templates) for cls in (OracleResponder, HallucinatedCitationResponder,
                                                 LowCoverageResponder, OverbroadCitationResponder,
                                                 ConfabulatingResponder, ProgramAidedResponder, RandomResponder)]
