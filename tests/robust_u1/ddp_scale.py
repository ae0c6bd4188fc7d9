"""Run robust_u1's paper-scale path at toy size under torchrun and write each rank's final weights to
OUT/rank{r}.pt: Stages I-II via `train_restoration` and Stage III via `train_joint_vlm` (tiny LLaVA).
Used by tests/robust_u1/test_scale.py (2 gloo processes)."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from toy_vlm import ToyProcessor, tiny_llava

from icml26.common import distributed as D
from icml26.robust_u1.hf import HFJointReasoner
from icml26.robust_u1.scale import PAPER_CONFIG, train_joint_vlm, train_restoration

out = sys.argv[1]
torch.set_num_threads(1)
cfg = {**PAPER_CONFIG, "restorer_channels": 4, "restorer_depth": 2, "sft_epochs": 1, "sft_batch": 8, "grpo_steps": 2,
       "grpo_batch": 4, "group_size": 2, "sft_continued": True}
env = D.init_distributed()
x = torch.rand(21, 1, 24, 24, generator=torch.Generator().manual_seed(0))  # odd count: shards are padded
res = train_restoration(cfg, x, env)
vlm = tiny_llava(0)
losses = train_joint_vlm(HFJointReasoner(vlm, ToyProcessor()), x[:6], x[6:12], ["what digit?"] * 6, ["3"] * 6,
                         epochs=1, lr=1e-3, batch=2, env=env)
torch.save({"sft": res["sft"], "rl": res["rl"], "sftc": res["sftc"], "vlm": vlm.state_dict()}, f"{out}/rank{env.rank}.pt")
D.log(env, f"world {res['world_size']} grpo reward {res['grpo']['reward']} vlm loss {losses}")
D.shutdown()
