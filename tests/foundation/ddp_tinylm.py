"""Train a TinyLM for a few steps, either under torchrun (each rank gets half of every batch, DDP averages the
gradients) or as one process on the full batches; write the final weights to OUT (rank 0 writes `ddp.pt`,
every rank writes `{mode}_rank{r}.pt`). Used by tests/foundation/test_distributed.py."""

import sys

import torch

from icml26.common import distributed as D
from icml26.common.lm import TinyLM, TinyLMConfig
from icml26.common.train import lm_loss

out, mode = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
env = D.init_distributed()
torch.manual_seed(0)
model = TinyLM(TinyLMConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=2, ctx=16))
ddp = D.wrap_ddp(model, env)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
g = torch.Generator().manual_seed(1)
batches = [torch.randint(0, 64, (8, 17), generator=g) for _ in range(4)]
for batch in batches:
    part = batch.chunk(env.world_size)[env.rank] if mode == "ddp" else batch
    loss = lm_loss(ddp, part)
    opt.zero_grad()
    loss.backward()
    opt.step()
    mean = D.mean_reduce(float(loss))
    D.log(env, f"loss {mean:.5f}")
torch.save(D.unwrap(ddp).state_dict(), f"{out}/{mode}_rank{env.rank}.pt")
D.save_on_main(env, lambda: torch.save(D.unwrap(ddp).state_dict(), f"{out}/{mode}.pt"))
D.shutdown()
