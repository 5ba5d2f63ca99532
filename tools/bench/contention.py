#!/usr/bin/env python3
"""The model rows with a competing busy process (issue 30, item 6): how much
each of eager PyTorch, torch.compile (Inductor) and torch.compile with
backend="lathe" slows when another process keeps both of this machine's
cores busy. A developer tool; it needs torch and the lathe package:

  pip install torch==2.15.0 numpy && pip install ./tools/python
  OMP_NUM_THREADS=2 python3 tools/bench/contention.py
  OMP_NUM_THREADS=2 python3 tools/bench/contention.py --only mlp --rounds 3

The competitor is --busy processes (default 2, one thread each: to the
kernel's scheduler the same as one process with two threads), each a
tight floating-point loop that never sleeps. Every variant is compiled
first, then timed in interleaved rounds: each round times every variant
alone, then starts the competitor, times every variant again and stops it.
A cell is the median over rounds (min-max) in ms; "slowdown" is the median
over rounds of busy / alone for that variant, the number the issue compares
("no row slows more than torch.compile's does").
"""

import argparse
import multiprocessing
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_anchor  # noqa: E402  (the programs, shapes and inputs)

ROWS = ["softmax_4096x2560", "mlp_gelu_b64", "transformer_block_b8_s128_d512",
        "bert_layer_b8_s128", "bert_layer_bf16_b8_s128", "small_cnn_b32_64x64",
        "resnet18_b8_112x112", "sum_var_mean_4096x4096"]


def spin():
    """A busy thread that never blocks: a dependent float chain."""
    a = 1.0
    while True:
        for _ in range(100000):
            a = a * 0.9999999 + 1e-9


class Competitor:
    """`n` busy processes while the `with` block runs."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        ctx = multiprocessing.get_context("spawn")
        self.procs = [ctx.Process(target=spin, daemon=True) for _ in range(self.n)]
        for p in self.procs:
            p.start()
        time.sleep(0.3)  # running before the first timed call
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.join()


def variants(fn, names):
    out = []
    for v in names:
        torch._dynamo.reset()
        if v == "eager":
            out.append((v, fn))
        else:
            out.append((v, torch.compile(fn, backend=v, fullgraph=True)))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--only", default="", help="rows whose name contains this")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeats", type=int, default=3, help="timed batches per cell")
    p.add_argument("--min-time", type=float, default=0.3)
    p.add_argument("--busy", type=int, default=2, help="competing busy processes")
    p.add_argument("--variants", default="eager,inductor,lathe")
    a = p.parse_args()
    names = a.variants.split(",")
    if "lathe" in names:
        import lathe  # noqa: F401  (registers the backend)
    torch.set_grad_enabled(False)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {a.busy} busy "
          f"processes; ms per call, median of {a.rounds} interleaved rounds (min-max)")
    print(f"{'row':32} {'variant':9} {'alone':>22} {'busy':>22} {'slowdown':>9}")
    for row in [r for r in ROWS if a.only in r]:
        fn = torch_anchor.BENCH[row][0]
        args = torch_anchor.make_inputs(row)
        vs = variants(fn, names)
        for _, f in vs:
            f(*args)  # compiles
        alone = [[] for _ in vs]
        busy = [[] for _ in vs]
        for _ in range(a.rounds):
            for k, (_, f) in enumerate(vs):
                alone[k].append(torch_anchor.time_call(f, args, a.repeats, a.min_time) * 1e3)
            with Competitor(a.busy):
                for k, (_, f) in enumerate(vs):
                    busy[k].append(torch_anchor.time_call(f, args, a.repeats, a.min_time) * 1e3)
        for k, (v, _) in enumerate(vs):
            cell = [f"{statistics.median(x):8.2f} ({min(x):.2f}-{max(x):.2f})" for x in (alone[k], busy[k])]
            slow = statistics.median(b / s for b, s in zip(busy[k], alone[k]))
            print(f"{row:32} {v:9} {cell[0]:>22} {cell[1]:>22} {slow:9.2f}", flush=True)


if __name__ == "__main__":
    main()
