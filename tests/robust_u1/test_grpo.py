"""GRPO (spec 8): advantages, zero gradient at zero advantage, KL, log-prob, and the known-answer toy."""

import pytest
import torch
from torch import nn

from icml26.robust_u1 import (
    GaussianRestorationPolicy,
    GRPOConfig,
    GRPORestorationTrainer,
    TinyRestorer,
    grpo_advantages,
    grpo_loss,
)


def test_advantages_zero_mean_unit_std_and_equal_rewards():
    r = torch.randn(16, 8, generator=torch.Generator().manual_seed(0)) * 3 + 1
    a = grpo_advantages(r)
    torch.testing.assert_close(a.mean(1), torch.zeros(16), atol=1e-6, rtol=0)
    torch.testing.assert_close(a.std(1, unbiased=False), torch.ones(16), atol=1e-3, rtol=0)
    z = grpo_advantages(torch.full((4, 8), 0.7))
    assert torch.equal(z, torch.zeros(4, 8))
    b = grpo_advantages(r, std_scope="batch")
    torch.testing.assert_close(b, (r - r.mean(1, keepdim=True)) / (r.std(unbiased=False) + 1e-4))


def test_advantages_are_clipped_at_five():
    r = torch.zeros(1, 100)
    r[0, 0] = 1.0  # one outlier: (1 - 0.01) / std = 9.95 before clipping
    a = grpo_advantages(r)
    assert float(a.max()) == 5.0 and float(a[0, 1:].max()) < 0
    assert float(grpo_advantages(-r).min()) == -5.0


def _policy(seed=0):
    torch.manual_seed(seed)
    r = TinyRestorer()
    for conv in r.convs:
        nn.init.normal_(conv.weight, std=0.05)
    return GaussianRestorationPolicy(r, std=0.05)


def test_zero_advantage_and_no_kl_give_exactly_zero_gradient():
    pol = _policy()
    x = torch.rand(3, 1, 24, 24)
    y, mu = pol.sample(x, 4, torch.Generator().manual_seed(0))
    logp = pol.log_prob(x, y)
    loss, _ = grpo_loss(logp, logp.detach(), torch.zeros(3, 4), 0.2, None, 0.0)
    loss.backward()
    assert all(torch.equal(p.grad, torch.zeros_like(p)) for p in pol.parameters())


def test_kl_to_itself_is_zero_and_log_prob_matches_normal():
    pol = _policy()
    x = torch.rand(2, 1, 24, 24)
    torch.testing.assert_close(pol.kl_to(pol.frozen_copy(), x), torch.zeros(2))
    y, mu = pol.sample(x, 3, torch.Generator().manual_seed(1))
    ref = torch.distributions.Normal(mu.unsqueeze(1), 0.05).log_prob(y).flatten(2).mean(-1)
    torch.testing.assert_close(pol.log_prob(x, y), ref)
    ref1 = torch.distributions.Normal(mu, 0.05).log_prob(y[:, 0]).flatten(1).mean(-1)
    torch.testing.assert_close(pol.log_prob(x, y[:, 0]), ref1)
    other = _policy(seed=5)
    kl = other.kl_to(pol, x)
    mu_o, mu_p = other.mean(x), pol.mean(x)
    torch.testing.assert_close(kl, ((mu_o - mu_p) ** 2 / (2 * 0.05 ** 2)).flatten(1).mean(1))


class _Bias(nn.Module):
    """Restorer = a learnable image, whatever the input."""

    def __init__(self):
        super().__init__()
        self.b = nn.Parameter(torch.full((1, 1, 4, 4), 0.5))

    def forward(self, x):
        return self.b.expand(x.shape[0], -1, -1, -1)


class _NegDist:
    def __call__(self, images, ref):
        r = -(images - ref).pow(2).flatten(1).sum(1)
        return r, {"neg_dist": r}


def test_known_answer_toy_moves_the_mean_halfway_to_the_target():
    torch.manual_seed(0)
    target = torch.rand(1, 1, 4, 4) * 0.6 + 0.2
    pol = GaussianRestorationPolicy(_Bias(), std=0.05)
    cfg = GRPOConfig(group_size=8, lr=2e-3, kl_beta=0.0, steps=300, batch_size=8, clamp_samples=False)
    trainer = GRPORestorationTrainer(pol, _NegDist(), cfg)
    pairs = [(torch.rand(8, 1, 4, 4), target.expand(8, -1, -1, -1))]
    before = float((pol.restorer.b - target).norm().detach())
    hist = trainer.train(pairs, generator=torch.Generator().manual_seed(0))
    after = float((pol.restorer.b - target).norm().detach())
    assert after <= 0.5 * before, (before, after)
    assert len(hist["reward"]) == 300 and hist["reward"][-1] > hist["reward"][0]


def test_config_and_trainer_validation():
    with pytest.raises(ValueError, match="group_size"):
        GRPOConfig(group_size=1)
    with pytest.raises(ValueError, match="std_scope"):
        GRPOConfig(std_scope="prompt")
    with pytest.raises(ValueError, match="lr"):
        GRPOConfig(lr=float("nan"))
    cfg = GRPOConfig(steps=1)
    trainer = GRPORestorationTrainer(_policy(), _NegDist(), cfg)
    cfg.clip_range = 0.0  # changed after construction: refused at train time
    with pytest.raises(ValueError, match="clip_range"):
        trainer.train([(torch.rand(2, 1, 24, 24), torch.rand(2, 1, 24, 24))])
    cfg.clip_range = 0.2
    with pytest.raises(TypeError, match="pairs"):
        trainer.train([torch.rand(2, 1, 24, 24)])
    with pytest.raises(ValueError, match="differ in shape"):
        trainer.train([(torch.rand(2, 1, 24, 24), torch.rand(3, 1, 24, 24))])
    with pytest.raises(ValueError, match="ran out of batches"):
        trainer.train(iter([]))
    with pytest.raises(TypeError, match="GaussianRestorationPolicy"):
        GRPORestorationTrainer(TinyRestorer(), _NegDist())
    with pytest.raises(ValueError, match="std"):
        GaussianRestorationPolicy(TinyRestorer(), std=0)
