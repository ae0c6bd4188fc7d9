"""Text helpers shared by the synthetic world, the rule-based SRL, the hashing embedder and the rule-based reasoner.

- `tokens(text)`: lower-cased word stems with function words and discourse connectives removed (a light,
  deterministic suffix stemmer: "opens", "opening", "opened" -> "open"; "closes", "closing" -> "clos").
- `third_person`, `gerund`: regular English inflection of a verb lemma ("cut" -> "cuts", "cutting").
- `Lexicon`: the verbs (lemma -> surface forms) and objects of a domain. The synthetic captioner writes
  captions from it and the rule-based SRL parses captions with it (spec section 9: the default SRL is rule-based
  on our templates; spaCy's `en_core_web_sm` is not on PyPI).
"""

from __future__ import annotations

import re
from functools import lru_cache
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["tokens", "stem", "third_person", "gerund", "Lexicon", "CONTINUITY_MARKERS", "has_continuity_marker",
           "strip_continuity_marker"]

# Spec 2.2: the linguistic-continuity markers that license merging of adjacent episodic entries.
CONTINUITY_MARKERS: tuple[str, ...] = ("after that", "afterwards", "afterward", "subsequently", "then", "next",
                                       "later")

_STOP = frozenset("""a an the this that these those is are was were be been being am do does did doing done has have
had having of to in into on onto at by for from with without near over under up down out off and or but so as it its
itself he she they them their his her him we you i me my our your what which who whom whose why how when where while
whether then next later afterward afterwards subsequently after before than there here just also very can could would
should will shall may might must not no yes please answer option options""".split())

_WORD = re.compile(r"[a-z0-9]+")
_VOWELS = set("aeiou")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix stemmer: plural/3rd-person -s/-es, -ing, -ed, -ies and a final -e are removed, and a doubled
    final consonant left by -ing/-ed is undoubled (cutting -> cut, tapped -> tap; fill/toss/buzz keep theirs)."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 5 and w.endswith("ing"):
        w = _undouble(w[:-3])
    elif len(w) > 4 and w.endswith("ed"):
        w = _undouble(w[:-2])
    elif len(w) > 4 and w.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("es"):
        w = w[:-1]
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def _undouble(w: str) -> str:
    if len(w) >= 3 and w[-1] == w[-2] and w[-1] not in _VOWELS and w[-1] not in "lsz":
        return w[:-1]
    return w


def tokens(text: str) -> list[str]:
    """Content-word stems of `text`, in order (function words and continuity markers dropped)."""
    return list(_tokens(str(text)))


@lru_cache(maxsize=131072)
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP)


def _syllables(word: str) -> int:
    groups, prev = 0, False
    for ch in word:
        v = ch in _VOWELS
        groups += v and not prev
        prev = v
    return groups


def third_person(lemma: str) -> str:
    """'open' -> 'opens', 'press' -> 'presses', 'carry' -> 'carries' (multi-word: the first word inflects)."""
    head, _, rest = lemma.partition(" ")
    if head.endswith(("s", "sh", "ch", "x", "z")):
        out = head + "es"
    elif head.endswith("y") and len(head) > 1 and head[-2] not in _VOWELS:
        out = head[:-1] + "ies"
    else:
        out = head + "s"
    return f"{out} {rest}".strip()


def gerund(lemma: str) -> str:
    """'open' -> 'opening', 'cut' -> 'cutting', 'close' -> 'closing' (one-syllable CVC verbs double the consonant)."""
    head, _, rest = lemma.partition(" ")
    if head.endswith("ie"):
        out = head[:-2] + "ying"
    elif head.endswith("e") and not head.endswith("ee") and len(head) > 2:
        out = head[:-1] + "ing"
    elif (_syllables(head) == 1 and len(head) >= 3 and head[-1] not in _VOWELS | set("wxy")
          and head[-2] in _VOWELS and head[-3] not in _VOWELS):
        out = head + head[-1] + "ing"
    else:
        out = head + "ing"
    return f"{out} {rest}".strip()


def has_continuity_marker(text: str) -> bool:
    """True when `text` contains one of `CONTINUITY_MARKERS` as whole words."""
    low = " " + re.sub(r"[^a-z ]", " ", str(text).lower()) + " "
    return any(f" {m} " in low for m in CONTINUITY_MARKERS)


