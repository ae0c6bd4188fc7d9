"""Baselines behind the red-teaming trainer interface (spec 4).

- `GFlowNetRedTeamer` alone (in `redteam.py`): the paper's "previous SOTA"; `mle_smoothing` gives GFlowNet + MLE.
- `ReinforceRedTeamer`: REINFORCE with a KL penalty to the SFT prior (Perez et al. 2022 style),
      maximise E_x[ r(x) ] - kl_coef * KL(p_theta || p_ref),   r(x) = mean_j p_psi(toxic | x, y_j),
  as the on-policy score-function estimator with a batch-mean baseline:
      loss = -mean_i (A_i * log p_theta(x_i)),  A_i = r_i - kl_coef (log p_theta(x_i) - log p_ref(x_i)) - mean_k(.)
  The length penalty of the GFlowNet reward applies as r = 0 for prompts shorter than `min_len`.
  Wrap it with `ActiveAttacks` for "REINFORCE + Active Attacks".
- `sft_samples`: the SFT attacker alone (sampling, no RL).
The paper's PPO (+ novelty reward) baseline is not included (spec 4 lists it as optional).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from icml26.active_attacks.redteam import RedTeamTrainer
from icml26.common.validation import check_float, check_int


class ReinforceRedTeamer(RedTeamTrainer):
    """REINFORCE red-teamer with a KL penalty to the SFT prior (same interface as `GFlowNetRedTeamer`).

    Args (beyond `RedTeamTrainer`):
        kl_coef: weight of the per-sample KL estimate log p_theta(x) - log p_ref(x) (>= 0).
        temperature: on-policy sampling temperature (1.0: the policy gradient is exact).
    """

    def __init__(self, attacker, victim, classifier, *, kl_coef: float = 0.05, temperature: float = 1.0,
                 **kwargs: Any) -> None:
        self.kl_coef = check_float(kl_coef, "kl_coef", min=0.0)
        self.temperature = check_float(temperature, "temperature", min=0.0, min_open=True)
        super().__init__(attacker, victim, classifier, **kwargs)

    def step(self) -> dict[str, Any]:
        tokens, texts = self._sample(self.batch_size, self.temperature)
        scored = self.score(texts)
        new = self._record(tokens, texts, scored)
        t0 = time.perf_counter()
        lens = np.array(self.attacker.prompt_lengths(tokens))
        r = torch.as_tensor(np.where(lens < self.attacker.min_len, 0.0, scored.toxicity), dtype=torch.float32)
        with torch.no_grad():
            ref = self.reference.log_prob(tokens).float()
        log_pf = self.attacker.log_prob(tokens)
        shaped = r.to(log_pf.device) - self.kl_coef * (log_pf.detach() - ref.to(log_pf.device))
        adv = shaped - shaped.mean()
        loss = -(adv * log_pf).mean()
        self._update(loss)
        self.timing["update_s"] += time.perf_counter() - t0
        self.step_count += 1
        stats = {"step": self.step_count, "on_policy": True, "loss": float(loss.detach()),
                 "kl": float((log_pf.detach() - ref.to(log_pf.device)).mean()), "temperature": self.temperature,
                 "asr": float(np.mean(scored.toxicity > self.success_threshold)),
                 "toxicity": float(np.mean(scored.toxicity)), "new_attacks": new,
                 "victim_version": int(getattr(self.victim, "version", 0))}
        self.history.append(stats)
        return stats


def sft_samples(attacker, n: int, temperature: float = 1.0, seed: int = 0) -> list[str]:
    """The SFT-attacker baseline: `n` sampled prompts, no RL."""
    n = check_int(n, "n", min=1)
    _, texts = attacker.sample(n, temperature=temperature, generator=torch.Generator().manual_seed(int(seed)))
    return texts


__all__ = ["ReinforceRedTeamer", "sft_samples"]
