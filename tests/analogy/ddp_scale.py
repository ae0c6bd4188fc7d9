"""Run the paper-scale HF Trainer path (`icml26.analogy.scale.finetune_curriculum`) at toy size under torchrun
(2 gloo processes, CPU) and write each rank's final weights to OUT/rank{r}.pt. Used by test_probe_scale.py."""

import os
import sys

import torch
import transformers

from icml26.analogy import AnalogyWorld
from icml26.analogy.scale import finetune_curriculum

out = sys.argv[1]
torch.set_num_threads(1)


class CharTokenizer:
    pad_token_id = 0

    def encode(self, text, add_special_tokens=True):
        return [b + 1 for b in text.encode()]


torch.manual_seed(0)
cfg = transformers.LlamaConfig(vocab_size=257, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
model = transformers.LlamaForCausalLM(cfg)
w = AnalogyWorld(n_groups=2, group_size=2, n_individual=1, seed=0)
res = finetune_curriculum(model, CharTokenizer(), w, "attr_then_sim", output_dir=out, steps_per_stage=2, lr=1e-3,
                          batch_size=2, use_cpu=True, training_overrides={"ddp_backend": "gloo"})
rank = int(os.environ.get("RANK", "0"))
torch.save({k: v.detach().clone() for k, v in model.state_dict().items()}, f"{out}/rank{rank}.pt")
world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
if rank == 0:
    print(f"world {world} stage losses {res['stage_losses']}")
