"""Train ME-POIs with `icml26.mepoi.scale.train_ddp` at toy size under torchrun (gloo) and write each rank's final
weights to OUT/rank{r}.pt. Used by tests/mepoi/test_experiment_scale.py (2 processes)."""

import sys

import torch

from icml26.common import distributed as D
from icml26.mepoi.scale import train_ddp
from icml26.mepoi.synth import make_city

out = sys.argv[1]
torch.set_num_threads(1)
env = D.init_distributed()
pois, visits, _ = make_city(0, n_poi=60, n_agents=12, weeks=1)
params = dict(d=8, layers=1, heads=2, ffn=16, window=6, epochs=2, batch_size=4, min_visits=5, prior_batch=4,
              optimizer="adamw", dropout=0.1, absolute_time_days=7.0, seed=0)
res = train_ddp(visits, pois, params, env)
torch.save(res["model"].state_dict(), f"{out}/rank{env.rank}.pt")
D.log(env, f"world {res['world_size']} history {[round(h['loss'], 4) for h in res['history']]}")
D.shutdown()
