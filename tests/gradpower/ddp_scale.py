"""Run gradpower's paper-scale loop (`icml26.gradpower.scale.train_distributed`, AdamWPower p = 1.2) at toy size
with a TinyLlama: under torchrun each rank trains on its half of every global batch; without torchrun (or with
`single`) one process trains on the full batches. Writes OUT/{mode}_rank{r}.pt. Used by
tests/gradpower/test_scale_and_config.py (2 gloo processes)."""

import sys

import torch

from icml26.common import distributed as D
from icml26.gradpower.lm import TinyLlama
from icml26.gradpower.scale import PAPER_CONFIG, train_distributed

STEPS, SEQ, GLOBAL = 3, 16, 8  # optimizer steps, tokens per sequence, sequences per global micro-batch


def run(out: str, env: D.DistEnv) -> dict:
    micro = GLOBAL // env.world_size
    cfg = {**PAPER_CONFIG, "model": "llama_tiny", "seq_len": SEQ, "micro_batch": micro,
           "global_batch_tokens": 2 * SEQ * GLOBAL, "total_tokens": 2 * SEQ * GLOBAL * STEPS, "eval_every": 2,
           "bf16": False, "lr": 1e-2, "optimizers": ["adamwpower"]}  # 2 micro-batches per step, 3 steps

    def stream():
        g = torch.Generator().manual_seed(0)
        while True:  # the same global batches on every rank; each keeps its own rows
            yield torch.randint(0, 64, (GLOBAL, SEQ + 1), generator=g)[env.rank * micro:(env.rank + 1) * micro]

    val = [torch.randint(0, 64, (4, SEQ + 1), generator=torch.Generator().manual_seed(1))]
    torch.manual_seed(0)
    model = TinyLlama(64, 16, 1, 2, SEQ, d_ff=32)
    res = train_distributed(cfg, "adamwpower", train_iter=stream(), val_batches=val, vocab_size=64, device="cpu",
                            progress=False, env=env, model=model, return_model=True)
    mode = "ddp" if env.is_distributed else "single"
    torch.save(res["model"].state_dict(), f"{out}/{mode}_rank{env.rank}.pt")
    D.log(env, f"world {res['world_size']} steps {res['steps']} accum {res['grad_accum']} val {res['val_loss']}")
    return res


if __name__ == "__main__":
    torch.set_num_threads(1)
    env = D.init_distributed()
    run(sys.argv[1], env)
    D.shutdown()
