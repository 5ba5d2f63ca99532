#!/usr/bin/env python3
"""Captures lathe's example graphs from PyTorch itself (a developer tool).

Each program below is traced with make_fx (real tensors, static shapes) and
written the way tools/examples/mlp.txt is:

  tools/examples/NAME.txt              GraphModule.print_readable() text
  tools/examples/NAME/ARG.npy          one input per placeholder
  tools/examples/NAME/expected/outK.npy           eager PyTorch's outputs
  tools/examples/NAME/expected/mutated/ARG.npy    inputs the graph wrote

so that

  bazel build -c opt //tools:lathec
  bazel-bin/tools/lathec run tools/examples/NAME.txt \
      --inputs tools/examples/NAME --out /tmp/NAME [--backend cpu]
  python3 tools/examples/capture_examples.py --check /tmp/NAME NAME

runs the graph and compares its results with expected/. The example inputs
are small (the committed files stay small); the benchmark's graphs are the
same programs traced at the benchmark's shapes (with fake tensors, so
nothing is computed) and written as text only, to tools/bench/graphs/.

The expected values are eager PyTorch running the program itself; the
captured graph is checked against them, and the Adam step is also checked
against torch.optim.Adam(foreach=False) stepping the same state.

  pip install torch==2.15.0 numpy     # developer machine only; CI never needs it
  python3 tools/examples/capture_examples.py            # rewrite everything
  python3 tools/examples/capture_examples.py --only softmax
  python3 tools/examples/capture_examples.py --check OUT_DIR NAME
  python3 tools/examples/capture_examples.py --verify bazel-bin/tools/lathec
      (every example on --backend interp and cpu, checked; any error fails)

Seeded: a rerun writes the same files (the graph text carries no paths).
tools/bench/torch_anchor.py imports PROGRAMS and BENCH_SHAPES from here, so
PyTorch's numbers are for exactly these programs.
"""

import argparse
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_GRAPHS = os.path.join(HERE, "..", "bench", "graphs")

# ------------------------------------------------------------------ programs
# Each program takes tensors only (a list is a pytree input: one placeholder
# per element) and returns a tuple.


def swish_affine(x, s, b):
    """The fused-chain benchmark: x * sigmoid(x) * s + b."""
    return (x * torch.sigmoid(x) * s + b,)


def softmax(x):
    return (torch.softmax(x, -1),)


def layernorm(x, w, b):
    return (F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5),)


def sum_var_mean(x):
    """Reductions to one value: the sum, and var_mean over every dim."""
    return (x.sum(), *torch.var_mean(x))


def mlp_gelu(x, w, bias):
    """One MLP layer: gelu(x @ w + bias), w laid out [in, out]."""
    return (F.gelu(torch.addmm(bias, x, w)),)


def transformer_block(x, ln1_w, ln1_b, wq, bq, wk, bk, wv, bv, wo, bo,
                      ln2_w, ln2_b, w1, b1, w2, b2, *, heads):
    """A pre-LN transformer block, attention written out (no SDPA)."""
    batch, seq, d = x.shape
    dh = d // heads
    h = F.layer_norm(x, (d,), ln1_w, ln1_b, eps=1e-5)

    def split(t):  # [B, S, D] -> [B, H, S, Dh]
        return t.view(batch, seq, heads, dh).transpose(1, 2)

    q = split(h @ wq + bq)
    k = split(h @ wk + bk)
    v = split(h @ wv + bv)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
    att = torch.softmax(att, -1)
    o = (att @ v).transpose(1, 2).reshape(batch, seq, d)
    x = x + (o @ wo + bo)
    h2 = F.layer_norm(x, (d,), ln2_w, ln2_b, eps=1e-5)
    return (x + (F.gelu(h2 @ w1 + b1) @ w2 + b2),)


