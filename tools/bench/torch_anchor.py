#!/usr/bin/env python3
"""PyTorch's numbers for lathe's cpu backend benchmark (a developer tool).

Runs the programs of tools/bench/cpu_backend_benchmark.cc — the same Python
functions tools/examples/capture_examples.py captured the benchmark's graphs
from (its BENCH_SHAPES), on the same shapes — in PyTorch eager and in
torch.compile (inductor, CPU) on this machine, and prints one table:

  a. swish_affine_8192x8192: GB/s (x read + out written + the two vectors,
     as the benchmark's `bytes` counter), beside torch's own triad
     (torch.add(b, c, alpha=s, out=a), 3 arrays of 8192*8192 f32) and the
     same with torch.compile.
  b. softmax / layernorm [4096, 2560]: ms per call and GB/s; mlp_gelu at
     B = 64 and 1024 and the transformer block: ms per call and GFLOP/s
     (the matmuls' 2*M*N*K, as the benchmark's `flops` counter); the
     models (small_cnn, resnet18, bert_layer, gpt2; *_bf16_* in bf16) also
     as `freezing`: torch.compile with freezing=True of a module holding
     the weights as parameters.
  c. torch.compile's cold compile of mlp_gelu_b64, the transformer block,
     the BERT layer and GPT-2 (batch 1): the first call's time in a fresh process with
     TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 (Dynamo + AOTAutograd + inductor
     + its C++ compile), less one eager call.

Everything runs under torch.no_grad() (inference, as lathe's graphs are).
Times are the median of --repeats timed batches of calls, each batch at
least --min-time seconds.

  pip install torch==2.15.0 numpy     # developer machine only
  python3 tools/bench/torch_anchor.py                       # everything
  python3 tools/bench/torch_anchor.py --repeats 3 --min-time 0.05 --only mlp
  OMP_NUM_THREADS=2 python3 tools/bench/torch_anchor.py     # pin threads

See tools/bench/README.md for reading it beside the C++ benchmark.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
import capture_examples  # noqa: E402  (the programs and shapes)

BENCH = capture_examples.BENCH_SHAPES
T = capture_examples.TRANSFORMER_BENCH
CHAIN_N = 8192 * 8192

MEMORY_ROWS = ["swish_affine_8192x8192", "softmax_4096x2560",
               "layernorm_4096x2560"]
COMPILE_ROWS = ["mlp_gelu_b64", "transformer_block_b8_s128_d512",
                "bert_layer_b8_s128", "gpt2_l4_b1_s256"]


def flops(name):
    if name.startswith("mlp_gelu_b"):
        return 2.0 * int(name[len("mlp_gelu_b"):]) * 1024 * 4096
    if name.startswith("transformer_block"):
        b, s, d, m = T["batch"], T["seq"], T["d"], T["mlp"]
        t = b * s
        return 4 * 2 * t * d * d + 2 * 2 * b * s * s * d + 2 * 2 * t * d * m
    if name.startswith(("bert_layer_", "gpt2_l4_")):  # as BertFlops(), Gpt2Flops()
        n = int(name.split("_b")[-1].split("_")[0])
        s = int(name.split("_s")[-1])
        d, m, t = 768, 3072, n * s
        if name.startswith("bert"):
            return 4 * 2 * t * d * d + 2 * 2 * n * s * s * d + 2 * 2 * t * d * m
        return 4 * (2 * t * d * 3 * d + 2 * t * d * d + 2 * 2 * n * s * s * d
                    + 2 * 2 * t * d * m)
    if name.startswith("small_cnn_b32_64x64"):  # as SmallCnnFlops()
        n = 32
        return (2.0 * n * 32 * 64 * 64 * 3 * 9 + 2.0 * n * 64 * 32 * 32 * 32 * 9
                + 2.0 * n * 10 * 64 * 16 * 16)
    if name.startswith("resnet18_b"):  # as Resnet18Flops()
        n, size = int(name.split("_")[1][1:]), int(name.split("x")[-1])
        total = 0.0

        def conv(c, o, k, stride, s):
            nonlocal total
            out = (s + 2 * (k // 2) - k) // stride + 1
            total += 2.0 * n * o * out * out * c * k * k
            return out
        s = conv(3, 64, 7, 2, size)
        s = (s + 2 - 3) // 2 + 1
        c = 64
        for stage in range(4):
            o, stride = 64 << stage, 2 if stage else 1
            t = conv(c, o, 3, stride, s)
            conv(o, o, 3, 1, t)
            if stage:
                conv(c, o, 1, stride, s)
            conv(o, o, 3, 1, t)
            conv(o, o, 3, 1, t)
            s, c = t, o
        return total + 2.0 * n * 1000 * 512
    return None


def make_inputs(name):
    """As the C++ benchmark: 1-d inputs near 1 (norm weights, the scale)."""
    g = torch.Generator().manual_seed(2026)
    out = []
    for shape in BENCH[name][1]:
        t = torch.rand(*shape, generator=g) * 2 - 1
        t = 1 + t / 8 if len(shape) == 1 else t
        out.append(t.to(capture_examples.bench_dtype(name)))
    return out


def time_call(fn, args, repeats, min_time):
    """Median seconds per call over `repeats` batches of >= min_time each."""
    fn(*args)
    fn(*args)  # warm
    n = 1
    while True:  # calls per batch
        start = time.perf_counter()
        for _ in range(n):
            fn(*args)
        took = time.perf_counter() - start
        if took >= min_time or n >= 1 << 20:
            break
        n = max(n * 2, int(n * min_time / max(took, 1e-9)) + 1)
    samples = [took / n]
    for _ in range(repeats - 1):
        start = time.perf_counter()
        for _ in range(n):
            fn(*args)
        samples.append((time.perf_counter() - start) / n)
    return statistics.median(samples)


def nbytes(args, outs):
    return sum(t.numel() * t.element_size() for t in list(args) + list(outs))


def compiled(fn):
    return torch.compile(fn, backend="inductor", fullgraph=True)


class Frozen(torch.nn.Module):
    """fn(x, *params) with the params as the module's (frozen) parameters."""

    def __init__(self, fn, params):
        super().__init__()
        self.fn = fn
        self.params = torch.nn.ParameterList(
            [torch.nn.Parameter(p, requires_grad=False) for p in params])

    def forward(self, x):
        return self.fn(x, *self.params)


