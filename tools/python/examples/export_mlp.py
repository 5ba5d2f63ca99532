#!/usr/bin/env python3
"""Exports a small MLP with torch.export (a dynamic batch) and compiles it
into a lathe artifact for the consumer workspace's test, which calls it from
C++ with lathe's runtime alone:

    python3 tools/python/examples/export_mlp.py OUT

writes the artifact to OUT (its weights inside) and, to OUT-io/, an example
input x.npy (a batch of 5) with eager PyTorch's result expected.npy.
"""

import os
import sys

import numpy as np
import torch
from torch.export import Dim, export

import lathe


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: export_mlp.py OUT")
    out = sys.argv[1]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).eval()
    ep = export(model, (torch.randn(8, 16),), dynamic_shapes=({0: Dim("batch", min=2, max=1024)},))
    lathe.aot_compile(ep, out)
    x = torch.randn(5, 16)
    with torch.no_grad():
        y = model(x)
    io = out + "-io"
    os.makedirs(io, exist_ok=True)
    np.save(os.path.join(io, "x.npy"), x.numpy())
    np.save(os.path.join(io, "expected.npy"), y.numpy())
    print(f"export_mlp: wrote {out} and {io}")


if __name__ == "__main__":
    main()
