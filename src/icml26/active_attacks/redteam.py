"""GFlowNet red-teaming (Lee et al., ICLR 2025): the base RL objective that Active Attacks wraps (spec 2).

Reward of an attack prompt x (5 victim replies y_j, classifier p_psi, frozen SFT prior p_ref):

    log R(x) = (1/beta) * mean_j log p_psi(toxic | x, y_j) + (1/gamma) * log p_ref(x)          (reward)
    log p_ref(x) := -500 when x is shorter than `min_len` tokens                               (length penalty)

divided by a reward temperature annealed linearly (2.0 -> 1.0 over 500 steps). Trajectory balance:

    L(x) = (log Z_theta(c) + sum_t log p_theta(x_t | x_<t, c) - log R(x) / temp)^2             (TB)

Off-policy training: each step, with probability 1/2 a replay batch (prioritised by classifier score), else an
on-policy batch (temperature ~ U[0.5, 2.0] half the time, else 1.0) that is scored and added to the buffer.
The buffer is seeded with the SFT prompts (optional few-shot seeds plus 10 batches of prior samples).

`RedTeamTrainer` holds what every red-teamer shares (scoring against the victim with a per-(prompt, victim
version) cache, the collected successful attacks, timing); `GFlowNetRedTeamer` adds TB and the buffer;
`icml26.active_attacks.baselines.ReinforceRedTeamer` the REINFORCE objective.

Choices the spec leaves open (documented in docs/active_attacks.md): buffer sampling probability proportional
to the classifier score (floored at 1e-3); a near-duplicate (normalised token edit distance < tolerance)
replaces the buffer items it duplicates only when its priority is higher, else it is rejected; the learning
rate is constant (the paper warms up and decays linearly); `log Z` has its own learning rate `lr_log_z`.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from icml26.active_attacks.classifiers import check_texts, score
from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_seed

LENGTH_PENALTY = -500.0


# ----------------------------------------------------------------------------------------------- records
@dataclass
class Attack:
    """A successful attack prompt found during training.

    toxicity: mean p_psi(toxic) over the victim's replies at collection time; category: the oracle category of
    its toxic replies then (None without an oracle); victim_version: the victim it broke.
    """

    prompt: str
    tokens: tuple[int, ...]
    toxicity: float
    category: str | None
    step: int
    victim_version: int


@dataclass
class Scored:
    """Scores of a batch of prompts against the current victim."""

    c_log_reward: np.ndarray  # (n,) mean_j log p_psi(toxic | x, y_j)
    toxicity: np.ndarray  # (n,) mean_j p_psi(toxic | x, y_j)
    categories: list[str | None]


def trajectory_balance_loss(log_z: torch.Tensor, log_pf: torch.Tensor, log_r: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of (log Z + sum_t log p_theta - log R)^2 (eq. TB); shapes (), (n,), (n,)."""
    if log_pf.shape != log_r.shape or log_pf.ndim != 1:
        raise ValueError(f"log_pf and log_r must both be (n,), got {tuple(log_pf.shape)} and {tuple(log_r.shape)}")
    return ((log_z + log_pf - log_r) ** 2).mean()


def gfn_log_reward(c_log_reward, lm_log_reward, beta: float = 0.1, gamma: float = 1.0,
                   temperature: float = 1.0) -> torch.Tensor:
    """log R(x) / temp = (c_log_reward / beta + lm_log_reward / gamma) / temperature (spec 2), float32 (n,)."""
    beta = check_float(beta, "beta", min=0.0, min_open=True)
    gamma = check_float(gamma, "gamma", min=0.0, min_open=True)
    temperature = check_float(temperature, "temperature", min=0.0, min_open=True)
    c = torch.as_tensor(c_log_reward, dtype=torch.float32)
    lm = torch.as_tensor(lm_log_reward, dtype=torch.float32)
    return (c / beta + lm / gamma) / temperature


def linear_schedule(start: float, end: float, steps: int, t: int) -> float:
    """start -> end linearly over `steps` steps, then constant."""
    return start + (end - start) * min(1.0, t / max(1, steps))


