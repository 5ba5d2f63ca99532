#!/usr/bin/env python3
"""Times SymPy on the 10k index expressions of
//symbolic:index_expr_benchmark, for the ratio in the symbolic issue.

SymPy is optional and never a build dependency: this script only reports.
PyTorch's FloorDiv and ModularIndexing are SymPy Functions with eval rules; to
stay independent of PyTorch this mirrors them with SymPy's floor and Mod on an
integer symbol (automatic evaluation on construction), then expands, which is
the work PyTorch's index simplification starts from. A fraction of the 10k is
timed and scaled when the run would take too long.

    python3 tools/bench/sympy_index_exprs.py [--count N]
"""

import argparse
import sys
import time

try:
    import sympy
except ImportError:
    print("sympy is not installed; nothing to compare", file=sys.stderr)
    sys.exit(0)


def floordiv(a, b):
    return sympy.floor(a / b)


def modular_indexing(a, b, c):
    return sympy.Mod(floordiv(a, b), c)


def index_expr(x, a, b, c, d):
    d3 = modular_indexing(x, 1, d)
    d2 = modular_indexing(x, d, b)
    d1 = modular_indexing(x, d * b, c)
    d0 = floordiv(x, d * b * c)
    offset = d0 * (b * c * d) + d1 * d + d2 * (c * d) + d3
    return sympy.expand(offset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=10000)
    args = parser.parse_args()
    x = sympy.Symbol("x0", integer=True, nonnegative=True)
    start = time.perf_counter()
    done = 0
    for k in range(args.count):
        a, b, c = 2 + k % 5, 3 + k % 7, 4 + (k // 7) % 11
        d = 8 * (1 + (k // 77) % 13)
        index_expr(x, a, b, c, d)
        done += 1
        if time.perf_counter() - start > 120:
            break
    elapsed = time.perf_counter() - start
    print(f"sympy {sympy.__version__}: {done} index expressions in "
          f"{elapsed:.2f} s = {elapsed / done * 1e6:.1f} us per expression")


if __name__ == "__main__":
    main()