def _heads(t, heads):  # [B, S, D] -> [B, H, S, D/H]
    batch, seq, d = t.shape
    return t.view(batch, seq, heads, d // heads).transpose(1, 2)


def _merge(t):  # [B, H, S, Dh] -> [B, S, H*Dh]
    batch, heads, seq, dh = t.shape
    return t.transpose(1, 2).reshape(batch, seq, heads * dh)


def bert_layer(x, wq, bq, wk, bk, wv, bv, wo, bo, ln1_w, ln1_b, w1, b1, w2,
               b2, ln2_w, ln2_b, *, heads):
    """A BERT-base-shaped encoder layer in eval (as Hugging Face's BertLayer
    with SDPA attention and no padding mask): nn.Linear weights [out, in],
    post-LN, gelu (erf)."""
    d = x.shape[-1]
    q, k, v = (_heads(F.linear(x, w, b), heads)
               for w, b in ((wq, bq), (wk, bk), (wv, bv)))
    o = _merge(F.scaled_dot_product_attention(q, k, v))
    a = F.layer_norm(F.linear(o, wo, bo) + x, (d,), ln1_w, ln1_b, eps=1e-12)
    h = F.gelu(F.linear(a, w1, b1))
    return (F.layer_norm(F.linear(h, w2, b2) + a, (d,), ln2_w, ln2_b,
                         eps=1e-12),)


def gpt2(x, *p, heads):
    """A GPT-2-shaped decoder (as Hugging Face's GPT2Model after its
    embeddings, without the LM head): per layer, in p, ln_1's weight and
    bias, c_attn's weight [D, 3D] and bias, the attention's c_proj [D, D]
    and bias, ln_2's, the MLP's c_fc [D, 4D] and c_proj [4D, D] with their
    biases (Conv1D: addmm(bias, x, w)); then ln_f's weight and bias. Pre-LN,
    causal SDPA, gelu (tanh)."""
    batch, seq, d = x.shape

    def conv1d(t, w, b):
        return torch.addmm(b, t.view(-1, t.shape[-1]), w).view(batch, seq, -1)

    for layer in range(0, len(p) - 2, 12):
        (ln1_w, ln1_b, wa, ba, wp, bp, ln2_w, ln2_b, wf, bf, wm,
         bm) = p[layer:layer + 12]
        h = F.layer_norm(x, (d,), ln1_w, ln1_b, eps=1e-5)
        q, k, v = conv1d(h, wa, ba).split(d, dim=2)
        o = F.scaled_dot_product_attention(_heads(q, heads), _heads(k, heads),
                                           _heads(v, heads), is_causal=True)
        x = x + conv1d(_merge(o), wp, bp)
        h = F.layer_norm(x, (d,), ln2_w, ln2_b, eps=1e-5)
        x = x + conv1d(F.gelu(conv1d(h, wf, bf), approximate="tanh"), wm, bm)
    return (F.layer_norm(x, (d,), p[-2], p[-1], eps=1e-5),)


def with_heads(fn, heads, name):
    """fn with its head count fixed (the rest are tensors: placeholders)."""
    def fixed(*args):
        return fn(*args, heads=heads)
    fixed.__name__ = name
    return fixed


def bert_shapes(batch, seq, d=768, mlp=3072):
    """bert_layer's input shapes: the hidden states, then its parameters."""
    lin = lambda o, i: [(o, i), (o,)]
    return ([(batch, seq, d)] + lin(d, d) * 4 + [(d,), (d,)] + lin(mlp, d)
            + lin(d, mlp) + [(d,), (d,)])


def gpt2_shapes(batch, seq, layers=4, d=768):
    """gpt2's input shapes: the hidden states, then its parameters."""
    per_layer = [(d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,),
                 (d, 4 * d), (4 * d,), (4 * d, d), (d,)]
    return [(batch, seq, d)] + per_layer * layers + [(d,), (d,)]


def small_cnn(x, c1_w, c1_b, c2_w, c2_b, fc_w, fc_b):
    y = F.max_pool2d(F.relu(F.conv2d(x, c1_w, c1_b, padding=1)), 2)
    y = F.max_pool2d(F.relu(F.conv2d(y, c2_w, c2_b, padding=1)), 2)
    return (F.linear(y.flatten(1), fc_w, fc_b),)


def resnet18(x, *p):
    """A ResNet-18-shaped network in eval mode (batch norm reads running
    statistics). p holds, per convolution in the order they run (a block's
    two, then its downsample), its weight and its batch norm's weight,
    bias, running mean and running var; then the classifier's weight and
    bias (resnet18_shapes)."""
    it = iter(p)

    def conv_bn(x, stride, padding, relu=True):
        w, g, b, m, v = (next(it) for _ in range(5))
        y = F.batch_norm(F.conv2d(x, w, None, stride, padding), m, v, g, b,
                         False, 0.1, 1e-5)
        return F.relu(y) if relu else y

    def block(x, stride, downsample):
        y = conv_bn(x, stride, 1)
        y = conv_bn(y, 1, 1, relu=False)
        return F.relu(y + (conv_bn(x, stride, 0, relu=False)
                           if downsample else x))

    x = F.max_pool2d(conv_bn(x, 2, 3), 3, 2, 1)
    for stage, stride in enumerate([1, 2, 2, 2]):
        x = block(block(x, stride, stage > 0), 1, False)
    x = F.adaptive_avg_pool2d(x, 1).flatten(1)
    return (F.linear(x, next(it), next(it)),)


def resnet18_shapes(batch, size):
    """resnet18's input shapes: the images, then its parameters."""
    shapes = [(batch, 3, size, size)]

    def conv_bn(o, i, k):
        shapes.extend([(o, i, k, k), (o,), (o,), (o,), (o,)])

    conv_bn(64, 3, 7)
    c = 64
    for stage, o in enumerate([64, 128, 256, 512]):
        conv_bn(o, c, 3)
        conv_bn(o, o, 3)
        if stage > 0:
            conv_bn(o, c, 1)
        conv_bn(o, o, 3)
        conv_bn(o, o, 3)
        c = o
    return shapes + [(1000, 512), (1000,)]


ADAM = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)
ADAM_STEP = 3  # the step this update makes (the state has taken 2)