def compiled_frozen(fn, args):
    """torch.compile with freezing=True (weights are constants: prepacked,
    batch norm folded), compiled by its first call; called as fn is."""
    m = Frozen(fn, args[1:]).eval()
    with torch._inductor.config.patch(freezing=True):
        c = torch.compile(m, backend="inductor", fullgraph=True)
        c(args[0])
    return lambda *a: c(a[0])


# Rows whose weights torch.compile can also freeze.
FREEZE_ROWS = ("mlp_gelu", "transformer_block", "small_cnn", "resnet18",
               "bert_layer", "gpt2")


def run_rows(a):
    rows = []
    # *_aot_* is the same program captured another way: one row for both.
    names = [n for n in BENCH if a.only in n and "_aot" not in n]
    for name in names:
        fn = BENCH[name][0]
        args = make_inputs(name)
        outs = fn(*args)
        modes = [("eager", lambda: fn), ("inductor", lambda: compiled(fn))]
        if name.startswith(FREEZE_ROWS):
            modes.append(("freezing", lambda: compiled_frozen(fn, args)))
        for mode, make in modes:
            torch._dynamo.reset()
            f = make()
            sec = time_call(f, args, a.repeats, a.min_time)
            row = {"name": name, "mode": mode, "ms": sec * 1e3}
            if name in MEMORY_ROWS:
                row["GB/s"] = nbytes(args, outs) / sec / 1e9
            if flops(name):
                row["GFLOP/s"] = flops(name) / sec / 1e9
            rows.append(row)
            print(f"  {name:34s} {mode:9s} {sec * 1e3:10.3f} ms", file=sys.stderr)
        del args, outs
    if a.only in "transposed_scale_4096x4096":
        x = torch.rand(4096, 4096)

        def transposed_scale(x):
            return x.t() * 2

        for mode, f in (("eager", transposed_scale),
                        ("inductor", compiled(transposed_scale))):
            torch._dynamo.reset()
            sec = time_call(f, (x,), a.repeats, a.min_time)
            rows.append({"name": "transposed_scale_4096x4096", "mode": mode,
                         "ms": sec * 1e3,
                         "GB/s": 2.0 * x.numel() * 4 / sec / 1e9})
            print(f"  {'transposed_scale_4096x4096':34s} {mode:9s} "
                  f"{sec * 1e3:10.3f} ms", file=sys.stderr)
    if a.only in "stream_triad":
        b = torch.rand(CHAIN_N)
        c = torch.rand(CHAIN_N)
        out = torch.empty(CHAIN_N)

        def triad(out, b, c):
            return torch.add(b, c, alpha=3.0, out=out)

        def triad_fn(b, c):
            return b + 3.0 * c

        for mode, f, args in (("eager", triad, (out, b, c)),
                              ("inductor", compiled(triad_fn), (b, c))):
            torch._dynamo.reset()
            sec = time_call(f, args, a.repeats, a.min_time)
            rows.append({"name": "stream_triad", "mode": mode,
                         "ms": sec * 1e3,
                         "GB/s": 3.0 * CHAIN_N * 4 / sec / 1e9})
    return rows


