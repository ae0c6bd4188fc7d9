"""Synthetic serving workloads of the CPU reproduction (spec §6). Generated, because the paper's LMSYS-Chat-1M
traces with per-prompt response samples of Llama-3-8B are not available offline.

W1 (primary, log-t ground truth): 12 templated task families. A prompt = family template + a topic (200
topics = 20 adjectives × 10 nouns) + optional modifiers: "briefly" (μ - 0.7), "in detail" (μ + 0.6, σ + 0.1),
"as N bullet points" (μ = log(25·N)), "step by step" (σ + 0.2). Per prompt μ_p = family μ + modifier effects +
N(0, 0.2) hidden effect, σ_p = family σ · exp(0.25·ξ), ξ ~ N(0, 1); lengths X = clip(round(exp(μ_p + σ_p·t_ν)),
1, 2048), ν = 3.5. Prompt lengths (tokens): a family-specific log-normal; "rewrite" prompts carry an input
passage whose length sets the output median (1.1 × input words; the text states the word count).
W2 (robustness, different generator): per family a log-normal main mode with σ ∈ [0.3, 0.6] around the same
medians plus a family "runaway" probability p ∈ [0, 0.15] of a length uniform in [1024, 2048].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml26.tie.dist import LogNormal, LogT

__all__ = ["FAMILIES", "TOPICS", "PromptSet", "make_prompts", "sample_lengths", "true_censored_mean"]

MAX_TOKENS = 2048
NU = 3.5

# name, templates, median output tokens, sigma, (prompt-token median, prompt-token log-sd)
FAMILIES: list[tuple[str, list[str], float, float, tuple[float, float]]] = [
    ("yesno", ["Is it true that {t} matter? Answer yes or no.", "Yes or no: are {t} common?"], 8, 0.5, (20, 0.3)),
    ("fact", ["What is the most important fact about {t}?", "Give me one fact about {t}."], 30, 0.5, (18, 0.3)),
    ("translate", ["Translate this sentence about {t} into French.",
                   "Translate into German: a sentence describing {t}."], 40, 0.3, (45, 0.3)),
    ("summarise", ["Summarise the following paragraph about {t}.", "Write a summary of this article on {t}."],
     120, 0.3, (600, 0.4)),
    ("chat", ["Let's chat about {t}.", "What do you think about {t}?"], 60, 1.2, (25, 0.5)),
    ("code", ["Write a Python program that simulates {t}.", "Implement a class modelling {t} in Python."],
     250, 0.6, (40, 0.4)),
    ("essay", ["Write an essay on {t}.", "Compose a long-form essay discussing {t}."], 600, 0.3, (30, 0.3)),
    ("brainstorm", ["List {n} ideas related to {t}.", "Brainstorm {n} names inspired by {t}."], None, 0.9,
     (25, 0.3)),
    ("story", ["Continue this story about {t}.", "Write the next part of a tale involving {t}."], 100, 1.3,
     (150, 0.6)),
    ("math", ["Solve this math problem about {t} and show the reasoning.",
              "Work out the probability puzzle involving {t}."], 300, 0.8, (60, 0.4)),
    ("rewrite", ["Rewrite and polish this {w}-word paragraph about {t}.",
                 "Improve the style of this {w}-word text on {t}."], None, 0.3, None),
    ("eli5", ["Explain {t} like I'm five.", "Explain to a child how {t} work."], 150, 0.7, (20, 0.3)),
]

_ADJ = ["ancient", "modern", "tiny", "giant", "frozen", "tropical", "digital", "rural", "urban", "quantum",
        "medieval", "electric", "wild", "hidden", "floating", "robotic", "musical", "solar", "deep-sea", "desert"]
_NOUN = ["rivers", "cities", "insects", "libraries", "markets", "volcanoes", "gardens", "machines", "languages",
         "festivals"]
TOPICS: list[str] = [f"{a} {b}" for a in _ADJ for b in _NOUN]
assert len(TOPICS) == 200


@dataclass
class PromptSet:
    """n prompts with their hidden ground-truth length parameters (W1) and family ids."""

    prompts: list[str]
    family: np.ndarray      # (n,) int
    mu: np.ndarray          # (n,) W1 log-t location
    sigma: np.ndarray       # (n,) W1 log-t scale
    prompt_len: np.ndarray  # (n,) int tokens

    def __len__(self) -> int:
        return len(self.prompts)


def make_prompts(n: int, rng: np.random.Generator | int) -> PromptSet:
    """n W1 prompts (text, family, μ_p, σ_p, prompt tokens)."""
    if int(n) < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = np.random.default_rng(rng)
    prompts, fam, mus, sigs, plen = [], [], [], [], []
    for _ in range(int(n)):
        f = int(rng.integers(len(FAMILIES)))
        name, templates, median, sigma, plen_spec = FAMILIES[f]
        topic = TOPICS[int(rng.integers(len(TOPICS)))]
        tmpl = templates[int(rng.integers(len(templates)))]
        fields = {"t": topic}
        if name == "brainstorm":
            N = int(rng.integers(3, 21))
            fields["n"] = N
            mu = np.log(25 * N)
        elif name == "rewrite":
            w = int(np.clip(np.rint(np.exp(rng.normal(np.log(200), 0.5))), 30, 1200))
            fields["w"] = w
            mu = np.log(1.1 * w)
        else:
            mu = np.log(median)
        text = tmpl.format(**fields)
        mods = []
        u = rng.random()
        if name not in ("yesno", "translate", "rewrite"):
            if u < 0.15:
                mods.append("briefly")
                mu -= 0.7
            elif u < 0.30:
                mods.append("in detail")
                mu += 0.6
                sigma += 0.1
        if name not in ("yesno", "translate", "brainstorm", "rewrite") and rng.random() < 0.1:
            N = int(rng.integers(3, 11))
            mods.append(f"as {N} bullet points")
            mu = np.log(25 * N)
        if name in ("math", "code", "eli5", "chat", "fact") and rng.random() < 0.2:
            mods.append("step by step")
            sigma += 0.2
        if mods:
            text = text.rstrip(".?") + ", " + ", ".join(mods) + "."
        mu += rng.normal(0, 0.2)
        sigma *= np.exp(0.25 * rng.normal())
        if name == "rewrite":
            pl = int(fields["w"] * 1.3) + 20
        else:
            pl = int(np.rint(np.exp(rng.normal(np.log(plen_spec[0]), plen_spec[1]))))
        prompts.append(text)
        fam.append(f)
        mus.append(mu)
        sigs.append(sigma)
        plen.append(int(np.clip(pl, 4, 1500)))
    return PromptSet(prompts, np.array(fam), np.array(mus), np.array(sigs), np.array(plen, dtype=np.int64))


def _w2_family_params() -> tuple[np.ndarray, np.ndarray]:
    """Fixed per-family W2 parameters: main-mode sigma in [0.3, 0.6], runaway probability in [0, 0.15]."""
    r = np.random.default_rng(20260)
    return r.uniform(0.3, 0.6, len(FAMILIES)), r.uniform(0.0, 0.15, len(FAMILIES))


def sample_lengths(ps: PromptSet, k: int, rng: np.random.Generator | int, workload: str = "W1") -> np.ndarray:
    """(n, k) int output lengths in [1, 2048] drawn from the workload's ground truth."""
    if workload not in ("W1", "W2"):
        raise ValueError(f"workload must be 'W1' or 'W2', got {workload!r}")
    if int(k) < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    rng = np.random.default_rng(rng)
    if workload == "W1":
        return LogT(ps.mu, ps.sigma, nu=NU, max_tokens=MAX_TOKENS).sample(int(k), rng).T
    sig_f, p_f = _w2_family_params()
    main = LogNormal(ps.mu, sig_f[ps.family], max_tokens=MAX_TOKENS).sample(int(k), rng).T
    run = rng.random(main.shape) < p_f[ps.family][:, None]
    runaway = rng.integers(1024, MAX_TOKENS + 1, size=main.shape)
    return np.where(run, runaway, main).astype(np.int64)


def true_censored_mean(ps: PromptSet, workload: str = "W1") -> np.ndarray:
    """E[min(X, L)] (n,) under the workload's ground truth (continuous approximation of the rounded lengths)."""
    if workload == "W1":
        return LogT(ps.mu, ps.sigma, nu=NU, max_tokens=MAX_TOKENS).censored_mean()
    sig_f, p_f = _w2_family_params()
    main = LogNormal(ps.mu, sig_f[ps.family], max_tokens=MAX_TOKENS).censored_mean()
    p = p_f[ps.family]
    return (1 - p) * main + p * (1024 + MAX_TOKENS) / 2
