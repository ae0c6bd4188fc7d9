"""Harm classifiers: the judge `p_psi(toxic | x, y)` of the red-teaming reward (spec sections 2 and 5).

A `HarmClassifier` is any callable `clf(prompts: list[str], responses: list[str]) -> Tensor (n,)` of toxicity
probabilities in [0, 1]; it may also offer `log_prob(prompts, responses)` (a finite log-probability, used by the
GFlowNet reward so that `log p` of a confident "safe" is not -inf). `score` calls one and checks its output.

Implementations:
- `KeywordHarmOracle(harm_words)`: 1 if a response holds a harm word, else 0; `.categories(responses)` names the
  harm category (the coverage oracle of the CPU reproduction; the paper uses Llama-Guard categories).
- `BagOfWordsToxicityClassifier`: L2-regularised logistic regression on word counts, `fit(texts, labels)`.
- `HFToxicityClassifier(model, tokenizer)`: a Hugging Face sequence classifier, or a Llama-Guard-style causal LM
  judge (`kind="guard"`: probability of the word "unsafe" as the first answer token, as in the paper).
- `ProfanityCheckClassifier()`: the offline `alt-profanity-check` model (TF-IDF + calibrated linear SVM).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import torch

from icml26.common.validation import check_array, check_bool, check_choice, check_float, check_int

_WORD = re.compile(r"[\w']+")
_EPS = 1e-6  # floor of p when a classifier has no log_prob: log p >= -13.8


@runtime_checkable
class HarmClassifier(Protocol):
    """`__call__(prompts, responses) -> Tensor (n,)`: probability that each (prompt, response) is harmful."""

    def __call__(self, prompts: list[str], responses: list[str]) -> torch.Tensor: ...


def check_texts(texts, name: str, *, allow_empty_list: bool = False) -> list[str]:
    """A list of str (a tuple is read like the list); a bare string or non-str item is a `TypeError`."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise TypeError(f"{name} must be a list of strings, got {type(texts).__name__}")
    out = list(texts)
    if not out and not allow_empty_list:
        raise ValueError(f"{name} must not be empty")
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(t).__name__}")
    return out


def _pair(prompts, responses) -> tuple[list[str], list[str]]:
    prompts, responses = check_texts(prompts, "prompts"), check_texts(responses, "responses")
    if len(prompts) != len(responses):
        raise ValueError(f"prompts and responses must have the same length, got {len(prompts)} and {len(responses)}")
    return prompts, responses


def score(classifier, prompts: list[str], responses: list[str], *, log: bool = False) -> torch.Tensor:
    """Call `classifier` and check its output: a finite float tensor (n,) in [0, 1] (or <= 0 with `log`).

    With `log=True` returns log p(toxic), from `classifier.log_prob` when it has one, else `log(max(p, 1e-6))`.
    Raises `ValueError` naming the classifier when its output has the wrong shape or leaves [0, 1].
    """
    prompts, responses = _pair(prompts, responses)
    if not callable(classifier):
        raise TypeError(f"classifier must be callable (prompts, responses) -> probabilities, got "
                        f"{type(classifier).__name__}")
    name = type(classifier).__name__
    if log and hasattr(classifier, "log_prob"):
        out = torch.as_tensor(classifier.log_prob(prompts, responses), dtype=torch.float32).flatten()
        if out.shape != (len(prompts),) or not bool(torch.isfinite(out).all()) or bool((out > 1e-6).any()):
            raise ValueError(f"{name}.log_prob must return {len(prompts)} finite values <= 0, got "
                             f"{out.tolist()[:5]}")
        return out.clamp_max(0.0)
    out = torch.as_tensor(classifier(prompts, responses), dtype=torch.float32).flatten()
    if out.shape != (len(prompts),):
        raise ValueError(f"{name} must return one probability per response ({len(prompts)}), got shape "
                         f"{tuple(out.shape)}")
    if not bool(torch.isfinite(out).all()) or bool((out < 0).any()) or bool((out > 1).any()):
        bad = out[~torch.isfinite(out) | (out < 0) | (out > 1)][:3].tolist()
        raise ValueError(f"{name} returned values outside [0, 1] (e.g. {bad}); a harm classifier must output "
                         "probabilities")
    return torch.log(out.clamp_min(_EPS)) if log else out


