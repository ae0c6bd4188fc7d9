"""Run pope's paper-scale training loop (`icml26.pope.scale.train_arm`: DDP through icml26.common.distributed,
grad accumulation, warmup + cosine) at toy size under torchrun with a PoPE TinyDecoder (no transformers import in
the workers; the Hugging Face model path is tested in-process) and write each rank's final weights to
OUT/rank{r}.pt. Used by tests/pope/test_scale_and_config.py (2 gloo processes)."""

import sys

import torch

from icml26.common import distributed as D
from icml26.pope.models import TinyDecoder
from icml26.pope.scale import PAPER_CONFIG, train_arm

out = sys.argv[1]
torch.set_num_threads(1)
cfg = {**PAPER_CONFIG, "model": "tiny", "steps": 3, "batch_size": 2, "grad_accum": 2, "ctx": 16, "warmup_steps": 1,
       "eval_lengths": [16, 32], "eval_windows": 2, "zero_shot_tasks": [], "out_dir": "", "dtype": "float32"}
env = D.init_distributed()
torch.manual_seed(0)
model = TinyDecoder(256, 32, 1, 2, 16, "pope")
res = train_arm(cfg, "pope", env=env, model=model, return_model=True)
torch.save(res["model"].state_dict(), f"{out}/rank{env.rank}.pt")
D.log(env, f"world {res['world_size']} losses {res['losses']}")
D.shutdown()
