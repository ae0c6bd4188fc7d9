"""The paper's controls as baselines with the verbalizers' interface (spec section 4).

- `ZeroShotBaseline` - the key control: the verbalizer reads the source *text* instead of activations
  (`verbalize(source_texts, questions)`, the same call as the verbalizers). With the target model as `model` it is
  the target's self-report (M1 asked directly: does M1 know the fact?).
- `InversionBaseline` - train an inverter from the target's layer-l activations back to the input tokens, then
  answer with a zero-shot model on the reconstructed text: if that matches the verbalizer, "activations contain the
  input + the verbalizer's own knowledge" explains the verbalizer's success. Our inverter is a per-token softmax
  regression (a learned logit lens) on the activations of every token, a simplification of the paper's
  Llama-LoRA / vec2text-T5 inverters (stated in docs/verbalization.md).
- `LinearProbe` - multinomial logistic regression (numpy objective, scipy L-BFGS, L2), scikit-learn style
  `fit`/`predict`/`predict_proba`/`score`/`get_params`/`set_params`; the paper's probe on M1's activations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from icml26.common.generation import generate
from icml26.common.validation import check_array, check_bool, check_float, check_int
from icml26.verbalization.hooks import _check_layer, read_activations
from icml26.verbalization.models import pad_right
from icml26.verbalization.verbalize import (_batches, _check_model, _check_tokenizer, _pad_id, _prefix, _words,
                                            check_str_list, check_texts)

__all__ = ["ZeroShotBaseline", "InversionBaseline", "LinearProbe"]


class ZeroShotBaseline:
    """Input-only answering: `prompt_format.format(source=..., question=...)`, greedy decoding.

    Args:
        model: TinyLM or Hugging Face causal LM (the verbalizer M2 for the control, M1 for self-report).
        tokenizer: its tokenizer.
        prompt_format: how the source and question are joined (default "{source} {question}", the toy's eval
            format; the paper puts the source in a previous chat turn and asks "Complete the sentence: ...").
        max_new_tokens: greedy tokens generated.
        batch_size: prompts per generation batch.
    """

    def __init__(self, model, tokenizer, prompt_format: str = "{source} {question}", max_new_tokens: int = 20,
                 batch_size: int = 64) -> None:
        self.model, self.tokenizer, self.prompt_format = model, tokenizer, prompt_format
        self.max_new_tokens, self.batch_size = max_new_tokens, batch_size
        self._validate()

    def _validate(self) -> None:
        _check_model(self.model, "model")
        _check_tokenizer(self.tokenizer, "tokenizer")
        if not isinstance(self.prompt_format, str):
            raise TypeError(f"prompt_format must be a string, got {type(self.prompt_format).__name__}")
        for key in ("{source}", "{question}"):
            if key not in self.prompt_format:
                raise ValueError(f"prompt_format must contain {key}, got {self.prompt_format!r}")
        check_int(self.max_new_tokens, "max_new_tokens", min=1)
        check_int(self.batch_size, "batch_size", min=1)

    def prompt_ids(self, source: str, question: str) -> list[int]:
        return _prefix(self.tokenizer) + _words(self.tokenizer, self.prompt_format.format(source=source,
                                                                                          question=question))

    @torch.no_grad()
    def verbalize(self, source_texts: Sequence[str], questions: str | Sequence[str]) -> list[str]:
        """Greedy answers of `model` to each source text + question (no activations involved)."""
        self._validate()
        src, qs = check_texts(source_texts, questions)
        prompts = [self.prompt_ids(s, q) for s, q in zip(src, qs)]
        out: list[str] = []
        eos = getattr(self.tokenizer, "eos_token_id", None)
        for sl in _batches(len(prompts), self.batch_size):
            gen = generate(self.model, prompts[sl], self.max_new_tokens, temperature=0.0, eos_token_id=eos,
                           pad_token_id=_pad_id(self.tokenizer))
            out += [self.tokenizer.decode(g, skip_special_tokens=True).strip() for g in gen]
        return out


class InversionBaseline:
    """Invert the target's layer-`layer` activations to tokens with a per-token softmax regression.

    `fit(texts)` reads every non-special token's activation of each text and fits W (d -> vocab) by ridge
    regression onto the one-hot token (closed form); `invert(acts)` maps (B, P, d) or (P, d) activations to token-id lists; `invert_texts(source_texts)`
    reads and inverts in one call; `verbalize(source_texts, questions, answerer)` runs a zero-shot answerer
    (e.g. `ZeroShotBaseline(M2, ...)`) on the reconstructed texts - the paper's inversion control.

    Args:
        target: the model whose activations are inverted.
        tokenizer: its tokenizer.
        layer: the layer read (0..L).
        l2: ridge penalty (times the number of tokens) on standardised activations.
    """

    def __init__(self, target, tokenizer, layer: int = 1, *, l2: float = 1e-4) -> None:
        self.target, self.tokenizer, self.layer, self.l2 = target, tokenizer, layer, l2
        self._validate()
        self.weight_: torch.Tensor | None = None
        self.bias_: torch.Tensor | None = None

    def _validate(self) -> None:
        _check_model(self.target, "target")
        _check_tokenizer(self.tokenizer, "tokenizer")
        _check_layer(self.target, self.layer, "layer")
        check_float(self.l2, "l2", min=0.0)

    def _acts(self, texts: list[str]) -> tuple[list[torch.Tensor], list[list[int]]]:
        n_pre = len(_prefix(self.tokenizer))
        rows = [list(self.tokenizer.encode(t, add_special_tokens=True)) for t in texts]
        acts = []
        for sl in _batches(len(rows), 256):
            ids, mask = pad_right(rows[sl], _pad_id(self.tokenizer))
            h = read_activations(self.target, ids, mask.long(), self.layer, "all").cpu()
            acts += [h[i, n_pre:len(r)] for i, r in enumerate(rows[sl])]
        return acts, [r[n_pre:] for r in rows]

    def fit(self, texts: Sequence[str]) -> InversionBaseline:
        """Fit the inverter on the target's activations of `texts` (ridge regression onto one-hot tokens)."""
        self._validate()
        texts = check_str_list(texts, "texts")
        if not texts:
            raise ValueError("texts must hold at least one text")
        acts, toks = self._acts(texts)
        X = torch.cat(acts).double()
        y = torch.as_tensor([t for r in toks for t in r], dtype=torch.long)
        V = int(max(y.max().item() + 1, _vocab_size(self.tokenizer)))
        self._mu, self._sd = X.mean(0), X.std(0).clamp_min(1e-6)
        Xs = torch.cat([(X - self._mu) / self._sd, torch.ones(len(X), 1, dtype=X.dtype)], 1)
        Y = torch.zeros(len(y), V, dtype=X.dtype)
        Y[torch.arange(len(y)), y] = 1.0
        A = Xs.T @ Xs + max(float(self.l2), 1e-8) * len(X) * torch.eye(Xs.shape[1], dtype=X.dtype)
        Wb = torch.linalg.solve(A, Xs.T @ Y)
        self.weight_, self.bias_ = Wb[:-1].float(), Wb[-1].float()
        self._mu, self._sd = self._mu.float(), self._sd.float()
        self.train_accuracy_ = float(((Xs.float() @ Wb.float()).argmax(1) == y).float().mean())
        return self

    def invert(self, acts) -> list[list[int]]:
        """Token ids recovered from activations (P, d) or (B, P, d) (a list of per-text (P_i, d) also works)."""
        if self.weight_ is None:
            raise ValueError("InversionBaseline is not fitted: call fit(texts) first")
        d = self.weight_.shape[0]
        if isinstance(acts, (list, tuple)) and acts and isinstance(acts[0], torch.Tensor):
            return [self.invert(a)[0] for a in acts]
        a = torch.as_tensor(check_array(acts, "acts", ndim=(2, 3)), dtype=torch.float32)
        if a.shape[-1] != d:
            raise ValueError(f"acts must have width {d} (the target's hidden size), got {a.shape[-1]}")
        if a.dim() == 2:
            a = a[None]
        logits = ((a - self._mu) / self._sd) @ self.weight_ + self.bias_
        return logits.argmax(-1).tolist()

    def invert_texts(self, source_texts: Sequence[str]) -> list[str]:
        """Read each source text's activations from the target and return the reconstructed text."""
        src = check_str_list(source_texts, "source_texts")
        if not src:
            return []
        acts, _ = self._acts(src)
        return [self.tokenizer.decode(ids, skip_special_tokens=True) for ids in self.invert(acts)]

    def verbalize(self, source_texts: Sequence[str], questions: str | Sequence[str], answerer) -> list[str]:
        """Inversion + zero-shot: `answerer.verbalize(reconstructed texts, questions)`."""
        src, qs = check_texts(source_texts, questions)
        if not callable(getattr(answerer, "verbalize", None)):
            raise TypeError(f"answerer must have a verbalize(source_texts, questions) method, got "
                            f"{type(answerer).__name__}")
        rec = [t if t.strip() else "?" for t in self.invert_texts(src)]
        return answerer.verbalize(rec, qs)