def strip_continuity_marker(text: str) -> tuple[str, bool]:
    """(`text` without a leading continuity marker and comma, whether one was there)."""
    t = str(text).strip()
    low = t.lower()
    for m in CONTINUITY_MARKERS:
        if low.startswith(m + " ") or low.startswith(m + ","):
            return t[len(m):].lstrip(" ,"), True
    return t, False


@dataclass
class Lexicon:
    """Verbs and objects of a domain.

    Attributes:
        verbs: lemma -> alternative 3rd-person surface forms (synonyms) besides the regular one, e.g.
            {"open": ["pulls open"], "close": ["shuts"]}.
        objects: object labels (single words), e.g. ["fridge", "bottle"].
        subjects: subject phrases used by captions ("the person", "someone").
        target_phrases: (verb, target object) -> prepositional phrase, e.g. ("put", "fridge") -> "into the fridge".
        idle_verbs: verbs of frames without an object interaction ("walk", "stand").
    """

    verbs: dict[str, list[str]]
    objects: list[str]
    subjects: list[str] = field(default_factory=lambda: ["the person", "someone", "a person"])
    target_phrases: dict[tuple[str, str], str] = field(default_factory=dict)
    idle_verbs: tuple[str, ...] = ("walk", "stand")

    def __post_init__(self) -> None:
        if not self.verbs or not self.objects:
            raise ValueError("a Lexicon needs at least one verb and one object")
        for o in self.objects:
            if not isinstance(o, str) or not re.fullmatch(r"[a-z][a-z0-9]*", o):
                raise ValueError(f"objects must be single lower-case words, got {o!r}")
        if len(set(self.objects)) != len(self.objects):
            raise ValueError("objects must be unique")
        self._forms: list[tuple[list[str], str]] = []
        for lemma, syns in self.verbs.items():
            for form in [third_person(lemma), lemma, gerund(lemma), *syns]:
                self._forms.append((form.lower().split(), lemma))
        for lemma in self.idle_verbs:
            for form in [third_person(lemma), lemma, gerund(lemma)]:
                self._forms.append((form.split(), lemma))
        self._forms.sort(key=lambda f: -len(f[0]))  # longest match first ("picks up" before "picks")
        self._objects = set(self.objects)

    def surface_forms(self, lemma: str) -> list[str]:
        """The regular 3rd-person form followed by the synonyms of `lemma`."""
        return [third_person(lemma), *self.verbs.get(lemma, [])]

    def target_phrase(self, verb: str, target: str) -> str:
        return self.target_phrases.get((verb, target), f"into the {target}")

    def match_verb(self, words: list[str], start: int = 0) -> tuple[str, int] | None:
        """(lemma, number of words) of the longest verb form starting at words[start], or None."""
        for form, lemma in self._forms:
            n = len(form)
            if words[start:start + n] == form:
                return lemma, n
        return None

    def is_object(self, word: str) -> bool:
        return word in self._objects

    def to_dict(self) -> dict:
        return {"verbs": self.verbs, "objects": self.objects, "subjects": self.subjects,
                "target_phrases": [[v, t, p] for (v, t), p in self.target_phrases.items()],
                "idle_verbs": list(self.idle_verbs)}

    @classmethod
    def from_dict(cls, d: dict) -> Lexicon:
        return cls(verbs={k: list(v) for k, v in d["verbs"].items()}, objects=list(d["objects"]),
                   subjects=list(d.get("subjects", ["the person"])),
                   target_phrases={(v, t): p for v, t, p in d.get("target_phrases", [])},
                   idle_verbs=tuple(d.get("idle_verbs", ("walk", "stand"))))


def overlap(a: Iterable[str], b: Iterable[str]) -> float:
    """Cosine of two token bags (multiset counts); 0 when either is empty."""
    from collections import Counter

    ca, cb = Counter(a), Counter(b)
    if not ca or not cb:
        return 0.0
    dot = sum(v * cb.get(k, 0) for k, v in ca.items())
    na = sum(v * v for v in ca.values()) ** 0.5
    nb = sum(v * v for v in cb.values()) ** 0.5
    return float(dot / (na * nb))
