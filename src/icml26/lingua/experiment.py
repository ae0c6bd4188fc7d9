"""CPU reproduction of LINGUA (spec section 6, as amended by its review notes and issue 35).

World: KitchenWorld with off-event visual changes (camera moves, lighting, a second person passing, occlusions;
`off_event_rate` per minute) and per-video object variants, so that event detection has false alarms and misses
and the non-causal answers depend on the video, not on the question text.

Per seed s (`n_seeds` seeds as parallel single-thread processes):
1. Stream: `n_stream` videos of seed s answered in order; after each answer the true option is revealed. Every
   arm sees the same reveals: each is wrapped with its own `RevealedAnswers` (a lookup by question text that
   answers a question revealed >= `revealed_min` times, always with the same answer). Arms: LINGUA (learning,
   `use_reliability` as configured), LINGUA learning=False, LINGUA with the reliability / refinement path
   switched the other way; with `order_check` the two LINGUA arms also run the stream in reversed order.
   Memory snapshots after `snapshots` videos.
2. Forgetting: the final memory, frozen, re-answers the first `n_forget` stream videos.
3. Held-out: `n_heldout` videos of seed s + 1000 (6 questions each) answered with learning frozen by every stream
   arm, the snapshots (no reveals), UniformSampling (LINGUA's frame count per video, final memory, same reveals)
   and DenseCaption (every frame, no typed memory, same reveals; thresholded and +-1 s grounders).
Plus a sweep of the off-event rate on calibration seed 100 (perception only: recall / precision of event
detection, the figure), and SmolLM2-135M-Instruct on a few belief-state prompts (report, cached replies).
Every verdict comes from `icml26.common.stats` (cluster bootstrap over videos, t over seeds); see `_claims`.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from icml26.common import stats
from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_seed, require_keys
from icml26.results import Claim, Result

SLUG = "lingua"

_BASE: dict[str, Any] = {
    "seed": 0, "n_seeds": 3, "n_stream": 100, "n_heldout": 60, "n_forget": 20, "window": 50,
    "snapshots": [10], "error_rate": 0.05, "noise_sigma": 0.005, "off_event_rate": 6.0, "encoder_dim": 128,
    "embed_dim": 512, "tau_delta": 0.15, "n_min": 5, "mine_every": 5, "cluster_distance": 0.4, "dense_stride": 1,
    "use_reliability": False, "order_check": True, "revealed_min": 2, "sweep_rates": [0, 3, 6, 12, 24],
    "sweep_videos": 10, "smollm2": "auto", "smollm2_questions": 12, "smollm2_max_tokens": 8, "n_boot": 2000,
    "workers": 0,
}

_PAPER: dict[str, Any] = {
    "seed": 0, "nextgqa_csv": "", "nextgqa_gsub": "", "video_dir": "", "stream_csv": "", "stream_gsub": "",
    "n_stream": 100, "max_videos": 0, "sample_fps": 5.0, "max_frames": 900, "encoder": "videomae", "encoder_path": "",
    "detector": "none", "detector_path": "", "captioner": "ollama", "llm": "ollama", "llm_path": "",
    "ollama_model": "gemma3:4b", "ollama_host": "http://127.0.0.1:11434", "ollama_timeout": 60.0,
    "embedder": "minilm", "device": "cuda", "out_dir": "runs/lingua/paper_work", "world": "none",
}

CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {**_BASE, "n_seeds": 1, "n_stream": 6, "n_heldout": 3, "n_forget": 2, "window": 3, "snapshots": [0, 3],
              "n_min": 2, "mine_every": 2, "sweep_rates": [0, 12], "sweep_videos": 1, "smollm2": "off",
              "n_boot": 100, "workers": 1},
    "small": dict(_BASE),
    # the small experiment with twice the seeds and more held-out videos, for gates the small budget leaves
    # inconclusive (their hints name the videos they need); numpy only, so there is no device to pick
    "medium": {**_BASE, "n_seeds": 6, "n_heldout": 100, "sweep_videos": 20},
    # GPU configuration toward the paper (not run in CI): NExT-GQA val supplied by the user, Gemma3-4B via Ollama
    # (captioner + LLM), VideoMAE frames, MiniLM embeddings; see scale.py and configs/paper/lingua/.
    "paper": dict(_PAPER),
}

CONFIG_HELP = {
    "seed": "first seed; seeds are seed .. seed + n_seeds - 1 (held-out videos use seed + 1000)",
    "n_seeds": "number of seeds (independent streams), int",
    "n_stream": "continual-learning stream length, videos",
    "n_heldout": "held-out videos per seed (6 questions each)",
    "n_forget": "first stream videos re-answered after the stream (forgetting check)",
    "window": "stream window, videos: C4 compares the last `window` videos with and without learning; C4w the "
              "last window with the first",
    "snapshots": "stream positions (videos seen) whose frozen memory answers the held-out set; the final memory "
                 "(n_stream) is always included",
    "error_rate": "captioning error rate (object/verb swaps), probability",
    "noise_sigma": "sensor noise of KitchenWorld frames, per pixel (calibrated on seed 100)",
    "off_event_rate": "off-event visual changes (camera, lighting, passer, occlusion) per minute of video",
    "encoder_dim": "RandomProjectionEncoder dimension",
    "embed_dim": "HashingEmbedder dimension",
    "tau_delta": "semantic-change threshold tau_Delta",
    "n_min": "least instances of a valid script",
    "mine_every": "re-mine the episode bank every this many videos",
    "cluster_distance": "average-linkage cosine-distance cut of frame-aware clustering",
    "dense_stride": "dense baseline captions every this-many frames (1 = every frame)",
    "use_reliability": "the paper's alpha/beta + contrastive-refinement path in the LINGUA arm (off by default: it "
                       "costs accuracy and depends on the stream's order; the other setting runs as lingua_alt)",
    "order_check": "also run the LINGUA arms over the reversed stream (order-independence check C5)",
    "revealed_min": "a revealed answer is used once its question was revealed this many times, always the same",
    "sweep_rates": "off-event rates (per minute) of the recall / precision sweep on seed 100",
    "sweep_videos": "videos per rate in that sweep",
    "smollm2": "SmolLM2-135M sample: 'auto' (if installed), 'off', or 'require' (fail when unavailable)",
    "smollm2_questions": "held-out questions (seed 0) answered by SmolLM2 from LINGUA's belief state",
    "smollm2_max_tokens": "SmolLM2 reply length, tokens",
    "n_boot": "bootstrap resamples of the confidence intervals (videos as clusters)",
    "workers": "parallel single-thread processes (0 = number of CPUs)",
    "nextgqa_csv": "paper: NExT-GQA val.csv/test.csv path", "nextgqa_gsub": "paper: gsub_val.json/gsub_test.json",
    "video_dir": "paper: folder of <video_id>.mp4 / .npy / frame folders",
    "stream_csv": "paper: optional NExT-QA-style csv of training questions for the continual-learning stream",
}

EXPECTED_RUNTIME_S = {"smoke": 15, "small": 270, "medium": 900}


# ============================================================================================ config
def validate_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the bad key (called by the CLI before compute and by `run`); unknown keys
    (a typo) are refused."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    scale = config.get("scale", "small")
    check_choice(scale, "scale", ("smoke", "small", "medium", "paper"))
    if scale == "paper":
        from icml26.lingua.scale import validate_paper_config

        need = ("nextgqa_csv", "nextgqa_gsub", "video_dir", "encoder", "captioner", "llm", "embedder", "out_dir")
        require_keys(config, need, optional=("scale", "lingua", *_PAPER))
        validate_paper_config(config)
        return
    require_keys(config, _BASE)
    check_seed(config["seed"], "seed")
    check_int(config["n_seeds"], "n_seeds", min=1, max=50)
    n_stream = check_int(config["n_stream"], "n_stream", min=2)
    check_int(config["n_heldout"], "n_heldout", min=1)
    check_int(config["n_forget"], "n_forget", min=1, max=n_stream)
    w = check_int(config["window"], "window", min=1)
    if 2 * w > n_stream:
        raise ValueError(f"window must be <= n_stream / 2 (first and last windows disjoint), got {w} for {n_stream}")
    for name in ("snapshots", "sweep_rates"):
        if not isinstance(config[name], (list, tuple)):
            raise TypeError(f"{name} must be a list of numbers")
    for i, s in enumerate(config["snapshots"]):
        check_int(s, f"snapshots[{i}]", min=0, max=n_stream)
    for i, r in enumerate(config["sweep_rates"]):
        check_float(r, f"sweep_rates[{i}]", min=0.0, max=600.0)
    check_int(config["sweep_videos"], "sweep_videos", min=1)
    check_float(config["error_rate"], "error_rate", min=0.0, max=1.0)
    check_float(config["noise_sigma"], "noise_sigma", min=0.0, max=1.0)
    check_float(config["off_event_rate"], "off_event_rate", min=0.0, max=600.0)
    check_int(config["encoder_dim"], "encoder_dim", min=1, max=4096)
    check_int(config["embed_dim"], "embed_dim", min=8, max=1 << 20)
    check_float(config["tau_delta"], "tau_delta", min=0.0, max=2.0)
    check_int(config["n_min"], "n_min", min=1)
    check_int(config["mine_every"], "mine_every", min=1)
    check_float(config["cluster_distance"], "cluster_distance", min=0.0, max=2.0)
    check_int(config["dense_stride"], "dense_stride", min=1)
    check_bool(config["use_reliability"], "use_reliability")
    check_bool(config["order_check"], "order_check")
    check_int(config["revealed_min"], "revealed_min", min=1)
    check_choice(config["smollm2"], "smollm2", ("auto", "off", "require"))
    check_int(config["smollm2_questions"], "smollm2_questions", min=1, max=1000)
    check_int(config["smollm2_max_tokens"], "smollm2_max_tokens", min=1, max=512)
    check_int(config["n_boot"], "n_boot", min=50)
    check_int(config["workers"], "workers", min=0)


# ============================================================================================ one seed
def _score(res, q, arm: str, video: int, recall: bool | None = None) -> dict[str, Any]:
    from icml26.lingua.metrics import best_iou_iop

    iou, iop = best_iou_iop(res.span, q.gt_spans)
    raw = res.option_index if res.raw_index is None else res.raw_index
    rec = {"arm": arm, "video": video, "kind": q.meta["kind"], "qtype": q.qtype,
           "correct": bool(res.option_index == q.answer_idx), "correct_raw": bool(raw == q.answer_idx),
           "revealed": bool(res.from_revealed), "iou": iou, "iop": iop}
    if recall is not None:
        rec["recall"] = recall
    return rec


def _world_config(cfg: dict[str, Any], **kw):
    from icml26.lingua.synthetic import WorldConfig

    return WorldConfig(noise_sigma=cfg["noise_sigma"], off_event_rate=kw.get("rate", cfg["off_event_rate"]))


def _lingua_config(cfg: dict[str, Any]):
    from icml26.lingua.lingua import LinguaConfig

    return LinguaConfig(tau_delta=cfg["tau_delta"], n_min=cfg["n_min"], mine_every=cfg["mine_every"],
                        cluster_distance=cfg["cluster_distance"], use_reliability=bool(cfg["use_reliability"]))


class _Setup:
    """The backends and agent factory of one seed (rebuilt identically in every job of that seed)."""

    def __init__(self, cfg: dict[str, Any], seed: int) -> None:
        from icml26.lingua.backends import HashingEmbedder, RandomProjectionEncoder, RuleBasedLLM, SymbolicDetector
        from icml26.lingua.memory import RuleBasedSRL
        from icml26.lingua.synthetic import KitchenWorld

        self.cfg, self.seed = cfg, seed
        wcfg = _world_config(cfg)
        self.world, self.held = KitchenWorld(wcfg, seed), KitchenWorld(wcfg, seed + 1000)
        self.enc = RandomProjectionEncoder(cfg["encoder_dim"], seed=seed)
        self.det = SymbolicDetector(self.world)
        self.emb = HashingEmbedder(cfg["embed_dim"])
        self.srl = RuleBasedSRL(self.world.lexicon)
        self.llm = RuleBasedLLM()
        base = _lingua_config(cfg)
        self.base = base
        self.configs = {"lingua": base, "nolearn": replace(base, learning=False),
                        "lingua_alt": replace(base, use_reliability=not base.use_reliability)}

    def agent(self, c=None, cls=None):
        from icml26.lingua.lingua import LinguaAgent

        return (cls or LinguaAgent)(c or self.base, encoder=self.enc, detector=self.det, llm=self.llm,
                                    embedder=self.emb, srl=self.srl)

    def captioner(self, world, v: int, arm: int):
        from icml26.lingua.backends import SymbolicCaptioner

        return SymbolicCaptioner(world, self.cfg["error_rate"], seed=(self.seed * 100_003 + v * 31 + arm) % (2**31))


def _stream_job(cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    """Stage 1 of a seed: the stream (every stream arm, with reveals) and the forgetting check; returns the records
    and every arm's final memory (module-level: runs in a worker process)."""
    from tqdm.auto import tqdm

    from icml26.lingua.baselines import RevealedAnswers, WithRevealedAnswers
    from icml26.lingua.lingua import perceive

    t_job = time.perf_counter()
    S = _Setup(cfg, seed)
    rmin = int(cfg["revealed_min"])
    timings = {}
    t0 = time.perf_counter()
    stream = []
    for v in range(cfg["n_stream"]):
        video, qs = S.world.video(v)
        stream.append((perceive(video, S.enc, S.det, S.captioner(S.world, v, 0), S.base), qs))
    timings["perceive_stream_s"] = time.perf_counter() - t0
    arms = {name: WithRevealedAnswers(S.agent(c), RevealedAnswers(rmin)) for name, c in S.configs.items()}
    plan = [(name, False) for name in arms]
    if cfg["order_check"]:
        for name in ("lingua", "lingua_alt"):
            arms[f"{name}_rev"] = WithRevealedAnswers(S.agent(S.configs[name]), RevealedAnswers(rmin))
            plan.append((f"{name}_rev", True))
    records: list[dict[str, Any]] = []
    snaps = sorted({int(x) for x in cfg["snapshots"] if int(x) < cfg["n_stream"]})
    states: dict[str, Any] = {}
    t0 = time.perf_counter()
    for name, rev in tqdm(plan, desc=f"lingua seed {seed}: stream arms", mininterval=10, leave=False):
        arm = arms[name]
        for v in (range(cfg["n_stream"] - 1, -1, -1) if rev else range(cfg["n_stream"])):
            if name == "lingua" and v in snaps:
                states[f"snap{v}"] = arm.memory_state()
            p, qs = stream[v]
            arm.ingest(p)
            for q in qs:
                r = arm.answer(q.question, q.options)
                records.append(_score(r, q, f"stream_{name}", v))
                arm.feedback(r, bool(r.option_index == q.answer_idx), q.answer_idx)
    timings["stream_s"] = time.perf_counter() - t0
    lingua = arms["lingua"]
    for name, a in arms.items():
        if name != "nolearn":
            states[name] = a.memory_state()
    reliab = {x.script_id: [*lingua.tracker.get(x.script_id), x.goal, x.instance_count]
              for x in lingua.procedural.active()}
    memory = {name: {"active_scripts": len(a.procedural.active()), "refinements": a.n_refinements,
                     "episode_bank": len(a.procedural.episode_bank), "revealed_questions": len(a.memory)}
              for name, a in arms.items() if name != "nolearn"}
    agent = lingua.agent.freeze()
    t0 = time.perf_counter()
    for v in range(cfg["n_forget"]):
        p, qs = stream[v]
        agent.ingest(p)
        for q in qs:
            records.append(_score(agent.answer(q.question, q.options), q, "forget", v))
    timings["forget_s"] = time.perf_counter() - t0
    timings["job_s"] = time.perf_counter() - t_job
    return {"seed": seed, "records": records, "states": states, "revealed": lingua.memory.counts,
            "reliability": reliab, "memory": memory, "timings": timings}