def adam_step(params, grads, exp_avgs, exp_avg_sqs):
    """torch.optim.adam._single_tensor_adam (foreach=False, not capturable,
    no weight decay, no amsgrad) for step ADAM_STEP, in place: the host
    reads the step count (`_get_value(step_t)`), so it is a number here."""
    lr, beta1, beta2, eps = ADAM["lr"], ADAM["beta1"], ADAM["beta2"], ADAM["eps"]
    step = ADAM_STEP
    for param, grad, exp_avg, exp_avg_sq in zip(params, grads, exp_avgs,
                                                exp_avg_sqs):
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2**0.5
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)
    return ()


ADAM_SHAPES = [(8, 4), (4,), (16, 8), (8,), (12, 16), (16,), (10, 12), (10,),
               (4, 2, 3, 3), (32,)]


def rnd(*shape, scale=1.0):
    return torch.randn(*shape, dtype=torch.float32) * scale


def ones_ish(n):
    return 1.0 + 0.1 * torch.randn(n)


def adam_inputs():
    params = [rnd(*s) for s in ADAM_SHAPES]
    grads = [rnd(*s, scale=0.1) for s in ADAM_SHAPES]
    exp_avgs = [rnd(*s, scale=0.01) for s in ADAM_SHAPES]
    exp_avg_sqs = [torch.rand(*s) * 1e-4 for s in ADAM_SHAPES]
    return [params, grads, exp_avgs, exp_avg_sqs]


def transformer_inputs(batch, seq, d, mlp):
    def lin(i, o):
        return [rnd(i, o, scale=1.0 / math.sqrt(i)), rnd(o, scale=0.02)]
    return ([rnd(batch, seq, d), ones_ish(d), rnd(d, scale=0.1)]
            + lin(d, d) + lin(d, d) + lin(d, d) + lin(d, d)
            + [ones_ish(d), rnd(d, scale=0.1)] + lin(d, mlp) + lin(mlp, d))


def mlp_inputs(batch, k, n):
    return [rnd(batch, k), rnd(k, n, scale=1.0 / math.sqrt(k)), rnd(n, scale=0.1)]


TRANSFORMER_SMALL = dict(batch=2, seq=8, d=16, heads=2, mlp=32)
TRANSFORMER_BENCH = dict(batch=8, seq=128, d=512, heads=8, mlp=2048)


def transformer(shape):
    """transformer_block with its head count fixed (named placeholders)."""
    heads = shape["heads"]

    def transformer_block_fixed(x, ln1_w, ln1_b, wq, bq, wk, bk, wv, bv, wo,
                                bo, ln2_w, ln2_b, w1, b1, w2, b2):
        return transformer_block(x, ln1_w, ln1_b, wq, bq, wk, bk, wv, bv, wo,
                                 bo, ln2_w, ln2_b, w1, b1, w2, b2, heads=heads)
    transformer_block_fixed.__name__ = "transformer_block"
    return transformer_block_fixed


