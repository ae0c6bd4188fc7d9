"""The HF causal-LM probe and the paper-scale HF Trainer path, on a tiny randomly initialised Llama (nothing
downloaded)."""

import numpy as np
import pytest

from icml26.analogy import AnalogyWorld
from icml26.analogy.probe import premise_sentences, probe_conclusions

transformers = pytest.importorskip("transformers")


class CharTokenizer:
    """Bytes + 1 (0 is padding)."""

    pad_token_id = 0
    eos_token_id = 0

    def encode(self, text, add_special_tokens=True):
        return [b + 1 for b in text.encode()]


def _tiny_llama(seed=0):
    import torch

    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=257, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    return transformers.LlamaForCausalLM(cfg)


def test_sentences_follow_the_world():
    w = AnalogyWorld(n_groups=3, group_size=3, n_individual=1, seed=0)
    s = premise_sentences(w)
    assert len(s["similarity"]) == 9 and len(s["attribution"]) == 3 and len(s["test"]) == 6
    assert len(set(s["candidates"])) == 3
    assert all(a[1:] in s["candidates"] for _, a in s["test"])
    src = {x.split(" is ")[0]: x.split(" is ")[1][:-1] for x in s["attribution"]}
    assert not set(src) & {p[:-3] for p, _ in s["test"]}  # test subjects are never attribution subjects


def test_probe_on_a_tiny_random_llama_agrees_with_a_direct_score():
    import torch

    w = AnalogyWorld(n_groups=3, group_size=2, n_individual=0, seed=1)
    model, tok = _tiny_llama(), CharTokenizer()
    out = probe_conclusions(model, tok, w, batch_size=4)
    S = out["per_query"]
    assert S.shape == (3, 3) and np.all(np.isfinite(S)) and 0 <= out["accuracy"] <= 1
    # recompute one score without padding
    s = premise_sentences(w)
    prompt, _ = s["test"][0]
    p, c = tok.encode(prompt), tok.encode(" " + s["candidates"][2])
    ids = torch.tensor([p + c])
    with torch.no_grad():
        lp = torch.log_softmax(model(ids).logits[0, :-1].float(), -1)
    direct = float(sum(lp[len(p) - 1 + j, c[j]] for j in range(len(c))))
    assert abs(direct - S[0, 2]) < 1e-3
    with pytest.raises(TypeError, match="tokenizer"):
        probe_conclusions(model, object(), w)
    with pytest.raises(ValueError, match="batch_size"):
        probe_conclusions(model, tok, w, batch_size=0)


def test_paper_scale_trainer_path_runs_at_toy_size(tmp_path):
    pytest.importorskip("accelerate")
    from icml26.analogy.scale import finetune_curriculum

    w = AnalogyWorld(n_groups=2, group_size=2, n_individual=1, seed=0)
    model = _tiny_llama()
    before = model.model.embed_tokens.weight.detach().clone()
    out = finetune_curriculum(model, CharTokenizer(), w, "sim_then_attr", output_dir=tmp_path, steps_per_stage=3,
                              lr=1e-3, batch_size=4, use_cpu=True)
    assert len(out["stage_losses"]) == 2 and all(np.isfinite(out["stage_losses"]))
    assert not model.model.embed_tokens.weight.detach().equal(before)  # it trained
    assert 0 <= out["probe"]["accuracy"] <= 1
    with pytest.raises(ValueError, match="schedule"):
        finetune_curriculum(model, CharTokenizer(), w, "backwards", output_dir=tmp_path)


@pytest.mark.slow  # ~17 s (two torchrun workers importing transformers): over this paper's 30 s test budget
def test_trainer_path_as_two_gloo_ranks_ends_with_identical_weights(tmp_path):
    pytest.importorskip("accelerate")
    from pathlib import Path

    import torch

    from icml26.common import distributed as D

    proc = D.launch_local(Path(__file__).with_name("ddp_scale.py"), [tmp_path], nproc=2, timeout=240)
    assert proc.stdout.count("world 2 stage losses") == 1
    r0, r1 = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    assert r0.keys() == r1.keys()
    for k in r0:
        assert torch.equal(r0[k], r1[k]), k
    init = _tiny_llama().state_dict()
    assert any(not torch.equal(init[k], r0[k]) for k in init)  # it trained
