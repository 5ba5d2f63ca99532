#!/usr/bin/env python3
"""Times PyTorch's SymPy index expressions on the cases of
//symbolic:index_expr_benchmark, for the ratio in the symbolic issue.

The same 10k offsets as the C++ benchmark (a contiguous [A, B, C, D] tensor
permuted to [A, C, B, D] and reshaped to [A*C, B*D]; each offset over its own
index symbol and size tuple), in the same three cases:

  cold      build them over index symbols no earlier pass used;
  warm      build the same ones again (whatever SymPy's caches keep hits);
  simplify  PyTorch's simplification with ranges on them, which rewrites each
            (checked once before timing): Inductor's
            SizeVarAllocator._simplify_with_ranges, without the result cache
            in front of it, as lathe's Simplify has none.

With PyTorch installed the expressions use its FloorDiv and ModularIndexing
(torch.utils._sympy.functions), the ones Inductor builds. Without it, SymPy's
floor and Mod on integer symbols stand in for the two build cases and there is
no simplify case. Neither is a build dependency: this script only reports. It
reports CPU time per expression (time.process_time, as the C++ benchmark
reports CPU time); a case that would run past --budget seconds times a
fraction of the 10k and scales.

    python3 tools/bench/sympy_index_exprs.py [--count N] [--budget S]
"""

import argparse
import sys
import time

try:
    import sympy
except ImportError:
    print("sympy is not installed; nothing to compare", file=sys.stderr)
    sys.exit(0)

try:
    from torch._inductor.sizevars import SizeVarAllocator
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing
except ImportError:
    SizeVarAllocator = None

    def FloorDiv(a, b):
        return sympy.floor(a / b)

    def ModularIndexing(a, b, c):
        return sympy.Mod(FloorDiv(a, b), c)


def sizes_of(k):
    """The k-th size tuple (a, b, c, d); (b, c, d) differs for every k."""
    return 2 + k % 5, 3 + k % 8, 4 + (k // 8) % 25, 8 * (1 + k // 200)


def offset(x, a, b, c, d):
    """The input offset output element x reads (index_expr_benchmark.cc)."""
    row = FloorDiv(x, b * d)
    col = ModularIndexing(x, 1, b * d)
    return (FloorDiv(row, c) * (b * c * d) + FloorDiv(col, d) * (c * d) +
            ModularIndexing(row, 1, c) * d + ModularIndexing(col, 1, d))


def indices(prefix, count):
    return [sympy.Symbol(f"{prefix}{k}", integer=True, nonnegative=True)
            for k in range(count)]


def timed(name, count, budget, work):
    """Runs work(k) for k < count, or as many as fit in budget CPU seconds."""
    start = time.process_time()
    done = 0
    for k in range(count):
        work(k)
        done += 1
        if time.process_time() - start > budget:
            break
    elapsed = time.process_time() - start
    print(f"  {name:9} {done:6} expressions in {elapsed:7.2f} s CPU = "
          f"{elapsed / done * 1e6:8.1f} us per expression")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--budget", type=float, default=60,
                        help="CPU seconds per case before it is scaled")
    args = parser.parse_args()
    count = args.count
    source = ("PyTorch's FloorDiv/ModularIndexing" if SizeVarAllocator
              else "SymPy floor/Mod (PyTorch not installed)")
    print(f"sympy {sympy.__version__}, {source}:")

    cold = indices("x1_", count)
    timed("cold", count, args.budget,
          lambda k: offset(cold[k], *sizes_of(k)))

    x = indices("x", count)
    for k in range(count):
        offset(x[k], *sizes_of(k))
    timed("warm", count, args.budget, lambda k: offset(x[k], *sizes_of(k)))

    if SizeVarAllocator is None:
        print("  simplify: needs PyTorch's simplification; skipped")
        return
    sizevars = SizeVarAllocator()
    offsets, ranges = [], []
    for k in range(count):
        a, b, c, d = sizes_of(k)
        offsets.append(offset(x[k], a, b, c, d))
        ranges.append({x[k]: a * b * c * d})
    # Once, before timing: each offset must be rewritten. When the budget
    # does not allow all, only the ones checked are timed.
    checked = 0
    check_start = time.process_time()
    for k in range(count):
        simplified = sizevars._simplify_with_ranges(offsets[k], ranges[k])
        if simplified == offsets[k]:
            sys.exit(f"simplification leaves {offsets[k]} unchanged")
        checked += 1
        if time.process_time() - check_start > args.budget:
            break
    timed("simplify", checked, args.budget,
          lambda k: sizevars._simplify_with_ranges(offsets[k], ranges[k]))


if __name__ == "__main__":
    main()
