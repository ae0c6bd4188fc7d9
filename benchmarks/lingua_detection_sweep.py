"""Event detection of LINGUA's perception against the rate of off-event visual changes (issue 35's figure).

    python benchmarks/lingua_detection_sweep.py [--rates 0 3 6 12 24 48] [--videos 30] [--seed 100] [--png out.png]

On KitchenWorld videos of one seed (perception only, offline backends, one thread): recall over all actions and
over the question-relevant evidence (a kept frame inside the span and not occluded), precision of the kept frames
(within one frame of a real scene change), false alarms per minute, retention, and the question-relevant recall
of uniform sampling at LINGUA's frame count. The reproduction (`icml26 run lingua`) runs the same sweep on 10
videos per rate and saves it as the figure `detection_sweep`.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rates", type=float, nargs="+", default=[0, 3, 6, 12, 24, 48])
    ap.add_argument("--videos", type=int, default=30)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--png", default="")
    a = ap.parse_args()

    from icml26.common.parallel import limit_threads
    from icml26.lingua import experiment as E

    limit_threads(1)
    cfg = {**E.CONFIGS["small"], "sweep_rates": a.rates, "sweep_videos": a.videos}
    t0 = time.perf_counter()
    rows = E._sweep_job(cfg, seed=a.seed)["sweep"]
    print(f"{a.videos} videos per rate, seed {a.seed}, {time.perf_counter() - t0:.1f} s")
    print("rate/min  recall(q)  recall(all)  precision  false-alarms/min  retention  uniform recall(q)")
    for r in rows:
        print(f"{r['rate']:8g}  {r['question_recall']:9.3f}  {r['event_recall']:11.3f}  {r['precision']:9.3f}  "
              f"{r['false_alarms_per_min']:16.1f}  {r['retention']:9.3f}  {r['uniform_question_recall']:17.3f}")
    if a.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5.4, 3.6))
        x = [r["rate"] for r in rows]
        ax.plot(x, [r["question_recall"] for r in rows], "o-", label="LINGUA question-event recall")
        ax.plot(x, [r["precision"] for r in rows], "^-", label="precision of kept frames")
        ax.plot(x, [r["uniform_question_recall"] for r in rows], "s-", label="uniform, same frame count")
        ax.set_xlabel("off-event visual changes per minute")
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(a.png, dpi=120)
        print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