def _held_job(cfg: dict[str, Any], seed: int, part: int, n_parts: int, learned: dict[str, Any],
              keep_prompts: int = 0) -> dict[str, Any]:
    """Stage 2 of a seed: held-out videos part, part + n_parts, ... answered with the learned memories frozen."""
    from tqdm.auto import tqdm

    from icml26.lingua.baselines import DenseCaptionAgent, RevealedAnswers, UniformSamplingAgent, WithRevealedAnswers
    from icml26.lingua.lingua import perceive
    from icml26.lingua.synthetic import detection_report, span_seen

    t_job = time.perf_counter()
    S = _Setup(cfg, seed)
    revealed = RevealedAnswers(int(cfg["revealed_min"]))
    revealed.counts = {k: dict(v) for k, v in learned["revealed"].items()}
    states = learned["states"]
    names = [n for n in ("lingua", "lingua_alt", "lingua_rev", "lingua_alt_rev") if n in states]
    arms = {n: WithRevealedAnswers(S.agent(S.configs[n.replace("_rev", "")]).load_memory_state(states[n]).freeze(),
                                   revealed) for n in names}
    arms.update({n: S.agent().load_memory_state(st).freeze() for n, st in states.items() if n.startswith("snap")})
    uniform = WithRevealedAnswers(S.agent(cls=UniformSamplingAgent).load_memory_state(states["lingua"]).freeze(),
                                  revealed)
    cost = {"lingua_perceive_s": 0.0, "lingua_answer_s": 0.0, "dense_perceive_s": 0.0, "dense_answer_s": 0.0,
            "lingua_caption_calls": 0, "dense_caption_calls": 0, "uniform_caption_calls": 0, "frames": 0,
            "questions": 0, "lingua_encode_s": 0.0, "lingua_detect_s": 0.0, "lingua_caption_s": 0.0,
            "dense_caption_s": 0.0}
    records, retention, detection, figure, prompts = [], [], [], None, []
    lingua = arms["lingua"]
    for h in tqdm(range(part, cfg["n_heldout"], n_parts), desc=f"lingua seed {seed}: held-out {part}",
                  mininterval=10, leave=False):
        video, qs = S.held.video(h)
        ta = time.perf_counter()
        p = perceive(video, S.enc, S.det, S.captioner(S.held, h, 1), S.base)
        cost["lingua_perceive_s"] += time.perf_counter() - ta
        for k in ("encode", "detect", "caption"):
            cost[f"lingua_{k}_s"] += p.timings.get(k, 0.0)
        retention.append((h, p.retention))
        detection.append(detection_report(video, p.kept_idx))
        cost["lingua_caption_calls"] += p.n_caption_calls
        cost["frames"] += video.n_frames
        cost["questions"] += len(qs)
        ta = time.perf_counter()
        lingua.ingest(p)
        results = [lingua.answer(q.question, q.options) for q in qs]
        cost["lingua_answer_s"] += time.perf_counter() - ta
        for q, r in zip(qs, results):
            records.append(_score(r, q, "lingua", h, span_seen(video, p.kept_idx, q.gt_spans)))
        for q, r in zip(qs, results):
            if len(prompts) < keep_prompts:
                first = next(t for t in r.trace if t.startswith("cycle 1 prompt:\n"))
                prompts.append({"prompt": first[len("cycle 1 prompt:\n"):], "answer_idx": q.answer_idx,
                                "rule_based_idx": r.raw_index, "n_options": len(q.options), "kind": q.meta["kind"]})
        for name, a in arms.items():
            if name == "lingua":
                continue
            a.ingest(p)
            for q in qs:
                records.append(_score(a.answer(q.question, q.options), q, name, h))
        uniform.agent.captioner = S.captioner(S.held, h, 2)
        pu = uniform.observe(video, budget=len(p.kept_idx))
        cost["uniform_caption_calls"] += pu.n_caption_calls
        for q in qs:
            records.append(_score(uniform.answer(q.question, q.options), q, "uniform", h,
                                  span_seen(video, pu.kept_idx, q.gt_spans)))
        dense = WithRevealedAnswers(DenseCaptionAgent(S.captioner(S.held, h, 3), llm=S.llm, embedder=S.emb,
                                                      stride=cfg["dense_stride"], srl=S.srl), revealed)
        ta = time.perf_counter()
        pd = dense.observe(video)
        cost["dense_perceive_s"] += time.perf_counter() - ta
        cost["dense_caption_s"] += pd.timings.get("caption", 0.0)
        cost["dense_caption_calls"] += pd.n_caption_calls
        ta = time.perf_counter()
        dres = [dense.answer(q.question, q.options) for q in qs]
        cost["dense_answer_s"] += time.perf_counter() - ta
        for q, r in zip(qs, dres):
            records.append(_score(r, q, "dense", h))
            r.span = r.alt_spans["pm1"]
            records.append(_score(r, q, "dense_pm1", h))
        if h == 0:
            figure = {"deltas": p.deltas.tolist(), "kept": list(p.kept_idx), "uniform": list(pu.kept_idx),
                      "fps": video.fps, "tau": S.base.tau_delta,
                      "events": [(e["t_s"], e["t_e"], e["phrase"], bool(e["brief"])) for e in video.meta["events"]],
                      "off_events": [(o["t_s"], o["t_e"], o["kind"]) for o in video.meta["off_events"]]}
    return {"seed": seed, "records": records, "retention": retention, "detection": detection, "cost": cost,
            "figure": figure, "prompts": prompts, "timings": {"heldout_s": time.perf_counter() - t_job}}