def _small_transformer_inputs():
    return transformer_inputs(TRANSFORMER_SMALL["batch"], TRANSFORMER_SMALL["seq"],
                              TRANSFORMER_SMALL["d"], TRANSFORMER_SMALL["mlp"])


# name -> (program, its small example inputs); captured with make_fx, or
# with torch.compile's AOT forward graph when the name ends in _aot.
PROGRAMS = {
    "swish_affine": (swish_affine, lambda: [rnd(8, 128), rnd(128), rnd(128)]),
    "softmax": (softmax, lambda: [rnd(8, 128, scale=3.0)]),
    "layernorm": (layernorm, lambda: [rnd(8, 128) + 0.5, ones_ish(128),
                                      rnd(128, scale=0.1)]),
    "mlp_gelu": (mlp_gelu, lambda: mlp_inputs(4, 32, 64)),
    "transformer_block": (transformer(TRANSFORMER_SMALL),
                          _small_transformer_inputs),
    # The same block as torch.compile hands its backend (views, permute and
    # clone where make_fx records _unsafe_view).
    "transformer_block_aot": (transformer(TRANSFORMER_SMALL),
                              _small_transformer_inputs),
    "small_cnn": (small_cnn, lambda: [
        rnd(2, 3, 8, 8), rnd(8, 3, 3, 3, scale=0.3), rnd(8, scale=0.1),
        rnd(16, 8, 3, 3, scale=0.2), rnd(16, scale=0.1),
        rnd(10, 16 * 2 * 2, scale=0.1), rnd(10, scale=0.1)]),
    "adam_step": (adam_step, adam_inputs),
}

# The benchmark's graphs: name -> (program, input shapes). These are the
# shapes tools/bench/cpu_backend_benchmark.cc and torch_anchor.py run.
T = TRANSFORMER_BENCH


def _transformer_shapes(t):
    d, m = t["d"], t["mlp"]
    return ([(t["batch"], t["seq"], d), (d,), (d,)]
            + [(d, d), (d,)] * 4 + [(d,), (d,), (d, m), (m,), (m, d), (d,)])


BENCH_SHAPES = {
    "swish_affine_8192x8192": (swish_affine, [(8192, 8192), (8192,), (8192,)]),
    "softmax_4096x2560": (softmax, [(4096, 2560)]),
    "layernorm_4096x2560": (layernorm, [(4096, 2560), (2560,), (2560,)]),
    "sum_var_mean_4096x4096": (sum_var_mean, [(4096, 4096)]),
    "mlp_gelu_b64": (mlp_gelu, [(64, 1024), (1024, 4096), (4096,)]),
    "mlp_gelu_b1024": (mlp_gelu, [(1024, 1024), (1024, 4096), (4096,)]),
    "transformer_block_b8_s128_d512": (transformer(T), _transformer_shapes(T)),
    # The same block in bf16 (bench_dtype): every input and weight.
    "transformer_block_bf16_b8_s128_d512": (transformer(T),
                                            _transformer_shapes(T)),
    "transformer_block_aot_b8_s128_d512": (transformer(T),
                                           _transformer_shapes(T)),
    # small_cnn at batch 32 on 64x64 images, 32 then 64 channels.
    "small_cnn_b32_64x64": (small_cnn, [
        (32, 3, 64, 64), (32, 3, 3, 3), (32,), (64, 32, 3, 3), (64,),
        (10, 64 * 16 * 16), (10,)]),
    # A ResNet-18-shaped network at batch 8, inference (issue 30's rows).
    "resnet18_b8_112x112": (resnet18, resnet18_shapes(8, 112)),
    "resnet18_b8_224x224": (resnet18, resnet18_shapes(8, 224)),
    # A BERT-base-shaped encoder layer (12 heads) at batch 8, seq 128, and a
    # 4-layer GPT-2-small-shaped decoder (12 heads) at seq 256, batch 1 and
    # 8; each also in bf16 (bench_dtype: every input).
    "bert_layer_b8_s128": (with_heads(bert_layer, 12, "bert_layer"),
                           bert_shapes(8, 128)),
    "bert_layer_bf16_b8_s128": (with_heads(bert_layer, 12, "bert_layer"),
                                bert_shapes(8, 128)),
    "gpt2_l4_b1_s256": (with_heads(gpt2, 12, "gpt2"), gpt2_shapes(1, 256)),
    "gpt2_l4_b8_s256": (with_heads(gpt2, 12, "gpt2"), gpt2_shapes(8, 256)),
    "gpt2_l4_bf16_b1_s256": (with_heads(gpt2, 12, "gpt2"),
                             gpt2_shapes(1, 256)),
    "gpt2_l4_bf16_b8_s256": (with_heads(gpt2, 12, "gpt2"),
                             gpt2_shapes(8, 256)),
}



