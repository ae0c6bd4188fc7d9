"""Run the paper-scale pipeline (`icml26.dataset_compression.scale.run_pipeline`) at toy size under torchrun and
write each rank's student weights and EL2N-selected indices to OUT/rank{r}.pt. Used by test_scale.py (2 gloo
ranks)."""

import json
import sys

import torch

from icml26.common import distributed as D
from icml26.dataset_compression.scale import run_pipeline

out, cfg = sys.argv[1], json.loads(sys.argv[2])
torch.set_num_threads(1)
env = D.init_distributed()
res = run_pipeline(cfg, env)
torch.save({"state": res["model"].state_dict(), "indices": res["indices"], "val_acc": res["val_acc"]},
           f"{out}/rank{env.rank}.pt")
D.log(env, f"world {res['world_size']} val_acc {res['val_acc']:.3f}")
D.shutdown()
