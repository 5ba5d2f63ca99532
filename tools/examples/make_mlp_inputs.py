#!/usr/bin/env python3
"""Writes the example inputs for tools/examples/mlp.txt (NumPy, seeded).

    python3 tools/examples/make_mlp_inputs.py tools/examples/mlp
"""
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(0)
np.save(os.path.join(out, "x.npy"), rng.standard_normal((4, 16)).astype(np.float32))
np.save(os.path.join(out, "w.npy"), rng.standard_normal((16, 32)).astype(np.float32) / 4)
