"""ME-POIs throughput at the CPU-reproduction size (spec section 6): visits encoded per second by the trained
visit encoder (eval mode, batches of 256 windows) and training seconds per epoch (d 64, 2 layers, 4 heads, W 16,
batch 64, AdamW), one thread. Run under the shared lock:

    flock /tmp/icml26_heavy.lock .venv/bin/python benchmarks/mepoi_throughput.py [--world synthetic|helsinki]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import torch

from icml26.mepoi import MEPOITrainer, make_city, make_helsinki_city


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", default="synthetic", choices=["synthetic", "helsinki"])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    pois, visits, _ = make_city(0, 1500, 800, 4) if args.world == "synthetic" else make_helsinki_city(0, 800, 4)
    tr = MEPOITrainer(d=64, layers=2, heads=4, ffn=128, dropout=0.1, window=16, batch_size=64, optimizer="adamw",
                      lr=1e-3, epochs=args.epochs, min_visits=30, embedding_init_std=0.1, absolute_time_days=28.0,
                      seed=0)
    t0 = time.perf_counter()
    tr.fit(visits, pois)
    fit_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    h = tr.encode_visits(visits)
    enc_s = time.perf_counter() - t1
    out = {"world": args.world, "n_poi": len(pois), "n_visits": len(visits), "threads": args.threads,
           "epoch_s": round(tr.epoch_time_s_, 2), "train_visits_per_s": round(tr.visits_per_s_),
           "encode_visits_per_s": round(len(h) / enc_s), "fit_s_incl_priors": round(fit_s, 2),
           "torch": torch.__version__, "cpu": platform.processor() or platform.machine()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
