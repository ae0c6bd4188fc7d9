"""LINGUA vs the dense-frame agent: caption calls and wall time per question, as ratios (issue 26's figure).

    python benchmarks/lingua_cost.py [--videos 20] [--seed 1000] [--caption-ms 800] [--frame-ms 40]

Measures, on held-out KitchenWorld videos with the offline backends (one thread): LINGUA's per-frame encoder and
detector pass, its captions of the kept frames, its BAV answering; the dense agent's caption of every frame and
its answering over the raw caption list. The symbolic captioner is almost free, so the measured wall-time ratio
says little about real VLMs; the modeled line replaces the caption cost by `--caption-ms` per call (e.g. Gemma3-4B
at 4-bit on one GPU) and the per-frame pass by `--frame-ms` (VideoMAE-base pair clip + detector).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--videos", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--caption-ms", type=float, default=800.0, help="modeled VLM latency per caption call")
    ap.add_argument("--frame-ms", type=float, default=40.0, help="modeled per-frame encoder + detector cost")
    a = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    from icml26.lingua import (DenseCaptionAgent, HashingEmbedder, KitchenWorld, LinguaAgent, LinguaConfig,
                               RandomProjectionEncoder, RuleBasedSRL, SymbolicCaptioner, SymbolicDetector)

    world = KitchenWorld(seed=a.seed)
    emb, srl = HashingEmbedder(), RuleBasedSRL(world.lexicon)
    agent = LinguaAgent(LinguaConfig(), encoder=RandomProjectionEncoder(seed=0), detector=SymbolicDetector(world),
                        captioner=SymbolicCaptioner(world, seed=0), embedder=emb, srl=srl)
    dense = DenseCaptionAgent(SymbolicCaptioner(world, seed=1), embedder=emb, srl=srl)
    t = {k: 0.0 for k in ("l_encode", "l_detect", "l_caption", "l_ingest_answer", "d_caption", "d_answer")}
    calls_l = calls_d = frames = nq = 0
    for i in range(a.videos):
        v, qs = world.video(i)
        t0 = time.perf_counter()
        rep = agent.observe(v)
        t_obs = time.perf_counter() - t0
        t["l_encode"] += rep.timings["encode"]
        t["l_detect"] += rep.timings["detect"]
        t["l_caption"] += rep.timings["caption"]
        t0 = time.perf_counter()
        for q in qs:
            agent.answer(q.question, q.options)
        t["l_ingest_answer"] += time.perf_counter() - t0 + t_obs - sum(rep.timings.values())
        t0 = time.perf_counter()
        drep = dense.observe(v)
        t["d_caption"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        for q in qs:
            dense.answer(q.question, q.options)
        t["d_answer"] += time.perf_counter() - t0
        calls_l += rep.n_caption_calls
        calls_d += drep.n_caption_calls
        frames += v.n_frames
        nq += len(qs)
    lw = (t["l_encode"] + t["l_detect"] + t["l_caption"] + t["l_ingest_answer"]) / nq
    dw = (t["d_caption"] + t["d_answer"]) / nq
    print(f"{a.videos} videos, {frames} frames, {nq} questions")
    print(f"caption calls per question: LINGUA {calls_l / nq:.2f}, Dense {calls_d / nq:.2f}, "
          f"ratio {calls_l / calls_d:.3f}")
    print(f"wall per question (measured, symbolic captioner): LINGUA {lw * 1e3:.2f} ms, Dense {dw * 1e3:.2f} ms, "
          f"ratio {lw / dw:.2f}")
    print("  LINGUA breakdown per question (ms): " + ", ".join(f"{k[2:]} {v / nq * 1e3:.2f}" for k, v in t.items()
                                                                if k.startswith("l_")))
    cap, fr = a.caption_ms / 1e3, a.frame_ms / 1e3
    ml = (calls_l * cap + frames * fr) / nq
    md = calls_d * cap / nq
    print(f"modeled with {a.caption_ms:.0f} ms/caption and {a.frame_ms:.0f} ms/frame for LINGUA's pass: LINGUA "
          f"{ml:.1f} s, Dense {md:.1f} s per question, speed-up {md / ml:.2f}x (paper: 2.6x)")
    r = calls_l / calls_d
    print(f"the paper's 2.6x at call ratio {r:.3f} implies per-frame pass / caption cost = {1 / 2.6 - r:.3f}")
    _ = np


if __name__ == "__main__":
    main()