def bench_dtype(name):
    """The dtype of a benchmark graph's inputs: bf16 for *_bf16_*."""
    return torch.bfloat16 if "_bf16" in name else torch.float32

# ------------------------------------------------------------------- capture


def clone(v):
    return pytree.tree_map(
        lambda t: t.clone() if isinstance(t, torch.Tensor) else t, v)


def graph_text(gm):
    text = gm.print_readable(print_output=False, include_stride=True,
                             include_device=True).rstrip("\n") + "\n"
    # `# File:` comments name this script relative to the workspace root,
    # so a rerun from another checkout writes the same text.
    root = os.path.abspath(os.path.join(HERE, "..", "..")) + os.sep
    return text.replace(root, "")


def placeholders(gm):
    return [n.name for n in gm.graph.nodes if n.op == "placeholder"]


def check_close(what, got, want, rtol=1e-4, atol=1e-5):
    if not torch.allclose(got, want, rtol=rtol, atol=atol):
        err = (got - want).abs().max().item()
        raise RuntimeError(f"{what}: captured graph disagrees (max err {err})")


def adam_reference(inputs):
    """torch.optim.Adam(foreach=False) stepping the same state once."""
    params, grads, exp_avgs, exp_avg_sqs = clone(inputs)
    ps = [torch.nn.Parameter(p) for p in params]
    opt = torch.optim.Adam(ps, lr=ADAM["lr"], betas=(ADAM["beta1"], ADAM["beta2"]),
                           eps=ADAM["eps"], foreach=False)
    for p, g, m, v in zip(ps, grads, exp_avgs, exp_avg_sqs):
        p.grad = g
        opt.state[p] = {"step": torch.tensor(float(ADAM_STEP - 1)),
                        "exp_avg": m, "exp_avg_sq": v}
    opt.step()
    return [p.detach() for p in ps], grads, exp_avgs, exp_avg_sqs


def capture_aot(fn, inputs):
    """torch.compile's AOT forward graph of fn (static shapes, inference),
    as tools/torch_corpus/capture.py records it: (the graph, the flat
    arguments it is called with)."""
    from functorch.compile import make_boxed_func
    from torch._decomp import core_aten_decompositions
    from torch._functorch.aot_autograd import aot_module_simplified

    records = []

    def backend(gm, example_inputs):
        def fw(g, _):
            def run(*args):
                records.append((g, [a.clone() for a in args]))
                return g(*args)
            return make_boxed_func(run)
        return aot_module_simplified(gm, example_inputs, fw_compiler=fw,
                                     decompositions=core_aten_decompositions())

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(fn, backend=backend, dynamic=False,
                      fullgraph=True)(*clone(inputs))
    if len(records) != 1:
        raise RuntimeError(f"{len(records)} graphs")
    return records[0]


