#!/usr/bin/env python3
"""Per-call host time on this CPU, side by side (issues 12 and 29): a tiny
kernel, out = the sum of N f32[16] tensors, N = 2, 8, 16, called with the
same tensors every time, under no_grad:

  inductor       torch.compile(f) (Dynamo's guards, AOTAutograd's runtime
                 wrapper, Inductor's code)
  lathe backend  torch.compile(f, backend="lathe") (the same guards and
                 wrapper, lathe's compiled function)
  dynamo floor   torch.compile(f, backend=B) where B returns a Python
                 function that does nothing: Dynamo's own share, which no
                 backend can go below
  lathe.load     lathe.load(path)(*tensors): the artifact lathe.aot_compile
                 wrote for torch.export of f, without Dynamo
  eager          f itself

Rounds are interleaved (every variant once per round, 5 rounds) and medians
reported with their spread. A developer tool: it needs torch and the lathe
package (pip install ./tools/python, or PYTHONPATH at a built copy):

  OMP_NUM_THREADS=1 python3 tools/bench/call_overhead.py
"""

import os
import tempfile
import time

import torch
from torch.export import export

import lathe
from rounds import cells, interleaved, median_ratio


def make(n, variant="eager"):
    """The sum of n tensors, with a code object of its own per variant:
    Dynamo keeps its compiled entries per code object, so variants sharing
    one would each pay for checking the others' guards first."""
    def f(*xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out
    f.__code__ = f.__code__.replace(co_name=f"sum_{variant.replace(' ', '_')}")
    return f


class Sum(torch.nn.Module):
    def forward(self, *xs):
        return make(len(xs))(*xs)


def floor_backend(gm, example_inputs):
    def run(*args):
        return (args[0],)
    return run


def per_call_us(fn, args, calls=20000):
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - start) / calls * 1e6


def main():
    torch.set_grad_enabled(False)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; µs per call, "
          "median of 5 interleaved rounds (min-max)")
    names = ["inductor", "lathe backend", "dynamo floor", "lathe.load", "eager"]
    print(f"{'N':>3} " + " ".join(f"{n:>20}" for n in names) + f" {'inductor/lathe backend':>23}")
    with tempfile.TemporaryDirectory() as d:
        for n in (2, 8, 16):
            args = [torch.randn(16) for _ in range(n)]
            torch._dynamo.reset()
            path = os.path.join(d, f"sum{n}")
            lathe.aot_compile(export(Sum(), tuple(args)), path)
            fns = [
                torch.compile(make(n, "inductor"), dynamic=False),
                torch.compile(make(n, "lathe"), backend="lathe", dynamic=False),
                torch.compile(make(n, "floor"), backend=floor_backend, dynamic=False),
                lathe.load(path),
                make(n),
            ]
            want = make(n)(*args)
            for k, fn in enumerate(fns[:2] + fns[3:]):
                out = fn(*args)
                got = out[0] if isinstance(out, tuple) else out
                torch.testing.assert_close(got, want)
            for fn in fns:
                per_call_us(fn, args, 500)
            rounds = interleaved([lambda fn=fn: per_call_us(fn, args) for fn in fns])
            cols = cells(rounds, 2)
            ratio = median_ratio(rounds, 0, 1)
            print(f"{n:>3} " + " ".join(f"{c:>20}" for c in cols) + f" {ratio:>23.2f}")


if __name__ == "__main__":
    main()