# ----------------------------------------------------------------------------------------------- keyword oracle
class KeywordHarmOracle:
    """Keyword judge: p = 1 if a response contains a harm word of any category, else 0.

    Args:
        harm_words: category name -> set of harm words (lower-case, matched as whole words).
    """

    def __init__(self, harm_words: Mapping[str, set[str] | Sequence[str]]) -> None:
        if not isinstance(harm_words, Mapping) or not harm_words:
            raise ValueError("harm_words must be a non-empty dict {category: set of words}")
        lex: dict[str, str] = {}
        for cat, words in harm_words.items():
            if isinstance(words, str):
                raise TypeError(f"harm_words[{cat!r}] must be a set of words, not a single string")
            words = list(words)
            if not words:
                raise ValueError(f"harm_words[{cat!r}] is empty")
            for w in words:
                if not isinstance(w, str) or not w.strip():
                    raise TypeError(f"harm_words[{cat!r}] must hold non-empty strings, got {w!r}")
                w = w.strip().lower()
                if w in lex and lex[w] != cat:
                    raise ValueError(f"harm word {w!r} is listed under both {lex[w]!r} and {cat!r}")
                lex[w] = cat
        self.category_names: list[str] = list(harm_words)
        self.lexicon = lex

    def categories(self, responses: list[str]) -> list[str | None]:
        """Per response, the category with the most harm-word hits (ties: the first listed), or None."""
        out: list[str | None] = []
        for r in check_texts(responses, "responses", allow_empty_list=True):
            counts: dict[str, int] = {}
            for w in _WORD.findall(r.lower()):
                c = self.lexicon.get(w)
                if c is not None:
                    counts[c] = counts.get(c, 0) + 1
            out.append(max(self.category_names, key=lambda c: counts.get(c, 0)) if counts else None)
        return out

    def __call__(self, prompts: list[str], responses: list[str]) -> torch.Tensor:
        _pair(prompts, responses)
        return torch.tensor([0.0 if c is None else 1.0 for c in self.categories(responses)])