def compile_child(name):
    """In a fresh process: torch.compile's first call, less an eager call."""
    fn = BENCH[name][0]
    args = make_inputs(name)
    with torch.no_grad():
        start = time.perf_counter()
        fn(*args)
        eager = time.perf_counter() - start
        f = compiled(fn)
        start = time.perf_counter()
        f(*args)
        first = time.perf_counter() - start
    print(f"{first - eager:.6f}")


def compile_rows(a):
    rows = []
    env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
    for name in COMPILE_ROWS:
        if a.only not in name:
            continue
        samples = []
        for _ in range(a.compile_repeats):
            out = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--compile-child", name],
                env=env, check=True, capture_output=True, text=True)
            samples.append(float(out.stdout.strip().splitlines()[-1]))
        rows.append({"name": name, "mode": "inductor cold compile",
                     "compile_s": statistics.median(samples)})
        print(f"  {name:34s} compile {rows[-1]['compile_s']:.3f} s", file=sys.stderr)
    return rows


def print_table(rows):
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{os.cpu_count()} CPUs")
    header = f"{'program':34s} {'mode':22s} {'ms/call':>10s} {'GB/s':>8s} {'GFLOP/s':>8s} {'compile s':>10s}"
    print(header)
    print("-" * len(header))
    for r in rows:
        def cell(key, fmt, width):
            return format(r[key], fmt).rjust(width) if key in r else " " * width
        print(f"{r['name']:34s} {r['mode']:22s} {cell('ms', '.3f', 10)} "
              f"{cell('GB/s', '.2f', 8)} {cell('GFLOP/s', '.1f', 8)} "
              f"{cell('compile_s', '.3f', 10)}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--only", default="", help="rows whose name contains this")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--min-time", type=float, default=0.5)
    p.add_argument("--compile-repeats", type=int, default=3)
    p.add_argument("--no-compile-time", action="store_true")
    p.add_argument("--compile-child", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.compile_child:
        compile_child(a.compile_child)
        return
    with torch.no_grad():
        rows = run_rows(a)
    if not a.no_compile_time:
        rows += compile_rows(a)
    print_table(rows)


if __name__ == "__main__":
    main()
