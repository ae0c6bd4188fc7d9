"""KitchenWorld: procedurally generated videos of scripted activities with NExT-style questions (spec section 6.1).

A video is a (T, H, W, C) float32 array at `fps` frames per second on an H x W grid (default 24 x 24, 5 fps).
Channels: one per object type (a 2x2 blob at the object's position; 0.5 when idle, 1.0 while it is the held
patient of the current action), one per verb (a 3x3 "pose" glyph of the person while performing it), one walk
channel (the glyph while walking or standing), one hand channel (2x2 on the manipulated object) and one state channel
(objects that are open / on / full). Sensor noise N(0, noise_sigma) is added to every pixel (each frame adds one of
97 noise frames drawn once per world).

A video is 3-5 distinct activities (ordered scripted steps with mean durations, +-20 %) separated by walking gaps,
with idle time at both ends. Within an action the pose glyph shifts every 1.5-2 s ("progress" changes, review note
4), so that event-driven perception keeps frames inside long actions and episodic merging can rebuild their spans.
At least `min_brief` activities per video contain a brief ~1 s step (press the switch, drop the spoon, tap the
screen, kick the pedal) that budget-matched uniform sampling can miss (review note 2).

Questions (6 per video by default, review note 2): 2 causal ("Why did the person open the fridge?" -> the goal of
the enclosing activity), 2 about brief steps ("What did the person press?"), 1 temporal ("What did the person do
after opening the fridge?") and 1 descriptive ("What did the person cut?"); 5 options each. `gt_spans` is the
interval of the evidence action. The agent only ever sees `Video.frames` and `Video.fps`: ground truth lives in
`Video.meta` and `QAItem`, which the experiment uses for scoring only (spec section 9: no leak of gold spans).

Calibration (review note 1): every world knob (noise_sigma, progress interval, intensities) was fixed on seed 100
with `calibration_report` and then left alone for the evaluation seeds 0-2.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from icml26.common.validation import check_float, check_int, check_seed
from icml26.lingua.text import Lexicon, gerund

__all__ = ["ActivitySpec", "StepSpec", "WorldConfig", "KitchenWorld", "Video", "QAItem", "default_activities",
           "calibration_report", "detection_report", "span_seen", "occluded_frames"]


@dataclass(frozen=True)
class StepSpec:
    """One scripted step: `verb` the `obj` (optionally `target_phrase`, e.g. "into the fridge") for ~`mean_dur` s."""

    verb: str
    obj: str
    mean_dur: float
    target_phrase: str | None = None

    @property
    def target(self) -> str | None:
        return self.target_phrase.split()[-1] if self.target_phrase else None

    def base_phrase(self) -> str:
        return f"{self.verb} the {self.obj}" + (f" {self.target_phrase}" if self.target_phrase else "")

    def gerund_phrase(self) -> str:
        return f"{gerund(self.verb)} the {self.obj}" + (f" {self.target_phrase}" if self.target_phrase else "")


@dataclass
class ActivitySpec:
    """An activity: its `goal` (the answer of causal questions) and ordered `steps`.

    `steps` items are `StepSpec`s or tuples `(verb, object, mean_dur)` / `(verb, object, mean_dur, target_phrase)`.
    `synonyms` maps a verb lemma to extra 3rd-person surface forms the captioner may use ("shuts" for "close").
    `variants` maps a step object to the objects one occurrence of the activity may use instead (one drawn per
    occurrence, the same in every step of it: grab the peel ... toss the peel), so that "What did the person
    cut?" or "What did the person do after opening the fridge?" depend on the video, not on the question text.
    A step with mean_dur <= `brief_s` of the world config is a brief step.
    """

    name: str
    goal: str
    steps: list[Any]
    synonyms: dict[str, list[str]] = field(default_factory=dict)
    variants: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("ActivitySpec.name must be a non-empty string")
        if not isinstance(self.goal, str) or not self.goal.strip():
            raise ValueError(f"ActivitySpec {self.name!r}: goal must be a non-empty string")
        if not isinstance(self.steps, (list, tuple)) or len(self.steps) < 1:
            raise ValueError(f"ActivitySpec {self.name!r}: steps must be a non-empty list")
        out = []
        for i, s in enumerate(self.steps):
            if isinstance(s, StepSpec):
                out.append(s)
                continue
            if not isinstance(s, (list, tuple)) or len(s) not in (3, 4):
                raise ValueError(f"ActivitySpec {self.name!r}: steps[{i}] must be (verb, object, mean_dur[, target])")
            verb, obj, dur = s[0], s[1], s[2]
            if not isinstance(verb, str) or not isinstance(obj, str):
                raise TypeError(f"ActivitySpec {self.name!r}: steps[{i}] verb and object must be strings")
            dur = check_float(dur, f"ActivitySpec {self.name!r} steps[{i}] mean_dur", min=0.2, max=60.0)
            out.append(StepSpec(verb, obj, dur, s[3] if len(s) == 4 else None))
        self.steps = out
        if not isinstance(self.variants, dict):
            raise TypeError(f"ActivitySpec {self.name!r}: variants must be a dict object -> list of objects")
        objs = {st.obj for st in out}
        for k, alts in self.variants.items():
            if k not in objs:
                raise ValueError(f"ActivitySpec {self.name!r}: variants key {k!r} is not a step object "
                                 f"({sorted(objs)})")
            if (isinstance(alts, str) or not isinstance(alts, (list, tuple)) or not alts
                    or not all(isinstance(a, str) and a for a in alts)):
                raise ValueError(f"ActivitySpec {self.name!r}: variants[{k!r}] must be a non-empty list of object "
                                 "names")
            self.variants[k] = list(dict.fromkeys(alts))

    def objects(self) -> list[str]:
        """Every object the activity can show (step objects, targets and variants)."""
        out: list[str] = []
        for st in self.steps:
            for o in [st.obj, st.target, *self.variants.get(st.obj, [])]:
                if o and o not in out:
                    out.append(o)
        return out


def default_activities() -> list[ActivitySpec]:
    """The 8 kitchen activities of spec section 6.1. Goals share no words with the step objects, so a causal
    question cannot be answered from the captions alone; open/close/put/fill/grab are shared across activities
    so that only the objects discriminate the goals. Most activities draw one of a few objects per occurrence
    (`variants`, issue 35): the answers of the brief-step, temporal and descriptive questions then depend on the
    video, so a table of answers revealed for the same question text cannot answer them; causal answers still
    follow from the question's step (the goal of its activity)."""
    return [
        ActivitySpec("cool-drink", "to chill a beverage",
                     [("open", "fridge", 2.5), ("put", "bottle", 3.0, "into the fridge"), ("close", "fridge", 2.0)],
                     variants={"bottle": ["bottle", "milk", "juice"]}),
        ActivitySpec("heat-food", "to warm up dinner",
                     [("open", "oven", 2.5), ("put", "pan", 3.0, "into the oven"), ("close", "oven", 2.0),
                      ("press", "switch", 1.0)], variants={"pan": ["pan", "tray"], "switch": ["switch", "button"]}),
        ActivitySpec("make-tea", "to brew a hot drink",
                     [("fill", "kettle", 3.5), ("boil", "kettle", 4.5), ("pour", "water", 3.0, "into the cup"),
                      ("drop", "spoon", 1.0, "into the cup")], variants={"spoon": ["spoon", "teabag"]}),
        ActivitySpec("cut-vegetable", "to prepare a salad",
                     [("grab", "knife", 2.0), ("cut", "tomato", 5.0), ("put", "knife", 2.5, "into the sink")],
                     variants={"tomato": ["tomato", "onion", "carrot"]}),
        ActivitySpec("wash-cup", "to clean the dishes",
                     [("fill", "cup", 3.0), ("scrub", "cup", 4.5), ("put", "cup", 2.5, "on the rack")]),
        ActivitySpec("answer-phone", "to talk with a friend",
                     [("grab", "phone", 2.0), ("tap", "screen", 1.0), ("hold", "phone", 5.5)],
                     variants={"screen": ["screen", "icon"]}),
        ActivitySpec("throw-trash", "to tidy the kitchen",
                     [("grab", "trash", 2.0), ("kick", "pedal", 1.0), ("toss", "trash", 2.0, "into the bin")],
                     variants={"trash": ["trash", "peel"], "pedal": ["pedal", "lever"]}),
        ActivitySpec("water-plant", "to keep the flowers alive",
                     [("fill", "can", 3.0), ("water", "plant", 4.0), ("put", "can", 2.0, "on the shelf")],
                     variants={"plant": ["plant", "fern", "cactus"]}),
    ]


