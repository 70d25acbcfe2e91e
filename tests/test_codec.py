"""The records' float codec: NaN and infinities round-trip through None."""
import json

import numpy as np

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