def capture_example(name, fn, make_inputs, root):
    torch.manual_seed(sum(map(ord, name.removesuffix("_aot"))))
    inputs = make_inputs()
    if name.endswith("_aot"):
        gm, flat = capture_aot(fn, inputs)
        if len(flat) != len(pytree.tree_leaves(inputs)):
            raise RuntimeError(f"{name}: the AOT graph takes other arguments")
    else:
        gm = make_fx(fn)(*clone(inputs))
        flat = pytree.tree_leaves(inputs)
    names = placeholders(gm)
    if len(names) != len(flat):
        raise RuntimeError(f"{name}: {len(names)} placeholders, {len(flat)} inputs")

    # Eager PyTorch on the program itself, and the captured graph.
    eager_in = clone(inputs)
    want = pytree.tree_leaves(fn(*eager_in))
    graph_in = clone(flat)
    spec = pytree.tree_structure(inputs)
    got = pytree.tree_leaves(gm(*pytree.tree_unflatten(graph_in, spec)))
    for k, (g, w) in enumerate(zip(got, want)):
        check_close(f"{name} out{k}", g, w)
    eager_flat = pytree.tree_leaves(eager_in)
    for n, g, w in zip(names, graph_in, eager_flat):
        check_close(f"{name} {n}", g, w)
    if name == "adam_step":
        ref = pytree.tree_leaves(adam_reference(inputs))
        for n, g, w in zip(names, eager_flat, ref):
            check_close(f"{name} {n} vs torch.optim.Adam", g, w, rtol=1e-6, atol=1e-7)

    d = os.path.join(root, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "expected"))
    with open(os.path.join(root, name + ".txt"), "w") as f:
        f.write(graph_text(gm))
    for n, a in zip(names, flat):
        np.save(os.path.join(d, n + ".npy"), a.numpy())
    for k, w in enumerate(want):
        np.save(os.path.join(d, "expected", f"out{k}.npy"), w.numpy())
    for n, before, after in zip(names, flat, eager_flat):
        if not torch.equal(before, after):
            os.makedirs(os.path.join(d, "expected", "mutated"), exist_ok=True)
            np.save(os.path.join(d, "expected", "mutated", n + ".npy"), after.numpy())
    print(f"{name}: {len(names)} inputs, {len(want)} outputs")


def capture_bench(name, fn, shapes, root):
    if "_aot" in name:  # real (uninitialized) tensors: nothing is checked
        gm, _ = capture_aot(fn, [torch.empty(*s) for s in shapes])
    else:
        args = [torch.empty(*s, dtype=bench_dtype(name)) for s in shapes]
        gm = make_fx(fn, tracing_mode="fake")(*args)
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, name + ".txt"), "w") as f:
        f.write(graph_text(gm))
    print(f"bench graph {name}")


# --------------------------------------------------------------------- check


def check_run(out_dir, name, root=HERE, rtol=1e-4, atol=1e-4):
    """Compares a `lathec run --out OUT_DIR` of example NAME with expected/."""
    want_dir = os.path.join(root, name, "expected")
    bad = 0
    n = 0
    for dirpath, _, files in os.walk(want_dir):
        for f in sorted(files):
            rel = os.path.relpath(os.path.join(dirpath, f), want_dir)
            want = np.load(os.path.join(want_dir, rel))
            path = os.path.join(out_dir, rel)
            n += 1
            if not os.path.exists(path):
                print(f"  {rel}: missing")
                bad += 1
                continue
            got = np.load(path)
            if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol):
                err = np.abs(got.astype(np.float64) - want).max() if got.shape == want.shape else "shape"
                print(f"  {rel}: differs (max err {err})")
                bad += 1
    print(f"{name}: {n - bad}/{n} files match expected/")
    return bad == 0


def verify(lathec):
    """Runs every example through `lathec run` on both backends and checks
    the results against expected/; prints one line per run."""
    import tempfile
    ok = True
    for name in PROGRAMS:
        for backend in ("interp", "cpu"):
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "out")
                r = subprocess.run(
                    [lathec, "run", os.path.join(HERE, name + ".txt"),
                     "--inputs", os.path.join(HERE, name), "--out", out,
                     "--backend", backend], capture_output=True, text=True)
                if r.returncode != 0:
                    err = (r.stderr.strip().splitlines() or ["?"])[-1]
                    print(f"{name:24s} {backend:6s} ERROR {err}")
                    ok = False
                    continue
                print(f"{name:24s} {backend:6s} ", end="", flush=True)
                ok = check_run(os.path.join(out, "0"), name) and ok
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--out", default=HERE)
    parser.add_argument("--bench-out", default=BENCH_GRAPHS)
    parser.add_argument("--check", nargs=2, metavar=("OUT_DIR", "NAME"))
    parser.add_argument("--verify", metavar="LATHEC")
    a = parser.parse_args()
    if a.check:
        sys.exit(0 if check_run(*a.check) else 1)
    if a.verify:
        sys.exit(0 if verify(a.verify) else 1)
    for name, (fn, make_inputs) in PROGRAMS.items():
        if a.only in name:
            capture_example(name, fn, make_inputs, os.path.abspath(a.out))
    for name, (fn, shapes) in BENCH_SHAPES.items():
        if a.only in name:
            capture_bench(name, fn, shapes, os.path.abspath(a.bench_out))


if __name__ == "__main__":
    main()
