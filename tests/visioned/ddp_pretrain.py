"""DDP pretraining of a tiny VisionEDViT on a toy shard (used by tests/visioned/test_scale.py): every rank writes
its final backbone weights to OUT/rank{r}.pt."""

import sys

import torch

from icml26.visioned.scale import pretrain_distributed

shards, out = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
vit = dict(img_size=16, patch=8, in_chans=4, n_shots=6, dim=32, depth=1, heads=2)
model = pretrain_distributed(shards, f"{out}/model", vit, epochs=2, batch_size=4, num_workers=0, amp=False,
                             warmup_epochs=0, base_lr=0.05, seed=0)
rank = int(__import__("os").environ.get("RANK", "0"))
torch.save(model.state_dict(), f"{out}/rank{rank}.pt")
