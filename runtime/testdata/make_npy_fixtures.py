#!/usr/bin/env python3
"""Writes the .npy fixtures runtime/npy_test.cc reads, using NumPy itself.

The values are small, hand-checkable patterns (see npy_test.cc), so the test
compares lathe's reader against NumPy's writer, not against lathe.

    python3 runtime/testdata/make_npy_fixtures.py runtime/testdata
"""
import os
import sys

import numpy as np

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)
base = np.array([[0, 1, 2], [3, 4, 5]])
for name, dtype in [("f16", np.float16), ("f32", np.float32),
                    ("f64", np.float64), ("i8", np.int8), ("i16", np.int16),
                    ("i32", np.int32), ("i64", np.int64), ("u8", np.uint8)]:
    a = (base * 3 - 4).astype(dtype) if name[0] in "if" else (base * 40).astype(dtype)
    np.save(os.path.join(out, f"{name}_c.npy"), a)
    np.save(os.path.join(out, f"{name}_f.npy"), np.asfortranarray(a))
np.save(os.path.join(out, "b8_c.npy"), base % 2 == 1)
np.save(os.path.join(out, "f16_values.npy"),
        np.array([0.1, 65504, 1e-7, -2.5], dtype=np.float16))
np.save(os.path.join(out, "f64_scalar.npy"), np.array(2.5))
np.save(os.path.join(out, "i64_scalar.npy"), np.array(-7, dtype=np.int64))
np.save(os.path.join(out, "f32_empty.npy"), np.zeros((0, 3), dtype=np.float32))
with open(os.path.join(out, "f32_v2.npy"), "wb") as f:
    np.lib.format.write_array(f, np.array([1.5, -2.0], dtype=np.float32),
                              version=(2, 0))
np.save(os.path.join(out, "f32_bigendian.npy"),
        np.array([1.0], dtype=">f4"))
np.save(os.path.join(out, "c64.npy"), np.array([1j], dtype=np.complex64))
