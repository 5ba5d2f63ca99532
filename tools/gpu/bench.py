#!/usr/bin/env python3
"""lathe's cuda backend beside PyTorch eager and torch.compile on one GPU.

Runs tools/bench:cuda_benchmark (lathe's rows: the device-to-device copy,
x * sigmoid(x) * s + b over f32 [8192, 8192] with s, b: [8192], softmax and
layer norm over f32 [4096, 2560], the MLP layer at B = 64 and 1024, the
transformer block (f32 and bf16) and the small CNN of tools/bench/graphs in
microseconds
per call, and the host time of a call with 2/8/16 tensor arguments, plain
and replayed as a CUDA graph), then
the same work through
PyTorch on the same GPU in the same run (rounds interleaved: lathe's binary,
then PyTorch, then lathe's again), and prints one table: each row's median
and spread, and the chain's bandwidth as a share of the copy's.

usage: bench.py BENCHMARK_BINARY OUT_DIR   (tools/gpu/check.sh runs it)
On a machine without a GPU (LATHE_CUDA_DEVICE=emulated), lathe's rows come
from the emulated device at 64 rows and PyTorch's are left out.
"""

import json
import os
import statistics
import subprocess
import sys
import time

ROUNDS = 3
MODELS = ("mlp_gelu_b64", "mlp_gelu_b1024", "transformer_block_b8_s128_d512",
          "transformer_block_bf16_b8_s128_d512", "small_cnn_b32_64x64")


def lathe_rows(binary, out_dir, k):
    """One run of the benchmark binary: {name: (value, unit)}."""
    path = os.path.join(out_dir, f"cuda_benchmark_{k}.json")
    subprocess.run(
        [binary, "--benchmark_format=json", f"--benchmark_out={path}",
         "--benchmark_out_format=json", "--benchmark_min_time=0.3"],
        check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for b in data["benchmarks"]:
        if b.get("error_occurred"):
            rows[b["name"]] = ("error: " + b.get("error_message", ""), "")
            continue
        if "bytes_per_second" in b:
            rows[b["name"]] = (b["bytes_per_second"] / 1e9, "GB/s")
        else:
            scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b["time_unit"]]
            rows[b["name"]] = (b["real_time"] * scale, "us/call")
    return rows


class _PrintedRows(dict):
    """A dict of rows that prints each one as it is measured, so a run cut
    short by check.sh's time limit still shows PyTorch's side so far."""

    def __setitem__(self, name, row):
        super().__setitem__(name, row)
        print(f"torch: {name}: {row[0]:.4g} {row[1]}", flush=True)


_COMPILED = {}


def _compile(key, fn, **options):
    """torch.compile(fn), once per key for the whole run: the rounds after
    the first time calls, not Inductor's compiles."""
    import torch
    if key not in _COMPILED:
        _COMPILED[key] = torch.compile(fn, **options)
    return _COMPILED[key]


