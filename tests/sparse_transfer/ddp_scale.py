"""Run sparse_transfer's paper-scale image trainer (`icml26.sparse_transfer.scale.train_translator`: DDP through
icml26.common.distributed, NS-GAN + R1, cycle, anchor, fd Jacobian penalty) at toy size under torchrun and write
each rank's final weights to OUT/rank{r}.pt. Used by tests/sparse_transfer/test_scale.py (2 gloo processes)."""

import sys

import torch

from icml26.common import distributed as D
from icml26.sparse_transfer.scale import PAPER_CONFIG, load_image_domains, train_translator

out = sys.argv[1]
torch.set_num_threads(1)
cfg = {**PAPER_CONFIG, "data": "synthetic", "n_synthetic": 16, "image_size": 8, "width": 4, "steps": 3,
       "batch_size": 4, "n_probes": 2, "log_every": 1, "lr": 1e-3}
env = D.init_distributed()
res = train_translator(cfg, load_image_domains(cfg), lambda_jac=0.01, env=env)
state = {**{f"g.{k}": v for k, v in res["g"].state_dict().items()},
         **{f"gi.{k}": v for k, v in res["gi"].state_dict().items()},
         **{f"d.{k}": v for k, v in res["disc"].state_dict().items()}}
torch.save(state, f"{out}/rank{env.rank}.pt")
D.log(env, f"world {res['world_size']} losses {res['losses'][-1]}")
D.shutdown()
