"""The text prompts LINGUA sends to its LLM, and the parsers for them and for the LLM's reply.

The whole reasoning state is text (the paper's "linguistic belief state"): observations (episodic entries with
their interval, semantic roles and narrative), the ranked procedural scripts with goals and reliabilities, the
question and its options. Any LLM backend reads the same prompt; `RuleBasedLLM` parses it back with
`parse_belief_prompt`, a real LLM simply reads it. The reply format is "<letter> [<observation id>]".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Observation", "ScriptLine", "belief_prompt", "reflection_prompt", "parse_belief_prompt", "parse_answer",
           "LETTERS"]

LETTERS = "ABCDEFGHIJ"
_HEADER = "You answer multiple-choice questions about a video from its linguistic belief state."
_OBS = "Observations (id | start-end in seconds | roles | narrative):"
_SCR = "Procedural scripts, best expected utility first (id | actions | goal | reliability | utility):"
_REFL = "Reflection: these scripts failed verification:"
# no concrete example letter: small LMs copy it ("B [3]" for every question)
_INSTR = "Reply with the letter of the best option, then the id of the supporting observation in brackets."


@dataclass(frozen=True)
class Observation:
    """One line of the belief state: an episodic entry (or a raw caption for the dense baseline)."""

    id: int
    t_s: float
    t_e: float
    roles: str  # "action patient [target]", e.g. "put bottle fridge"
    text: str


@dataclass(frozen=True)
class ScriptLine:
    """One ranked procedural script as the LLM sees it."""

    id: str
    actions: str  # "open fridge > put bottle fridge > close fridge"
    goal: str  # "" when the script carries no goal
    reliability: float
    utility: float


def _clean(s: str) -> str:
    return " ".join(str(s).replace("|", "/").split())


def belief_prompt(question: str, options: Sequence[str], observations: Sequence[Observation],
                  scripts: Sequence[ScriptLine] = (), reflection: Sequence[str] = ()) -> str:
    """The BAV prompt. `reflection` lists failure narratives when the prompt asks for a re-interpretation."""
    lines = [_HEADER, _OBS]
    if observations:
        lines += [f"[{o.id}] | {o.t_s:.1f}-{o.t_e:.1f} | {_clean(o.roles)} | {_clean(o.text)}" for o in observations]
    else:
        lines.append("(none)")
    lines.append(_SCR)
    if scripts:
        lines += [f"{s.id} | {_clean(s.actions)} | {_clean(s.goal) or '-'} | {s.reliability:.2f} | {s.utility:.3f}"
                  for s in scripts]
    else:
        lines.append("(none)")
    if reflection:
        lines.append(_REFL)
        lines += [f"- {_clean(r)}" for r in reflection]
        lines.append("Diagnose the failure (linguistic, temporal or causal) and answer from the observations alone.")
    lines.append(f"Question: {_clean(question)}")
    lines.append("Options:")
    lines += [f"{LETTERS[i]}. {_clean(o)}" for i, o in enumerate(options)]
    lines.append(_INSTR)
    lines.append("Answer:")
    return "\n".join(lines)


def reflection_prompt(question: str, options: Sequence[str], observations: Sequence[Observation],
                      failures: Sequence[str]) -> str:
    """Spec 2.4: ask for a diagnosis and an alternative interpretation, without the failed scripts."""
    return belief_prompt(question, options, observations, (), reflection=list(failures) or ["(unspecified)"])


_OBS_RE = re.compile(r"^\[(\d+)\] \| ([-\d.]+)-([-\d.]+) \| (.*?) \| (.*)$")
_SCR_RE = re.compile(r"^(\S+) \| (.*?) \| (.*?) \| ([-\d.]+) \| ([-\d.eE+]+)$")
_OPT_RE = re.compile(r"^([A-J])\. (.*)$")


def parse_belief_prompt(prompt: str) -> dict:
    """Inverse of `belief_prompt`: {"observations", "scripts", "question", "options", "reflection"}.

    Raises ValueError when `prompt` is not in this format (a prompt from elsewhere).
    """
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
    obs, scripts, options, refl = [], [], [], []
    question = None
    section = None
    for line in prompt.splitlines():
        if line == _OBS:
            section = "obs"
            continue
        if line == _SCR:
            section = "scr"
            continue
        if line == _REFL:
            section = "refl"
            continue
        if line.startswith("Question: "):
            question = line[len("Question: "):]
            section = None
            continue
        if line == "Options:":
            section = "opt"
            continue
        if section == "obs" and (m := _OBS_RE.match(line)):
            obs.append(Observation(int(m[1]), float(m[2]), float(m[3]), m[4], m[5]))
        elif section == "scr" and (m := _SCR_RE.match(line)):
            scripts.append(ScriptLine(m[1], m[2], "" if m[3] == "-" else m[3], float(m[4]), float(m[5])))
        elif section == "refl" and line.startswith("- "):
            refl.append(line[2:])
        elif section == "opt" and (m := _OPT_RE.match(line)):
            options.append(m[2])
    if question is None or not options:
        raise ValueError("prompt is not a LINGUA belief-state prompt (no Question/Options section)")
    return {"observations": obs, "scripts": scripts, "question": question, "options": options, "reflection": refl}


def parse_answer(text: str, n_options: int) -> tuple[int | None, int | None]:
    """(option index, cited observation id) from an LLM reply; None where the reply does not say.

    Accepts "B [3]", "Answer: (B)", "The answer is B.", "B. to chill a beverage" ...; the first standalone option
    letter wins.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    letters = LETTERS[:n_options]
    idx = None
    patterns = (r"(?i:answer)\s*(?:(?i:is)|:)?\s*\(?([A-J])(?![A-Za-z])", r"^\W*\(?([A-J])(?![A-Za-z])",
                r"(?<![A-Za-z])([A-J])(?![A-Za-z])")
    for pat in patterns:
        for m in re.finditer(pat, text):
            if m[1] in letters:
                idx = letters.index(m[1])
                break
        if idx is not None:
            break
    ev = re.search(r"\[(\d+)\]", text)
    return idx, (int(ev[1]) if ev else None)
