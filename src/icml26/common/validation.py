"""Input checks shared by every paper's public API: one clear `ValueError`/`TypeError` naming the argument.

The rules the project holds to (../CONVENTIONS.md): a list is read exactly like the equivalent array; a size
must be an integer (an integral float such as `3.0` is accepted, `3.7` is rejected, never truncated); NaN/inf
are rejected unless the caller allows them; bools are not numbers. Call these in `fit`/`run`/`__call__` as well
as in `__init__`, since scikit-learn's `set_params` bypasses the constructor.

    >>> check_int(3.0, "n_steps", min=1)
    3
    >>> check_array([[1, 2], [3, 4]], "X", ndim=2).shape
    (2, 2)
"""

from __future__ import annotations

import difflib

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = ["check_int", "check_float", "check_bool", "check_choice", "check_array", "check_tensor",
           "check_seed", "check_probability", "require_keys"]


def _shape_text(shape: Sequence[int | None]) -> str:
    """A wanted shape as Python prints tuples, * for any length: (50,), (*, 3)."""
    items = ["*" if s is None else str(s) for s in shape]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_int(value: Any, name: str, *, min: int | None = None, max: int | None = None) -> int:
    """`value` as a Python int in [min, max]. Integral floats (3.0) pass; 3.7, bools, strings and NaN do not."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got the bool {value!r}")
    if isinstance(value, numbers.Integral):
        out = int(value)
    elif isinstance(value, numbers.Real):
        f = float(value)
        if not math.isfinite(f) or not f.is_integer():
            raise ValueError(f"{name} must be an integer, got {_describe(value)} (not truncated)")
        out = int(f)
    elif hasattr(value, "ndim") and getattr(value, "ndim") == 0 and hasattr(value, "item"):  # 0-d array/tensor
        return check_int(value.item(), name, min=min, max=max)
    else:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {_describe(value)}")
    if min is not None and out < min:
        raise ValueError(f"{name} must be >= {min}, got {out}")
    if max is not None and out > max:
        raise ValueError(f"{name} must be <= {max}, got {out}")
    return out


def check_float(value: Any, name: str, *, min: float | None = None, max: float | None = None,
                min_open: bool = False, max_open: bool = False, allow_inf: bool = False) -> float:
    """`value` as a finite Python float in the interval given (open ends with `min_open`/`max_open`)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a number, got the bool {value!r}")
    if hasattr(value, "ndim") and getattr(value, "ndim") == 0 and hasattr(value, "item"):
        value = value.item()
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {_describe(value)}")
    out = float(value)
    if math.isnan(out) or (math.isinf(out) and not allow_inf):
        raise ValueError(f"{name} must be finite, got {out}")
    if min is not None and (out < min or (min_open and out == min)):
        raise ValueError(f"{name} must be {'>' if min_open else '>='} {min}, got {out}")
    if max is not None and (out > max or (max_open and out == max)):
        raise ValueError(f"{name} must be {'<' if max_open else '<='} {max}, got {out}")
    return out


def check_probability(value: Any, name: str, *, open_interval: bool = False) -> float:
    """A float in [0, 1] (or (0, 1) with `open_interval=True`)."""
    return check_float(value, name, min=0.0, max=1.0, min_open=open_interval, max_open=open_interval)