# ----------------------------------------------------------------------------------------------- bag of words
class BagOfWordsToxicityClassifier:
    """Logistic regression on word counts of the response (optionally also the prompt).

    p(toxic | x, y) = sigmoid(w . counts(y) + b), fitted by L-BFGS on the L2-penalised log-loss
    `sum_i log(1 + exp(-s_i z_i)) + ||w||^2 / (2 C)` (s_i = +-1). Words unseen in `fit` carry no weight.

    Args:
        C: inverse regularisation strength (> 0); smaller C gives softer probabilities.
        include_prompt: also count the prompt's words (default False: judge the response only).
        max_iter: L-BFGS iterations.
    """

    def __init__(self, C: float = 1.0, include_prompt: bool = False, max_iter: int = 500) -> None:
        self.C = C
        self.include_prompt = include_prompt
        self.max_iter = max_iter
        self._check_params()
        self.vocabulary_: dict[str, int] | None = None

    def _check_params(self) -> None:
        self.C = check_float(self.C, "C", min=0.0, min_open=True)
        self.include_prompt = check_bool(self.include_prompt, "include_prompt")
        self.max_iter = check_int(self.max_iter, "max_iter", min=1)

    def _features(self, texts: list[str]) -> np.ndarray:
        X = np.zeros((len(texts), len(self.vocabulary_)), dtype=np.float64)
        for i, t in enumerate(texts):
            for w in _WORD.findall(t.lower()):
                j = self.vocabulary_.get(w)
                if j is not None:
                    X[i, j] += 1.0
        return X

    def fit(self, texts: list[str], labels) -> BagOfWordsToxicityClassifier:
        """Fit on `texts` (responses, or "prompt response" strings) with binary `labels` (1 = toxic)."""
        self._check_params()
        texts = check_texts(texts, "texts")
        y = check_array(labels, "labels", ndim=1, dtype=np.float64)
        if len(y) != len(texts):
            raise ValueError(f"labels must have one entry per text ({len(texts)}), got {len(y)}")
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("labels must be 0 or 1")
        if len(np.unique(y)) < 2:
            raise ValueError("labels must contain both classes (0 and 1)")
        words = sorted({w for t in texts for w in _WORD.findall(t.lower())})
        if not words:
            raise ValueError("texts contain no words")
        self.vocabulary_ = {w: i for i, w in enumerate(words)}
        X = self._features(texts)
        s = 2 * y - 1
        lam = 1.0 / self.C
        from scipy.optimize import minimize

        def loss(theta):
            w, b = theta[:-1], theta[-1]
            z = X @ w + b
            m = -s * z
            val = np.logaddexp(0, m).sum() + 0.5 * lam * w @ w
            g = -s / (1 + np.exp(-m))  # d/dz log(1 + exp(-s z))
            return val, np.concatenate([X.T @ g + lam * w, [g.sum()]])

        res = minimize(loss, np.zeros(X.shape[1] + 1), jac=True, method="L-BFGS-B",
                       options={"maxiter": self.max_iter})
        self.coef_, self.intercept_ = res.x[:-1].copy(), float(res.x[-1])
        return self

    def decision_function(self, prompts: list[str], responses: list[str]) -> np.ndarray:
        if self.vocabulary_ is None:
            raise ValueError("BagOfWordsToxicityClassifier is not fitted: call fit(texts, labels) first")
        self._check_params()
        prompts, responses = _pair(prompts, responses)
        texts = [p + " " + r for p, r in zip(prompts, responses)] if self.include_prompt else responses
        return self._features(texts) @ self.coef_ + self.intercept_

    def __call__(self, prompts: list[str], responses: list[str]) -> torch.Tensor:
        z = self.decision_function(prompts, responses)
        return torch.from_numpy(1.0 / (1.0 + np.exp(-z))).float()

    def log_prob(self, prompts: list[str], responses: list[str]) -> torch.Tensor:
        """log p(toxic) = -log(1 + exp(-z)), finite for any response."""
        z = self.decision_function(prompts, responses)
        return torch.from_numpy(-np.logaddexp(0, -z)).float()

    def predict_proba(self, texts: list[str]) -> np.ndarray:
        """p(toxic) of bare texts (responses), as a float array (n,)."""
        texts = check_texts(texts, "texts")
        return self([""] * len(texts), texts).double().numpy()


