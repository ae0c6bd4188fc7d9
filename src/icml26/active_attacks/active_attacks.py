"""Active Attacks (Yun, St-Charles, Park, Bengio, Kim; ICML 2026, arXiv 2509.21947): the contribution.

A plug-in around ANY RL red-teaming trainer: every `interval` steps the victim is safety fine-tuned on the
attacks found in that round, so rewards in already-exploited modes collapse and the attacker must move to other
(harder, lower-prior) modes - an easy-to-hard curriculum whose union of rounds covers many modes. Spec 2:

    D <- {}; phi <- phi0; B <- init
    for t = 1..T:
        one step of the base objective against the CURRENT victim phi        (trainer.step())
        every sampled prompt with classifier score > 0.5 goes to D_round and D_all
        if t % K == 0 and t < T:                                              (no tuning after the last round)
            phi <- SafetyFineTune(phi, D_round)       (continues from the current victim: knowledge accumulates)
            B <- reset / re-seeded                    (rewards in B are stale for the new victim)
            D_round <- {}
    return attacker, D_all

Reconstructed (the paper's full text was not readable, spec 1/9): the buffer is reset and re-seeded each round
(flag `reset_buffer`), the attacker continues (flag `reinit_attacker`), and the victim update uses the round's
new prompts mixed 1:1 with benign retain pairs (without them a small victim learns to refuse everything).

`mle_smoothing` is the optional post-hoc step of GFlowNet red-teaming: maximum-likelihood fine-tuning of the
SFT attacker on the collected high-reward prompts.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from icml26.active_attacks.classifiers import check_texts
from icml26.active_attacks.models import default_refusal
from icml26.active_attacks.redteam import Attack, RedTeamTrainer
from icml26.common.validation import check_bool, check_float, check_int, check_seed


@dataclass
class Round:
    """One round of Active Attacks: the steps it ran, the attacks it found, the victim it attacked."""

    index: int
    start_step: int  # first step of the round (1-based)
    end_step: int  # last step of the round
    victim_version: int
    attacks: list[Attack] = field(default_factory=list)
    victim_state: dict[str, torch.Tensor] | None = None  # snapshot of the victim attacked in this round
    finetune_s: float = 0.0  # seconds of the safety fine-tuning that closed the round (0 for the last)
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def prompts(self) -> list[str]:
        """Distinct successful prompts of the round (first-seen order)."""
        return list(dict.fromkeys(a.prompt for a in self.attacks))

    def window_asr(self, first: int | None = None, last: int | None = None) -> float:
        """Fraction of successful on-policy samples over the round's first `first` or last `last` steps
        (NaN when that window had no on-policy step)."""
        hist = self.history
        if first is not None:
            hist = hist[:check_int(first, "first", min=1)]
        if last is not None:
            hist = hist[-check_int(last, "last", min=1):]
        on = [h["asr"] for h in hist if h.get("on_policy")]
        return float(np.mean(on)) if on else float("nan")


class ActiveAttacks:
    """Wrap a red-teaming trainer with periodic safety fine-tuning of its victim (spec 2 and 5).

    Args:
        trainer: any `RedTeamTrainer` (`GFlowNetRedTeamer`, `ReinforceRedTeamer`); its victim must have
            `safety_finetune` (a `VictimModel`).
        interval: steps per round K (official default 1000 of T = 5000 -> 5 rounds, 4 victim updates).
        safety_steps, safety_lr, safety_batch_size: the victim update (official: 200 steps, lr 3e-5).
        refusal_fn: prompt -> refusal text (default: a fixed refusal template).
        retain_prompts, retain_responses: benign pairs mixed 1:1 into every update (spec 9; None: no retain mix).
        reset_buffer: empty and re-seed the trainer's replay buffer after each update (default True).
        reinit_attacker: reset the attacker to its SFT weights after each update (default False: continue).
        keep_snapshots: store the victim's trainable weights of every round in `rounds[i].victim_state`.
        gather_fn: combines the round's attacks across data-parallel workers (default: identity).
        seed: seeds the safety fine-tuning batches.
    """

    def __init__(self, trainer: RedTeamTrainer, interval: int, safety_steps: int = 200,
                 refusal_fn: Callable[[str], str] = default_refusal, *, safety_lr: float = 3e-5,
                 safety_batch_size: int = 32, retain_prompts: list[str] | None = None,
                 retain_responses: list[str] | None = None, reset_buffer: bool = True,
                 reinit_attacker: bool = False, keep_snapshots: bool = False,
                 gather_fn: Callable[[list[Attack]], list[Attack]] | None = None, seed: int = 0) -> None:
        if not isinstance(trainer, RedTeamTrainer):
            raise TypeError(f"trainer must be a RedTeamTrainer (GFlowNetRedTeamer, ReinforceRedTeamer), got "
                            f"{type(trainer).__name__}")
        if not callable(getattr(trainer.victim, "safety_finetune", None)):
            raise TypeError("the trainer's victim must have safety_finetune(prompts, ...) (a VictimModel)")
        self.trainer = trainer
        self.interval = interval
        self.safety_steps, self.safety_lr, self.safety_batch_size = safety_steps, safety_lr, safety_batch_size
        self.refusal_fn = refusal_fn
        self.retain_prompts, self.retain_responses = retain_prompts, retain_responses
        self.reset_buffer, self.reinit_attacker, self.keep_snapshots = reset_buffer, reinit_attacker, keep_snapshots
        self.gather_fn = gather_fn
        self.seed = seed
        self._check()
        self.rounds: list[Round] = []
        self._trained = False
        self._resume: dict[str, Any] | None = None  # loop state of a paused `train` (`until`)

    def _check(self) -> None:
        self.interval = check_int(self.interval, "interval", min=1)
        self.safety_steps = check_int(self.safety_steps, "safety_steps", min=1)
        self.safety_lr = check_float(self.safety_lr, "safety_lr", min=0.0, min_open=True)
        self.safety_batch_size = check_int(self.safety_batch_size, "safety_batch_size", min=1)
        if not callable(self.refusal_fn):
            raise TypeError("refusal_fn must be a callable prompt -> refusal text")
        if self.retain_prompts is not None:
            self.retain_prompts = check_texts(self.retain_prompts, "retain_prompts")
        if self.retain_responses is not None:
            if self.retain_prompts is None:
                raise ValueError("retain_responses given without retain_prompts")
            self.retain_responses = check_texts(self.retain_responses, "retain_responses")
            if len(self.retain_responses) != len(self.retain_prompts):
                raise ValueError("retain_responses must have one reply per retain prompt")
        for name in ("reset_buffer", "reinit_attacker", "keep_snapshots"):
            setattr(self, name, check_bool(getattr(self, name), name))
        if self.gather_fn is not None and not callable(self.gather_fn):
            raise TypeError("gather_fn must be callable")
        self.seed = check_seed(self.seed)
        self._check_encodable()

    def _check_encodable(self) -> None:
        """Every text the updates will feed the victim must encode: checked now, not after a round of training.

        The refusal (`refusal_fn` on a sample prompt) and the retain pairs go through the victim's own encoders; a
        word-level tokenizer that lacks a word raises a ValueError naming it (e.g. a vocabulary without "sorry").
        Victims without `encode_prompt` / `encode_response` (duck-typed ones) are not checked.
        """
        v = self.trainer.victim
        enc_p, enc_r = getattr(v, "encode_prompt", None), getattr(v, "encode_response", None)
        if not (callable(enc_p) and callable(enc_r)):
            return
        sample = self.retain_prompts[0] if self.retain_prompts else ""
        refusal = self.refusal_fn(sample)
        if not isinstance(refusal, str) or not refusal.strip():
            raise ValueError(f"refusal_fn must return a non-empty string, got {refusal!r}")
        try:
            enc_r(refusal)
        except ValueError as e:
            raise ValueError(f"refusal_fn's reply {refusal!r} cannot be encoded by the victim's tokenizer: {e}. Give "
                             "a refusal_fn whose words the victim's vocabulary holds") from None
        for name, texts, enc in (("retain_prompts", self.retain_prompts, enc_p),
                                 ("retain_responses", self.retain_responses, enc_r)):
            for i, t in enumerate(texts or []):
                try:
                    enc(t)
                except ValueError as e:
                    raise ValueError(f"{name}[{i}] {t!r} cannot be encoded by the victim's tokenizer: {e}") from None

    @property
    def victim(self):
        return self.trainer.victim

    @property
    def collected(self) -> list[Attack]:
        """D_all: every successful attack of every round."""
        return self.trainer.collected

    def _new_round(self, start: int) -> Round:
        v = self.trainer.victim
        snap = v.state_dict() if self.keep_snapshots and hasattr(v, "state_dict") else None
        r = Round(len(self.rounds), start, start - 1, int(getattr(v, "version", 0)), victim_state=snap)
        self.rounds.append(r)
        return r

    def train(self, total_steps: int, progress: bool | str = False, *, until: int | None = None) -> list[Round]:
        """Run T = `total_steps` steps in rounds of `interval`; returns `rounds`. A wrapper trains once.

        `until`: stop after that many steps (before the victim update a round ending there would make); a later
        `train(total_steps)` with the same `total_steps` continues where it stopped, and the two calls together
        give exactly what one call gives (the wrapper pickles and copies in between, e.g. to share round 1 of
        an Active Attacks run with a plain run of the same trainer: before the first update they are the same).
        """
        self._check()
        total_steps = check_int(total_steps, "total_steps", min=1)
        until = total_steps if until is None else check_int(until, "until", min=1, max=total_steps)
        if self._trained:
            raise ValueError("this ActiveAttacks has already trained (total_steps ran once); build a new one with a "
                             "new trainer to rerun")
        tr = self.trainer
        if self._resume is None:
            self._resume = {"total": total_steps, "t": 0, "gen": torch.Generator().manual_seed(self.seed),
                            "mark": len(tr.collected)}
            self._new_round(tr.step_count + 1)
        elif self._resume["total"] != total_steps:
            raise ValueError(f"total_steps must be {self._resume['total']} to continue the paused training, got "
                             f"{total_steps}")
        state = self._resume
        if until <= state["t"]:
            raise ValueError(f"until must be after the {state['t']} steps already run, got {until}")
        gen, mark = state["gen"], state["mark"]
        rnd = self.rounds[-1]
        bar = tqdm(range(state["t"] + 1, until + 1), desc=progress if isinstance(progress, str) else "active attacks",
                   disable=not progress, leave=False)
        try:
            for t in bar:
                if state.pop("update_due", False):
                    mark, rnd = self._end_round(rnd, gen, mark)
                rnd.history.append(tr.step())
                rnd.end_step = tr.step_count
                if t % self.interval == 0 and t < total_steps:
                    if t == until:  # the update waits for the next call (it may change the update's settings)
                        state["update_due"] = True
                    else:
                        mark, rnd = self._end_round(rnd, gen, mark)
        except BaseException:
            self._trained = True  # a training that failed part-way is not continued
            raise
        state["t"], state["mark"] = until, mark
        if until == total_steps:
            rnd.attacks = list(tr.collected[mark:])
            self._trained = True
        return self.rounds

    def _end_round(self, rnd: Round, gen: torch.Generator, mark: int) -> tuple[int, Round]:
        """Close `rnd`: safety fine-tune the victim on its attacks, reset the buffer; returns (mark, new round)."""
        tr = self.trainer
        rnd.attacks = list(tr.collected[mark:])
        found = rnd.attacks if self.gather_fn is None else self.gather_fn(rnd.attacks)
        prompts = list(dict.fromkeys(a.prompt for a in found))
        if prompts:  # nothing found: the victim stays as it is
            t0 = time.perf_counter()
            tr.victim.safety_finetune(prompts, self.refusal_fn, steps=self.safety_steps, lr=self.safety_lr,
                                      batch_size=self.safety_batch_size, retain_prompts=self.retain_prompts,
                                      retain_responses=self.retain_responses, generator=gen)
            rnd.finetune_s = time.perf_counter() - t0
        if self.reset_buffer:
            tr.reset_buffer()
        if self.reinit_attacker:
            tr.reinit_attacker()
        return len(tr.collected), self._new_round(tr.step_count + 1)

    @property
    def finetune_seconds(self) -> float:
        return float(sum(r.finetune_s for r in self.rounds))


def mle_smoothing(sft_attacker, prompts: Sequence[str], steps: int = 200, lr: float = 3e-5, batch_size: int = 32,
                  seed: int = 0):
    """Maximum-likelihood fine-tuning of a copy of the SFT attacker on `prompts` (uniform over distinct ones).

    Returns the smoothed attacker (the input is not modified). Spec defaults: lr 3e-5, 200 steps.
    """
    prompts = list(dict.fromkeys(check_texts(prompts, "prompts")))
    steps = check_int(steps, "steps", min=1)
    lr = check_float(lr, "lr", min=0.0, min_open=True)
    batch_size = check_int(batch_size, "batch_size", min=1)
    seed = check_seed(seed)
    if not callable(getattr(sft_attacker, "encode_prompt", None)):
        raise TypeError("sft_attacker must be an AttackerPolicy or TabularAttacker")
    model = copy.deepcopy(sft_attacker)
    if not model.policy_parameters():
        raise ValueError("sft_attacker has no trainable parameters (requires_grad is False everywhere)")
    seqs = [model.encode_prompt(p) for p in prompts]
    opt = torch.optim.AdamW(model.policy_parameters(), lr=lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(len(seqs), (batch_size,), generator=g).tolist()
        loss = -model.log_prob([seqs[i] for i in idx]).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.policy_parameters(), 1.0)
        opt.step()
    return model


__all__ = ["ActiveAttacks", "Round", "mle_smoothing"]
