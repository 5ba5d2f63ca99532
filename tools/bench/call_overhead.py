#!/usr/bin/env python3
"""torch.compile's per-call host time on this CPU, beside lathe's
//runtime:compiled_function_benchmark (issue 12, benchmark a): a tiny
kernel, out = the sum of N f32[16] tensors, N = 2, 8, 16, called with the
same tensors every time (Dynamo's guards pass, the compiled code runs).
Eager PyTorch on the same function is printed for scale. A developer tool:

  pip install torch==2.15.0     # developer machine only
  OMP_NUM_THREADS=1 python3 tools/bench/call_overhead.py
"""

import statistics
import time

import torch


def make(n):
    def f(*xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out
    return f


def per_call_us(fn, args, calls=20000, repeats=5):
    for _ in range(200):
        fn(*args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def main():
    torch.set_grad_enabled(False)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'N':>3} {'torch.compile us':>17} {'eager us':>9}")
    for n in (2, 8, 16):
        args = [torch.randn(16) for _ in range(n)]
        compiled = torch.compile(make(n), dynamic=False)
        c = per_call_us(compiled, args)
        e = per_call_us(make(n), args)
        print(f"{n:>3} {c:>17.2f} {e:>9.2f}")


if __name__ == "__main__":
    main()