def _vocab_size(tok) -> int:
    for attr in ("vocab_size",):
        v = getattr(tok, attr, None)
        if isinstance(v, int):
            return max(v, len(tok) if hasattr(tok, "__len__") else v)
    return len(tok)


class LinearProbe:
    """Multinomial logistic regression: minimise mean cross-entropy + `l2` * ||W||^2 with L-BFGS (numpy, float64).

    Args:
        l2: ridge penalty on the weights (default 1e-2, on standardised features).
        max_iter: L-BFGS iterations (default 200).
        standardize: z-score the features with the training mean/std (default True).
    `fit(X (n, d), y (n,))` accepts any hashable labels (`classes_` holds them, sorted); `predict` returns labels,
    `predict_proba` (n, n_classes), `score` the accuracy.
    """

    def __init__(self, l2: float = 1e-2, max_iter: int = 200, standardize: bool = True) -> None:
        self.l2, self.max_iter, self.standardize = l2, max_iter, standardize
        self._validate()

    def _validate(self) -> None:
        check_float(self.l2, "l2", min=0.0)
        check_int(self.max_iter, "max_iter", min=1)
        check_bool(self.standardize, "standardize")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"l2": self.l2, "max_iter": self.max_iter, "standardize": self.standardize}

    def set_params(self, **params: Any) -> LinearProbe:
        for k, v in params.items():
            if k not in self.get_params():
                raise ValueError(f"unknown parameter {k!r} for LinearProbe")
            setattr(self, k, v)
        return self

    @staticmethod
    def _labels(y, n: int) -> np.ndarray:
        if isinstance(y, str) or not hasattr(y, "__iter__"):
            raise TypeError(f"y must be a sequence of labels, got {type(y).__name__}")
        arr = np.asarray(list(y) if not hasattr(y, "shape") else (y.detach().cpu().numpy() if hasattr(y, "detach")
                                                                  else y))
        if arr.ndim != 1:
            raise ValueError(f"y must be 1-dimensional, got shape {arr.shape}")
        if arr.shape[0] != n:
            raise ValueError(f"X has {n} rows but y has {arr.shape[0]} labels")
        if arr.dtype.kind == "f":
            if not np.all(np.isfinite(arr)):
                raise ValueError("y must not contain NaN/inf")
        if arr.dtype.kind == "O":
            for v in arr:
                if v is None or (isinstance(v, float) and not np.isfinite(v)):
                    raise ValueError(f"y holds an invalid label {v!r}")
        return arr

    def fit(self, X, y) -> LinearProbe:
        self._validate()
        Xa = check_array(X, "X", ndim=2)
        ya = self._labels(y, Xa.shape[0])
        self.classes_, yi = np.unique(ya, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"y must hold at least 2 classes, got {len(self.classes_)}")
        self.n_features_in_ = Xa.shape[1]
        self.mean_ = Xa.mean(0) if self.standardize else np.zeros(Xa.shape[1])
        self.scale_ = np.maximum(Xa.std(0), 1e-8) if self.standardize else np.ones(Xa.shape[1])
        Z = (Xa - self.mean_) / self.scale_
        n, d = Z.shape
        K = len(self.classes_)
        Y = np.zeros((n, K))
        Y[np.arange(n), yi] = 1.0
        l2 = float(self.l2)

        def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
            W, b = theta[:d * K].reshape(d, K), theta[d * K:]
            logits = Z @ W + b
            logits -= logits.max(1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(1, keepdims=True)
            loss = -np.mean(np.log(p[np.arange(n), yi] + 1e-300)) + l2 * np.sum(W * W)
            g = (p - Y) / n
            return loss, np.concatenate([(Z.T @ g + 2 * l2 * W).ravel(), g.sum(0)])

        # one BLAS thread: the problem is tiny, and a multi-threaded BLAS on a busy machine made each
        # L-BFGS step ~20x slower (measured: 7.6 s vs 0.3 s for a 4-fold probe of 192 x 16 features)
        with threadpool_limits(limits=1):
            res = minimize(objective, np.zeros(d * K + K), jac=True, method="L-BFGS-B",
                           options={"maxiter": int(self.max_iter), "gtol": 1e-9})
        W, b = res.x[:d * K].reshape(d, K), res.x[d * K:]
        self.n_iter_ = int(res.nit)
        self.coef_ = W.T.copy()  # (K, d), scikit-learn layout
        self.intercept_ = b.copy()
        return self
    def decision_function(self, X) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise ValueError("LinearProbe is not fitted: call fit(X, y) first")
        Xa = check_array(X, "X", ndim=2)
        if Xa.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Xa.shape[1]} features, the probe was fitted on {self.n_features_in_}")
        return ((Xa - self.mean_) / self.scale_) @ self.coef_.T + self.intercept_

    def predict_proba(self, X) -> np.ndarray:
        z = self.decision_function(X)
        z = z - z.max(1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        z = self.decision_function(X)
        return self.classes_[np.argmax(z, axis=1)]

    def score(self, X, y) -> float:
        pred = self.predict(X)
        ya = self._labels(y, pred.shape[0])
        return float(np.mean(pred == ya))
