"""Run ssdcn's paper-scale training loop (`icml26.ssdcn.scale.train_paper`: DDP through icml26.common.distributed)
at toy size under torchrun on the .mat cubes in DATA_DIR and write each rank's final weights to OUT/rank{r}.pt.
Used by tests/ssdcn/test_scale.py (2 gloo processes)."""

import sys

import torch

from icml26.common import distributed as D
from icml26.ssdcn.scale import PAPER_CONFIG, load_cubes, train_paper

data_dir, out = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
cfg = {**PAPER_CONFIG, "patch": 16, "batch_size": 2, "steps": 3, "dim": 8, "paper_blocks_per_level": 1,
       "paper_k_spatial": 4, "paper_k_spectral": 2, "paper_rank_spectral": 4, "paper_rank_spatial": 4,
       "log_every": 1}
env = D.init_distributed()
model, losses = train_paper(cfg, load_cubes(data_dir), 4, env)
torch.save(model.state_dict(), f"{out}/rank{env.rank}.pt")
D.log(env, f"world {env.world_size} losses {losses}")
D.shutdown()
