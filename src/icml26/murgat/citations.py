"""Citation grammar of MuRGAt responses: parsing, stripping, sentence splitting, reasoning/answer extraction.

A response states observable facts with citations in parentheses (spec §2.1):

    The man in the red shirt picks up the cup (visual, 0:12-0:15).
    Someone says "pass the salt" (audio, 0:31; visual, 0:30-0:33).

One citation is `modality, time` with time `M:SS`, `M:SS-M:SS` or `H:MM:SS[-H:MM:SS]`; several share one
parenthetical separated by `;`. The rules follow the official utilities (`src/util.py`) with the improvements the
spec lists (§2.2), each stated where it is implemented:

- A piece `word, <time-like>` whose time part contains a colon is a citation *candidate*. It is VALID when the
  time parses, end >= start, the time lies within the media duration (when given) and the modality is in the
  allowed set. Otherwise it is an INVALID citation: it still counts in the precision denominator and is judged
  unsupported. (Official: an unparsable time gets start = -1; any non-audio modality word is treated as visual.)
  Candidates with a colon-free time part ("(see Fig. 2)", "(red, blue)") are not citations at all.
- Time grammar is a superset of the official regex: H:MM:SS, spaces around the dash, and an en dash are accepted.
  Seconds must be < 60 (and minutes < 60 when hours are given): "0:75" is invalid rather than read as 75 s.
- Sentence splitting keeps the official behaviour (split after runs of . ! ?, ellipses never split, a
  parenthetical right after the punctuation stays with its sentence) and adds one rule: punctuation followed
  directly by a letter or digit ("3.5", "e.g.x") does not split.
- Stripping for judging removes parentheticals holding at least one citation (valid or invalid) and keeps other
  parentheticals ("(also called X)"); `mode="all_parentheticals"` mimics the official cleaner.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Citation", "DEFAULT_MODALITIES", "parse_timestamp", "format_timestamp", "parse_citations",
           "find_citation_groups", "strip_citations", "split_sentences", "clean_output", "extract_reasoning",
           "extract_answer", "answer_letter", "format_citation", "format_citations"]

DEFAULT_MODALITIES: tuple[str, ...] = ("visual", "audio")

_PAREN = re.compile(r"\(([^()]*)\)")
_CANDIDATE = re.compile(r"^\s*([A-Za-z]+)\s*,\s*([0-9A-Za-z:.\s\-\u2013]*:[0-9A-Za-z:.\s\-\u2013]*?)\s*$")
_TIME = r"\d+:\d+(?::\d+)?"
_RANGE = re.compile(rf"^\s*({_TIME})\s*(?:[-\u2013]\s*({_TIME}))?\s*$")
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_THINK_OPEN = re.compile(r"^.*?</think>", re.S | re.I)  # a closing tag without its opening (truncated traces)


def _check_str(text: object, name: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    return text


@dataclass(frozen=True)
class Citation:
    """One parsed citation.

    Attributes:
        modality: lower-cased modality word as written ("visual", "audio", ...).
        start, end: seconds from the start of the media; equal for a point citation. NaN when the time did not
            parse.
        raw: the citation piece as written, e.g. "visual, 0:12-0:15".
        valid: False for a citation that names a bad time, a reversed range, a time past the media duration or a
            modality outside the allowed set; such citations are judged unsupported.
        reason: why the citation is invalid ("" when valid).
    """

    modality: str
    start: float
    end: float
    raw: str
    valid: bool = True
    reason: str = ""

    @property
    def is_point(self) -> bool:
        return self.valid and self.start == self.end

    @property
    def segment(self) -> tuple[float, float]:
        """(start, end) in seconds."""
        return (self.start, self.end)

    def key(self) -> str:
        """A canonical string of the citation (used in caches and traces)."""
        if not self.valid:
            return f"invalid:{self.raw.strip()}"
        return f"{self.modality}@{self.start:g}-{self.end:g}"


def parse_timestamp(text: str) -> float:
    """Seconds of `M:SS`, `MM:SS` or `H:MM:SS` (digits only). Raises ValueError on anything else.

    >>> parse_timestamp("1:02:03")
    3723.0
    """
    _check_str(text, "text")
    parts = text.strip().split(":")
    if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
        raise ValueError(f"text must be a timestamp like M:SS or H:MM:SS, got {text!r}")
    nums = [int(p) for p in parts]
    if nums[-1] >= 60 or (len(nums) == 3 and nums[1] >= 60):
        raise ValueError(f"text has seconds/minutes >= 60: {text!r}")
    if len(nums) == 2:
        return float(nums[0] * 60 + nums[1])
    return float(nums[0] * 3600 + nums[1] * 60 + nums[2])


def format_timestamp(seconds: float) -> str:
    """`M:SS` (or `H:MM:SS` from one hour on) of a non-negative time; fractions are rounded to whole seconds."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        raise TypeError(f"seconds must be a finite number, got {seconds!r}")
    if seconds < 0:
        raise ValueError(f"seconds must be >= 0, got {seconds}")
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def format_citation(modality: str, start: float, end: float | None = None) -> str:
    """`(modality, M:SS)` or `(modality, M:SS-M:SS)`."""
    return "(" + _piece(modality, start, end) + ")"