def _merge_seed(stream: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One seed's output from its stream job and its held-out parts (records in video order)."""
    recs = list(stream["records"])
    for p in parts:
        recs += p["records"]
    ret = sorted(x for p in parts for x in p["retention"])
    cost = {k: sum(p["cost"][k] for p in parts) for k in parts[0]["cost"]}
    t = dict(stream["timings"])
    t["heldout_s"] = sum(p["timings"]["heldout_s"] for p in parts)
    return {"seed": stream["seed"], "records": recs, "retention": [r for _, r in ret],
            "detection": [d for p in parts for d in p["detection"]], "cost": cost, "timings": t,
            "reliability": stream["reliability"], "memory": stream["memory"],
            "figure": next((p["figure"] for p in parts if p["figure"] is not None), None),
            "prompts": [x for p in parts for x in p["prompts"]]}


def _sweep_job(cfg: dict[str, Any], seed: int = 100) -> dict[str, Any]:
    """Event detection against the off-event rate on calibration seed 100 (perception only): recall / precision of
    the kept frames, question-relevant recall of LINGUA and of uniform sampling at LINGUA's frame count."""
    from icml26.lingua.backends import RandomProjectionEncoder, SymbolicCaptioner, SymbolicDetector
    from icml26.lingua.lingua import perceive, uniform_indices
    from icml26.lingua.synthetic import KitchenWorld, detection_report, span_seen

    base = _lingua_config(cfg)
    out = []
    for rate in cfg["sweep_rates"]:
        world = KitchenWorld(_world_config(cfg, rate=float(rate)), seed)
        enc, det = RandomProjectionEncoder(cfg["encoder_dim"], seed=seed), SymbolicDetector(world)
        reps, ql, qu, ret = [], [], [], []
        for i in range(int(cfg["sweep_videos"])):
            video, qs = world.video(i)
            p = perceive(video, enc, det, SymbolicCaptioner(world, cfg["error_rate"], seed=i), base)
            reps.append(detection_report(video, p.kept_idx))
            ret.append(p.retention)
            uni = uniform_indices(video.n_frames, len(p.kept_idx))
            ql += [span_seen(video, p.kept_idx, q.gt_spans) for q in qs]
            qu += [span_seen(video, uni, q.gt_spans) for q in qs]
        out.append({"rate": float(rate), **{k: float(np.nanmean([r[k] for r in reps])) for k in reps[0]},
                    "question_recall": float(np.mean(ql)), "uniform_question_recall": float(np.mean(qu)),
                    "retention": float(np.mean(ret))})
    return {"sweep": out}


def _job(kind: str, **kw) -> dict[str, Any]:
    return {"stream": _stream_job, "held": _held_job, "sweep": _sweep_job}[kind](**kw)


# ============================================================================================ statistics helpers
def _recs(outs, arm: str, kinds=None) -> list[dict]:
    return [dict(r, seed=o["seed"]) for o in outs for r in o["records"] if r["arm"] == arm
            and (kinds is None or r["kind"] in kinds)]


def _col(recs: list[dict], key: str) -> np.ndarray:
    return np.array([r[key] for r in recs], dtype=float)


def _clusters(recs: list[dict]) -> np.ndarray:
    return np.array([r["seed"] * 100_000 + r["video"] for r in recs])


def _gqa(recs: list[dict], raw: bool = False) -> np.ndarray:
    return _col(recs, "correct_raw" if raw else "correct") * (_col(recs, "iou") >= 0.5)


def _paired(a: np.ndarray, b: np.ndarray, clusters: np.ndarray, n_boot: int) -> tuple[float, stats.Interval]:
    """mean(a - b) over the same questions and its cluster-bootstrap interval (whole videos resampled)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    return float(d.mean()), stats.bootstrap_interval(d, clusters=clusters, n_resamples=n_boot)


def _mean_ci(x: np.ndarray, clusters: np.ndarray, n_boot: int) -> tuple[float, stats.Interval]:
    x = np.asarray(x, float)
    return float(x.mean()), stats.bootstrap_interval(x, clusters=clusters, n_resamples=n_boot)


def _fmt(xs) -> str:
    return ", ".join(f"{x:.3f}" for x in xs)


def _seeds_of(recs: list[dict]) -> list[int]:
    return sorted({r["seed"] for r in recs})


def _per_seed(recs: list[dict], f) -> list[float]:
    return [float(f([r for r in recs if r["seed"] == s])) for s in _seeds_of(recs)]


def _decide_note(d: stats.Decision, what_decides: str = "") -> str:
    """The decision's text plus, for an inconclusive verdict, what would decide it."""
    text = d.text()
    if d.verdict == "inconclusive" and what_decides:
        text += f" What would decide it: {what_decides}."
    return text


# ============================================================================================ claims
# Each claim function takes per-question (or per-seed) arrays, so the tests drive the same code as the run.
# ATOL: a difference of accuracies has its natural scale near 0; 0.01 (1 point, 6 questions of 600) is the
# resolution below which we do not call a difference of two arms decided.
ATOL = 0.01


def claim_event_recall(seen: np.ndarray, clusters: np.ndarray, threshold: float = 0.90, n_boot: int = 2000,
                       per_seed: list[float] | None = None, extra: str = "", cost_s: float | None = None) -> Claim:
    """C1 (gate): question-relevant event recall (a kept, unoccluded frame inside the evidence span) >= 0.90."""
    m, iv = _mean_ci(seen, clusters, n_boot)
    d = stats.decide(m, iv, threshold, ">=", cost_per_unit_s=cost_s)
    return Claim("C1", "Event-driven perception keeps the question-relevant events (paper: 94 % of them).",
                 "held-out question-relevant event recall: a kept frame shows the evidence span (inside it, not "
                 "occluded)", {"recall": m, "per_seed": per_seed or []}, f">= {threshold:.2f}", d, "gate",
                 f"{_decide_note(d, 'more held-out videos (' + d.hint + ')')} Fails when off-event changes hide "
                 f"or drown the events: a world whose videos are heavy with occlusions falls below the bar "
                 f"(tests/lingua/test_experiment.py). {extra}", "94 % of question-relevant events preserved",
                 per_seed or [])


def claim_retention(ret_per_video: np.ndarray, clusters: np.ndarray, band=(0.06, 0.15), n_boot: int = 2000,
                    extra: str = "") -> Claim:
    m, iv = _mean_ci(ret_per_video, clusters, n_boot)
    d = stats.all_of(stats.decide(m, iv, band[0], ">=", label="lower"),
                     stats.decide(m, iv, band[1], "<=", label="upper"), label="C1r")
    return Claim("C1r", "Event-driven perception keeps only a small fraction of the frames (paper: 8-12 %).",
                 "held-out retention (kept / all frames), per video", {"retention": m},
                 f"in [{band[0]:.2f}, {band[1]:.2f}] (report: noise calibrated on seed 100, review note 1)", d,
                 "report", f"{d.text()} The sensor noise was calibrated on seed 100 for ~10 % retention in the clean "
                 f"world; off-event changes add false alarms on top. {extra}", "8-12 % of frames kept")


def claim_grounding(gqa_l, gqa_d, acc_l, acc_d, clusters, n_boot: int = 2000, margin: float = 0.10,
                    acc_tol: float = 0.03, cid: str = "C2", subset: str = "all held-out questions", extra: str = "",
                    cost_s: float | None = None) -> Claim:
    """C2 / C2nc (gates): LINGUA Acc@GQA >= Dense Acc@GQA + 10 points and accuracy >= Dense - 3 points, both arms
    with the same revealed answers (paired per question, videos as clusters)."""
    d, iv = _paired(gqa_l, gqa_d, clusters, n_boot)
    da, iva = _paired(acc_l, acc_d, clusters, n_boot)
    dec = stats.all_of(stats.decide(d, iv, margin, ">=", atol=ATOL, label="Acc@GQA gap", cost_per_unit_s=cost_s),
                       stats.decide(da, iva, -acc_tol, ">=", atol=ATOL, label="accuracy gap",
                                    cost_per_unit_s=cost_s), label=cid)
    return Claim(cid, "Typed memory closes the grounding gap: far more answers are right AND grounded than with "
                      "dense-frame captioning, at no loss of accuracy" + (" (on the questions the memory must "
                      "earn)" if cid != "C2" else "") + ".",
                 f"held-out Acc@GQA (correct and IoU >= 0.5) LINGUA - Dense, both with the same revealed answers, "
                 f"{subset}; accuracy difference",
                 {"acc@gqa_lingua": float(np.mean(gqa_l)), "acc@gqa_dense": float(np.mean(gqa_d)), "gqa_diff": d,
                  "accuracy_diff": da, "n_questions": int(len(gqa_l))},
                 f"Acc@GQA difference >= +{margin:.2f} and accuracy difference >= -{acc_tol:.2f}", dec, "gate",
                 f"Acc@GQA gap: {_decide_note(dec.parts[0], 'more held-out videos')} Accuracy gap: "
                 f"{_decide_note(dec.parts[1], 'more held-out videos')} Fails when LINGUA's spans are no better than "
                 "the dense grounder's: with the memory disabled (no merging, no scripts) the Dense agent with the "
                 "same "
                 f"answers closes the gap (tests/lingua/test_experiment.py). {extra}",
                 "Acc@GQA 42.3 % on NExT-GQA (the abstract's headline; no dense baseline number available)")


def claim_uniform(rec_l, rec_u, clusters, n_boot: int = 2000, margin: float = 0.10, extra: str = "",
                  cost_s: float | None = None) -> Claim:
    """C2b (gate): event recall of LINGUA >= Uniform (same caption budget per video) + 0.10 (paired)."""
    d, iv = _paired(rec_l, rec_u, clusters, n_boot)
    dec = stats.decide(d, iv, margin, ">=", atol=ATOL, cost_per_unit_s=cost_s)
    ceiling = 1.0 - float(np.mean(rec_u))
    return Claim("C2b", "Event-driven selection beats uniform sampling at the same caption budget.",
                 "held-out question-relevant event recall LINGUA - UniformSampling (same frames per video)",
                 {"recall_lingua": float(np.mean(rec_l)), "recall_uniform": float(np.mean(rec_u)), "diff": d,
                  "ceiling": ceiling}, f">= +{margin:.2f}", dec, "gate",
                 f"{_decide_note(dec, 'more held-out videos')} Room above uniform (1 - uniform recall) "
                 f"{ceiling:.3f}: false alarms raise LINGUA's frame count and with it uniform's budget, and misses "
                 f"lower LINGUA's recall, so the gap shrinks as off-event changes grow (figure detection_sweep). "
                 f"{extra}", "keeps 8-12 % of frames with 94 % of events (uniform sampling is the spec's baseline)")


def claim_efficiency(calls_l: int, calls_d: int, wall_l: float, wall_d: float, extra: str = "",
                     bar: float = 0.4) -> Claim:
    r = calls_l / max(calls_d, 1)
    return Claim("C3", "LINGUA is much cheaper than dense-frame methods (paper: 2.6x faster).",
                 "caption calls LINGUA / Dense (held-out); wall time per question ratio",
                 {"caption_call_ratio": r, "wall_time_ratio": wall_l / max(wall_d, 1e-12)}, f"call ratio <= {bar}",
                 stats.exact(r, bar, "<="), "sanity",
                 "Holds by construction (review note 5): caption calls = kept frames, so the ratio equals the "
                 f"retention; a count, decided exactly. {extra}", "2.6x faster than dense-frame methods")


def claim_continual(acc_l, acc_n, clusters, n_boot: int = 2000, margin: float = 0.10, cid: str = "C4",
                    subset: str = "all questions", extra: str = "", cost_s: float | None = None) -> Claim:
    """C4 / C4nc (gates): stream accuracy with learning - without, both with the same revealed answers, over the
    last window of the stream (paired per question, videos as clusters)."""
    d, iv = _paired(acc_l, acc_n, clusters, n_boot)
    dec = stats.decide(d, iv, margin, ">=", atol=ATOL, cost_per_unit_s=cost_s)
    return Claim(cid, "Continual learning across videos raises accuracy (paper: 45.2 % -> 61.8 % over 100 videos)"
                 + (" on the questions the memory must earn" if cid != "C4" else "") + ".",
                 f"stream accuracy over the last window, LINGUA learning - learning=False, both with the same revealed "
                 f"answers, {subset}, paired per question",
                 {"acc_learning": float(np.mean(acc_l)), "acc_nolearn": float(np.mean(acc_n)), "diff": d,
                  "n_questions": int(len(acc_l))}, f">= +{margin:.2f}", dec, "gate",
                 f"{_decide_note(dec, 'more seeds / a longer stream')} Fails when what the agent learns adds nothing "
                 f"to the revealed answers every arm gets (the learning arm replaced by learning=False gives 0). "
                 f"{extra}", "+16.6 points (45.2 % first 10 videos -> 61.8 % last 10)")


def claim_order(acc_fwd, acc_rev, clusters, n_boot: int = 2000, tol: float = 0.03, cid: str = "C5",
                kind: str = "gate", what: str = "LINGUA", extra: str = "", cost_s: float | None = None) -> Claim:
    """C5: the order of the stream does not change held-out accuracy: |forward - reversed| <= 3 points (a sanity
    check when the learned memory is order-free by design, i.e. with the reliability path off)."""
    d, iv = _paired(acc_fwd, acc_rev, clusters, n_boot)
    dec = stats.all_of(stats.decide(d, iv, -tol, ">=", atol=ATOL, label="lower", cost_per_unit_s=cost_s),
                       stats.decide(d, iv, tol, "<=", atol=ATOL, label="upper", cost_per_unit_s=cost_s), label=cid)
    return Claim(cid, f"{what}'s learned memory does not depend on the order of the stream.",
                 "held-out accuracy (the agent's own answers) with the memory learned from the stream forward - "
                 "from the same stream reversed, paired per question",
                 {"acc_forward": float(np.mean(acc_fwd)), "acc_reversed": float(np.mean(acc_rev)), "diff": d},
                 f"within +-{tol:.2f} (the spec's 'same accuracy' tolerance of C2)", dec, kind,
                 f"{_decide_note(dec, 'more held-out videos')} Fails when learning is path-dependent (issue 35: "
                 f"0.885 vs 0.830 with the reliability / refinement path on). {extra}",
                 "no figure (issue 35's order check)")


def _report(outs, arm: str) -> dict[str, Any]:
    recs = _recs(outs, arm)
    if not recs:
        return {"n": 0}
    c = _col(recs, "correct").astype(bool)
    cr = _col(recs, "correct_raw").astype(bool)
    iou, iop = _col(recs, "iou"), _col(recs, "iop")
    by = {t: float(np.mean([r["correct"] for r in recs if r["qtype"] == t])) if any(r["qtype"] == t for r in recs)
          else float("nan") for t in ("causal", "temporal", "descriptive")}
    kinds = sorted({r["kind"] for r in recs})
    out = {"n": len(recs), "accuracy": float(c.mean()), "accuracy_raw": float(cr.mean()),
           "revealed_share": float(np.mean([r["revealed"] for r in recs])), "accuracy_by_type": by,
           "accuracy_by_kind": {k: float(np.mean([r["correct"] for r in recs if r["kind"] == k])) for k in kinds},
           "accuracy_raw_by_kind": {k: float(np.mean([r["correct_raw"] for r in recs if r["kind"] == k]))
                                    for k in kinds},
           "acc@gqa_iou": float(np.mean(c & (iou >= 0.5))), "acc@gqa_iop": float(np.mean(c & (iop >= 0.5))),
           "grounded_given_correct_iou": float(np.mean(iou[c] >= 0.5)) if c.any() else float("nan"),
           "miou": float(iou.mean()), "miop": float(iop.mean()),
           "r@0.3_iou": float(np.mean(iou >= 0.3)), "r@0.5_iou": float(np.mean(iou >= 0.5)),
           "r@0.3_iop": float(np.mean(iop >= 0.3)), "r@0.5_iop": float(np.mean(iop >= 0.5))}
    if "recall" in recs[0]:
        out["event_recall"] = float(np.mean([r["recall"] for r in recs]))
    return out


def _metrics(cfg, outs, sweep) -> dict[str, Any]:
    arms = sorted({r["arm"] for o in outs for r in o["records"]})
    m: dict[str, Any] = {"arms": {a: _report(outs, a) for a in arms}}
    m["heldout_per_seed"] = {a: {o["seed"]: _report([o], a)["accuracy"] for o in outs} for a in arms
                             if not a.startswith("stream_") and a != "forget"}
    cost = {k: sum(o["cost"][k] for o in outs) for k in outs[0]["cost"]}
    nq = max(cost["questions"], 1)
    m["cost"] = {**cost, "lingua_wall_per_question_s": (cost["lingua_perceive_s"] + cost["lingua_answer_s"]) / nq,
                 "dense_wall_per_question_s": (cost["dense_perceive_s"] + cost["dense_answer_s"]) / nq,
                 "lingua_caption_calls_per_question": cost["lingua_caption_calls"] / nq,
                 "dense_caption_calls_per_question": cost["dense_caption_calls"] / nq}
    m["retention_per_seed"] = {o["seed"]: float(np.mean(o["retention"])) for o in outs}
    det = [d for o in outs for d in o["detection"]]
    m["detection_heldout"] = {k: float(np.nanmean([d[k] for d in det])) for k in det[0]}
    m["detection_sweep_seed100"] = sweep
    m["memory"] = {o["seed"]: {**o["memory"], "reliability": o["reliability"]} for o in outs}
    return m


def _smollm2(cfg, prompts: list[dict]) -> dict[str, Any]:
    """SmolLM2-135M-Instruct answers LINGUA's belief-state prompts (cached replies; report-only)."""
    if not prompts:
        return {"status": "no prompts"}
    from icml26.common.paths import cache_dir
    from icml26.lingua.backends import BackendUnavailableError, TransformersLLM
    from icml26.lingua.prompts import parse_answer

    try:
        import torch

        old = torch.get_num_threads()
        torch.set_num_threads(max(1, int(cfg["workers"]) or 2))
        try:
            llm = TransformersLLM.from_smollm2(cache_path=cache_dir("lingua") / "smollm2_replies.jsonl")
            t0 = time.perf_counter()
            replies = [llm.generate(p["prompt"], int(cfg["smollm2_max_tokens"]), 0.0) for p in prompts]
            gen_s = time.perf_counter() - t0
        finally:
            torch.set_num_threads(old)
    except (BackendUnavailableError, ImportError, OSError) as e:
        if cfg["smollm2"] == "require":
            raise
        return {"status": f"unavailable: {e}"}
    picks = [parse_answer(r, p["n_options"])[0] for r, p in zip(replies, prompts)]
    ok = [pk is not None and pk == p["answer_idx"] for pk, p in zip(picks, prompts)]
    rb = [p["rule_based_idx"] == p["answer_idx"] for p in prompts]
    from collections import Counter

    letters = Counter("none" if pk is None else "ABCDEFGHIJ"[pk] for pk in picks)
    truth = Counter("ABCDEFGHIJ"[p["answer_idx"]] for p in prompts)
    return {"status": "ok", "n": len(prompts), "accuracy_smollm2": float(np.mean(ok)),
            "answer_letters": dict(sorted(letters.items())), "true_letters": dict(sorted(truth.items())),
            "accuracy_rule_based": float(np.mean(rb)), "unparsed": int(sum(pk is None for pk in picks)),
            "chance": float(np.mean([1 / p["n_options"] for p in prompts])), "generated": llm.n_generated,
            "cached": llm.n_cached, "generate_s": gen_s, "replies": replies, "kinds": [p["kind"] for p in prompts],
            "correct": [bool(x) for x in ok], "truth_letters": ["ABCDEFGHIJ"[p["answer_idx"]] for p in prompts]}


def _claims(cfg, outs, m, smol, sweep) -> list[Claim]:
    nb = int(cfg["n_boot"])
    ns, w = int(cfg["n_stream"]), int(cfg["window"])
    workers = max(1, int(cfg.get("_workers", 1)))
    # seconds of wall time one more held-out / stream video costs this run (the hints' unit is a video)
    held_s = float(np.mean([o["timings"]["heldout_s"] for o in outs])) / max(1, int(cfg["n_heldout"])) / workers
    strm_s = float(np.mean([o["timings"]["stream_s"] + o["timings"]["perceive_stream_s"] for o in outs])) / ns / workers
    non_causal = ("brief", "temporal", "descriptive")
    h = m["arms"]
    claims: list[Claim] = []

    L = _recs(outs, "lingua")
    cl = _clusters(L)
    dh = m["detection_heldout"]
    rates = ", ".join(f"{s['rate']:g}/min: recall {s['question_recall']:.3f}, precision {s['precision']:.3f}"
                      for s in sweep)
    claims.append(claim_event_recall(
        _col(L, "recall"), cl, n_boot=nb, per_seed=_per_seed(L, lambda rs: np.mean([r["recall"] for r in rs])),
        cost_s=held_s,
        extra=(f"Off-event changes at {cfg['off_event_rate']:g}/min: precision of the kept frames "
               f"{dh['precision']:.3f} (false alarms {dh['false_alarms_per_min']:.1f}/min), recall over all actions "
               f"{dh['event_recall']:.3f}. "
               f"Sweep on seed 100 ({cfg['sweep_videos']} videos per rate): {rates}.")))
    ret = np.array([x for o in outs for x in o["retention"]])
    ret_cl = np.array([o["seed"] * 100_000 + i for o in outs for i in range(len(o["retention"]))])
    claims.append(claim_retention(ret, ret_cl, n_boot=nb, extra="Per seed: " + _fmt(m["retention_per_seed"].values())))

    D, P = _recs(outs, "dense"), _recs(outs, "dense_pm1")
    for cid, kinds, subset in (("C2", None, "all held-out questions"),
                               ("C2nc", non_causal, "non-causal questions (brief-step, temporal, descriptive)")):
        Ls, Ds, Ps = _recs(outs, "lingua", kinds), _recs(outs, "dense", kinds), _recs(outs, "dense_pm1", kinds)
        claims.append(claim_grounding(
            _gqa(Ls), _gqa(Ds), _col(Ls, "correct"), _col(Ds, "correct"), _clusters(Ls), nb, cid=cid, subset=subset,
            cost_s=held_s,
            extra=(f"Dense with the spec's [t*-1 s, t*+1 s] span: Acc@GQA {_gqa(Ps).mean():.3f}. Without the revealed "
                   f"answers (each arm's own answers): Acc@GQA LINGUA {_gqa(Ls, True).mean():.3f} vs Dense "
                   f"{_gqa(Ds, True).mean():.3f}. Revealed answers used on {np.mean(_col(Ls, 'revealed')):.2f} of "
                   f"these questions. Per seed Acc@GQA LINGUA/Dense: "
                   + ", ".join(f"s{s}: {a:.3f}/{b:.3f}" for s, a, b in zip(
                       _seeds_of(Ls), _per_seed(Ls, lambda rs: _gqa(rs).mean()),
                       _per_seed(Ds, lambda rs: _gqa(rs).mean())))
                   + (f". mIoU LINGUA {h['lingua']['miou']:.3f} vs Dense {h['dense']['miou']:.3f}; official IoP "
                      f"Acc@GQA {h['lingua']['acc@gqa_iop']:.3f} vs {h['dense']['acc@gqa_iop']:.3f}."
                      if cid == "C2" else "."))))
    U = _recs(outs, "uniform")
    brief = ["brief"]
    claims.append(claim_uniform(
        _col(L, "recall"), _col(U, "recall"), cl, nb, cost_s=held_s,
        extra=(f"On brief-step questions {_col(_recs(outs, 'lingua', brief), 'recall').mean():.3f} vs "
               f"{_col(_recs(outs, 'uniform', brief), 'recall').mean():.3f}. Sweep on seed 100, uniform recall at "
               "LINGUA's frame count: " + ", ".join(f"{s['rate']:g}/min {s['uniform_question_recall']:.3f} (LINGUA "
                                                   f"{s['question_recall']:.3f})" for s in sweep)
               + f". Accuracy (reported, not gated) LINGUA {h['lingua']['accuracy']:.3f} vs Uniform "
               f"{h['uniform']['accuracy']:.3f}.")))
    c = m["cost"]
    per_frame_cost = (c["lingua_encode_s"] + c["lingua_detect_s"]) / max(c["frames"], 1)
    per_cap = c["dense_caption_s"] / max(c["dense_caption_calls"], 1)
    ret_c = c["lingua_caption_calls"] / max(c["dense_caption_calls"], 1)
    claims.append(claim_efficiency(
        c["lingua_caption_calls"], c["dense_caption_calls"], c["lingua_wall_per_question_s"],
        c["dense_wall_per_question_s"],
        extra=(f"Wall per question LINGUA {c['lingua_wall_per_question_s'] * 1e3:.1f} ms vs Dense "
               f"{c['dense_wall_per_question_s'] * 1e3:.1f} ms; LINGUA's encoder+detector pass over every frame "
               f"costs {per_frame_cost * 1e3:.3f} ms/frame here vs {per_cap * 1e3:.3f} ms per symbolic caption. With "
               f"a real VLM (caption cost c, per-frame pass e) the speed-up is 1 / (call ratio + e/c); the paper's "
               f"2.6x at our call ratio {ret_c:.3f} implies e/c = {1 / 2.6 - ret_c:.3f}.")))

    def last(arm, kinds=None):
        return [r for r in _recs(outs, f"stream_{arm}", kinds) if r["video"] >= ns - w]

    for cid, kinds, subset in (("C4", None, "all questions"), ("C4nc", non_causal, "non-causal questions")):
        A, B = last("lingua", kinds), last("nolearn", kinds)
        claims.append(claim_continual(
            _col(A, "correct"), _col(B, "correct"), _clusters(A), nb, cid=cid, subset=subset, cost_s=strm_s,
            extra=(f"Last {w} of {ns} stream videos. Each arm's own answers (no revealed answers): "
                   f"{_col(A, 'correct_raw').mean():.3f} vs {_col(B, 'correct_raw').mean():.3f}. Per seed "
                   "learning/learning=False: " + ", ".join(f"s{s}: {a:.3f}/{b:.3f}" for s, a, b in zip(
                       _seeds_of(A), _per_seed(A, lambda rs: _col(rs, "correct").mean()),
                       _per_seed(B, lambda rs: _col(rs, "correct").mean()))) + ".")))
    # goal attachment (our addition): LINGUA's own causal answers vs the lookup a learning=False agent gets
    A, B = last("lingua", ["causal"]), last("nolearn", ["causal"])
    dg, ivg = _paired(_col(A, "correct_raw"), _col(B, "correct"), _clusters(A), nb)
    gain_raw = float(_col(A, "correct_raw").mean() - _col(B, "correct_raw").mean())
    dec = stats.decide(dg, ivg, -0.03, ">=", atol=ATOL)
    claims.append(Claim(
        "C4g", "Our goal-attachment path (review note 6, not the paper's) learns the goals as well as a lookup of "
               "the revealed answers.",
        f"causal accuracy over the last {w} stream videos: LINGUA's own answers (goals learned through attachment) - "
        "learning=False with the revealed answers, paired per question",
        {"lingua_own": float(_col(A, "correct_raw").mean()), "nolearn_with_revealed": float(_col(B, "correct").mean()),
         "diff": dg, "gain_over_nolearn_own": gain_raw}, ">= -0.03 (report)", dec, "report",
        f"{dec.text()} Goal attachment raises LINGUA's own causal accuracy by {gain_raw:+.3f} over learning=False's "
        "own answers: this is the whole of the old C4 gate's gain (issue 35), so it is reported as our addition; "
        "the gates C4 / C4nc give every arm the revealed answers.", "no figure (our addition to the method)"))
    wl = [float(np.mean([r["correct"] for r in _recs([o], "stream_lingua") if r["video"] >= ns - w])
                - np.mean([r["correct"] for r in _recs([o], "stream_lingua") if r["video"] < w])) for o in outs]
    wn = [float(np.mean([r["correct"] for r in _recs([o], "stream_nolearn") if r["video"] >= ns - w])
                - np.mean([r["correct"] for r in _recs([o], "stream_nolearn") if r["video"] < w])) for o in outs]
    d_w, d_n = stats.t_interval(wl), stats.t_interval(wn)
    dec_w = stats.decide(float(np.mean(wl)), d_w, 0.10, ">=", atol=ATOL)
    claims.append(Claim(
        "C4w", "Accuracy rises along the continual-learning stream (last window - first window).",
        f"stream accuracy with learning (and revealed answers), last {w} - first {w} videos, mean over seeds",
        {"learning": float(np.mean(wl))}, ">= +0.10 (report, review note 7)", dec_w, "report",
        f"{dec_w.text()} Per seed {_fmt(wl)}; unpaired windows (different videos), so the t interval over seeds "
        "is wide. The revealed answers rise along the stream for every arm (C4n).", "45.2 % first 10 -> 61.8 % last 10",
        wl))
    dec_n = stats.decide(float(np.mean(wn)), d_n, 0.04, "<=", atol=ATOL)
    claims.append(Claim(
        "C4n", "Without learning the stream's gain comes from the revealed answers alone (control).",
        f"stream accuracy with learning=False (and revealed answers), last {w} - first {w} videos",
        {"nolearn": float(np.mean(wn))}, "<= +0.04 (report, review note 7)", dec_n, "report",
        f"{dec_n.text()} Per seed {_fmt(wn)}: the revealed answers fill up along the stream, so this control now "
        "rises too; C4 pairs the two arms on the same questions instead.",
        "no figure: our control for C4w", wn))
    F = _recs(outs, "forget")
    S0 = [r for r in _recs(outs, "stream_lingua") if r["video"] < int(cfg["n_forget"])]
    df, ivf = _paired(_col(F, "correct_raw"), _col(S0, "correct_raw"), _clusters(F), nb)
    dec_f = stats.decide(df, ivf, -0.02, ">=", atol=ATOL)
    claims.append(Claim(
        "C4f", "No catastrophic forgetting: after the stream, the first videos are answered at least as well.",
        f"accuracy (own answers) re-answering the first {cfg['n_forget']} stream videos with the final frozen memory "
        "- their original accuracy, paired per question", {"diff": df}, ">= -0.02 (report)", dec_f, "report",
        f"{dec_f.text()} Can fail if refinement or reliability updates misdirect early scripts.",
        "no catastrophic forgetting"))
    H = {a: _recs(outs, a) for a in ("lingua", "lingua_rev", "lingua_alt", "lingua_alt_rev")}
    rel = "on" if cfg["use_reliability"] else "off"
    alt = "off" if cfg["use_reliability"] else "on"
    if H["lingua_rev"]:
        by_design = not cfg["use_reliability"]
        claims.append(claim_order(
            _col(H["lingua"], "correct_raw"), _col(H["lingua_rev"], "correct_raw"), _clusters(H["lingua"]), nb,
            what=f"LINGUA (reliability / refinement path {rel}, the reproduction's default)", cost_s=held_s,
            kind="sanity" if by_design else "gate",
            extra=(("Sanity, not evidence: with the path off, mining is a function of the bank's contents (sorted "
                    "clustering, name tie-breaks, scripts not re-found deactivated, a last mining at freeze) and the "
                    "rule-based reasoner cites evidence that does not depend on the scripts, so the forward and "
                    "reversed memories agree by construction; this checks it end to end (a real LLM that cites "
                    "script-dependent evidence could break it). " if by_design else "")
                   + f"The same with the path {alt}: forward {_col(H['lingua_alt'], 'correct_raw').mean():.3f} vs "
                   f"reversed {_col(H['lingua_alt_rev'], 'correct_raw').mean():.3f} (C5alt).")))
        claims.append(claim_order(
            _col(H["lingua_alt"], "correct_raw"), _col(H["lingua_alt_rev"], "correct_raw"),
            _clusters(H["lingua_alt"]), nb, cid="C5alt", kind="report",
            what=f"LINGUA with the reliability / refinement path {alt}"))
    on, off = (H["lingua"], H["lingua_alt"]) if cfg["use_reliability"] else (H["lingua_alt"], H["lingua"])
    dr, ivr = _paired(_col(on, "correct_raw"), _col(off, "correct_raw"), _clusters(on), nb)
    dec_r = stats.decide(dr, ivr, 0.0, ">=", atol=ATOL)
    claims.append(Claim(
        "C5r", "The paper's reliability / refinement path (Beta updates, contrastive refinement) helps accuracy.",
        "held-out accuracy (own answers), path on - path off, same stream, paired per question",
        {"acc_on": float(_col(on, "correct_raw").mean()), "acc_off": float(_col(off, "correct_raw").mean()),
         "diff": dr}, ">= 0 (report: the measured cost of the path)", dec_r, "report",
        f"{dec_r.text()} The reproduction runs LINGUA with the path {rel} (`use_reliability`); this is its measured "
        "cost. Issue 35 found it cost 3.6 points and made held-out accuracy depend on the stream's order.",
        "no figure (the paper reports no ablation of it)"))
    if smol.get("status") == "ok":
        best_letter = max(smol["true_letters"], key=smol["true_letters"].get)
        truth = np.array([p for p in smol["truth_letters"]])
        smol_ok = np.array(smol["correct"], dtype=float)
        const_ok = (truth == best_letter).astype(float)
        d_s = float(smol_ok.mean() - const_ok.mean())
        iv_s = stats.bootstrap_interval(smol_ok - const_ok, n_resamples=max(nb, 200)) if len(truth) > 1 else \
            stats.t_interval([d_s])
        dec_s = stats.decide(d_s, iv_s, 0.05, ">=", atol=ATOL)
        claims.append(Claim(
            "R1", "A real small LLM can reason over LINGUA's text belief state.",
            f"accuracy on {smol['n']} held-out questions (seed 0) from the same belief-state prompts - always "
            "answering the most common true letter, paired per question",
            {"smollm2_135m": smol["accuracy_smollm2"], "rule_based": smol["accuracy_rule_based"],
             "chance": smol["chance"], "best_constant_letter": float(const_ok.mean()), "diff": d_s},
            ">= +0.05 over the best constant letter (report)", dec_s, "report",
            f"{dec_s.text()} SmolLM2-135M-Instruct, greedy, <= {cfg['smollm2_max_tokens']} tokens, replies cached; "
            f"{smol['unparsed']} replies named no option; letters it chose {smol['answer_letters']} vs true "
            f"{smol['true_letters']}. The paper uses Gemma3-4B (~30x larger).", "Gemma3-4B backbone: NExT-QA 82.4 %"))
    return claims


# ============================================================================================ run
def run(config: dict[str, Any]) -> Result:
    cfg = dict(config)
    cfg.setdefault("scale", "small")
    validate_config(cfg)
    if cfg["scale"] == "paper":
        from icml26.lingua.scale import run_paper

        return run_paper(cfg)
    from icml26.common.parallel import default_workers, run_graph

    t_start = time.perf_counter()
    seeds = list(range(int(cfg["seed"]), int(cfg["seed"]) + int(cfg["n_seeds"])))
    workers = int(cfg["workers"]) or default_workers()
    keep = int(cfg["smollm2_questions"]) if cfg["smollm2"] != "off" else 0
    n_parts = min(2, int(cfg["n_heldout"]))  # held-out halves: 3 seeds balance over 2 workers
    jobs: dict[Any, Any] = {("stream", s): {"kind": "stream", "cfg": cfg, "seed": s} for s in seeds}
    deps: dict[Any, list] = {}
    for i, s in enumerate(seeds):
        for part in range(n_parts):
            jobs[("held", s, part)] = (lambda done, s=s, part=part, i=i: {
                "kind": "held", "cfg": cfg, "seed": s, "part": part, "n_parts": n_parts,
                "learned": {k: done[("stream", s)][k] for k in ("states", "revealed")},
                "keep_prompts": keep if i == 0 and part == 0 else 0})
            deps[("held", s, part)] = [("stream", s)]
    jobs[("sweep",)] = {"kind": "sweep", "cfg": cfg}
    stage = {"stream": 0, "held": 1, "sweep": 2}
    res = run_graph(_job, jobs, deps, workers=workers, priority=lambda k: stage[k[0]],
                    desc="lingua: streams, held-out halves, off-event sweep")
    outs = [_merge_seed(res[("stream", s)], [res[("held", s, p)] for p in range(n_parts)]) for s in seeds]
    sweep = res[("sweep",)]["sweep"]
    t_seeds = time.perf_counter() - t_start
    t0 = time.perf_counter()
    smol = _smollm2(cfg, outs[0]["prompts"]) if keep else {"status": "off"}
    t_smol = time.perf_counter() - t0
    result = Result(slug=SLUG, scale=cfg["scale"], config=config)
    metrics = _metrics(cfg, outs, sweep)
    metrics["smollm2"] = smol
    metrics["timings"] = {"seeds_wall_s": t_seeds, "smollm2_s": t_smol, "workers": workers,
                          "per_seed": {o["seed"]: o["timings"] for o in outs}}
    result.metrics = metrics
    result.claims = _claims({**cfg, "_workers": min(workers, len(jobs))}, outs, metrics, smol, sweep)
    _figures(result, cfg, outs, sweep)
    result.runtime_s = time.perf_counter() - t_start
    result.notes = (f"{len(seeds)} seeds x ({cfg['n_stream']} stream + {cfg['n_heldout']} held-out videos), "
                    f"off-event changes {cfg['off_event_rate']:g}/min, {workers} worker(s); seeds took {t_seeds:.0f} s,"
                    " "
                    f"SmolLM2 sample {t_smol:.0f} s ({smol.get('status')}).")
    return result


def _figures(result: Result, cfg, outs, sweep) -> None:
    from icml26.common.plotting import new_figure

    fig_d = outs[0]["figure"]
    if fig_d is not None:
        fig, ax = new_figure(width=10, height=3.6)
        fps = fig_d["fps"]
        d = np.array(fig_d["deltas"])
        t = np.arange(len(d)) / fps
        for s, e, phrase, brief in fig_d["events"]:
            ax.axvspan(s, e, color="#ff7f0e" if brief else "#9ecae1", alpha=0.35, lw=0)
            ax.text((s + e) / 2, 0.98, phrase.replace(" the ", " "), rotation=90, fontsize=6, va="top", ha="center",
                    transform=ax.get_xaxis_transform())
        for s, e, kind in fig_d["off_events"]:
            ax.plot([s, max(e, s + 0.2)], [-0.02, -0.02], lw=4, color="#9467bd", solid_capstyle="butt")
            ax.text(s, -0.005, kind, fontsize=5, color="#9467bd", va="bottom")
        ax.plot(t, d, lw=0.8, color="#444444", label="semantic change Δ_t")
        ax.axhline(fig_d["tau"], color="#d62728", ls="--", lw=0.8, label="τ_Δ = 0.15")
        ax.plot(np.array(fig_d["kept"]) / fps, np.full(len(fig_d["kept"]), -0.07), "|", color="#1f77b4", ms=10,
                label=f"LINGUA kept ({len(fig_d['kept'])} of {len(d)} frames)")
        ax.plot(np.array(fig_d["uniform"]) / fps, np.full(len(fig_d["uniform"]), -0.14), "|", color="#2ca02c", ms=10,
                label="uniform, same budget")
        ax.set_ylim(-0.2, 1.05)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("Δ_t")
        ax.set_title("Held-out video 0 (seed %d): actions (orange = brief steps), off-event changes (purple), kept "
                     "frames" % outs[0]["seed"])
        ax.legend(fontsize=7, loc="center right")
        result.add_figure("kept_frames", fig)

    fig, ax = new_figure(width=5.4, height=3.6)
    r = [s["rate"] for s in sweep]
    ax.plot(r, [s["question_recall"] for s in sweep], "o-", color="#1f77b4", label="LINGUA question-event recall")
    ax.plot(r, [s["event_recall"] for s in sweep], "s--", color="#1f77b4", alpha=0.6,
            label="LINGUA recall, all actions")
    ax.plot(r, [s["precision"] for s in sweep], "^-", color="#d62728", label="precision of kept frames")
    ax.plot(r, [s["uniform_question_recall"] for s in sweep], "o-", color="#2ca02c",
            label="uniform (same frame count) question-event recall")
    ax.axhline(0.90, color="#7f7f7f", ls=":", lw=0.8, label="C1 bar 0.90")
    ax.axvline(float(cfg["off_event_rate"]), color="#9467bd", ls=":", lw=0.8, label="rate of the evaluation")
    ax.set_xlabel("off-event visual changes per minute")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"Event detection vs off-event rate (seed 100, {cfg['sweep_videos']} videos per rate)")
    ax.legend(fontsize=6, loc="lower left")
    result.add_figure("detection_sweep", fig)

    fig, axes = new_figure(ncols=2, width=5.4, height=3.6)
    axes = np.asarray(axes).ravel()
    ax = axes[0]
    ns, w = int(cfg["n_stream"]), max(1, min(10, int(cfg["window"]) // 2))
    for arm, col, lab in (("stream_lingua", "#1f77b4", "LINGUA (learning)"),
                          ("stream_nolearn", "#7f7f7f", "learning=False"),
                          ("stream_lingua_alt", "#ff7f0e", "LINGUA, reliability path switched")):
        for key, ls in (("correct", "-"), ("correct_raw", ":")):
            per = np.array([[np.mean([r[key] for r in o["records"] if r["arm"] == arm and r["video"] == v])
                             for v in range(ns)] for o in outs])
            sm = np.array([np.convolve(p, np.ones(w) / w, mode="valid") for p in per])
            ax.plot(np.arange(sm.shape[1]) + w, sm.mean(0), color=col, ls=ls,
                    label=lab + (" + revealed answers" if key == "correct" else ", own answers"))
    ax.set_xlabel("stream video")
    ax.set_ylabel(f"accuracy (rolling {w} videos, mean over seeds)")
    ax.set_title("Continual-learning stream")
    ax.legend(fontsize=6)
    ax = axes[1]
    h = result.metrics["arms"]
    xs = sorted([int(a[4:]) for a in h if a.startswith("snap")]) + [ns]
    ys = [h[f"snap{x}"]["accuracy_raw"] if x != ns else h["lingua"]["accuracy_raw"] for x in xs]
    ax.plot(xs, ys, "o-", label="held-out accuracy, own answers")
    ax.plot([ns], [h["lingua_alt"]["accuracy_raw"]], "D", color="#ff7f0e", label="reliability path switched")
    ax.axhline(h["lingua"]["accuracy"], color="#1f77b4", ls=":", label="LINGUA + revealed answers")
    ax.axhline(h["dense"]["accuracy"], color="#d62728", ls=":", label="Dense + revealed answers")
    ax.set_xlabel("stream videos seen before freezing")
    ax.set_title("Held-out set with frozen memory snapshots")
    ax.legend(fontsize=6)
    result.add_figure("continual_learning", fig)