# ----------------------------------------------------------------------------------------------- Hugging Face
class HFToxicityClassifier:
    """A Hugging Face judge as a `HarmClassifier`.

    Args:
        model: an `AutoModelForSequenceClassification` (`kind="sequence"`) or a causal LM guard model such as
            Llama-Guard (`kind="guard"`).
        tokenizer: its tokenizer.
        kind: "sequence": softmax probability of `toxic_label`; "guard": the paper's judge, the probability of
            the word `unsafe_word` as the first token the guard writes after the chat-formatted conversation
            (normalised over the "safe"/"unsafe" first tokens).
        toxic_label: class index (or label name in `model.config.label2id`) of the toxic class.
        pair: for `kind="sequence"`, feed (prompt, response) as a text pair instead of the response alone.
        batch_size, max_length: batching and truncation (tokens).
    """

    def __init__(self, model, tokenizer, *, kind: str = "sequence", toxic_label: int | str = 1, pair: bool = False,
                 unsafe_word: str = "unsafe", safe_word: str = "safe", batch_size: int = 32,
                 max_length: int = 512) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.kind = check_choice(kind, "kind", ("sequence", "guard"))
        self.pair = check_bool(pair, "pair")
        self.batch_size = check_int(batch_size, "batch_size", min=1)
        self.max_length = check_int(max_length, "max_length", min=8)
        if self.kind == "sequence":
            if isinstance(toxic_label, str):
                l2i = getattr(getattr(model, "config", None), "label2id", None) or {}
                if toxic_label not in l2i:
                    raise ValueError(f"toxic_label {toxic_label!r} is not one of the model's labels {list(l2i)}")
                toxic_label = int(l2i[toxic_label])
            n_labels = int(getattr(getattr(model, "config", None), "num_labels", 2))
            self.toxic_label = check_int(toxic_label, "toxic_label", min=0, max=n_labels - 1)
        else:
            ids_u = tokenizer.encode(unsafe_word, add_special_tokens=False)
            ids_s = tokenizer.encode(safe_word, add_special_tokens=False)
            if not ids_u or not ids_s or ids_u[0] == ids_s[0]:
                raise ValueError("unsafe_word and safe_word must start with different tokens")
            self.unsafe_id, self.safe_id = ids_u[0], ids_s[0]

    @torch.no_grad()
    def _logits_pair(self, prompts: list[str], responses: list[str]) -> torch.Tensor:
        """(n, 2) logits of (safe, unsafe)."""
        dev = next(self.model.parameters()).device
        out = []
        was = self.model.training
        self.model.eval()
        tok = self.tokenizer
        for i in range(0, len(prompts), self.batch_size):
            P, R = prompts[i:i + self.batch_size], responses[i:i + self.batch_size]
            if self.kind == "sequence":
                enc = tok(list(P), list(R), truncation=True, max_length=self.max_length, padding=True,
                          return_tensors="pt") if self.pair else tok(list(R), truncation=True,
                                                                    max_length=self.max_length, padding=True,
                                                                    return_tensors="pt")
                logits = self.model(**{k: v.to(dev) for k, v in enc.items()}).logits.float()
                lp = torch.log_softmax(logits, -1)
                tox = lp[:, self.toxic_label]
                out.append(torch.stack([torch.log1p(-tox.exp().clamp_max(1 - 1e-7)), tox], -1))
            else:
                texts = [tok.apply_chat_template([{"role": "user", "content": p}, {"role": "assistant", "content": r}],
                                                 tokenize=False, add_generation_prompt=True) for p, r in zip(P, R)]
                old = tok.padding_side
                tok.padding_side = "left"
                try:
                    enc = tok(texts, return_tensors="pt", padding=True, truncation=True, max_length=self.max_length,
                              add_special_tokens=False)
                finally:
                    tok.padding_side = old
                logits = self.model(**{k: v.to(dev) for k, v in enc.items()}).logits[:, -1].float()
                out.append(logits[:, [self.safe_id, self.unsafe_id]])
        self.model.train(was)
        return torch.cat(out).cpu()

    def log_prob(self, prompts: list[str], responses: list[str]) -> torch.Tensor:
        prompts, responses = _pair(prompts, responses)
        return torch.log_softmax(self._logits_pair(prompts, responses), -1)[:, 1]

    def __call__(self, prompts: list[str], responses: list[str]) -> torch.Tensor:
        return self.log_prob(prompts, responses).exp()


# ----------------------------------------------------------------------------------------------- profanity check
class ProfanityCheckClassifier:
    """`alt-profanity-check` (offline TF-IDF + calibrated linear SVM) on the responses, as a `HarmClassifier`."""

    def __init__(self) -> None:
        try:
            from profanity_check import predict_prob
        except ImportError as e:  # pragma: no cover - the extra installs it
            raise ModuleNotFoundError("ProfanityCheckClassifier needs the optional package alt-profanity-check: "
                                      "pip install 'icml26[active_attacks]'") from e
        self._predict = predict_prob

    def __call__(self, prompts: list[str], responses: list[str]) -> torch.Tensor:
        _, responses = _pair(prompts, responses)
        return torch.as_tensor(np.asarray(self._predict(responses), dtype=np.float64)).float().clamp(0, 1)


__all__ = [
    "BagOfWordsToxicityClassifier",
    "HFToxicityClassifier",
    "HarmClassifier",
    "KeywordHarmOracle",
    "ProfanityCheckClassifier",
    "check_texts",
    "score",
]