def format_citations(cites: Iterable[tuple[str, float, float | None] | Citation]) -> str:
    """One parenthetical holding several citations: `(visual, 0:12; audio, 0:12-0:14)`."""
    pieces = []
    for c in cites:
        if isinstance(c, Citation):
            pieces.append(c.raw.strip() if not c.valid else _piece(c.modality, c.start, c.end))
        else:
            pieces.append(_piece(*c))
    if not pieces:
        raise ValueError("cites must hold at least one citation")
    return "(" + "; ".join(pieces) + ")"


def _piece(modality: str, start: float, end: float | None = None) -> str:
    _check_str(modality, "modality")
    if not re.fullmatch(r"[A-Za-z]+", modality):
        raise ValueError(f"modality must be one word of letters, got {modality!r}")
    if end is None or end == start:
        return f"{modality}, {format_timestamp(start)}"
    if end < start:
        raise ValueError(f"end must be >= start, got start={start}, end={end}")
    return f"{modality}, {format_timestamp(start)}-{format_timestamp(end)}"


def _norm_modalities(allowed: Iterable[str] | None) -> frozenset[str] | None:
    if allowed is None:
        return None
    if isinstance(allowed, str):
        allowed = (allowed,)
    out = set()
    for m in allowed:
        if not isinstance(m, str) or not m.strip():
            raise TypeError(f"allowed_modalities must hold non-empty strings, got {m!r}")
        out.add(m.strip().lower())
    if not out:
        raise ValueError("allowed_modalities must not be empty (pass None to allow any modality word)")
    return frozenset(out)


def _parse_piece(piece: str, allowed: frozenset[str] | None, duration: float | None) -> Citation | None:
    m = _CANDIDATE.match(piece)
    if m is None:
        return None
    modality, time_part = m.group(1).lower(), m.group(2)
    raw = piece.strip()
    rm = _RANGE.match(time_part)
    if rm is None:
        return Citation(modality, math.nan, math.nan, raw, False, "time does not parse")
    try:
        start = parse_timestamp(rm.group(1))
        end = parse_timestamp(rm.group(2)) if rm.group(2) else start
    except ValueError:
        return Citation(modality, math.nan, math.nan, raw, False, "seconds or minutes >= 60")
    if end < start:
        return Citation(modality, start, end, raw, False, "end before start")
    if duration is not None and end > duration:
        return Citation(modality, start, end, raw, False, f"time beyond the media duration ({duration:g} s)")
    if allowed is not None and modality not in allowed:
        return Citation(modality, start, end, raw, False, f"modality not in {sorted(allowed)}")
    return Citation(modality, start, end, raw, True, "")


def _check_duration(duration: float | None) -> float | None:
    if duration is None:
        return None
    if isinstance(duration, bool) or not isinstance(duration, (int, float)):
        raise TypeError(f"duration must be a number or None, got {type(duration).__name__}")
    d = float(duration)
    if not math.isfinite(d) or d < 0:
        raise ValueError(f"duration must be finite and >= 0, got {duration}")
    return d


def find_citation_groups(text: str, allowed_modalities: Iterable[str] | None = DEFAULT_MODALITIES,
                         duration: float | None = None) -> list[tuple[int, int, list[Citation]]]:
    """Every parenthetical of `text` that holds at least one citation: (start index, end index, citations)."""
    _check_str(text, "text")
    allowed = _norm_modalities(allowed_modalities)
    duration = _check_duration(duration)
    groups = []
    for m in _PAREN.finditer(text):
        cites = [c for c in (_parse_piece(p, allowed, duration) for p in m.group(1).split(";")) if c is not None]
        if cites:
            groups.append((m.start(), m.end(), cites))
    return groups


def parse_citations(text: str, allowed_modalities: Iterable[str] | None = DEFAULT_MODALITIES,
                    duration: float | None = None) -> list[Citation]:
    """All citations of `text`, in order (valid and invalid; check `Citation.valid`).

    Args:
        text: a sentence or a whole response.
        allowed_modalities: modality words that make a valid citation (case-insensitive); None allows any word.
        duration: media length in seconds; a citation ending after it is invalid. None skips the check.
    """
    return [c for _, _, cites in find_citation_groups(text, allowed_modalities, duration) for c in cites]