# ----------------------------------------------------------------------------------------------- replay buffer
def edit_distances(queries: Sequence[Sequence[int]], cands: np.ndarray, cand_lens: np.ndarray) -> np.ndarray:
    """Levenshtein distances (Q, N) between token lists `queries` and the rows of `cands` (N, L) padded with -1.

    Vectorised over queries and candidates: one dynamic-programming pass over query and candidate positions.
    """
    Q, N = len(queries), len(cands)
    if Q == 0 or N == 0:
        return np.zeros((Q, N), dtype=np.int64)
    Lq = max(len(q) for q in queries)
    Lc = cands.shape[1]
    qa = np.full((Q, max(Lq, 1)), -2, dtype=np.int64)
    qlen = np.array([len(q) for q in queries])
    for i, q in enumerate(queries):
        qa[i, :len(q)] = q
    prev = np.broadcast_to(np.arange(Lc + 1), (Q, N, Lc + 1)).copy()
    out = np.where(qlen[:, None] == 0, cand_lens[None, :], 0)
    for i in range(Lq):
        cur = np.empty_like(prev)
        cur[..., 0] = i + 1
        neq = qa[:, i][:, None, None] != cands[None, :, :]  # (Q, N, Lc)
        for j in range(1, Lc + 1):
            cur[..., j] = np.minimum(np.minimum(prev[..., j] + 1, cur[..., j - 1] + 1), prev[..., j - 1] + neq[..., j - 1])
        prev = cur
        done = qlen == i + 1
        if done.any():
            out[done] = np.take_along_axis(cur[done], cand_lens[None, :, None].repeat(done.sum(), 0), 2)[..., 0]
    return out


def _counts(seqs: Sequence[Sequence[int]], vocab: int) -> np.ndarray:
    rows = np.repeat(np.arange(len(seqs)), [len(q) for q in seqs])
    cols = np.fromiter((t for q in seqs for t in q), dtype=np.int64, count=len(rows))
    return np.bincount(rows * vocab + cols, minlength=len(seqs) * vocab).reshape(len(seqs), vocab)


def _padded(seqs: Sequence[Sequence[int]], fill: int) -> tuple[np.ndarray, np.ndarray]:
    """Token lists -> ((n, max_len) int64 array padded with `fill`, (n,) lengths)."""
    lens = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    out = np.full((len(seqs), max(1, int(lens.max(initial=0)))), fill, dtype=np.int64)
    if lens.sum():
        rows = np.repeat(np.arange(len(seqs)), lens)
        cols = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        out[rows, cols] = np.fromiter((t for s in seqs for t in s), dtype=np.int64, count=int(lens.sum()))
    return out, lens


def _near_duplicates(qs: Sequence[Sequence[int]], cs: Sequence[Sequence[int]], tolerance: float) -> np.ndarray:
    """(Q, N) bool: normalised edit distance d / max(len) < tolerance (== 0 when tolerance is 0).

    A cheap lower bound prunes most pairs first: d >= max(len_a, len_b) - |multiset intersection of the tokens|;
    the exact distance is computed only for the pairs that survive it (padded arrays indexed by pair).
    """
    qa, qlen = _padded(qs, -1)
    ca, clen = _padded(cs, -2)
    vocab = 1 + max(int(qa.max(initial=0)), int(ca.max(initial=0)))
    return _near_duplicates_arrays(qa, qlen, _counts(qs, vocab), ca, clen, _counts(cs, vocab), tolerance)


def _near_duplicates_arrays(qa: np.ndarray, qlen: np.ndarray, cq: np.ndarray, ca: np.ndarray, clen: np.ndarray,
                            cc: np.ndarray, tolerance: float) -> np.ndarray:
    """`_near_duplicates` on prepared arrays: queries padded with -1 and candidates with -2 (any widths), token
    counts (Q, V) and (N, V) over one vocabulary width (extra zero columns change nothing: the counts are exact)."""
    maxlen = np.maximum(1, np.maximum(qlen[:, None], clen[None, :]))
    limit = tolerance * maxlen  # duplicate iff d < limit (tolerance 0: d == 0)
    # |multiset intersection| = sum_v min(cq_v, cc_v) = sum_k [cq >= k] . [cc >= k] (exact, a few small matmuls)
    inter = np.zeros((len(qa), len(ca)), dtype=np.float32)
    for k in range(1, int(min(cq.max(initial=0), cc.max(initial=0))) + 1):
        inter += (cq >= k).astype(np.float32) @ (cc >= k).astype(np.float32).T
    lower = np.maximum(qlen[:, None], clen[None, :]) - inter
    cand = (lower < limit) if tolerance > 0 else (lower == 0)
    out = np.zeros(cand.shape, dtype=bool)
    qi, ci = np.nonzero(cand)
    if len(qi):
        d = _pair_dp(qa[qi], qlen[qi], ca[ci], clen[ci])
        lim = limit[qi, ci]
        out[qi, ci] = (d < lim) if tolerance > 0 else (d == 0)
    return out