_DEFAULT_SYNONYMS = {
    "open": ["pulls open"], "close": ["shuts"], "put": ["places"], "fill": ["fills up"], "boil": ["heats"],
    "pour": ["tips"], "drop": ["lets fall"], "grab": ["picks up", "takes"], "cut": ["slices"], "scrub": ["rubs"],
    "tap": ["touches"], "hold": ["holds up"], "kick": ["steps on"], "toss": ["throws"], "water": ["sprinkles"],
    "press": ["pushes"],
}


@dataclass
class WorldConfig:
    """Every knob of the generator (defaults = the calibrated small-scale world; review note 1: fixed on seed 100).

    Attributes:
        activities: the activity scripts (default: the 8 kitchen activities).
        objects: extra object labels beyond those the steps use (each gets a channel).
        synonyms: verb lemma -> extra caption surface forms (merged with each activity's own synonyms).
        grid: H = W of the frame. fps: frames per second.
        n_activities: (min, max) distinct activities per video. min_brief: least activities with a brief step.
        brief_s: a step with mean_dur <= brief_s is brief. dur_jitter: relative uniform jitter of step durations.
        gap_s / idle_s: walking gap between activities / idle time at the start and end, (min, max) seconds.
        progress_s: (min, max) interval of within-action pose shifts, seconds (review note 4).
        noise_sigma: per-pixel sensor noise (calibrated so that tau_delta = 0.15 keeps ~10 % of frames).
        walk_every: frames per 1-pixel walking step. jitter_p: per-frame probability of a 1-pixel idle jitter.
        obj_intensity / held_intensity / walk_intensity: blob value of idle objects / of the held patient / of the
            walking glyph (a 1-pixel walking step must stay below tau_Δ).
        n_causal, n_brief, n_temporal, n_descriptive: questions per video by kind. n_options: options per question.
        off_event_rate: off-event visual changes per minute of video (issue 35; Poisson, independent of the
            actions): camera moves (the whole image shifts by 1 pixel, |offset| <= 2), lighting (every pixel
            brightens by `lighting_level` for `lighting_s`), a second person passing (a walking glyph crossing the
            scene at `passer_px` pixels per frame) and occlusions (a 9x9 silhouette in front of the actor for
            `occlusion_s`, hiding the pose, the hand and the handled object). Camera moves and passers make false
            alarms; occlusions and lighting (lower contrast) make misses. 0 gives the clean world.
        off_event_mix: relative weights of ("camera", "lighting", "passer", "occlusion").
    """

    activities: list[ActivitySpec] = field(default_factory=default_activities)
    objects: list[str] = field(default_factory=list)
    synonyms: dict[str, list[str]] = field(default_factory=lambda: {k: list(v) for k, v in _DEFAULT_SYNONYMS.items()})
    grid: int = 24
    fps: float = 5.0
    n_activities: tuple[int, int] = (3, 5)
    min_brief: int = 2
    brief_s: float = 1.2
    dur_jitter: float = 0.2
    gap_s: tuple[float, float] = (4.0, 9.0)
    idle_s: tuple[float, float] = (2.5, 5.0)
    progress_s: tuple[float, float] = (1.5, 2.0)
    noise_sigma: float = 0.005
    walk_every: int = 2
    jitter_p: float = 0.03
    obj_intensity: float = 0.5
    held_intensity: float = 1.0
    walk_intensity: float = 0.7
    n_causal: int = 2
    n_brief: int = 2
    n_temporal: int = 1
    n_descriptive: int = 1
    n_options: int = 5
    off_event_rate: float = 6.0
    off_event_mix: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    lighting_s: tuple[float, float] = (2.0, 8.0)
    lighting_level: tuple[float, float] = (0.02, 0.06)
    occlusion_s: tuple[float, float] = (1.5, 4.0)
    passer_px: int = 3

    def validate(self) -> None:
        if not isinstance(self.activities, (list, tuple)) or len(self.activities) < 2:
            raise ValueError("WorldConfig.activities must hold at least 2 ActivitySpec")
        for a in self.activities:
            if not isinstance(a, ActivitySpec):
                raise TypeError(f"WorldConfig.activities must hold ActivitySpec, got {type(a).__name__}")
        if len({a.name for a in self.activities}) != len(self.activities):
            raise ValueError("WorldConfig.activities must have unique names")
        if len({a.goal for a in self.activities}) != len(self.activities):
            raise ValueError("WorldConfig.activities must have distinct goals (causal options would repeat)")
        check_int(self.grid, "WorldConfig.grid", min=12, max=256)
        check_float(self.fps, "WorldConfig.fps", min=0.5, max=60.0)
        lo, hi = (check_int(x, "WorldConfig.n_activities", min=1) for x in self.n_activities)
        if lo > hi or hi > len(self.activities):
            raise ValueError(f"WorldConfig.n_activities must satisfy 1 <= min <= max <= {len(self.activities)}, "
                             f"got {tuple(self.n_activities)}")
        check_int(self.min_brief, "WorldConfig.min_brief", min=0, max=lo)
        if self.min_brief > sum(self._has_brief(a) for a in self.activities):
            raise ValueError("WorldConfig.min_brief exceeds the number of activities with a brief step")
        check_float(self.dur_jitter, "WorldConfig.dur_jitter", min=0.0, max=0.9)
        for name in ("gap_s", "idle_s", "progress_s", "lighting_s", "lighting_level", "occlusion_s"):
            a, b = (check_float(x, f"WorldConfig.{name}", min=0.0) for x in getattr(self, name))
            if a > b:
                raise ValueError(f"WorldConfig.{name} must be (min, max) with min <= max, got {getattr(self, name)}")
        if self.progress_s[0] <= 0:
            raise ValueError("WorldConfig.progress_s must be > 0")
        check_float(self.noise_sigma, "WorldConfig.noise_sigma", min=0.0, max=1.0)
        check_int(self.walk_every, "WorldConfig.walk_every", min=1)
        check_float(self.jitter_p, "WorldConfig.jitter_p", min=0.0, max=1.0)
        for name in ("n_causal", "n_brief", "n_temporal", "n_descriptive"):
            check_int(getattr(self, name), f"WorldConfig.{name}", min=0, max=20)
        check_int(self.n_options, "WorldConfig.n_options", min=2, max=10)
        check_float(self.off_event_rate, "WorldConfig.off_event_rate", min=0.0, max=600.0)
        mix = self.off_event_mix
        if (not isinstance(mix, (list, tuple)) or len(mix) != 4
                or any(check_float(m, "WorldConfig.off_event_mix", min=0.0) < 0 for m in mix) or sum(mix) <= 0):
            raise ValueError(f"WorldConfig.off_event_mix must be 4 non-negative weights (camera, lighting, passer, "
                             f"occlusion) with a positive sum, got {mix!r}")
        check_int(self.passer_px, "WorldConfig.passer_px", min=1, max=self.grid)
        if self.n_options > len(self.activities):
            raise ValueError("WorldConfig.n_options cannot exceed the number of activities (causal options are goals)")

    def _has_brief(self, a: ActivitySpec) -> bool:
        return any(s.mean_dur <= self.brief_s for s in a.steps)

    def lexicon(self) -> Lexicon:
        verbs: dict[str, list[str]] = {}
        objs: list[str] = []
        targets: dict[tuple[str, str], str] = {}
        for a in self.activities:
            for s in a.steps:
                verbs.setdefault(s.verb, [])
                for o in (s.obj, s.target, *a.variants.get(s.obj, [])):
                    if o and o not in objs:
                        objs.append(o)
                if s.target_phrase:
                    targets[(s.verb, s.target)] = s.target_phrase
            for v, syns in a.synonyms.items():
                verbs.setdefault(v, [])
                verbs[v] += [x for x in syns if x not in verbs[v]]
        for v, syns in self.synonyms.items():
            if v in verbs:
                verbs[v] += [x for x in syns if x not in verbs[v]]
        objs += [o for o in self.objects if o not in objs]
        return Lexicon(verbs=verbs, objects=objs, target_phrases=targets)


