"""The records' float codec: NaN and infinities round-trip through None; long curves are kept at
the times `curve_times` picks."""
import json

import numpy as np
import pytest

from sst_core.store import codec
from sst_core.store.codec import decode_floats, encode_float, encode_floats


def test_encode_then_decode_keeps_finite_values_and_nan():
    x = np.array([[1.0, np.nan], [np.inf, -2.5e-7]])
    enc = encode_floats(x)
    assert enc == [1.0, None, None, -2.5e-7]
    json.dumps(enc, allow_nan=False)  # strict JSON
    back = decode_floats(enc)
    assert back.dtype == np.float64 and back.shape == (4,)
    assert np.isnan(back[1]) and np.isnan(back[2]) and back[3] == -2.5e-7


def test_significant_digits_and_single_values():
    assert encode_floats([3.14159265], digits=3) == [3.14]
    assert encode_float(None) is None and encode_float(float("nan")) is None
    assert encode_float(np.float32(0.5)) == 0.5 and isinstance(encode_float(np.int64(2)), float)
    assert decode_floats([]).shape == (0,)


@pytest.mark.parametrize("L", [1, 31, 32, 33, 63, 80, 1000, 4096])
def test_curve_times_dense_early_log_spaced_later(L):
    t = codec.curve_times(L)
    assert t.dtype.kind == "i" and t[0] == 1 and t[-1] == L and np.all(np.diff(t) > 0)
    assert np.array_equal(t[t <= codec.CURVE_DENSE], np.arange(1, min(L, codec.CURVE_DENSE) + 1))
    for r in list(range(codec.CURVE_ROUND, L + 1, codec.CURVE_ROUND)) + [60]:
        assert r > L or r in t
    assert t.size <= codec.CURVE_DENSE + codec.CURVE_LOG_POINTS + L // codec.CURVE_ROUND + 2
    if L > 200:  # after the dense part the ratio of neighbours stays near the log step
        late = t[t >= codec.CURVE_DENSE]
        step = np.log(L / codec.CURVE_DENSE) / (codec.CURVE_LOG_POINTS - 1)
        assert np.max(np.log(late[1:] / late[:-1])) < 1.5 * step


def test_curve_times_rejects_bad_lengths():
    for bad in (0, -3, 2.5, True, "10"):
        with pytest.raises(ValueError, match="integer >= 1"):
            codec.curve_times(bad)


def test_encode_curve_then_read_back_at_its_times():
    x = np.exp(-np.arange(1, 1001) / 300.0)
    x[499] = np.nan
    enc = codec.encode_curve(x)
    t, y = codec.read_curve(enc, codec.curve_times(1000).tolist())
    assert len(enc) == t.size == codec.curve_times(1000).size < 1000 // 5
    assert np.allclose(y[t != 500], x[t[t != 500] - 1], rtol=1e-4)  # 5 significant digits
    assert np.isnan(y[t == 500]).all()
    # a record written before the grid stored every t
    t_old, y_old = codec.read_curve(encode_floats(x[:50]))
    assert np.array_equal(t_old, np.arange(1, 51)) and y_old.size == 50
    assert codec.stored_curve({"q": enc, "curve_t": t.tolist()}, "q")[0].size == t.size
    # given times; out of range and mismatched lengths are errors
    assert codec.encode_curve(x, [1, 1000]) == [encode_floats(x[:1])[0], encode_floats(x[-1:])[0]]
    with pytest.raises(ValueError, match="1..1000"):
        codec.encode_curve(x, [0, 5])
    with pytest.raises(ValueError, match="3 values with 2 times"):
        codec.read_curve([1.0, 2.0, 3.0], [1, 2])


def test_curve_value_exact_at_stored_times_log_interpolated_between():
    t = np.array([1, 10, 100])
    y = np.array([1.0, 10.0, 100.0])  # y = t: a straight line in log-log
    assert codec.curve_value(t, y, 10) == 10.0
    assert codec.curve_value(t, y, 50) == pytest.approx(50.0)
    assert np.isnan(codec.curve_value(t, y, 101)) and np.isnan(codec.curve_value(t, y, 0.5))
    z = np.array([0.0, 1.0, 2.0])  # a zero: linear in y
    assert codec.curve_value(t, z, np.sqrt(10)) == pytest.approx(0.5)
