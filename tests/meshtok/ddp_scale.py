"""Run meshtok's paper-scale path (`icml26.meshtok.scale`: DDP through icml26.common.distributed) at toy size under
torchrun: train one MeshTok arm with `train_distributed` and write each rank's final weights to OUT/rank{r}.pt, then
run `run_paper` end to end (arms meshtok + coarse, simulated data). Used by tests/meshtok/test_scale.py (2 gloo
processes)."""

import sys

import torch

from icml26.common import distributed as D
from icml26.meshtok.data import burgers2d
from icml26.meshtok.scale import PAPER_CONFIG, run_paper, train_distributed

out = sys.argv[1]
torch.set_num_threads(1)
cfg = {**PAPER_CONFIG, "grid": 16, "patch": 4, "n_frames": 5, "context": 3, "dim": 8, "depth": 1, "heads": 2,
       "ffn": 16, "dec_width": 2, "steps": 3, "batch_size": 2, "n_train": 4, "n_test": 2, "rollout_steps": 1,
       "rollout_n": 2, "eval_stride": 1, "eval_batch": 2, "device": "cpu", "dtype": "float32",
       "arms": ["meshtok", "coarse"], "scale": "paper"}
env = D.init_distributed(device="cpu")
train = burgers2d(4, grid=16, n_frames=5, seed=0)
res = train_distributed(cfg, "meshtok", 0, train, None, env, return_model=True)
torch.save(res["model"].state_dict(), f"{out}/rank{env.rank}.pt")
result = run_paper(cfg)
D.log(env, f"world {result.metrics['world_size']} claims {[c.id for c in result.claims]}")
