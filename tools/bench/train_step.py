#!/usr/bin/env python3
"""Training step time on this CPU, side by side (issue 29): one SGD step
(forward, loss, backward, optimizer step) of the pre-norm transformer block,
the small CNN with batch norm and the ResNet-18-shaped network (width 8,
32x32) from tools/python/tests/models.py, eager
against torch.compile with Inductor and with backend="lathe". Compiles are
warmed up first; rounds are interleaved (each variant once per round, 5
rounds), medians reported with their spread. A developer tool:

  OMP_NUM_THREADS=2 python3 tools/bench/train_step.py
"""

import copy
import os
import sys
import time

import torch

import lathe  # noqa: F401  (registers the backend)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests"))
from models import MODELS  # noqa: E402
from rounds import cells, interleaved, median_ratio  # noqa: E402

BATCH = {"transformer_block": 32, "cnn": 32, "resnet18": 8}


def step_ms(model, opt, x, loss_fn, steps=20):
    start = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss_fn(model(*x), *x).backward()
        opt.step()
    return (time.perf_counter() - start) / steps * 1e3


def main():
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; ms per training step, "
          "median of 5 interleaved rounds (min-max)")
    names = ["eager", "inductor", "lathe"]
    print(f"{'model':>18} {'batch':>5} " + " ".join(f"{n:>22}" for n in names) + f" {'inductor/lathe':>15}")
    for name, batch in BATCH.items():
        torch.manual_seed(0)
        base, inputs, loss_fn = MODELS[name]()
        x = inputs(batch)
        variants = []
        for backend in (None, "inductor", "lathe"):
            torch._dynamo.reset()
            m = copy.deepcopy(base)
            c = m if backend is None else torch.compile(m, backend=backend)
            opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
            step_ms(c, opt, x, loss_fn, steps=3)  # compiles
            variants.append((c, opt))
        rounds = interleaved([lambda c=c, opt=opt: step_ms(c, opt, x, loss_fn) for c, opt in variants])
        cols = cells(rounds, 3)
        ratio = median_ratio(rounds, 1, 2)
        print(f"{name:>18} {batch:>5} " + " ".join(f"{c:>22}" for c in cols) + f" {ratio:>15.2f}")


if __name__ == "__main__":
    main()