def torch_rows():
    """PyTorch's side on the same GPU, or {} without one."""
    try:
        import torch
    except ImportError:
        return {}
    if not torch.cuda.is_available():
        return {}
    dev = "cuda"
    rows = _PrintedRows()

    def time_gpu(fn, reps=50):
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        return statistics.median(times)

    n = 8192 * 8192
    a = torch.rand(8192, 8192, device=dev) * 4 - 2
    b = torch.empty_like(a)
    t = time_gpu(lambda: b.copy_(a))
    rows["torch copy_"] = (2 * n * 4 / t / 1e9, "GB/s")
    s = torch.rand(8192, device=dev)
    bias = torch.rand(8192, device=dev)

    def chain(x, s, b):
        return x * torch.sigmoid(x) * s + b

    nbytes = (2 * n + 2 * 8192) * 4
    t = time_gpu(lambda: chain(a, s, bias))
    rows["chain eager"] = (nbytes / t / 1e9, "GB/s")
    compiled = _compile("chain", chain)
    t = time_gpu(lambda: compiled(a, s, bias))
    rows["chain torch.compile"] = (nbytes / t / 1e9, "GB/s")

    # Softmax and layer norm over [4096, 2560] (lathe's BM_CudaSoftmax and
    # BM_CudaLayerNorm): the rows read once and written once.
    x = torch.randn(4096, 2560, device=dev)
    w = torch.rand(2560, device=dev)
    wb = torch.rand(2560, device=dev)
    row_bytes = 2 * 4096 * 2560 * 4

    def softmax(x):
        return torch.softmax(x, -1)

    def layer_norm(x, w, b):
        return torch.nn.functional.layer_norm(x, (2560,), w, b, 1e-5)

    for name, fn, args in (("softmax", softmax, (x,)),
                           ("layernorm", layer_norm, (x, w, wb))):
        t = time_gpu(lambda: fn(*args))
        rows[f"{name} eager"] = (row_bytes / t / 1e9, "GB/s")
        compiled_fn = _compile(name, fn)
        t = time_gpu(lambda: compiled_fn(*args))
        rows[f"{name} torch.compile"] = (row_bytes / t / 1e9, "GB/s")

    # The models (lathe's BM_CudaModel rows): the Python functions the
    # benchmark's graphs were captured from, at the same sizes.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "examples"))
    import capture_examples
    for name in MODELS:
        fn, shapes = capture_examples.BENCH_SHAPES[name]
        dtype = capture_examples.bench_dtype(name)
        args = [(torch.rand(*shape, device=dev) * 4 - 2).to(dtype)
                for shape in shapes]
        with torch.no_grad():
            t = time_gpu(lambda: fn(*args))
            rows[f"{name} eager"] = (t * 1e6, "us/call")
            compiled_fn = _compile(name, fn)
            t = time_gpu(lambda: compiled_fn(*args))
            rows[f"{name} torch.compile"] = (t * 1e6, "us/call")

    for k in (2, 8, 16):
        xs = [torch.rand(16, device=dev) for _ in range(k)]

        def add_all(*xs):
            out = xs[0]
            for x in xs[1:]:
                out = out + x
            return out if len(xs) > 1 else -out

        # Default mode, and CUDA graphs (lathe's BM_CudaCallOverheadGraphs).
        for mode, label in ((None, "call"), ("reduce-overhead", "graphs call")):
            f = _compile(f"add_all/{k}/{label}", add_all, mode=mode)
            for _ in range(20):
                f(*xs)
            torch.cuda.synchronize()
            calls = 2000
            t0 = time.perf_counter()
            for _ in range(calls):
                f(*xs)
            host = (time.perf_counter() - t0) / calls
            torch.cuda.synchronize()
            rows[f"torch.compile {label}/{k}"] = (host * 1e6, "us/call")
    return rows


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    lathe, torch_ = [], []
    for k in range(ROUNDS):
        lathe.append(lathe_rows(binary, out_dir, k))
        if k < ROUNDS - 1:
            torch_.append(torch_rows())
    names = {}
    for rounds in (lathe, torch_):
        for r in rounds:
            for name, (v, unit) in r.items():
                names.setdefault(name, unit)
    table = []
    medians = {}
    for name, unit in names.items():
        values = [r[name][0] for r in lathe + torch_
                  if name in r and isinstance(r[name][0], float)]
        if not values:
            errors = [r[name][0] for r in lathe + torch_ if name in r]
            table.append((name, errors[0] if errors else "-", "", ""))
            continue
        med = statistics.median(values)
        medians[name] = med
        spread = f"{min(values):.3g}..{max(values):.3g}"
        table.append((name, f"{med:.4g}", unit, spread))
    copy = next((medians[n] for n in medians if n.startswith("BM_CudaCopy")),
                None)
    lines = [f"{'row':40} {'median':>12} {'unit':8} {'spread':>20} {'of copy':>8}"]
    for name, med, unit, spread in table:
        share = ""
        if copy and unit == "GB/s" and name in medians:
            share = f"{100 * medians[name] / copy:.1f}%"
        lines.append(f"{name:40} {med:>12} {unit:8} {spread:>20} {share:>8}")
    text = "\n".join(lines)
    with open(os.path.join(out_dir, "bench_table.txt"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
