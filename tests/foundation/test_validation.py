"""icml26.common.validation: the shared argument checks (lists like arrays, no truncation, NaN refused)."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.common.validation import (check_array, check_bool, check_choice, check_float, check_int, check_seed,
                                      check_tensor, require_keys)


def test_check_int_accepts_integral_and_rejects_truncation():
    assert check_int(3, "n") == 3 and check_int(3.0, "n") == 3 and check_int(np.int64(4), "n") == 4
    assert check_int(torch.tensor(5), "n") == 5
    with pytest.raises(ValueError, match="n must be an integer.*not truncated"):
        check_int(3.7, "n")
    with pytest.raises(TypeError, match="n must be an integer"):
        check_int(True, "n")
    with pytest.raises(TypeError, match="n must be an integer"):
        check_int("3", "n")
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        check_int(0, "n", min=1)
    with pytest.raises(ValueError, match="n must be an integer"):
        check_int(float("nan"), "n")


def test_check_float_bounds_and_finiteness():
    assert check_float(0.5, "lr", min=0, max=1) == 0.5
    with pytest.raises(ValueError, match="lr must be > 0"):
        check_float(0.0, "lr", min=0, min_open=True)
    with pytest.raises(ValueError, match="lr must be finite"):
        check_float(math.inf, "lr")
    with pytest.raises(TypeError, match="lr must be a number"):
        check_float("fast", "lr")
    assert check_float(math.inf, "lr", allow_inf=True) == math.inf


def test_list_is_read_exactly_like_the_array():
    data = [[1.0, 2.0], [3.0, 4.0]]
    np.testing.assert_array_equal(check_array(data, "X", ndim=2), check_array(np.array(data), "X", ndim=2))
    with pytest.raises(ValueError, match=r"X must be 2-dimensional, got shape \(4,\)"):
        check_array([30, 45, 60, 80], "X", ndim=2)
    with pytest.raises(ValueError, match="X must be finite"):
        check_array([1.0, np.nan], "X")
    with pytest.raises(ValueError, match="rectangular"):
        check_array([[1, 2], [3]], "X")
    with pytest.raises(TypeError, match="X must"):
        check_array("abc", "X")
    with pytest.raises(ValueError, match="integers.*not truncated"):
        check_array([3.7], "lens", dtype=np.int64)
    np.testing.assert_array_equal(check_array([3.0, 4.0], "lens", dtype=np.int64), [3, 4])
    with pytest.raises(ValueError, match=r"shape \(\*, 3\)"):
        check_array(np.zeros((2, 2)), "X", shape=(None, 3))
    with pytest.raises(ValueError, match="at least 1"):
        check_array([], "X")


def test_check_tensor_converts_ints_and_keeps_lists_equal():
    t = check_tensor([[1, 2]], "q", ndim=2)
    assert t.dtype == torch.get_default_dtype() and t.shape == (1, 2)
    assert torch.equal(check_tensor(np.array([[1, 2]]), "q"), t)
    with pytest.raises(ValueError, match="q must be finite"):
        check_tensor(torch.tensor([float("nan")]), "q")
    with pytest.raises(TypeError, match="q must be a tensor"):
        check_tensor("pope", "q")


def test_misc_checks():
    assert check_bool(np.bool_(True), "flag") is True
    with pytest.raises(TypeError, match="flag must be True or False"):
        check_bool("false", "flag")
    assert check_choice("a", "mode", ["a", "b"]) == "a"
    with pytest.raises(ValueError, match="mode must be one of 'a', 'b'"):
        check_choice([1], "mode", ["a", "b"])
    with pytest.raises(TypeError, match="seed"):
        check_seed(None)
    with pytest.raises(ValueError, match="config is missing 'T'"):
        require_keys({"a": 1}, ["a", "T"])


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.text(max_size=3),
                 st.none()))
def test_check_int_never_truncates(value):
    try:
        out = check_int(value, "n")
    except (ValueError, TypeError) as e:
        assert "n must" in str(e)
    else:
        assert isinstance(out, int) and out == value and not isinstance(value, bool)