def strip_citations(text: str, mode: str = "citations_only",
                    allowed_modalities: Iterable[str] | None = DEFAULT_MODALITIES) -> str:
    """`text` without its citations, whitespace tidied.

    mode "citations_only" (default) removes each parenthetical that holds a citation and keeps the others;
    "all_parentheticals" removes every `(...)`, as the official fact cleaner does.
    """
    _check_str(text, "text")
    if mode == "all_parentheticals":
        out = re.sub(r"\s*\([^)]*\)", "", text)
    elif mode == "citations_only":
        groups = find_citation_groups(text, allowed_modalities)
        out, last = [], 0
        for a, b, _ in groups:
            out.append(text[last:a])
            last = b
        out.append(text[last:])
        out = "".join(out)
    else:
        raise ValueError(f"mode must be 'citations_only' or 'all_parentheticals', got {mode!r}")
    out = re.sub(r"\s+([.,;:!?])", r"\1", out)
    return re.sub(r"\s{2,}", " ", out).strip()


_SPLIT_TOKENS = re.compile(r"(?P<cit>\([^)]+\))|(?P<ellipsis>\.{2,}|\u2026)|(?P<punct>[.!?]+)")
_AFTER_PUNCT_PAREN = re.compile(r"^[\s'\"*_\u201d\u2019]*\(")


def split_sentences(text: str) -> list[str]:
    """Sentences of `text` (official splitting rules, see the module docstring).

    >>> split_sentences("A cat sits. (visual, 0:05) It leaves.")
    ['A cat sits. (visual, 0:05)', 'It leaves.']
    """
    _check_str(text, "text")
    out: list[str] = []
    pos = 0
    pending = False
    for m in _SPLIT_TOKENS.finditer(text):
        if m.group("ellipsis"):
            pending = False
        elif m.group("punct"):
            nxt = text[m.end():m.end() + 1]
            if nxt and (nxt.isalnum()):  # "3.5", "e.g.x": not a sentence end (our addition)
                continue
            if _AFTER_PUNCT_PAREN.match(text[m.end():]):
                pending = True
            else:
                piece = text[pos:m.end()].strip()
                if piece:
                    out.append(piece)
                pos = m.end()
                pending = False
        elif m.group("cit") and pending:
            piece = text[pos:m.end()].strip()
            if piece:
                out.append(piece)
            pos = m.end()
            pending = False
    rest = text[pos:].strip()
    if rest:
        out.append(rest)
    return out


def clean_output(text: str) -> str:
    """`text` without `<think>...</think>` blocks (and anything before a dangling `</think>`), stripped."""
    _check_str(text, "text")
    text = _THINK.sub("", text)
    if re.search(r"</think>", text, re.I):
        text = _THINK_OPEN.sub("", text)
    return text.strip()


def extract_reasoning(text: str) -> str:
    """The text between a `Reasoning:` marker and a line-initial `Answer:` marker; the whole text otherwise."""
    _check_str(text, "text")
    start = re.search(r"(?:^|\n|\*)\s*Reasoning\s*[:*]*\s*", text, re.I)
    if start is None:
        return text.strip()
    body = text[start.end():]
    end = re.search(r"(?:\n|^)[\s*]*Answer\s*[:*\s]", body, re.I)
    if end is None:
        return text.strip()
    return body[:end.start()].strip()


def extract_answer(text: str) -> str:
    """The answer: the content of the LAST `\\boxed{...}`, else the text after `Answer:` to the end of its line.

    `<think>` blocks are removed first. Returns "" when neither is present.
    """
    text = clean_output(_check_str(text, "text"))
    boxed = re.findall(r"\\boxed\s*\{([^{}]*)\}", text)
    if boxed:
        return boxed[-1].strip()
    m = re.findall(r"Answer\s*[:\uff1a]\s*(.*?)(?:\n|$)", text, re.I)
    if m:
        return m[-1].strip().strip("*").strip()
    return ""


def answer_letter(answer: str, n_options: int = 4) -> str | None:
    """The option letter of an extracted answer ("B", "(B)", "B.", "B) the cup", "Option B"), or None."""
    _check_str(answer, "answer")
    if isinstance(n_options, bool) or not isinstance(n_options, int) or not 1 <= n_options <= 26:
        raise ValueError(f"n_options must be an int in [1, 26], got {n_options!r}")
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n_options]
    a = answer.strip().strip("*").strip()
    # upper-case letters only ("a red cup" is not option A), unless the answer is nothing but the letter
    m = re.match(rf"^(?:[Oo]ption\s+)?\(?([{letters}])\)?(?:[.:)\s]|$)", a)
    if m is None:
        m = re.fullmatch(rf"\(?([{letters.lower()}])\)?\.?", a)
    if m is None:
        return None
    return m.group(1).upper()


def citations_in(sentences: Sequence[str], **kw) -> list[list[Citation]]:
    """Citations of each sentence (helper for traces)."""
    return [parse_citations(s, **kw) for s in sentences]