def _widen(a: np.ndarray, width: int, fill: int) -> np.ndarray:
    """`a` (n, w) right-padded with `fill` to `width` columns (unchanged when already that wide)."""
    return np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=fill) if a.shape[1] < width else a


def _pair_dp(A: np.ndarray, la: np.ndarray, B: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """Levenshtein DP over P pairs at once: rows of A (P, La) and B (P, Lb), padded with different values,
    true lengths la, lb -> (P,) distances."""
    P, Lb = len(A), B.shape[1]
    prev = np.broadcast_to(np.arange(Lb + 1), (P, Lb + 1)).copy()
    out = np.where(la == 0, lb, 0)
    for i in range(int(la.max(initial=0))):
        cur = np.empty_like(prev)
        cur[:, 0] = i + 1
        neq = A[:, i:i + 1] != B
        for j in range(1, Lb + 1):
            cur[:, j] = np.minimum(np.minimum(prev[:, j] + 1, cur[:, j - 1] + 1), prev[:, j - 1] + neq[:, j - 1])
        prev = cur
        done = la == i + 1
        out[done] = cur[done, lb[done]]
    return out


def pair_edit_distances(a: Sequence[Sequence[int]], b: Sequence[Sequence[int]]) -> np.ndarray:
    """Levenshtein distance of each pair (a[i], b[i]) -> (P,), one DP vectorised over the pairs."""
    P = len(a)
    if P != len(b):
        raise ValueError("a and b must have the same number of sequences")
    if P == 0:
        return np.zeros(0, dtype=np.int64)
    A, la = _padded(a, -1)
    B, lb = _padded(b, -2)
    return _pair_dp(A, la, B, lb)


@dataclass
class BufferItem:
    tokens: tuple[int, ...]
    text: str
    c_log_reward: float
    lm_log_reward: float
    priority: float


class ReplayBuffer:
    """Prioritised replay buffer of scored attack prompts with near-duplicate rejection (spec 2).

    Args:
        capacity: maximum number of items; the lowest-priority items are evicted first.
        dedup: "edit" (normalised token edit distance d / max(len) < `tolerance` is a duplicate) or "exact".
        tolerance: the near-duplicate threshold for "edit" (spec: 0.4).
        priority: "reward" (the classifier score, the only option the spec defines).
    A duplicate replaces the items it duplicates if its priority is strictly higher, else it is rejected.
    """

    def __init__(self, capacity: int = 1000, dedup: str = "edit", tolerance: float = 0.4, priority: str = "reward"):
        self.capacity, self.dedup, self.tolerance, self.priority = capacity, dedup, tolerance, priority
        self._check()
        self.items: list[BufferItem] = []
        self._rows: tuple[list, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None  # see _candidate_rows

    def _check(self) -> None:
        self.capacity = check_int(self.capacity, "capacity", min=1)
        self.dedup = check_choice(self.dedup, "dedup", ("edit", "exact"))
        self.tolerance = check_float(self.tolerance, "tolerance", min=0.0, max=1.0)
        self.priority = check_choice(self.priority, "priority", ("reward",))

    def __len__(self) -> int:
        return len(self.items)

    def reset(self) -> None:
        """Empty the buffer."""
        self.items = []
        self._rows = None

    def _candidate_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`items` as edit-dedup candidates: (tokens padded with -2, lengths, token counts), kept from the last `add`
        (the arrays `_near_duplicates` builds from the items, up to padding width; rebuilt if `items` changed)."""
        toks = [it.tokens for it in self.items]
        if self._rows is None or self._rows[0] != toks:
            ca, clen = _padded(toks, -2)
            self._rows = (toks, (ca, clen, _counts(toks, 1 + int(ca.max(initial=0)))))
        return self._rows[1]

    def _dup_matrix(self, new: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
        old = [it.tokens for it in self.items]
        if self.dedup == "exact":
            d_old = np.array([[a == b for b in old] for a in new], dtype=bool).reshape(len(new), len(old))
            d_new = np.array([[a == b for b in new] for a in new], dtype=bool)
            return d_old, d_new
        qa, qlen = _padded(new, -1)
        vocab = 1 + int(qa.max(initial=0))
        rows_old = self._candidate_rows() if old else (np.zeros((0, 1), np.int64), np.zeros(0, np.int64),
                                                        np.zeros((0, 1), np.int64))
        ca, clen, cc = rows_old
        vocab = max(vocab, cc.shape[1])
        cq = _counts(new, vocab)
        rows_new = (np.where(qa == -1, -2, qa), qlen, cq)  # the new prompts as candidates (-2 padding)
        self._pending = (rows_old, rows_new)  # for `_keep_rows` at the end of this `add`
        d_old = (_near_duplicates_arrays(qa, qlen, cq, ca, clen, _widen(cc, vocab, 0), self.tolerance) if old
                 else np.zeros((len(new), 0), dtype=bool))
        d_new = _near_duplicates_arrays(qa, qlen, cq, *rows_new, self.tolerance)
        return d_old, d_new

    def _keep_rows(self, sources: list[int]) -> None:
        """Align the cached candidate arrays with the new `items`: `sources[r]` is the row of item r among the old
        items followed by the new prompts of this `add`."""
        if self.dedup != "edit":
            return
        (oa, olen, oc), (na, nlen, nc) = self._pending
        del self._pending
        W, V = max(oa.shape[1], na.shape[1]), max(oc.shape[1], nc.shape[1])
        idx = np.asarray(sources, dtype=np.int64)
        rows = (np.concatenate([_widen(oa, W, -2), _widen(na, W, -2)])[idx], np.concatenate([olen, nlen])[idx],
                np.concatenate([_widen(oc, V, 0), _widen(nc, V, 0)])[idx])
        self._rows = ([it.tokens for it in self.items], rows)

    def add(self, tokens: Sequence[Sequence[int]], texts: list[str], c_log_reward, lm_log_reward, priority) -> int:
        """Add a batch; returns how many items were accepted."""
        self._check()
        texts = check_texts(texts, "texts")
        n = len(texts)
        arrs = [np.asarray(a, dtype=np.float64).reshape(-1) for a in (c_log_reward, lm_log_reward, priority)]
        if len(tokens) != n or any(len(a) != n for a in arrs):
            raise ValueError("tokens, texts, c_log_reward, lm_log_reward and priority must have the same length")
        if any(not np.all(np.isfinite(a)) for a in arrs):
            raise ValueError("rewards and priorities must be finite")
        new = [tuple(int(t) for t in seq) for seq in tokens]
        d_old, d_new = self._dup_matrix(new)
        alive_old = np.ones(len(self.items), dtype=bool)
        accepted = np.zeros(n, dtype=bool)
        pr_old = np.array([it.priority for it in self.items])
        for i in range(n):
            dups_old = np.flatnonzero(d_old[i] & alive_old)
            dups_new = [j for j in np.flatnonzero(d_new[i, :i]) if accepted[j]]
            best = max([pr_old[k] for k in dups_old] + [arrs[2][j] for j in dups_new], default=-np.inf)
            if best >= arrs[2][i]:
                continue
            alive_old[dups_old] = False
            accepted[dups_new] = False
            accepted[i] = True
        n_old = len(self.items)
        kept = [(it, k) for k, (it, a) in enumerate(zip(self.items, alive_old)) if a]
        kept += [(BufferItem(new[i], texts[i], float(arrs[0][i]), float(arrs[1][i]), float(arrs[2][i])), n_old + i)
                 for i in np.flatnonzero(accepted)]
        kept.sort(key=lambda pair: -pair[0].priority)  # stable: older items first among equal priority
        kept = kept[: self.capacity]
        self.items = [it for it, _ in kept]
        self._keep_rows([src for _, src in kept])
        return sum(src >= n_old for _, src in kept)

    def sample(self, n: int, rng: np.random.Generator) -> list[BufferItem]:
        """`n` items with replacement, probability proportional to max(priority, 1e-3)."""
        n = check_int(n, "n", min=1)
        if not self.items:
            raise ValueError("cannot sample from an empty replay buffer")
        p = np.maximum(np.array([it.priority for it in self.items]), 1e-3)
        idx = rng.choice(len(self.items), size=n, p=p / p.sum())
        return [self.items[i] for i in idx]


# ----------------------------------------------------------------------------------------------- trainers
class RedTeamTrainer:
    """What every red-teaming trainer shares: scoring, the prior, collected attacks, timing, `train`.

    Args:
        attacker: an `AttackerPolicy` or `TabularAttacker` (trained in place).
        victim: a `VictimModel` (or any object with `respond(prompts, n) -> list[list[str]]` and `version`).
        classifier: a `HarmClassifier` (probabilities in [0, 1]; `log_prob` used when present).
        reference: the frozen prior p_ref (default: a frozen deep copy of `attacker` at construction = SFT).
        oracle: optional `KeywordHarmOracle` naming the category of each successful attack.
        n_responses: victim replies per prompt (spec: 5).
        batch_size: prompts per step.
        lr: attacker learning rate (AdamW).
        grad_clip: global gradient-norm clip.
        success_threshold: a prompt is a successful attack iff its mean toxicity is > this (strict; spec: 0.5).
        cache_rewards: reuse a prompt's score while the victim version is unchanged (saves victim calls).
        text_roundtrip: the victim reads the attacker's decoded *text* (True, default). False passes token ids
            through and requires both to share one tokenizer vocabulary.
        seed: seeds this trainer's own torch/numpy generators (sampling, batch choice).
    """

    def __init__(self, attacker, victim, classifier, *, reference=None, oracle=None, n_responses: int = 5,
                 batch_size: int = 16, lr: float = 1e-4, weight_decay: float = 0.0, grad_clip: float = 1.0,
                 success_threshold: float = 0.5, cache_rewards: bool = True, text_roundtrip: bool = True,
                 seed: int = 0) -> None:
        for attr in ("sample", "log_prob", "log_z", "log_prob_and_log_z", "policy_parameters"):
            if not callable(getattr(attacker, attr, None)):
                raise TypeError(f"attacker must be an AttackerPolicy/TabularAttacker (missing {attr}())")
        if not callable(getattr(victim, "respond", None)):
            raise TypeError("victim must have respond(prompts, n) (a VictimModel)")
        if not callable(classifier):
            raise TypeError("classifier must be callable (prompts, responses) -> probabilities")
        self.attacker, self.victim, self.classifier, self.oracle = attacker, victim, classifier, oracle
        self.n_responses = check_int(n_responses, "n_responses", min=1)
        self.batch_size = check_int(batch_size, "batch_size", min=1)
        self.lr = check_float(lr, "lr", min=0.0, min_open=True)
        self.weight_decay = check_float(weight_decay, "weight_decay", min=0.0)
        self.grad_clip = check_float(grad_clip, "grad_clip", min=0.0, min_open=True)
        self.success_threshold = check_float(success_threshold, "success_threshold", min=0.0, max=1.0)
        self.cache_rewards = check_bool(cache_rewards, "cache_rewards")
        self.text_roundtrip = check_bool(text_roundtrip, "text_roundtrip")
        if not self.text_roundtrip:
            a_tok, v_tok = getattr(attacker, "tokenizer", None), getattr(victim, "tokenizer", None)
            if a_tok is None or v_tok is None or getattr(a_tok, "vocab_size", None) != getattr(v_tok, "vocab_size", -1) \
                    or (hasattr(a_tok, "vocab") and hasattr(v_tok, "vocab") and a_tok.vocab != v_tok.vocab):
                raise ValueError("text_roundtrip=False needs the attacker and the victim to share one tokenizer "
                                 "(their vocabularies differ); keep text_roundtrip=True to pass prompts as text")
        self.seed = check_seed(seed)
        if reference is attacker:
            raise ValueError("reference must be a separate (frozen) copy of the attacker, not the attacker itself")
        if reference is None:
            reference = copy.deepcopy(attacker)
        self.reference = reference  # scored under no_grad only; its requires_grad flags are left as they are
        self.gen = torch.Generator().manual_seed(self.seed)
        self.rng = np.random.default_rng(self.seed)
        self.step_count = 0
        self.collected: list[Attack] = []
        self.history: list[dict[str, Any]] = []
        self.timing = {"attacker_sample_s": 0.0, "victim_s": 0.0, "classifier_s": 0.0, "update_s": 0.0}
        self.counts = {"attacker_samples": 0, "victim_responses": 0, "cache_hits": 0}
        self._cache: dict[tuple[int, str], tuple[float, float, str | None]] = {}
        self._build_optimizer()

    def _param_groups(self) -> list[dict]:
        return [{"params": self.attacker.policy_parameters(), "lr": self.lr}]

    def _build_optimizer(self) -> None:
        self.optimizer = torch.optim.AdamW(self._param_groups(), weight_decay=self.weight_decay)

    # ------------------------------------------------------------------ scoring
    def score(self, texts: list[str]) -> Scored:
        """Mean log p / mean p of toxicity over `n_responses` victim replies per prompt, and oracle categories."""
        texts = check_texts(texts, "texts")
        version = int(getattr(self.victim, "version", 0))
        todo = list(dict.fromkeys(t for t in texts if not (self.cache_rewards and (version, t) in self._cache)))
        self.counts["cache_hits"] += sum((version, t) in self._cache for t in texts) if self.cache_rewards else 0
        fresh: dict[str, tuple[float, float, str | None]] = {}
        if todo:
            t0 = time.perf_counter()
            replies = self.victim.respond(todo, n=self.n_responses, generator=self.gen)
            t1 = time.perf_counter()
            flat_p = [p for p, rs in zip(todo, replies) for _ in rs]
            flat_r = [r for rs in replies for r in rs]
            logp = score(self.classifier, flat_p, flat_r, log=True).double().numpy()
            prob = np.exp(logp) if hasattr(self.classifier, "log_prob") else \
                score(self.classifier, flat_p, flat_r).double().numpy()
            cats = self.oracle.categories(flat_r) if self.oracle is not None else [None] * len(flat_r)
            self.timing["victim_s"] += t1 - t0
            self.timing["classifier_s"] += time.perf_counter() - t1
            self.counts["victim_responses"] += len(flat_r)
            k = self.n_responses
            for i, t in enumerate(todo):
                sl = slice(i * k, (i + 1) * k)
                fresh[t] = (float(logp[sl].mean()), float(prob[sl].mean()), _category(cats[sl], prob[sl]))
                if self.cache_rewards:
                    self._cache[(version, t)] = fresh[t]
        vals = [fresh[t] if t in fresh else self._cache[(version, t)] for t in texts]
        return Scored(np.array([v[0] for v in vals]), np.array([v[1] for v in vals]), [v[2] for v in vals])

    def prior_log_reward(self, tokens: Sequence[Sequence[int]]) -> np.ndarray:
        """log p_ref(x), with `LENGTH_PENALTY` (-500) for prompts shorter than the attacker's `min_len`."""
        with torch.inference_mode():
            lp = self.reference.log_prob(tokens).double().cpu().numpy()
        lens = np.array(self.attacker.prompt_lengths(tokens))
        return np.where(lens < self.attacker.min_len, LENGTH_PENALTY, lp)

    def _record(self, tokens, texts, scored: Scored) -> int:
        version = int(getattr(self.victim, "version", 0))
        n = 0
        for tok, text, tox, cat in zip(tokens, texts, scored.toxicity, scored.categories):
            if tox > self.success_threshold:
                self.collected.append(Attack(text, tuple(int(t) for t in tok), float(tox), cat, self.step_count,
                                             version))
                n += 1
        return n

    def _sample(self, n: int, temperature: float) -> tuple[list[list[int]], list[str]]:
        t0 = time.perf_counter()
        toks, texts = self.attacker.sample(n, temperature=temperature, generator=self.gen)
        self.timing["attacker_sample_s"] += time.perf_counter() - t0
        self.counts["attacker_samples"] += n
        return toks, texts

    def _update(self, loss: torch.Tensor) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self._sync_gradients()
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        torch.nn.utils.clip_grad_norm_(params, self.grad_clip)
        self.optimizer.step()

    def _sync_gradients(self) -> None:
        """Hook for data-parallel training (the paper-scale path averages non-DDP gradients here)."""

    # ------------------------------------------------------------------ loop
    def step(self) -> dict[str, Any]:  # pragma: no cover - implemented by the objectives
        raise NotImplementedError

    def train(self, steps: int, progress: bool | str = False) -> list[dict[str, Any]]:
        """Run `steps` calls of `step()`; returns their stats."""
        steps = check_int(steps, "steps", min=1)
        bar = tqdm(range(steps), desc=progress if isinstance(progress, str) else type(self).__name__,
                   disable=not progress, leave=False)
        return [self.step() for _ in bar]

    def reset_buffer(self) -> None:
        """Forget replayed data (the victim changed); no-op for on-policy trainers."""

    def reinit_attacker(self) -> None:
        """Reset the attacker to the reference (SFT) weights and restart its optimizer."""
        self.attacker.load_state_dict(self.reference.state_dict())
        self._build_optimizer()

    @property
    def successful_prompts(self) -> list[str]:
        """Distinct successful prompts collected so far (first-seen order)."""
        return list(dict.fromkeys(a.prompt for a in self.collected))


def _category(cats: list[str | None], probs: np.ndarray) -> str | None:
    """Majority oracle category over the toxic replies (p > 0.5), else over all replies with a category."""
    pool = [c for c, p in zip(cats, probs) if c is not None and p > 0.5] or [c for c in cats if c is not None]
    if not pool:
        return None
    vals, counts = np.unique(np.array(pool, dtype=object).astype(str), return_counts=True)
    return str(vals[np.argmax(counts)])


class GFlowNetRedTeamer(RedTeamTrainer):
    """GFlowNet red-teaming trainer (trajectory balance + replay buffer), spec 2.

    Args (beyond `RedTeamTrainer`):
        beta, gamma: reward exponents (spec: 0.1, 1.0).
        reward_temp: (start, end, steps) of the linearly annealed reward temperature (spec: (2.0, 1.0, 500)).
        lr_log_z: learning rate of the log Z head.
        buffer: a `ReplayBuffer` (default capacity 1000, edit-distance dedup at tolerance 0.4).
        p_offline: probability of a replay step (spec: 0.5).
        temp_range: on-policy temperature range (spec: [0.5, 2.0]), used with probability `p_random_temp` (0.5).
        seed_prompts: optional SFT/few-shot prompts put into the buffer at the start (and after each reset).
        seed_batches: batches of prior (SFT) samples scored into the buffer at the start (spec: 10).
    """

    def __init__(self, attacker, victim, classifier, *, beta: float = 0.1, gamma: float = 1.0,
                 reward_temp: tuple[float, float, int] = (2.0, 1.0, 500), lr_log_z: float = 1e-2,
                 buffer: ReplayBuffer | None = None, p_offline: float = 0.5, temp_range: tuple[float, float] = (0.5, 2.0),
                 p_random_temp: float = 0.5, seed_prompts: list[str] | None = None, seed_batches: int = 10,
                 **kwargs: Any) -> None:
        self.beta = check_float(beta, "beta", min=0.0, min_open=True)
        self.gamma = check_float(gamma, "gamma", min=0.0, min_open=True)
        if not isinstance(reward_temp, (tuple, list)) or len(reward_temp) != 3:
            raise TypeError("reward_temp must be (start, end, steps)")
        self.reward_temp = (check_float(reward_temp[0], "reward_temp[0]", min=0.0, min_open=True),
                            check_float(reward_temp[1], "reward_temp[1]", min=0.0, min_open=True),
                            check_int(reward_temp[2], "reward_temp[2]", min=1))
        self.lr_log_z = check_float(lr_log_z, "lr_log_z", min=0.0, min_open=True)
        self.p_offline = check_float(p_offline, "p_offline", min=0.0, max=1.0)
        if not isinstance(temp_range, (tuple, list)) or len(temp_range) != 2:
            raise TypeError("temp_range must be (low, high)")
        lo = check_float(temp_range[0], "temp_range[0]", min=0.0, min_open=True)
        self.temp_range = (lo, check_float(temp_range[1], "temp_range[1]", min=lo))
        self.p_random_temp = check_float(p_random_temp, "p_random_temp", min=0.0, max=1.0)
        self.seed_prompts = None if seed_prompts is None else check_texts(seed_prompts, "seed_prompts")
        self.seed_batches = check_int(seed_batches, "seed_batches", min=0)
        if buffer is not None and not isinstance(buffer, ReplayBuffer):
            raise TypeError(f"buffer must be a ReplayBuffer, got {type(buffer).__name__}")
        self.buffer = buffer if buffer is not None else ReplayBuffer()
        super().__init__(attacker, victim, classifier, **kwargs)
        self._seeded = False

    def _param_groups(self) -> list[dict]:
        return [{"params": self.attacker.policy_parameters(), "lr": self.lr},
                {"params": list(self.attacker.log_z_parameters()), "lr": self.lr_log_z}]

    def current_reward_temp(self) -> float:
        return linear_schedule(*self.reward_temp, self.step_count)

    def _add_to_buffer(self, tokens, texts, scored: Scored, lm: np.ndarray) -> None:
        self.buffer.add(tokens, texts, scored.c_log_reward, lm, scored.toxicity)

    def seed_buffer(self) -> None:
        """Score the seed prompts and `seed_batches` batches of prior samples against the current victim."""
        if self.seed_prompts:
            toks = [self.attacker.encode_prompt(p) for p in self.seed_prompts]
            texts = [self.attacker.decode(t) for t in toks]
            self._add_to_buffer(toks, texts, self.score(texts), self.prior_log_reward(toks))
        for _ in range(self.seed_batches):
            t0 = time.perf_counter()
            with torch.no_grad():
                toks, texts = self.reference.sample(self.batch_size, temperature=1.0, generator=self.gen)
            self.timing["attacker_sample_s"] += time.perf_counter() - t0
            self._add_to_buffer(toks, texts, self.score(texts), self.prior_log_reward(toks))
        self._seeded = True

    def reset_buffer(self) -> None:
        """Empty the buffer; it is re-seeded against the (new) victim before the next step (spec 9)."""
        self.buffer.reset()
        self._seeded = False

    def step(self) -> dict[str, Any]:
        if not self._seeded:
            self.seed_buffer()
        temp_r = self.current_reward_temp()
        offline = len(self.buffer) >= 1 and self.rng.random() < self.p_offline
        new = 0
        if offline:
            items = self.buffer.sample(self.batch_size, self.rng)
            tokens = [list(it.tokens) for it in items]
            c_lr = np.array([it.c_log_reward for it in items])
            lm = np.array([it.lm_log_reward for it in items])
            tox = np.array([it.priority for it in items])
            temp = float("nan")
        else:
            temp = float(self.rng.uniform(*self.temp_range)) if self.rng.random() < self.p_random_temp else 1.0
            tokens, texts = self._sample(self.batch_size, temp)
            scored = self.score(texts)
            lm = self.prior_log_reward(tokens)
            self._add_to_buffer(tokens, texts, scored, lm)
            new = self._record(tokens, texts, scored)
            c_lr, tox = scored.c_log_reward, scored.toxicity
        t0 = time.perf_counter()
        log_r = gfn_log_reward(c_lr, lm, self.beta, self.gamma, temp_r)
        log_pf, log_z = self.attacker.log_prob_and_log_z(tokens)
        loss = trajectory_balance_loss(log_z, log_pf, log_r.to(log_z.device))
        self._update(loss)
        self.timing["update_s"] += time.perf_counter() - t0
        self.step_count += 1
        stats = {"step": self.step_count, "on_policy": not offline, "loss": float(loss.detach()),
                 "log_z": float(log_z.detach()), "reward_temp": temp_r, "temperature": temp,
                 "asr": float(np.mean(tox > self.success_threshold)), "toxicity": float(np.mean(tox)),
                 "new_attacks": new, "victim_version": int(getattr(self.victim, "version", 0))}
        self.history.append(stats)
        return stats


__all__ = [
    "LENGTH_PENALTY",
    "Attack",
    "BufferItem",
    "GFlowNetRedTeamer",
    "RedTeamTrainer",
    "ReplayBuffer",
    "Scored",
    "edit_distances",
    "gfn_log_reward",
    "linear_schedule",
    "pair_edit_distances",
    "trajectory_balance_loss",
]
