"""Time per online update (predict_interval on one row + update) of CQACP vs the baselines, as ratios.

    flock /tmp/icml26_heavy.lock .venv/bin/python benchmarks/cqacp_update_time.py [series] [steps]

Uses the small-scale configuration of icml26.cqacp.experiment (window 10, refit every 20, n_max 300); the
learner refits are amortised over the steps.  Prints seconds per step and the ratio to CQACP(QRF).
"""

import sys
import warnings

from icml26.cqacp.experiment import CONFIGS, time_updates

if __name__ == "__main__":
    warnings.filterwarnings("ignore", category=UserWarning)
    series = sys.argv[1] if len(sys.argv) > 1 else "ar_garch"
    cfg = dict(CONFIGS["small"], timing_steps=int(sys.argv[2]) if len(sys.argv) > 2 else 200)
    t = time_updates(series, 0, cfg)
    ref = t["CQACP(QRF)"]
    print(f"{'method':16s} {'ms/update':>10s} {'ratio vs CQACP(QRF)':>20s}")
    for m, v in t.items():
        print(f"{m:16s} {1000 * v:10.3f} {v / ref:20.3f}")
