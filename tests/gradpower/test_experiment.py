"""Reusable pieces of the reproduction (model, data, loop with a HF model) and one smoke run of the experiment."""

import copy
import math

import pytest
import torch

from icml26.gradpower import AdamWPower, TinyLlama, pretrain, wsd
from icml26.gradpower.data import load_corpus, make_splits, stdlib_bytes
from icml26.results import Result


def test_tinyllama_is_the_spec_model():
    m = TinyLlama(256, 32, 2, 4, 64, d_ff=80)
    cfg = m.config
    assert (cfg.mlp, cfg.pos, cfg.norm, cfg.bias, cfg.tie_embeddings) == ("swiglu", "rope", "rmsnorm", False, False)
    assert not any(n.endswith("bias") for n, _ in m.named_parameters())
    assert isinstance(m.norm, torch.nn.RMSNorm)
    assert m.num_params() == 2 * 256 * 32 + 2 * (4 * 32 * 32 + 3 * 32 * 80 + 2 * 32) + 32 == 40096
    assert m(torch.randint(0, 256, (2, 64))).shape == (2, 64, 256)


def test_corpus_is_deterministic_and_split_as_specified():
    data = stdlib_bytes(100_000)
    assert len(data) == 100_000 and data == stdlib_bytes(100_000)
    c = load_corpus(100_000, n_val_windows=16, window=65)
    assert c.train.shape == (90_000,) and c.val_windows.shape == (16, 65)
    tokens = torch.frombuffer(bytearray(data), dtype=torch.uint8).long()
    assert torch.equal(c.val_windows[1], tokens[90_000 + 65: 90_000 + 130])
    with pytest.raises(ValueError, match="1-D"):
        make_splits(torch.zeros(3, 3, dtype=torch.long))


def test_pretrain_paired_design_and_grad_accum():
    c = make_splits(torch.randint(0, 64, (5000,), generator=torch.Generator().manual_seed(0)), n_val_windows=4,
                    window=17)

    def run(factory, accum=1, bs=8):
        torch.manual_seed(0)
        m = TinyLlama(64, 16, 1, 2, 16, d_ff=32)
        r = pretrain(m, factory, c.train, steps=6, batch_size=bs, ctx=16, grad_accum=accum,
                     scheduler_factory=lambda o: wsd(o, 6, 0.0, 0.5, 0.0), generator=torch.Generator().manual_seed(1),
                     val_windows=c.val_windows, eval_every=3)
        return m, r

    m1, r1 = run(lambda m: AdamWPower(m.parameters(), lr=1e-2, power=1.0))
    m2, r2 = run(lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2))
    assert r1.eval_steps == [3, 6] and r1.val_loss == r2.val_loss  # same init + batches -> identical at p = 1
    assert r1.lr == pytest.approx([1e-2, 1e-2, 1e-2, 1e-2, 2/3 * 1e-2, 1/3 * 1e-2])
    _, r3 = run(lambda m: AdamWPower(m.parameters(), lr=1e-2, power=1.2))
    assert r3.val_loss != r1.val_loss
    _, r4 = run(lambda m: AdamWPower(m.parameters(), lr=1e-2, power=1.2), accum=2, bs=4)
    assert all(math.isfinite(v) for v in r4.val_loss) and len(r4.train_loss) == 6


def test_pretrain_accepts_hf_model():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg)
    c = make_splits(torch.randint(0, 64, (4000,), generator=torch.Generator().manual_seed(0)), n_val_windows=4,
                    window=17)
    r = pretrain(model, lambda m: AdamWPower(m.parameters(), lr=1e-2), c.train, steps=4, batch_size=4, ctx=16,
                 generator=torch.Generator().manual_seed(0), val_windows=c.val_windows, eval_every=2)
    assert len(r.val_loss) == 2 and all(math.isfinite(v) for v in r.val_loss)


def test_smoke_run_computes_claims():
    from icml26.gradpower.experiment import CONFIGS, run

    cfg = copy.deepcopy(CONFIGS["smoke"])
    cfg.update(scale="smoke", ablation=True)
    res = run(cfg)
    assert isinstance(res, Result) and res.scale == "smoke"
    assert [c.id for c in res.claims] == ["G", "P", "M", "R", "M0", "A"]
    assert [c.kind for c in res.claims] == ["gate", "report", "gate", "report", "sanity", "report"]
    assert all(c.paper for c in res.claims)
    g = res.claims[0]
    d = res.metrics["delta_per_seed"]
    assert g.measured["mean_d"] == pytest.approx(d[0]) and g.per_seed == pytest.approx([d[0]])
    assert g.verdict == "inconclusive" and "seeds" in g.details  # one seed never decides
    assert res.claims[-1].verdict == "inconclusive"  # A: one seed
    assert set(res._pending_figures) == {"val_loss_curves", "noise_scale", "drift_vs_p"}
    assert len(res.metrics["curves"]["adamw_s0"]["val_loss"]) == 2
    ns = res.metrics["noise_scale"]["adamwpower_s0"]
    assert set(ns) == {"10", "20"} and all(v["b_noise"] > 0 for v in ns.values())


def test_paper_path_runs_on_cpu_with_a_tiny_model():
    pytest.importorskip("transformers")
    pytest.importorskip("yaml")
    from pathlib import Path

    from icml26.gradpower.scale import load_config, train_distributed

    cfg = load_config(str(Path(__file__).parents[2] / "configs/paper/gradpower/llama_0p2b_c4_wsd.yaml"))
    assert cfg["model"] == "llama_0p2b" and cfg["power"] == 1.2 and cfg["optimizers"] == ["adamw", "adamwpower"]
    cfg.update(model="llama_tiny", seq_len=16, micro_batch=4, global_batch_tokens=128, total_tokens=384,
               eval_every=2, bf16=False)  # 2 micro-batches per step, 3 steps
    g = torch.Generator().manual_seed(0)

    def stream():
        while True:
            yield torch.randint(0, 50, (4, 17), generator=g)

    val = [torch.randint(0, 50, (4, 17), generator=torch.Generator().manual_seed(1))]
    out = train_distributed(cfg, "adamwpower", train_iter=stream(), val_batches=val, vocab_size=50, device="cpu",
                            progress=False)
    assert out["steps"] == 3 and out["grad_accum"] == 2 and out["eval_steps"] == [2, 3]
    assert math.isfinite(out["final"])


@pytest.mark.slow
def test_hf_trainer_runs_adamwpower_with_wsd(tmp_path):
    """HF Trainer(optimizers=(AdamWPower, wsd)) trains (slow: importing Trainer/accelerate takes ~20 s)."""
    pytest.importorskip("accelerate")
    from icml26.gradpower.scale import build_hf_trainer, build_model

    torch.manual_seed(0)
    model = build_model("llama_tiny", 50, 16)

    class DS(torch.utils.data.Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            x = torch.randint(0, 50, (16,), generator=torch.Generator().manual_seed(i))
            return {"input_ids": x, "labels": x}

    before = [p.detach().clone() for p in model.parameters()]
    tr = build_hf_trainer(model, DS(), str(tmp_path), total_steps=3, lr=1e-2, per_device_train_batch_size=4,
                          use_cpu=True, save_strategy="no", disable_tqdm=True)
    out = tr.train()
    inner = getattr(tr.optimizer, "optimizer", tr.optimizer)
    from icml26.gradpower import AdamWPower

    assert out.global_step == 3 and isinstance(inner, AdamWPower) and inner.param_groups[0]["power"] == 1.2
    assert all(not torch.equal(a, p) for a, p in zip(before, model.parameters()))