@dataclass
class Video:
    """`frames` (T, H, W, C) float32, `fps` > 0, `meta`: ground truth (events, layout) never read by agents."""

    frames: np.ndarray
    fps: float
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_frames(self) -> int:
        return int(self.frames.shape[0])

    @property
    def duration(self) -> float:
        return self.n_frames / float(self.fps)


@dataclass
class QAItem:
    """A NExT-style multiple-choice question with its evidence span(s) in seconds."""

    question: str
    options: list[str]
    answer_idx: int
    qtype: str  # "causal" | "temporal" | "descriptive"
    gt_spans: list[tuple[float, float]]
    meta: dict[str, Any] = field(default_factory=dict)


class KitchenWorld:
    """Deterministic generator: `world.video(i)` -> (Video, [QAItem]) depends only on (config, seed, i).

    Args:
        config: a `WorldConfig` (default: the calibrated kitchen world).
        seed: non-negative int.
    """

    def __init__(self, config: WorldConfig | None = None, seed: int = 0) -> None:
        self.config = config if config is not None else WorldConfig()
        if not isinstance(self.config, WorldConfig):
            raise TypeError(f"config must be a WorldConfig, got {type(self.config).__name__}")
        self.config.validate()
        self.seed = check_seed(seed)
        self.lexicon = self.config.lexicon()
        self.objects = list(self.lexicon.objects)
        self.verbs = list(self.lexicon.verbs)
        n_slots = (self.config.grid // 4) ** 2
        if len(self.objects) > n_slots:
            raise ValueError(f"{len(self.objects)} objects do not fit a {self.config.grid}x{self.config.grid} grid "
                             f"({n_slots} slots of 4x4 pixels); raise WorldConfig.grid")
        self.n_channels = len(self.objects) + len(self.verbs) + 3

    NOISE_BANK = 97

    def _noise_bank(self) -> np.ndarray:
        """N(0, noise_sigma) sensor-noise frames, drawn once per world; each video frame adds a random one of them
        (a fresh normal per pixel and video would dominate the generation time)."""
        if getattr(self, "_bank", None) is None:
            g = self.config.grid
            rng = np.random.default_rng([self.seed, 99991])
            self._bank = rng.standard_normal((self.NOISE_BANK, g, g, self.n_channels), dtype=np.float32) * np.float32(
                self.config.noise_sigma)
        return self._bank

    # channel layout
    def obj_channel(self, obj: str) -> int:
        return self.objects.index(obj)

    def verb_channel(self, verb: str) -> int:
        return len(self.objects) + self.verbs.index(verb)

    @property
    def walk_channel(self) -> int:
        return len(self.objects) + len(self.verbs)

    @property
    def hand_channel(self) -> int:
        return self.walk_channel + 1

    @property
    def state_channel(self) -> int:
        return self.walk_channel + 2

    def channel_names(self) -> list[str]:
        return [f"obj:{o}" for o in self.objects] + [f"verb:{v}" for v in self.verbs] + ["walk", "hand", "state"]

    def __repr__(self) -> str:
        return f"KitchenWorld(seed={self.seed}, activities={len(self.config.activities)}, channels={self.n_channels})"

    def videos(self, n: int, start: int = 0):
        """Yield (Video, [QAItem]) for indices start .. start + n - 1."""
        n = check_int(n, "n", min=0)
        start = check_int(start, "start", min=0)
        for i in range(start, start + n):
            yield self.video(i)

    # ------------------------------------------------------------------------------------------- timeline
    def _timeline(self, rng: np.random.Generator) -> tuple[list[dict], float]:
        cfg = self.config
        acts = cfg.activities
        brief_ids = [i for i, a in enumerate(acts) if cfg._has_brief(a)]
        n = int(rng.integers(cfg.n_activities[0], cfg.n_activities[1] + 1))
        while True:
            chosen = [int(x) for x in rng.choice(len(acts), size=n, replace=False)]
            if sum(c in brief_ids for c in chosen) >= cfg.min_brief:
                break
        t = float(rng.uniform(*cfg.idle_s))
        events: list[dict] = []
        for k, ai in enumerate(chosen):
            if k > 0:
                t += float(rng.uniform(*cfg.gap_s))
            a = acts[ai]
            pick = {k: alts[int(rng.integers(len(alts)))] for k, alts in a.variants.items()}
            for si, s in enumerate(a.steps):
                if s.obj in pick:
                    s = replace(s, obj=pick[s.obj])
                dur = s.mean_dur * float(rng.uniform(1 - cfg.dur_jitter, 1 + cfg.dur_jitter))
                events.append({"activity": a.name, "goal": a.goal, "step": si, "verb": s.verb, "obj": s.obj,
                               "target": s.target, "target_phrase": s.target_phrase, "t_s": t, "t_e": t + dur,
                               "brief": s.mean_dur <= cfg.brief_s, "phrase": s.base_phrase(),
                               "gerund": s.gerund_phrase(), "activity_index": k})
                t += dur
        t_end = t + float(rng.uniform(*cfg.idle_s))
        return events, t_end

    # ------------------------------------------------------------------------------------------- render
    def video(self, index: int) -> tuple[Video, list[QAItem]]:
        """The `index`-th video of this world and its questions."""
        index = check_int(index, "index", min=0)
        cfg = self.config
        rng = np.random.default_rng([self.seed, index, 7])
        events, t_end = self._timeline(rng)
        fps = float(cfg.fps)
        T = max(2, int(round(t_end * fps)))
        G = cfg.grid
        # snap event boundaries to frames so spans and frames agree
        for e in events:
            e["f_s"] = int(round(e["t_s"] * fps))
            e["f_e"] = max(e["f_s"] + 1, int(round(e["t_e"] * fps)))
            e["t_s"], e["t_e"] = e["f_s"] / fps, e["f_e"] / fps
        # layout: objects in distinct 4x4 slots (top-left 2x2 of the slot), person glyph 3x3
        slots = rng.permutation((G // 4) ** 2)[: len(self.objects)]
        home = {o: (int(s // (G // 4)) * 4, int(s % (G // 4)) * 4) for o, s in zip(self.objects, slots)}
        pos = dict(home)
        state = {o: False for o in self.objects}
        frames = np.zeros((T, G, G, self.n_channels), dtype=np.float32)
        # per-frame action lookup
        act_of = np.full(T, -1, dtype=int)
        for k, e in enumerate(events):
            act_of[e["f_s"]:min(T, e["f_e"])] = k
        progress = {k: float(rng.uniform(*cfg.progress_s)) for k in range(len(events))}
        agent = [int(rng.integers(0, G - 3)), int(rng.integers(0, G - 3))]
        state_on = {"open", "fill", "boil", "press", "tap"}
        state_off = {"close", "pour", "toss"}
        started: set[int] = set()
        actor = np.zeros((T, 2), dtype=int)  # top-left of the person's glyph per frame (occlusions sit on it)

        def stand_at(obj: str) -> tuple[int, int]:
            r, c = pos[obj]
            return (min(G - 3, r + 2) if r + 5 <= G else max(0, r - 3), min(G - 3, c))

        # index of the next event starting after each frame (walking target)
        starts = [e["f_s"] for e in events]
        # objects only move / change state at action onsets: write them per constant segment, not per frame
        seg_start, seg_pos, seg_state = [0], [dict(pos)], [dict(state)]
        walk_ch, hand_ch = self.walk_channel, self.hand_channel
        for f in range(T):
            k = act_of[f]
            if k >= 0:
                e = events[k]
                if k not in started:  # action onset: effects on the world state
                    started.add(k)
                    if e["target"]:
                        pos[e["obj"]] = pos[e["target"]]
                    if e["verb"] in state_on:
                        state[e["obj"]] = True
                    elif e["verb"] in state_off:
                        state[e["obj"]] = False
                        if e["target"]:
                            state[e["target"]] = True
                    seg_start.append(f)
                    seg_pos.append(dict(pos))
                    seg_state.append(dict(state))
                br, bc = stand_at(e["obj"])
                phase = int(((f - e["f_s"]) / fps) // progress[k]) % 2
                shift = 3 if bc + 6 <= G else -3  # the within-action "progress" pose change
                gc = min(max(bc + (shift if phase else 0), 0), G - 3)
                agent = [br, bc]
                actor[f] = (br, gc)
                frames[f, br:br + 3, gc:gc + 3, self.verb_channel(e["verb"])] = 1.0
                r, c = pos[e["obj"]]
                frames[f, r:r + 2, c:c + 2, hand_ch] = 1.0
            else:
                # walk toward the next activity's first object, else idle with rare jitter
                ni = bisect.bisect_right(starts, f)
                if ni < len(events) and f % cfg.walk_every == 0:
                    goal = stand_at(events[ni]["obj"])
                    step = [(g > a) - (g < a) for g, a in zip(goal, agent)]
                    if step != [0, 0]:
                        axis = 0 if step[0] != 0 and (step[1] == 0 or f % (2 * cfg.walk_every) == 0) else 1
                        agent[axis] += step[axis]
                gr, gc = agent
                if rng.random() < cfg.jitter_p:
                    jr, jc = rng.integers(-1, 2, size=2)
                    gr, gc = min(max(gr + int(jr), 0), G - 3), min(max(gc + int(jc), 0), G - 3)
                actor[f] = (gr, gc)
                frames[f, gr:gr + 3, gc:gc + 3, walk_ch] = cfg.walk_intensity
        seg_start.append(T)
        for si in range(len(seg_pos)):
            f0, f1 = seg_start[si], seg_start[si + 1]
            if f1 <= f0:
                continue
            for o in self.objects:
                r, c = seg_pos[si][o]
                frames[f0:f1, r:r + 2, c:c + 2, self.obj_channel(o)] = cfg.obj_intensity
                if seg_state[si][o]:
                    frames[f0:f1, r:r + 2, c:c + 2, self.state_channel] = 0.5
        for e in events:  # the held patient is brighter while it is being handled
            f0, f1 = e["f_s"], min(T, e["f_e"])
            if f1 > f0:
                si = int(np.searchsorted(seg_start, f0, side="right")) - 1
                r, c = seg_pos[si][e["obj"]]
                frames[f0:f1, r:r + 2, c:c + 2, self.obj_channel(e["obj"])] = cfg.held_intensity
        # frames where the scene really changes: action onsets and ends, within-action progress shifts
        changes = set()
        for k, e in enumerate(events):
            changes.update((e["f_s"], e["f_e"]))
            step = progress[k] * fps
            changes.update(int(np.ceil(e["f_s"] + j * step - 1e-9)) for j in range(1, int((e["f_e"] - e["f_s"]) / step)
                                                                               + 1))
        changes = sorted(c for c in changes if 0 < c < T)
        off = self._off_events(frames, actor, np.random.default_rng([self.seed, index, 11]))
        if cfg.noise_sigma > 0:
            frames += self._noise_bank()[rng.integers(0, self.NOISE_BANK, size=T)]
        meta = {"index": index, "seed": self.seed, "events": events, "duration": T / fps, "layout": home,
                "activities": list(dict.fromkeys(e["activity"] for e in events)), "change_frames": changes,
                "off_events": off}
        video = Video(frames=frames, fps=fps, meta=meta)
        return video, self._questions(events, rng, index)

    OFF_EVENT_KINDS = ("camera", "lighting", "passer", "occlusion")

    def _off_events(self, frames: np.ndarray, actor: np.ndarray, rng: np.random.Generator) -> list[dict]:
        """Draw the off-event visual changes of one video (a Poisson process at `off_event_rate` per minute, on its
        own random stream so the actions do not depend on the rate) and paint them into `frames` in place, in
        scene order: occlusions and passers in front of the scene, then the camera shift, then the lighting."""
        cfg = self.config
        T, G = frames.shape[0], cfg.grid
        fps = float(cfg.fps)
        n = int(rng.poisson(cfg.off_event_rate * T / fps / 60.0)) if cfg.off_event_rate > 0 else 0
        if n == 0:
            return []
        w = np.asarray(cfg.off_event_mix, dtype=float)
        kinds = [self.OFF_EVENT_KINDS[i] for i in rng.choice(4, size=n, p=w / w.sum())]
        starts = np.sort(rng.integers(1, T, size=n))
        out: list[dict] = []
        walk_ch = self.walk_channel
        for kind, f0 in zip(kinds, starts):
            f0 = int(f0)
            if kind == "occlusion":
                f1 = min(T, f0 + max(1, int(round(float(rng.uniform(*cfg.occlusion_s)) * fps))))
                r, c = (int(x) for x in actor[f0])
                r0, r1, c0, c1 = max(0, r - 3), min(G, r + 6), max(0, c - 3), min(G, c + 6)
                frames[f0:f1, r0:r1, c0:c1, :] = 0.0
                frames[f0:f1, r0:r1, c0:c1, walk_ch] = 0.35  # a dark silhouette: no pose, no hand visible
            elif kind == "passer":
                px = int(cfg.passer_px)
                row = int(rng.integers(0, G - 3))
                cols = list(range(-2, G, px))
                if rng.random() < 0.5:
                    cols = cols[::-1]
                f1 = min(T, f0 + len(cols))
                for j, f in enumerate(range(f0, f1)):
                    cc = cols[j]
                    lo, hi = max(0, cc), min(G, cc + 3)
                    if hi > lo:
                        frames[f, row:row + 3, lo:hi, walk_ch] = np.maximum(frames[f, row:row + 3, lo:hi, walk_ch],
                                                                            cfg.walk_intensity)
            else:
                f1 = T if kind == "camera" else min(T, f0 + max(1, int(round(float(rng.uniform(*cfg.lighting_s))
                                                                                * fps))))
            out.append({"kind": kind, "f_s": f0, "f_e": int(f1), "t_s": f0 / fps, "t_e": f1 / fps})
        # camera moves: the offset accumulates (|offset| <= 2 per axis) and shifts everything after the move
        offset = np.zeros(2, dtype=int)
        seg = [(0, offset.copy())]
        for o in out:
            if o["kind"] != "camera":
                continue
            axis = int(rng.integers(2))
            step = int(rng.choice([-1, 1]))
            if abs(offset[axis] + step) > 2:
                step = -step
            offset[axis] += step
            seg.append((o["f_s"], offset.copy()))
        seg.append((T, None))
        for (a, off), (b, _) in zip(seg[:-1], seg[1:]):
            if b > a and (off[0] or off[1]):
                frames[a:b] = _shift(frames[a:b], int(off[0]), int(off[1]))
        for o in out:
            if o["kind"] == "lighting":
                frames[o["f_s"]:o["f_e"]] += np.float32(rng.uniform(*cfg.lighting_level))
        return out

    # ------------------------------------------------------------------------------------------- questions
    def _options(self, truth: str, pool: Sequence[str], rng: np.random.Generator) -> tuple[list[str], int]:
        others = [p for p in dict.fromkeys(pool) if p != truth]
        k = self.config.n_options - 1
        if len(others) < k:
            raise ValueError(f"not enough distinct distractors for {truth!r} (need {k}, have {len(others)})")
        picks = [others[i] for i in rng.choice(len(others), size=k, replace=False)]
        opts = picks + [truth]
        order = rng.permutation(len(opts))
        opts = [opts[i] for i in order]
        return opts, opts.index(truth)

    def _questions(self, events: list[dict], rng: np.random.Generator, index: int) -> list[QAItem]:
        cfg = self.config
        goals = [a.goal for a in cfg.activities]
        all_phrases = [s.base_phrase() for a in cfg.activities for s in a.steps]
        video_objs = [e["obj"] for e in events]
        obj_pool = list(dict.fromkeys(video_objs + self.objects))
        verb_count: dict[str, int] = {}
        for e in events:
            verb_count[e["verb"]] = verb_count.get(e["verb"], 0) + 1
        out: list[QAItem] = []

        def span(e):
            return [(float(e["t_s"]), float(e["t_e"]))]

        def meta(e, kind):
            return {"video": index, "kind": kind, "event": events.index(e), "activity": e["activity"],
                    "brief": bool(e["brief"])}

        def pick(cands, n, used):
            cands = [c for c in cands if events.index(c) not in used]
            if not cands or n <= 0:
                return []
            idx = rng.choice(len(cands), size=min(n, len(cands)), replace=False)
            return [cands[i] for i in sorted(idx)]

        used: set[int] = set()
        # causal: non-brief steps of distinct activities
        by_act: dict[int, list[dict]] = {}
        for e in events:
            if not e["brief"]:
                by_act.setdefault(e["activity_index"], []).append(e)
        act_keys = list(by_act)
        chosen_acts = [act_keys[i] for i in rng.choice(len(act_keys), size=min(cfg.n_causal, len(act_keys)),
                                                        replace=False)] if act_keys else []
        for ak in chosen_acts:
            e = by_act[ak][int(rng.integers(len(by_act[ak])))]
            opts, ans = self._options(e["goal"], goals, rng)
            out.append(QAItem(f"Why did the person {e['phrase']}?", opts, ans, "causal", span(e), meta(e, "causal")))
            used.add(events.index(e))
        # brief steps whose verb is unique in the video
        for e in pick([e for e in events if e["brief"] and verb_count[e["verb"]] == 1], cfg.n_brief, used):
            opts, ans = self._options(f"the {e['obj']}", [f"the {o}" for o in obj_pool], rng)
            out.append(QAItem(f"What did the person {e['verb']}?", opts, ans, "descriptive", span(e),
                              meta(e, "brief")))
            used.add(events.index(e))
        # temporal: the step after an anchor step of the same activity
        anchors = [e for k, e in enumerate(events[:-1]) if events[k + 1]["activity_index"] == e["activity_index"]]
        for a in pick(anchors, cfg.n_temporal, set()):
            nxt = events[events.index(a) + 1]
            pool = [ev["phrase"] for ev in events if ev is not nxt and ev is not a] + all_phrases
            opts, ans = self._options(nxt["phrase"], [p for p in pool if p != a["phrase"]], rng)
            out.append(QAItem(f"What did the person do after {a['gerund']}?", opts, ans, "temporal", span(nxt),
                              meta(nxt, "temporal")))
        # descriptive: a non-brief verb that occurs once in the video
        for e in pick([e for e in events if not e["brief"] and verb_count[e["verb"]] == 1], cfg.n_descriptive, used):
            opts, ans = self._options(f"the {e['obj']}", [f"the {o}" for o in obj_pool], rng)
            out.append(QAItem(f"What did the person {e['verb']}?", opts, ans, "descriptive", span(e),
                              meta(e, "descriptive")))
        return out


def _shift(x: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """(T, H, W, C) frames translated by (dy, dx) pixels, zero-filled (a camera move)."""
    out = np.zeros_like(x)
    H, W = x.shape[1:3]
    ys, yd = (slice(0, H - dy), slice(dy, H)) if dy >= 0 else (slice(-dy, H), slice(0, H + dy))
    xs, xd = (slice(0, W - dx), slice(dx, W)) if dx >= 0 else (slice(-dx, W), slice(0, W + dx))
    out[:, yd, xd] = x[:, ys, xs]
    return out


def occluded_frames(video: Video) -> np.ndarray:
    """(T,) bool: frames during an occlusion (the actor is hidden behind a silhouette)."""
    m = np.zeros(video.n_frames, dtype=bool)
    for o in video.meta.get("off_events", []):
        if o["kind"] == "occlusion":
            m[o["f_s"]:o["f_e"]] = True
    return m


def span_seen(video: Video, kept_idx: Sequence[int], spans: Sequence[tuple[float, float]]) -> bool:
    """Whether a kept frame shows one of `spans` (seconds): it lies inside the span and no occlusion hides the
    actor then (spec 6.3's "a kept frame inside its span", which assumes the frame shows the event)."""
    kept = np.asarray(list(kept_idx), dtype=int)
    if kept.size == 0:
        return False
    vis = kept[~occluded_frames(video)[kept]]
    t = vis / float(video.fps)
    return bool(any(np.any((t >= s - 1e-9) & (t < e - 1e-9)) for s, e in spans))


def detection_report(video: Video, kept_idx: Sequence[int], tol_frames: int = 1) -> dict[str, float]:
    """How event-driven frame selection did on a KitchenWorld video (issue 35's recall / precision figure).

    - event_recall: share of the actions (every step, not only question evidence) shown by a kept frame
      (`span_seen`: inside the span and not occluded).
    - precision: share of the kept frames after frame 0 that lie within `tol_frames` of a real scene change
      (an action onset or end, a within-action progress shift: `meta["change_frames"]`); the rest are false alarms
      (off-event changes, noise).
    - false_alarms_per_min, off_events_per_min: the false alarms and the drawn off-event changes per minute.
    """
    kept = np.asarray(sorted(int(i) for i in kept_idx), dtype=int)
    meta = video.meta
    ev = meta["events"]
    hit = [span_seen(video, kept, [(e["t_s"], e["t_e"])]) for e in ev]
    ch = np.asarray(meta.get("change_frames", []), dtype=int)
    rest = kept[kept > 0]
    true = np.array([bool(ch.size) and bool(np.min(np.abs(ch - k)) <= tol_frames) for k in rest], dtype=bool)
    minutes = video.duration / 60.0
    return {"event_recall": float(np.mean(hit)) if hit else float("nan"),
            "precision": float(true.mean()) if rest.size else float("nan"),
            "false_alarms_per_min": float((~true).sum() / minutes),
            "off_events_per_min": float(len(meta.get("off_events", [])) / minutes),
            "kept": int(kept.size), "frames": int(video.n_frames)}


def calibration_report(config: WorldConfig | None = None, seed: int = 100, n_videos: int = 20,
                       tau_delta: float = 0.15, encoder_dim: int = 128) -> dict[str, float]:
    """Perception statistics of a world on a calibration seed (review notes 1 and 4), with the default backends:
    retention at `tau_delta`, question-relevant event recall, and the perception ceiling of grounding: the
    fraction of question spans whose best merged kept-frame entry reaches IoU >= 0.5.
    """
    from icml26.lingua.backends import HashingEmbedder, RandomProjectionEncoder, SymbolicCaptioner, SymbolicDetector
    from icml26.lingua.lingua import LinguaAgent, LinguaConfig, perceive
    from icml26.lingua.metrics import temporal_iou

    world = KitchenWorld(config, seed)
    enc = RandomProjectionEncoder(dim=encoder_dim, seed=seed)
    det = SymbolicDetector(world)
    cfg = LinguaConfig(tau_delta=tau_delta)
    emb = HashingEmbedder()
    ret, rec, ceil, n_kept, n_frames = [], [], [], 0, 0
    for i in range(n_videos):
        v, qs = world.video(i)
        cap = SymbolicCaptioner(world, seed=seed * 1000 + i)
        p = perceive(v, enc, det, cap, cfg)
        agent = LinguaAgent(cfg, embedder=emb, captioner=cap)
        agent.ingest(p)
        times = np.asarray(p.kept_idx) / v.fps
        ret.append(p.retention)
        n_kept += len(p.kept_idx)
        n_frames += v.n_frames
        for q in qs:
            s, e = q.gt_spans[0]
            rec.append(bool(np.any((times >= s) & (times < e))))
            ceil.append(max((temporal_iou((x.t_s, x.t_e), (s, e)) for x in agent.episodic.entries), default=0.0)
                        >= 0.5)
    return {"retention_mean": float(np.mean(ret)), "retention_min": float(np.min(ret)),
            "retention_max": float(np.max(ret)), "event_recall": float(np.mean(rec)),
            "grounding_ceiling_iou05": float(np.mean(ceil)), "kept_frames": n_kept, "frames": n_frames}