def check_bool(value: Any, name: str) -> bool:
    """A real bool (numpy bools too); 0/1 and strings such as "false" are rejected rather than guessed."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {type(value).__name__} {_describe(value)}")


def check_choice(value: Any, name: str, options: Iterable[Any]) -> Any:
    """`value` if it is one of `options`, else a `ValueError` listing them."""
    options = tuple(options)
    try:
        ok = value in options
    except TypeError:  # unhashable / incomparable
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {_describe(value)}")
    return value


def check_seed(seed: Any, name: str = "seed") -> int:
    """A non-negative integer seed (None is refused: reproductions are seeded explicitly)."""
    if seed is None:
        raise TypeError(f"{name} must be a non-negative integer, got None")
    return check_int(seed, name, min=0)


def check_array(x: Any, name: str, *, ndim: int | Sequence[int] | None = None,
                shape: Sequence[int | None] | None = None, dtype: Any = np.float64, finite: bool = True,
                min_size: int = 1, copy: bool = False) -> np.ndarray:
    """`x` (array, list, tuple or tensor) as an ndarray of `dtype`, checked for dimensions, shape and NaN/inf.

    `shape` entries of None match any length. `min_size` is the least number of elements (0 allows empty).
    Object, string and complex inputs raise `TypeError` instead of numpy's own error.
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be array-like of numbers, got {type(x).__name__} {_describe(x)}")
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # torch tensor
        x = x.detach().cpu().numpy()
    try:
        raw = np.asarray(x)
    except ValueError as e:  # ragged nested lists
        raise ValueError(f"{name} must be a rectangular array, got a ragged sequence ({e})") from None
    if raw.dtype.kind in "OUSVc" or raw.dtype.kind == "M":
        raise TypeError(f"{name} must hold real numbers, got dtype {raw.dtype}")
    if dtype is not None:
        if np.dtype(dtype).kind in "iu" and raw.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                if not np.all(np.isfinite(raw)) or not np.all(raw == np.round(raw)):
                    raise ValueError(f"{name} must hold integers, got non-integer values (not truncated)")
        if np.dtype(dtype).kind in "iu" and raw.dtype.kind == "b":
            raise TypeError(f"{name} must hold integers, got booleans")
        arr = raw.astype(dtype, copy=copy)
    else:
        arr = raw.copy() if copy else raw
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(map(str, allowed))
            raise ValueError(f"{name} must be {want}-dimensional, got shape {tuple(arr.shape)}")
    if shape is not None:
        if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
            want = _shape_text(shape)
            raise ValueError(f"{name} must have shape {want}, got {tuple(arr.shape)}")
    if arr.size < min_size:
        raise ValueError(f"{name} must have at least {min_size} element(s), got shape {tuple(arr.shape)}")
    if finite and arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; it has {int(np.sum(~np.isfinite(arr)))} NaN/inf value(s)")
    return arr


def check_tensor(x: Any, name: str, *, ndim: int | Sequence[int] | None = None,
                 shape: Sequence[int | None] | None = None, dtype: Any = None, finite: bool = True,
                 floating: bool = True, min_size: int = 1):
    """`x` (tensor, array or list) as a torch tensor; lists become tensors exactly as arrays would.

    With `floating=True` integer/bool inputs are converted to the default float dtype (or `dtype`) instead of
    failing later inside a float-only op; the device of a tensor input is kept.
    """
    import torch

    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be a tensor or array-like of numbers, got {type(x).__name__} {_describe(x)}")
    if not isinstance(x, torch.Tensor):
        x = torch.from_numpy(check_array(x, name, dtype=None, finite=False, min_size=0))
    if x.is_complex():
        raise TypeError(f"{name} must be real, got dtype {x.dtype}")
    if dtype is not None:
        x = x.to(dtype)
    elif floating and not x.is_floating_point():
        x = x.to(torch.get_default_dtype())
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if x.dim() not in allowed:
            want = " or ".join(map(str, allowed))
            raise ValueError(f"{name} must be {want}-dimensional, got shape {tuple(x.shape)}")
    if shape is not None:
        if x.dim() != len(shape) or any(s is not None and s != a for s, a in zip(shape, x.shape)):
            want = _shape_text(shape)
            raise ValueError(f"{name} must have shape {want}, got {tuple(x.shape)}")
    if x.numel() < min_size:
        raise ValueError(f"{name} must have at least {min_size} element(s), got shape {tuple(x.shape)}")
    if finite and x.is_floating_point() and not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must be finite; it has {int((~torch.isfinite(x)).sum())} NaN/inf value(s)")
    return x


def require_keys(config: dict[str, Any], keys: Iterable[str], name: str = "config", *,
                 optional: Iterable[str] = ("scale",), allow_unknown: bool = False) -> None:
    """Raise a `ValueError` naming every key of `keys` missing from `config`, and (unless `allow_unknown`) every
    key of `config` that is neither in `keys` nor in `optional`: a typo such as ``ipc`` for ``ipcs`` fails before
    any compute instead of being ignored. "scale" (set by the CLI) is optional by default."""
    if not isinstance(config, dict):
        raise TypeError(f"{name} must be a dict, got {type(config).__name__}")
    keys = list(keys)
    missing = [k for k in keys if k not in config]
    if missing:
        raise ValueError(f"{name} is missing {', '.join(map(repr, missing))}")
    if not allow_unknown:
        known = set(keys) | set(optional)
        unknown = [k for k in config if k not in known]
        if unknown:
            close = {k: difflib.get_close_matches(str(k), [str(x) for x in known], n=1) for k in unknown}
            hints = "; ".join(f"{k!r}" + (f" (did you mean {close[k][0]!r}?)" if close[k] else "") for k in unknown)
            raise ValueError(f"{name} has unknown key(s) {hints}; known keys: {', '.join(sorted(map(str, known)))}")
