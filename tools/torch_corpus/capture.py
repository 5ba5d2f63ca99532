#!/usr/bin/env python3
"""Captures lathe's torch corpus from PyTorch itself (a developer tool).

Each small program below is traced in up to four ways, exactly as PyTorch
2.15 prints them:
  real      make_fx(f)
  symbolic  make_fx(f, tracing_mode="symbolic")
  aot       torch.compile(f, backend=<records AOTAutograd's forward graph>)
  aot_dyn   the same with dynamic=True (SymInt placeholders, f64[] floats)
and the training programs (modes=TRAIN) in two more, from one training
step through torch.compile with a backend that hands Dynamo's graph to
aot_module_simplified without decompositions (as a backend of lathe's
will), its floating inputs requiring grad, the outputs' gradients fixed
random tensors:
  train_fw  the forward graph AOTAutograd's partitioner gives the backend
  train_bw  the backward graph (saved tensors and tangents in, gradients out)
  train_dyn_fw, train_dyn_bw  the same with dynamic=True (modes=TRAIN_DYN)
each with the values the graph was called with in that step.
Each capture is written to ir/testdata/torch_corpus/<program>__<mode>/:
  graph.txt            print_readable(print_output=False, include_stride=True,
                       include_device=True)
  inputs/NAME.npy      one per placeholder (and per tensor constant)
  expected/outK.npy    eager PyTorch's outputs of the captured graph
  expected/mutated/NAME.npy   the inputs it mutated, after the call
(the layout `lathec run --inputs` reads and writes). The expected values are
the captured GraphModule run eagerly on the same inputs, checked against the
program itself. bf16 is saved as NumPy's 2-byte void type, as lathe reads it.

  pip install torch==2.15.0 numpy     # developer machine only; CI never needs it
  python3 tools/torch_corpus/capture.py [--out DIR] [--only SUBSTRING]

CI never runs this: tools/torch_corpus:torch_corpus_test replays the files.
"""

import argparse
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree

torch._dynamo.config.capture_scalar_outputs = True
torch._dynamo.config.capture_dynamic_output_shape_ops = True

PROGRAMS = []  # (name, fn, make_inputs, modes)
ALL = ("real", "symbolic", "aot", "aot_dyn")
TRAIN = ("train_fw", "train_bw")  # captured together, by capture_train
TRAIN_DYN = TRAIN + ("train_dyn_fw", "train_dyn_bw")  # and with dynamic=True


def program(name, modes=ALL):
    def register(make_inputs):
        def wrap(fn):
            PROGRAMS.append((name, fn, make_inputs, modes))
            return fn
        return wrap
    return register


def rnd(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    if dtype == torch.bool:
        return torch.rand(*shape) > 0.5
    if not dtype.is_floating_point:
        return torch.randint(int(lo) if lo > -100 else -5, int(hi) + 1 if hi < 100 else 6,
                             shape, dtype=dtype)
    return (torch.rand(*shape, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def pos(*shape, dtype=torch.float32):
    return rnd(*shape, dtype=dtype, lo=0.1, hi=3.0)


# ---------------------------------------------------------------- pointwise
UNARY = {
    "sin": (torch.sin, rnd), "cos": (torch.cos, rnd), "tan": (torch.tan, rnd),
    "tanh": (torch.tanh, rnd), "exp": (torch.exp, rnd), "log": (torch.log, pos),
    "sqrt": (torch.sqrt, pos), "rsqrt": (torch.rsqrt, pos),
    "sigmoid": (torch.sigmoid, rnd), "relu": (torch.relu, rnd),
    "gelu": (F.gelu, rnd), "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), rnd),
    "silu": (F.silu, rnd), "abs": (torch.abs, rnd), "neg": (torch.neg, rnd),
    "floor": (torch.floor, rnd), "ceil": (torch.ceil, rnd), "round": (torch.round, rnd),
    "trunc": (torch.trunc, rnd), "sign": (torch.sign, rnd), "erf": (torch.erf, rnd),
    "reciprocal": (torch.reciprocal, pos), "asin": (torch.asin, lambda *s: rnd(*s, lo=-0.9, hi=0.9)),
    "acos": (torch.acos, lambda *s: rnd(*s, lo=-0.9, hi=0.9)), "atan": (torch.atan, rnd),
    "sinh": (torch.sinh, rnd), "cosh": (torch.cosh, rnd), "asinh": (torch.asinh, rnd),
    "acosh": (torch.acosh, lambda *s: rnd(*s, lo=1.1, hi=3.0)),
    "atanh": (torch.atanh, lambda *s: rnd(*s, lo=-0.9, hi=0.9)),
    "log2": (torch.log2, pos), "log10": (torch.log10, pos), "log1p": (torch.log1p, pos),
    "expm1": (torch.expm1, rnd), "exp2": (torch.exp2, rnd), "square": (torch.square, rnd),
    "isnan": (lambda x: torch.isnan(x.log()), rnd), "isinf": (lambda x: torch.isinf(1 / x.round()), rnd),
    "isfinite": (lambda x: torch.isfinite(1 / x.round()), rnd),
    "logical_not": (torch.logical_not, rnd), "hardtanh": (F.hardtanh, rnd),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), rnd), "elu": (F.elu, rnd),
    "nan_to_num": (lambda x: torch.nan_to_num(x.log(), nan=0.5, posinf=9.0), rnd),
    "hardsigmoid": (F.hardsigmoid, rnd), "softplus": (F.softplus, rnd),
}
def _unary(fn):
    return lambda x: (fn(x),)


for _name, (_fn, _make) in UNARY.items():
    program(f"unary_{_name}")(lambda _make=_make: [_make(3, 4)])(_unary(_fn))

DTYPES = {"f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
          "i64": torch.int64, "i32": torch.int32, "i16": torch.int16,
          "i8": torch.int8, "u8": torch.uint8, "b8": torch.bool}
for _tag, _dt in DTYPES.items():
    if _dt.is_floating_point:
        program(f"dtype_{_tag}_pointwise")(lambda _dt=_dt: [rnd(3, 5, dtype=_dt), rnd(5, dtype=_dt)])(
            lambda x, y: (x * y + 1.5, torch.tanh(x) - y, (x > y), x.sum(1), x.to(torch.float32)))
    elif _dt == torch.bool:
        program(f"dtype_{_tag}_logic")(lambda _dt=_dt: [rnd(3, 5, dtype=_dt), rnd(3, 5, dtype=_dt)])(
            lambda x, y: (x & y, x | y, x ^ y, ~x, x.sum(), torch.where(x, 1, 2)))
    else:
        program(f"dtype_{_tag}_arith")(lambda _dt=_dt: [rnd(3, 5, dtype=_dt, lo=1, hi=9), rnd(5, dtype=_dt, lo=1, hi=4)])(
            lambda x, y: (x + y, x * 3, x // y, x % y, x.sum(0), x.max(1).values, x > y, x / y))


@program("binary_alpha_broadcast")(lambda: [rnd(2, 3, 4), rnd(3, 1)])
def _(x, y):
    return torch.add(x, y, alpha=2), torch.sub(x, y, alpha=0.5), x * y, x / y


@program("binary_scalars")(lambda: [rnd(4, 5)])
def _(x):
    return x + 2, 3 - x, x * 0.25, x / 3, x ** 2, 2 ** x, x.pow(0.5)


@program("div_rounding")(lambda: [rnd(4, 5, lo=-9, hi=9), rnd(4, 5, lo=0.5, hi=3)])
def _(x, y):
    return torch.div(x, y, rounding_mode="floor"), torch.div(x, y, rounding_mode="trunc"), x % y, torch.fmod(x, y)


@program("int_division")(lambda: [rnd(4, 5, dtype=torch.int64, lo=-9, hi=9), rnd(4, 5, dtype=torch.int64, lo=1, hi=4)])
def _(x, y):
    return x // y, x % y, torch.div(x, y, rounding_mode="trunc"), torch.floor_divide(x, 2), x / y


@program("compare_and_logic")(lambda: [rnd(3, 4), rnd(3, 4)])
def _(x, y):
    a = x > y
    b = x <= 0.5
    return a, b, x == y, x != y, a & b, a | b, torch.logical_xor(a, b), torch.logical_and(x, y)


@program("minmax_clamp")(lambda: [rnd(3, 4), rnd(3, 4)])
def _(x, y):
    return torch.maximum(x, y), torch.minimum(x, y), x.clamp(-0.5, 0.5), x.clamp(min=0), torch.fmax(x, y), torch.fmin(x, y)


@program("where_forms")(lambda: [rnd(3, 4), rnd(3, 4)])
def _(x, y):
    c = x > 0
    return torch.where(c, x, y), torch.where(c, x, 0.0), torch.where(c, 1.0, y), torch.where(c, 2.0, -1.0)


@program("lerp_addcmul")(lambda: [rnd(3, 4), rnd(3, 4), rnd(3, 4)])
def _(x, y, z):
    return torch.lerp(x, y, 0.3), torch.lerp(x, y, z.sigmoid()), torch.addcmul(x, y, z, value=0.5), torch.addcdiv(x, y, z.abs() + 1)


@program("atan2_pow")(lambda: [rnd(3, 4), pos(3, 4)])
def _(x, y):
    return torch.atan2(x, y), torch.pow(y, x), torch.pow(y, 2.5), torch.hypot(x, y) if hasattr(torch, "hypot") else x


@program("bitwise_ints")(lambda: [rnd(3, 4, dtype=torch.int32, lo=0, hi=60), rnd(3, 4, dtype=torch.int32, lo=0, hi=60)])
def _(x, y):
    return x & y, x | y, x ^ y, ~x, x << 2, y >> 1


@program("masked_fill")(lambda: [rnd(3, 4)])
def _(x):
    return x.masked_fill(x > 0, 0.0), x.masked_fill(x < -1, float("-inf")).softmax(-1)


@program("triangular")(lambda: [rnd(4, 5)])
def _(x):
    return torch.tril(x), torch.triu(x, 1), torch.tril(x, -1)


# ---------------------------------------------------------------- reductions
@program("reduce_sum_mean")(lambda: [rnd(3, 4, 5)])
def _(x):
    return x.sum(), x.sum(1), x.sum((0, 2), keepdim=True), x.mean(-1), x.mean((0, 1))


@program("reduce_max_min_arg")(lambda: [rnd(3, 4, 5)])
def _(x):
    return x.amax(1), x.amin((0, 2)), x.argmax(2), x.argmin(), x.max(1).values, x.max(1).indices, x.min(0).values


@program("reduce_prod_var_std")(lambda: [rnd(3, 4, 5, lo=0.5, hi=1.5)])
def _(x):
    return x.prod(1), x.prod(), x.var(1), x.var(0, unbiased=False), x.std(2), torch.var_mean(x, 1)


@program("reduce_logsumexp_norm")(lambda: [rnd(3, 4, 5)])
def _(x):
    return torch.logsumexp(x, 1), torch.linalg.vector_norm(x, dim=-1), x.norm(), torch.linalg.vector_norm(x, ord=1, dim=0)


@program("reduce_any_all")(lambda: [rnd(3, 4, 5)])
def _(x):
    b = x > 1
    return b.any(), b.any(1), b.all(2), (x < 2).all()


@program("softmaxes")(lambda: [rnd(3, 4, 5)])
def _(x):
    return x.softmax(-1), x.log_softmax(1), F.softmax(x, 0)


@program("scans")(lambda: [rnd(3, 4, lo=0.5, hi=1.5)])
def _(x):
    return x.cumsum(1), x.cumprod(0), torch.cumsum(x, -1, dtype=torch.float64)


@program("logcumsumexp")(lambda: [rnd(3, 4, lo=-3.0, hi=3.0) * torch.tensor([1.0, 1.0, 400.0, 1.0])])
def _(x):
    return torch.logcumsumexp(x, 1), x.logcumsumexp(0), torch.logcumsumexp(x.double(), -1)


@program("sort_topk")(lambda: [torch.randperm(20).reshape(4, 5).float()])
def _(x):
    s = torch.sort(x, 1)
    d = torch.sort(x, 0, descending=True)
    t = torch.topk(x, 2)
    return s.values, s.indices, d.values, d.indices, t.values, t.indices


# ---------------------------------------------------------------- views
@program("views_chain")(lambda: [rnd(2, 3, 4)])
def _(x):
    return x.transpose(0, 2).contiguous(), x.permute(2, 0, 1).reshape(4, 6), x.view(6, 4)[1:5:2], x.flatten(1)


@program("views_as_outputs")(lambda: [rnd(4, 6)])
def _(x):
    return x.t(), x[1], x[:, 2:5], x.view(2, 12), x.unsqueeze(0), x.narrow(1, 1, 3)


@program("select_slice_squeeze")(lambda: [rnd(1, 5, 1, 4)])
def _(x):
    return x.squeeze(), x.squeeze(0), x[0, :, 0], x[..., -1], x.unsqueeze(-1).expand(1, 5, 1, 4, 3).sum(-1)


@program("diagonal_expand")(lambda: [rnd(4, 4), rnd(4, 1)])
def _(x, y):
    return torch.diagonal(x), torch.diagonal(x, 1), y.expand(4, 3) + 1, x.diag_embed().sum(0) if hasattr(x, "diag_embed") else x


@program("split_chunk_unbind")(lambda: [rnd(6, 4)])
def _(x):
    a, b, c = x.split(2)
    d, e = x.chunk(2, 1)
    f = x.unbind(1)
    return a + b * c, d - e, f[0] * f[3], torch.split(x, [1, 5])[1]


@program("cat_stack")(lambda: [rnd(2, 3), rnd(4, 3), rnd(2, 3)])
def _(x, y, z):
    return torch.cat([x, y, z]), torch.stack([x, z], 1), torch.cat([x, z], -1), torch.hstack([x, z])


@program("flip_repeat_roll")(lambda: [rnd(3, 4)])
def _(x):
    return x.flip(0), x.flip((0, 1)), x.repeat(2, 1), x.repeat(1, 2, 2), torch.roll(x, 1, 0)


@program("index_gather")(lambda: [rnd(5, 4), torch.tensor([3, 0, 2]), torch.randint(0, 4, (5, 2))])
def _(x, i, j):
    return x[i], x[:, i[:2]], torch.gather(x, 1, j), torch.index_select(x, 0, i), x[i, j[:3, 0]]


@program("scatter_family")(lambda: [rnd(5, 4), torch.randint(0, 5, (3, 4)), rnd(3, 4)])
def _(x, i, s):
    return (x.scatter(0, i, s), x.scatter_add(0, i, s), x.scatter_reduce(0, i, s, "amax"),
            x.scatter_reduce(0, i, s, "mean", include_self=False), x.index_add(0, i[:, 0], s))


@program("index_put")(lambda: [rnd(5, 4), torch.tensor([1, 3]), rnd(2, 4)])
def _(x, i, v):
    y = x.clone()
    y[i] = v
    z = x.index_put((i,), v, accumulate=True)
    return y, z


@program("masked_ops")(lambda: [rnd(4, 5)])
def _(x):
    m = x > 0
    return x.masked_scatter(m, torch.arange(20.0).reshape(4, 5)), torch.where(m, x, x * 0)


@program("constant_pad")(lambda: [rnd(2, 3, 4)])
def _(x):
    return F.pad(x, (1, 2)), F.pad(x, (1, 1, 2, 0), value=0.5), F.pad(x, (-1, 1))


# ---------------------------------------------------------------- creation
@program("creation_like")(lambda: [rnd(3, 4)])
def _(x):
    return (torch.zeros_like(x), torch.ones_like(x) * 2, torch.full_like(x, 7), x.new_zeros(2, 3),
            x.new_ones(4), x.new_full((2,), 3.5), torch.empty_like(x).fill_(1.0))


@program("creation_ranges")(lambda: [rnd(5)])
def _(x):
    return x + torch.arange(5), torch.arange(1, 11, 2.0), torch.linspace(0, 1, 5) * x, torch.eye(3) if hasattr(torch, "eye") else x


@program("tensor_constant")(lambda: [rnd(3)])
def _(x):
    return x * torch.tensor([1.0, 2.0, 3.0]) + torch.tensor(0.5), x.sum() + torch.tensor([4.0, 5.0, 6.0])


@program("casts")(lambda: [rnd(3, 4, lo=-9, hi=9)])
def _(x):
    return x.to(torch.int32), x.half(), x.bfloat16(), x.to(torch.float64) * 3, x.to(torch.uint8), x.bool(), x.int().float()


# ---------------------------------------------------------------- mutation
@program("inplace_chain")(lambda: [rnd(3, 4)])
def _(x):
    y = x.clone()
    y.mul_(2).add_(1).relu_()
    y.sub_(0.5).clamp_(max=2)
    return (y,)


@program("mutate_input")(lambda: [rnd(3, 4), rnd(3, 4)])
def _(x, y):
    x.add_(y)
    y.mul_(2)
    return (x * y,)


@program("mutate_through_view")(lambda: [rnd(4, 5)])
def _(x):
    x[1].add_(10)
    x[:, 2:4].mul_(2)
    x.t()[0].zero_()
    return (x.sum(0),)


@program("mutate_transposed_view")(lambda: [rnd(3, 4)])
def _(x):
    v = x.t()
    v.mul_(3)
    return (v + 1,)


@program("sgd_momentum")(lambda: [rnd(8, 4), rnd(8, 4), rnd(8, 4)])
def _(param, grad, buf):
    buf.mul_(0.9).add_(grad)
    param.add_(buf, alpha=-0.1)
    return (param.norm(),)


@program("adam_by_hand")(lambda: [rnd(6, 5), rnd(6, 5), torch.zeros(6, 5), torch.zeros(6, 5)])
def _(p, g, m, v):
    b1, b2, lr, eps = 0.9, 0.999, 1e-2, 1e-8
    m.mul_(b1).add_(g, alpha=1 - b1)
    v.mul_(b2).addcmul_(g, g, value=1 - b2)
    mh = m / (1 - b1)
    vh = v / (1 - b2)
    p.sub_(lr * mh / (vh.sqrt() + eps))
    return ()


@program("aliasing_outputs")(lambda: [rnd(4, 6)])
def _(x):
    y = x * 2
    return y, y.view(24), y[1:], x.t(), x


@program("copy_and_fill")(lambda: [rnd(3, 4), rnd(4)])
def _(x, y):
    z = torch.empty(3, 4)
    z.copy_(y)
    x[0].fill_(2.5)
    return z, x.sum()


# ---------------------------------------------------------------- linear algebra and nn
@program("matmul_family")(lambda: [rnd(3, 4), rnd(4, 5), rnd(2, 3, 4), rnd(2, 4, 5), rnd(5)])
def _(a, b, c, d, bias):
    return a @ b, torch.bmm(c, d), torch.addmm(bias, a, b), c @ d, torch.baddbmm(bias, c, d, beta=0.5), a @ b[:, 0]


@program("mlp")(lambda: [rnd(8, 16), rnd(32, 16) * 0.2, rnd(32), rnd(4, 32) * 0.2, rnd(4)])
def _(x, w1, b1, w2, b2):
    return (F.linear(F.relu(F.linear(x, w1, b1)), w2, b2).log_softmax(-1),)


@program("mlp_gelu_dropout_eval")(lambda: [rnd(4, 8), rnd(8, 8) * 0.3])
def _(x, w):
    h = F.gelu(x @ w)
    return (F.dropout(h, 0.5, training=False) + x,)


@program("layer_norm")(lambda: [rnd(2, 3, 8), rnd(8), rnd(8)])
def _(x, w, b):
    return F.layer_norm(x, (8,), w, b), F.layer_norm(x, (3, 8))


@program("rms_norm_by_hand")(lambda: [rnd(2, 3, 8), pos(8)])
def _(x, w):
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,)


@program("group_norm")(lambda: [rnd(2, 6, 3, 3), rnd(6), rnd(6)])
def _(x, w, b):
    return (F.group_norm(x, 3, w, b),)


@program("batch_norm_eval")(lambda: [rnd(2, 3, 4, 4), rnd(3), pos(3), rnd(3), rnd(3)])
def _(x, mean, var, w, b):
    return (F.batch_norm(x, mean, var, w, b, training=False),)


@program("batch_norm_train")(lambda: [rnd(4, 3, 2, 2), torch.zeros(3), torch.ones(3), rnd(3), rnd(3)])
def _(x, mean, var, w, b):
    return (F.batch_norm(x, mean, var, w, b, training=True, momentum=0.1),)


@program("conv2d_block")(lambda: [rnd(2, 3, 8, 8), rnd(4, 3, 3, 3) * 0.3, rnd(4), rnd(4), pos(4), rnd(4), rnd(4)])
def _(x, w, b, mean, var, g, beta):
    y = F.conv2d(x, w, b, padding=1)
    y = F.batch_norm(y, mean, var, g, beta, training=False)
    y = F.relu(y)
    return (F.max_pool2d(y, 2),)


@program("conv2d_options")(lambda: [rnd(1, 4, 7, 7), rnd(4, 2, 3, 3) * 0.3])
def _(x, w):
    return (F.conv2d(x, w, stride=2, padding=1, dilation=1, groups=2), F.conv2d(x, w[:, :, :2, :2].repeat(1, 2, 1, 1), dilation=2))


@program("conv1d_conv3d")(lambda: [rnd(2, 3, 10), rnd(4, 3, 3) * 0.3, rnd(1, 2, 4, 4, 4), rnd(3, 2, 2, 2, 2) * 0.3])
def _(x, w, v, k):
    return F.conv1d(x, w, padding=2, stride=2), F.conv3d(v, k, padding=1)


@program("conv_transpose")(lambda: [rnd(1, 4, 5, 5), rnd(4, 2, 3, 3) * 0.3, rnd(2)])
def _(x, w, b):
    return (F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),)


@program("pooling")(lambda: [rnd(1, 2, 7, 7)])
def _(x):
    return (F.max_pool2d(x, 3, 2, 1, ceil_mode=True), F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
            F.avg_pool2d(x, 2, ceil_mode=True), F.adaptive_avg_pool2d(x, (3, 2)), F.adaptive_avg_pool2d(x, 1))


@program("max_pool_indices")(lambda: [rnd(1, 2, 6, 6)])
def _(x):
    return F.max_pool2d(x, 2, return_indices=True)


@program("upsample")(lambda: [rnd(1, 2, 3, 4)])
def _(x):
    return (F.interpolate(x, scale_factor=2, mode="nearest"), F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False),
            F.interpolate(x, size=(6, 6), mode="bilinear", align_corners=True))


@program("reflect_replicate_pad")(lambda: [rnd(1, 2, 4, 5)])
def _(x):
    return F.pad(x, (1, 2, 2, 1), mode="reflect"), F.pad(x, (2, 1, 1, 2), mode="replicate"), F.pad(x[0], (2, 2), mode="reflect")


@program("embedding")(lambda: [rnd(10, 4), torch.tensor([[1, 3, 5], [9, 0, 3]])])
def _(w, i):
    return F.embedding(i, w), F.embedding(i, w).sum(1)


@program("embedding_bag")(lambda: [rnd(10, 4), torch.tensor([1, 3, 5, 9, 0, 3]), torch.tensor([0, 2])])
def _(w, i, o):
    return F.embedding_bag(i, w, o, mode="sum"), F.embedding_bag(i, w, o, mode="max")


@program("cdist")(lambda: [rnd(4, 3), rnd(5, 3)])
def _(x, y):
    return torch.cdist(x, y), torch.cdist(x, y, p=1), F.pdist(x)


@program("grid_sample")(lambda: [rnd(1, 2, 4, 5), rnd(1, 3, 3, 2, lo=-1.1, hi=1.1)])
def _(x, g):
    return F.grid_sample(x, g, align_corners=False), F.grid_sample(x, g, mode="nearest", padding_mode="border", align_corners=True)


@program("attention_masked")(lambda: [rnd(2, 4, 8), rnd(2, 4, 8), rnd(2, 4, 8)])
def _(q, k, v):
    s = q @ k.transpose(-2, -1) / 8 ** 0.5
    mask = torch.ones(4, 4).tril().bool()
    s = s.masked_fill(~mask, float("-inf"))
    return (s.softmax(-1) @ v,)


@program("sdpa")(lambda: [rnd(1, 2, 4, 8), rnd(1, 2, 4, 8), rnd(1, 2, 4, 8)])
def _(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True), F.scaled_dot_product_attention(q, k, v)


@program("transformer_block")(lambda: [rnd(2, 4, 8), rnd(24, 8) * 0.3, rnd(8, 8) * 0.3, rnd(16, 8) * 0.3, rnd(8, 16) * 0.3,
                                       pos(8), rnd(8), pos(8), rnd(8)])
def _(x, wqkv, wo, w1, w2, g1, b1, g2, b2):
    h = F.layer_norm(x, (8,), g1, b1)
    q, k, v = (h @ wqkv.t()).split(8, -1)
    q = q.view(2, 4, 2, 4).transpose(1, 2)
    k = k.view(2, 4, 2, 4).transpose(1, 2)
    v = v.view(2, 4, 2, 4).transpose(1, 2)
    att = (q @ k.transpose(-2, -1) / 2.0).masked_fill(torch.ones(4, 4).triu(1).bool(), float("-inf")).softmax(-1)
    o = (att @ v).transpose(1, 2).reshape(2, 4, 8) @ wo.t()
    x = x + o
    return (x + F.gelu(F.layer_norm(x, (8,), g2, b2) @ w1.t()) @ w2.t(),)


# The benchmark's BERT encoder layer and GPT-2 decoder (tools/examples), at
# small sizes: nn.Linear and Conv1D projections, SDPA (causal for GPT-2),
# layer norms, gelu (erf and tanh); GPT-2 in bf16.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import capture_examples  # noqa: E402


def _bert_inputs(d=8, mlp=16):
    lin = lambda o, i: [rnd(o, i) * (1 / i ** 0.5), rnd(o) * 0.1]
    return ([rnd(2, 4, d)] + lin(d, d) * 4 + [pos(d), rnd(d)] + lin(mlp, d) + lin(d, mlp)
            + [pos(d), rnd(d)])


@program("bert_layer", modes=("real", "aot"))(_bert_inputs)
def _(*args):
    return capture_examples.bert_layer(*args, heads=2)


def _gpt2_inputs(layers=2, d=8):
    per_layer = lambda: [pos(d), rnd(d), rnd(d, 3 * d) * (1 / d ** 0.5), rnd(3 * d) * 0.1,
                         rnd(d, d) * (1 / d ** 0.5), rnd(d) * 0.1, pos(d), rnd(d),
                         rnd(d, 4 * d) * (1 / d ** 0.5), rnd(4 * d) * 0.1,
                         rnd(4 * d, d) * (1 / (4 * d) ** 0.5), rnd(d) * 0.1]
    ts = [rnd(2, 4, d)] + sum((per_layer() for _ in range(layers)), []) + [pos(d), rnd(d)]
    return [t.bfloat16() for t in ts]


@program("gpt2_bf16", modes=("real",))(_gpt2_inputs)
def _(*args):
    return capture_examples.gpt2(*args, heads=2)


@program("cross_entropy")(lambda: [rnd(4, 5), torch.tensor([1, 0, 4, 2])])
def _(logits, target):
    return F.cross_entropy(logits, target), F.nll_loss(logits.log_softmax(-1), target, reduction="sum")


@program("losses")(lambda: [rnd(4, 5), rnd(4, 5)])
def _(x, y):
    return F.mse_loss(x, y), F.l1_loss(x, y), F.smooth_l1_loss(x, y), F.binary_cross_entropy_with_logits(x, y.sigmoid())


# ---------------------------------------------------------------- training (forward and backward graphs)
@program("train_activations", modes=TRAIN)(lambda: [rnd(4, 6, lo=-4.0, hi=4.0)])
def _(x):
    return (F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x), F.relu(x), torch.sigmoid(x), torch.tanh(x),
            F.hardtanh(x), F.relu6(x * 2), F.leaky_relu(x, 0.2), F.elu(x), F.selu(x), F.celu(x, 0.5),
            F.softplus(x), F.softplus(x, beta=2.0, threshold=3.0), F.hardswish(x), F.hardsigmoid(x), F.mish(x))


@program("train_mlp", modes=TRAIN_DYN)(lambda: [rnd(8, 6), rnd(16, 6) * 0.4, rnd(16) * 0.1, rnd(3, 16) * 0.3, rnd(3) * 0.1,
                                            rnd(8, 3)])
def _(x, w1, b1, w2, b2, y):
    h = F.silu(F.linear(x, w1, b1))
    return (F.mse_loss(F.linear(h, w2, b2), y),)


@program("train_mlp_bf16", modes=TRAIN_DYN)(lambda: [t.bfloat16() for t in (
    rnd(8, 6), rnd(16, 6) * 0.4, rnd(16) * 0.1, rnd(3, 16) * 0.3, rnd(3) * 0.1, rnd(8, 3))])
def _(x, w1, b1, w2, b2, y):
    h = F.gelu(F.linear(x, w1, b1))
    return (F.mse_loss(F.linear(h, w2, b2), y),)


@program("train_softmax", modes=TRAIN)(lambda: [rnd(3, 5, 7), rnd(3, 5, 7)])
def _(x, w):
    return (F.softmax(x, -1) * w, F.log_softmax(x, 1) * w)


@program("train_cross_entropy", modes=TRAIN_DYN)(lambda: [rnd(6, 5), torch.tensor([1, 0, 4, 2, 3, 1]), pos(5)])
def _(logits, target, weight):
    weight = weight.detach()  # nll_loss is not differentiable in its weight
    return (F.cross_entropy(logits, target), F.cross_entropy(logits, target, weight=weight, ignore_index=3),
            F.cross_entropy(logits, target, reduction="sum"), F.cross_entropy(logits, target, reduction="none"))


@program("train_losses", modes=TRAIN)(lambda: [rnd(4, 5), rnd(4, 5), pos(4, 5) / 3.0])
def _(x, y, p):
    return (F.mse_loss(x, y, reduction="sum"), F.smooth_l1_loss(x, y, beta=0.5), F.huber_loss(x, y, delta=0.7),
            F.binary_cross_entropy(torch.sigmoid(x), p.clamp(0, 1)))


# The inputs of a training program that do not require grad (running
# statistics), by program.
TRAIN_NO_GRAD = {"train_cnn_batch_norm": (5, 6)}


@program("train_cnn_batch_norm", modes=TRAIN)(lambda: [rnd(4, 3, 8, 8), rnd(6, 3, 3, 3) * 0.3, pos(6), rnd(6) * 0.1,
                                                       rnd(5, 6 * 4 * 4) * 0.1, torch.zeros(6), torch.ones(6),
                                                       torch.tensor([1, 0, 4, 2])])
def _(x, w, gamma, beta, fc, running_mean, running_var, target):
    h = F.conv2d(x, w, padding=1)
    h = F.batch_norm(h, running_mean, running_var, gamma, beta, training=True, momentum=0.1)
    h = F.max_pool2d(F.relu(h), 2)
    return (F.cross_entropy(h.flatten(1) @ fc.t(), target),)


@program("train_embedding_layer_norm", modes=TRAIN)(lambda: [rnd(10, 8) * 0.5, torch.tensor([[1, 2, 3], [4, 5, 9]]), pos(8),
                                                             rnd(8) * 0.1, torch.tensor([0, 5, 9, 1, 2, 3])])
def _(emb, idx, g, b, target):
    h = F.layer_norm(F.embedding(idx, emb), (8,), g, b)
    return (F.cross_entropy(F.gelu(h).reshape(6, 8) @ emb.t(), target),)


@program("train_embedding_bag", modes=TRAIN)(lambda: [rnd(10, 4), torch.tensor([1, 3, 5, 9, 0, 3, 3, 7]),
                                                      torch.tensor([0, 2, 2, 5]), torch.tensor([0, 2, 8]), rnd(8)])
def _(w, i, o, o2, s):
    return (F.embedding_bag(i, w, o, mode="sum", per_sample_weights=s),
            F.embedding_bag(i, w, o, mode="mean", scale_grad_by_freq=True),
            F.embedding_bag(i, w, o, mode="max", padding_idx=3),
            F.embedding_bag(i, w, o2, mode="sum", include_last_offset=True),
            F.embedding_bag(i, w, o, mode="sum", padding_idx=9))


@program("train_grid_sample", modes=TRAIN)(lambda: [rnd(2, 3, 5, 6), rnd(2, 4, 7, 2, lo=-1.3, hi=1.3)])
def _(x, g):
    return (F.grid_sample(x, g, align_corners=False), F.grid_sample(x, g, padding_mode="border", align_corners=True),
            F.grid_sample(x, g, padding_mode="reflection"), F.grid_sample(x, g, mode="nearest"))


@program("train_transformer_sdpa", modes=TRAIN_DYN)(lambda: [rnd(2, 4, 8), rnd(24, 8) * 0.3, rnd(8, 8) * 0.3, rnd(16, 8) * 0.3,
                                                         rnd(8, 16) * 0.3, pos(8), rnd(8) * 0.1])
def _(x, wqkv, wo, w1, w2, g, b):
    h = F.layer_norm(x, (8,), g, b)
    q, k, v = (h @ wqkv.t()).split(8, -1)
    q, k, v = (t.view(2, 4, 2, 4).transpose(1, 2) for t in (q, k, v))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(2, 4, 8) @ wo.t()
    x = x + o
    return (x + F.gelu(x @ w1.t()) @ w2.t(),)


@program("train_scans_and_reductions", modes=TRAIN)(lambda: [rnd(3, 5)])
def _(x):
    return (torch.cumsum(x, 1), torch.cumprod(x, 1), x.amax(1), x.max(0)[0],
            x.norm(dim=1), x.var(1), x.std(0), x.prod(1), x.abs().mean(), x.clamp(-0.5, 0.5), x.flip(0).roll(1, 1),
            torch.cat([x, x * 2]).gather(0, torch.tensor([[0, 1, 2, 3, 4]])), x.topk(2, 1)[0], x.sort(1)[0])


@program("train_logcumsumexp", modes=TRAIN_DYN)(lambda: [rnd(3, 5, lo=-2.0, hi=2.0)])
def _(x):
    return (torch.logcumsumexp(x, 1), torch.logcumsumexp(x * 2, 0))


@program("train_pools_and_resampling", modes=TRAIN)(lambda: [rnd(2, 3, 6, 6)])
def _(x):
    return (F.avg_pool2d(x, 2), F.adaptive_avg_pool2d(x, 1), F.max_pool2d(x, 3, 2, 1),
            F.interpolate(x, scale_factor=2, mode="nearest"),
            F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
            F.pad(x, (1, 2, 1, 2), mode="reflect"), F.pad(x, (1, 1, 2, 2), mode="replicate"), F.pad(x, (1, 1)))


@program("train_pools_3d_and_1d", modes=TRAIN)(lambda: [rnd(2, 3, 5, 6, 4), rnd(2, 3, 9)])
def _(x, y):
    return (F.avg_pool3d(x, 2), F.avg_pool3d(x, (3, 2, 2), (2, 2, 1), (1, 1, 0), ceil_mode=True, count_include_pad=False),
            F.avg_pool3d(x, 3, 1, 1, divisor_override=5), F.avg_pool1d(y, 3, 2, 1))


@program("train_max_pool3d", modes=TRAIN)(lambda: [rnd(2, 3, 5, 6, 4)])
def _(x):
    return (F.max_pool3d(x, 2), F.max_pool3d(x, (3, 2, 2), (2, 1, 2), (1, 1, 0), (1, 2, 1), ceil_mode=True),
            F.max_pool3d(x.to(memory_format=torch.channels_last_3d), 3, 2, 1))


@program("train_cross_entropy_2d", modes=TRAIN)(lambda: [rnd(2, 3, 4, 4), torch.tensor([[[0, 1, 2, 1]] * 4, [[2, 2, 0, 1]] * 4])])
def _(x, t):
    return (F.cross_entropy(x, t),)


# ---------------------------------------------------------------- symbolic sizes, data-dependent values
@program("sym_size_arith")(lambda: [rnd(6, 4)])
def _(x):
    n = x.shape[0]
    return x.view(n * 2, -1), x[: n // 2], x.new_zeros(n, 2) + n, torch.arange(n) * 2


@program("sym_reshape_cat")(lambda: [rnd(4, 6), rnd(2, 6)])
def _(x, y):
    z = torch.cat([x, y])
    return z.reshape(-1, 3), z.sum(0) / z.shape[0]


@program("item_scalar", modes=("symbolic", "aot", "aot_dyn"))(lambda: [rnd(3, 4)])
def _(x):
    s = x.sum().item()
    return (x * s, x + x.max().item())


@program("item_to_size", modes=("symbolic", "aot", "aot_dyn"))(lambda: [rnd(3), torch.tensor(4)])
def _(x, n):
    k = n.item()
    return x.new_zeros(k) + 1, x * k


@program("item_slice", modes=("aot", "aot_dyn"))(lambda: [rnd(6), torch.tensor(3)])
def _(x, n):
    return (x[: n.item()] * 2,)


@program("sgd_param_list")(lambda: [[rnd(4, 3), rnd(3)], [rnd(4, 3), rnd(3)]])
def _(params, grads):
    for p, g in zip(params, grads):
        p.sub_(g * 0.1)
    return [p.sum() for p in params]


@program("nonzero_data_dependent", modes=("symbolic", "aot", "aot_dyn"))(lambda: [rnd(4, 5)])
def _(x):
    return (torch.nonzero(x > 0),)


@program("float_arg", modes=("aot", "aot_dyn"))(lambda: [rnd(3, 4), 2.5])
def _(x, s):
    return (x * s + s,)


@program("int_arg", modes=("aot", "aot_dyn"))(lambda: [rnd(3, 4), 3])
def _(x, n):
    return (x.repeat(n, 1) * n,)


@program("grad_disabled_region")(lambda: [rnd(3, 4)])
def _(x):
    with torch.no_grad():
        y = x * 2
    return (y + 1,)


@program("transposed_input")(lambda: [rnd(4, 3).t()])
def _(x):
    return x @ x.t(), x.sum(0)


@program("channels_last_input")(lambda: [rnd(1, 3, 4, 4).to(memory_format=torch.channels_last), rnd(2, 3, 1, 1)])
def _(x, w):
    return (F.conv2d(x, w).relu(),)


# ---------------------------------------------------------------- families real graphs carry (issue 25)
@program("batch_norm_train_no_affine")(lambda: [rnd(4, 3, 5), rnd(3), pos(3)])
def _(x, mean, var):
    return (F.batch_norm(x, mean, var, None, None, training=True, momentum=0.3),)


@program("batch_norm_train_no_stats")(lambda: [rnd(4, 3, 2, 2), rnd(3), rnd(3)])
def _(x, w, b):
    return (F.batch_norm(x, None, None, w, b, training=True),)


@program("batch_norm_module_train")(lambda: [rnd(6, 4), rnd(4), pos(4), pos(4), rnd(4)])
def _(x, mean, var, w, b):
    y = F.batch_norm(x, mean, var, w, b, training=True, momentum=0.5)
    return (F.relu(y) * 2, mean + 0)


@program("sdpa_heads_merged")(lambda: [rnd(2, 4, 24), rnd(2, 5, 24), rnd(2, 5, 24)])
def _(x, y, z):
    q = x.view(2, 4, 3, 8).transpose(1, 2)
    k = y.view(2, 5, 3, 8).transpose(1, 2)
    v = z.view(2, 5, 3, 8).transpose(1, 2)
    o = F.scaled_dot_product_attention(q, k, v)
    return (o.transpose(1, 2).view(2, 4, 24) * 2, o.sum(-1))


@program("sdpa_causal_view")(lambda: [rnd(1, 6, 8), rnd(1, 6, 8)])
def _(x, kv):
    q = x.view(1, 6, 2, 4).transpose(1, 2)
    k = kv.view(1, 6, 2, 4).transpose(1, 2)
    o = F.scaled_dot_product_attention(q, k, k, is_causal=True, scale=0.3)
    return (o.transpose(1, 2).reshape(1, 6, 8), o.transpose(1, 2).view(1, 6, 8) + 1)


# q, k and v as chunks of one projection (non-dense views), heads merged
# after; under aot_dyn a clone-then-view of a symbolic chunk size
# ((s0 + 2) // 12) relies on the pointwise ops' symbolic layouts.
@program("sdpa_qkv_chunks", modes=("real", "symbolic", "aot", "aot_dyn"))(lambda: [rnd(2, 5, 16), rnd(48, 16) * 0.2, rnd(16, 16) * 0.2])
def _(x, win, wout):
    q, k, v = (x @ win.t()).chunk(3, -1)
    q = q.view(2, 5, 4, 4).transpose(1, 2)
    k = k.view(2, 5, 4, 4).transpose(1, 2)
    v = v.view(2, 5, 4, 4).transpose(1, 2)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return (o.transpose(1, 2).contiguous().view(2, 5, 16) @ wout.t(), o.transpose(1, 2).view(2, 5, 16))


# Separate q/k/v projections, heads split by view/transpose and merged by
# reshape, batch and length symbolic under aot_dyn (the decomposed
# attention lays its output out as the query through symbolic strides).
@program("mha_separate_projections")(lambda: [rnd(3, 7, 16), rnd(16, 16) * .2, rnd(16, 16) * .2, rnd(16, 16) * .2])
def _(x, wq, wk, wv):
    B, L, D = x.shape
    q = (x @ wq.t()).view(B, L, 4, 4).transpose(1, 2)
    k = (x @ wk.t()).view(B, L, 4, 4).transpose(1, 2)
    v = (x @ wv.t()).view(B, L, 4, 4).transpose(1, 2)
    o = F.scaled_dot_product_attention(q, k, v)
    return (o.transpose(1, 2).reshape(B, L, D),)


# A channels-last input through the ops whose CPU kernels allocate in the
# input's suggested memory format: pooling, upsampling (a clone to
# channels_last in the traced graph), batch and group norm.
@program("channels_last_pool_upsample_norm")(lambda: [rnd(2, 4, 6, 6).to(memory_format=torch.channels_last), rnd(4), pos(4)])
def _(x, m, v):
    return (F.interpolate(x, scale_factor=2, mode="nearest") * 2,
            F.interpolate(x, size=(9, 9), mode="bilinear") + 1,
            F.avg_pool2d(x, 2) + 1, F.max_pool2d(x, 2) - 1,
            F.adaptive_avg_pool2d(x, 3) * 3,
            F.batch_norm(x, m, v, training=False) * 2, F.group_norm(x, 2) + 1)


# reflection_pad2d of a channels-last input is channels-last. Not under
# torch.compile: its decomposition into aten.index.Tensor gives a layout
# (TensorIterator over the restrided input) lathe's index meta does not.
@program("channels_last_reflection_pad", modes=("real", "symbolic"))(lambda: [rnd(2, 4, 6, 6).to(memory_format=torch.channels_last)])
def _(x):
    return (F.pad(x, (1, 1, 2, 2), mode="reflect") + 2,)


# Pointwise ops over a transposed input: the result takes its layout.
@program("transposed_pointwise")(lambda: [rnd(5, 6), rnd(6, 5), rnd(5)])
def _(x, y, z):
    return (x.t() * y + z, (x.t() * y).sum(0))


@program("optimizer_group_dict", modes=("real", "symbolic"))(lambda: [{"params": [rnd(3, 2), rnd(2)], "grads": [rnd(3, 2), rnd(2)], "lr": 0.05, "wd": 0.01}])
def _(g):
    return [p - g["lr"] * (d + g["wd"] * p) for p, d in zip(g["params"], g["grads"])]


@program("lr_in_dict", modes=("real", "symbolic"))(lambda: [{"p": rnd(4, 3), "g": rnd(4, 3), "lr": 0.25}])
def _(state):
    return (state["p"] - state["lr"] * state["g"],)


@program("lr_in_list", modes=("real", "symbolic"))(lambda: [[rnd(5), rnd(5), 0.5, 3]])
def _(group):
    p, g, lr, steps = group
    return (p - lr * steps * g, g * lr)


@program("sort_stable")(lambda: [torch.randint(0, 4, (3, 40)).float(), torch.randint(0, 3, (64,))])
def _(x, i):
    a = torch.sort(x, dim=1, stable=True)
    b = torch.sort(x, dim=0, descending=True, stable=True)
    c = torch.sort(i, stable=True)
    return a.values, a.indices, b.values, b.indices, c.values, c.indices


@program("masked_select", modes=("symbolic", "aot", "aot_dyn"))(lambda: [rnd(4, 5), rnd(5)])
def _(x, y):
    return x.masked_select(x > 0), x.masked_select(y > 0.5) * 2


@program("bool_mask_index", modes=("symbolic", "aot", "aot_dyn"))(lambda: [rnd(4, 5), rnd(4)])
def _(x, r):
    return x[x > 0], x[r > 0], x[r > 0].sum(0)


@program("replication_pad1d")(lambda: [rnd(2, 3, 5), rnd(3, 4)])
def _(x, y):
    return F.pad(x, (2, 1), mode="replicate"), F.pad(y, (0, 3), mode="replicate"), F.pad(x, (1, 1), mode="reflect")


@program("scatter_reduce_modes")(lambda: [rnd(5, 4), torch.randint(0, 5, (3, 4)), rnd(3, 4),
                                          torch.randint(-6, 7, (5, 4)), torch.randint(-6, 7, (3, 4))])
def _(x, i, s, xi, si):
    return (x.scatter_reduce(0, i, s, "sum", include_self=False), x.scatter_reduce(0, i, s, "prod", include_self=False),
            x.scatter_reduce(0, i, s, "amin", include_self=False), x.scatter_reduce(0, i, s, "mean"),
            xi.scatter_reduce(0, i, si, "mean"), xi.scatter_reduce(0, i, si, "mean", include_self=False),
            xi.scatter_reduce(0, i, si, "amax", include_self=False), xi.scatter_reduce(0, i, si, "sum", include_self=False),
            xi.scatter_reduce(0, i, si, "amin", include_self=False), xi.scatter_reduce(0, i, si, "prod", include_self=False))


# ------------------------------------------------------------------ capture

def to_numpy(t):
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view("V2")
    return t.numpy()


def save(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(value, torch.Tensor):
        np.save(path, to_numpy(value))
    elif isinstance(value, bool):
        np.save(path, np.array(value))
    elif isinstance(value, int):
        np.save(path, np.array(value, dtype=np.int64))
    elif isinstance(value, float):
        np.save(path, np.array(value, dtype=np.float64))
    else:
        raise TypeError(f"cannot save {type(value)}")


def clone(v):
    """A deep copy of an input (its tensors cloned, lists too)."""
    return pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, v)


def same(a, b):
    if isinstance(a, torch.Tensor):
        return (a.shape == b.shape and a.dtype == b.dtype
                and torch.equal(torch.nan_to_num(a.float(), 7.0), torch.nan_to_num(b.float(), 7.0)))
    return a == b


def placeholders(gm):
    return [n.name for n in gm.graph.nodes if n.op == "placeholder"]


# Ops whose eager kernels write arguments their schemas do not mark:
# native_batch_norm updates its running statistics (arguments 3 and 4) in
# training mode (argument 5).
HIDDEN_WRITES = {"native_batch_norm.default": ((3, 4), 5)}


def schema_written(gm):
    """The placeholders an op of `gm` writes directly (Tensor(a!), or one of
    HIDDEN_WRITES)."""
    out = set()
    for node in gm.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None:
            continue
        hidden = HIDDEN_WRITES.get(f"{schema.name.split('::')[-1]}.{schema.overload_name or 'default'}")
        for i, arg in enumerate(schema.arguments):
            value = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
            if hidden and i in hidden[0]:
                training = node.args[hidden[1]] if hidden[1] < len(node.args) else False
                if training is True and isinstance(value, torch.fx.Node) and value.op == "placeholder":
                    out.add(value.name)
                continue
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            value = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
            if isinstance(value, torch.fx.Node) and value.op == "placeholder":
                out.add(value.name)
    return out


def write_case(root, name, gm, text, flat_args, call):
    """Runs `call` (the graph, eagerly) on copies of `flat_args` and writes
    the case; returns the outputs for checking."""
    names = placeholders(gm)
    if len(names) != len(flat_args):
        raise RuntimeError(f"{len(names)} placeholders but {len(flat_args)} inputs")
    args = [clone(a) for a in flat_args]
    versions = [a._version if isinstance(a, torch.Tensor) else None for a in args]
    outs = call(args)
    outs = pytree.tree_leaves(outs)
    d = os.path.join(root, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "graph.txt"), "w") as f:
        f.write(text.rstrip("\n") + "\n")
    for n, a in zip(names, flat_args):
        if isinstance(a, (torch.Tensor, int, float)):
            save(os.path.join(d, "inputs", n + ".npy"), a)
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            save(os.path.join(d, "inputs", node.target + ".npy"), getattr(gm, node.target))
    k = 0
    for o in outs:
        if o is None:
            k += 1
            continue
        if isinstance(o, torch.SymInt) or isinstance(o, torch.SymFloat):
            o = o.node.hint if hasattr(o.node, "hint") else int(o)
        save(os.path.join(d, "expected", f"out{k}.npy"), o)
        k += 1
    # An input is mutated when its version counter moved, or when an op
    # whose schema writes it (Tensor(a!)) changed its values: some kernels
    # (_native_batch_norm_legit's running stats, native_batch_norm's in
    # training mode: HIDDEN_WRITES) write without bumping the counter.
    written = schema_written(gm)
    for n, a, before, v in zip(names, args, flat_args, versions):
        if not isinstance(a, torch.Tensor):
            continue
        if a._version != v or (n in written and not same(a, before)):
            save(os.path.join(d, "expected", "mutated", n + ".npy"), a)
    return outs


def capture_make_fx(root, name, fn, inputs, mode):
    args = [clone(a) for a in inputs]
    gm = make_fx(fn, tracing_mode=mode)(*args)
    text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    # make_fx's placeholders are the pytree leaves (an int arg too).
    outs = write_case(root, name, gm, text, pytree.tree_leaves(inputs), lambda a: gm(*rebuild(inputs, a)))
    want = pytree.tree_leaves(fn(*[clone(a) for a in inputs]))
    check(name, outs, want)


def rebuild(inputs, flat):
    spec = pytree.tree_structure(inputs)
    return pytree.tree_unflatten(flat, spec)


def capture_aot(root, name, fn, inputs, dynamic):
    from functorch.compile import make_boxed_func
    from torch._decomp import core_aten_decompositions
    from torch._functorch.aot_autograd import aot_module_simplified

    records = []

    def backend(gm, example_inputs):
        def fw(g, _):
            text = g.print_readable(print_output=False, include_stride=True, include_device=True)

            def run(*args):
                records.append((g, text, [clone(a) for a in args]))
                return g(*args)
            return make_boxed_func(run)
        return aot_module_simplified(gm, example_inputs, fw_compiler=fw,
                                     decompositions=core_aten_decompositions())

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, dynamic=dynamic, fullgraph=True)
    with torch.no_grad():
        got = compiled(*[clone(a) for a in inputs])
    if len(records) != 1:
        raise RuntimeError(f"{len(records)} graphs")
    g, text, args = records[0]
    write_case(root, name, g, text, args, lambda a: g(*a))
    want = pytree.tree_leaves(fn(*[clone(a) for a in inputs]))
    check(name, pytree.tree_leaves(got), want)


def capture_train(root, name, fn, inputs, dynamic=False):
    """One training step of `fn` through AOTAutograd (no decompositions):
    writes name__train_fw and name__train_bw, each graph with the values it
    was called with; checks the step's gradients against eager autograd's."""
    from functorch.compile import make_boxed_func
    from torch._functorch.aot_autograd import aot_module_simplified

    records = {}

    def recorder(kind):
        def compiler(g, _):
            text = g.print_readable(print_output=False, include_stride=True, include_device=True)

            def run(*args):
                records[kind] = (g, text, [clone(a) for a in args])
                return g(*args)
            return make_boxed_func(run)
        return compiler

    def backend(gm, example_inputs):
        return aot_module_simplified(gm, example_inputs, fw_compiler=recorder("fw"), bw_compiler=recorder("bw"))

    def leaves(args):
        out = []
        for i, a in enumerate(args):
            a = clone(a)
            if (isinstance(a, torch.Tensor) and a.is_floating_point()
                    and i not in TRAIN_NO_GRAD.get(name, ())):
                a.requires_grad_(True)
            out.append(a)
        return out

    def step(f, args):
        outs = [o for o in pytree.tree_leaves(f(*args)) if isinstance(o, torch.Tensor) and o.requires_grad]
        gen = torch.Generator().manual_seed(7)
        cotangents = [torch.rand(o.shape, generator=gen, dtype=torch.float64).to(o.dtype) - 0.5 for o in outs]
        torch.autograd.backward(outs, cotangents)
        return [a.grad for a in args if isinstance(a, torch.Tensor) and a.requires_grad]

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, dynamic=dynamic, fullgraph=True)
    got = step(compiled, leaves(inputs))
    want = step(fn, leaves(inputs))
    check(name, got, want)
    if set(records) != {"fw", "bw"}:
        raise RuntimeError(f"graphs recorded: {sorted(records)}")
    for kind in ("fw", "bw"):
        g, text, args = records[kind]
        args = [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
        mode = f"train_dyn_{kind}" if dynamic else f"train_{kind}"
        write_case(root, f"{name}__{mode}", g, text, args, lambda a, g=g: g(*a))


def check(name, got, want):
    got = [g for g in got if g is not None]
    want = [w for w in want if w is not None]
    for g, w in zip(got, want):
        if isinstance(w, torch.Tensor) and isinstance(g, torch.Tensor):
            if w.is_floating_point():
                if not torch.allclose(g.double(), w.double(), rtol=1e-2, atol=1e-2, equal_nan=True):
                    raise RuntimeError("captured graph disagrees with the program")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(here, "..", "..", "ir", "testdata", "torch_corpus"))
    parser.add_argument("--only", default="")
    a = parser.parse_args()
    root = os.path.abspath(a.out)
    os.makedirs(root, exist_ok=True)
    made, failed = {}, []
    for name, fn, make_inputs, modes in PROGRAMS:
        if a.only not in name:
            continue
        for mode in modes:
            torch.manual_seed(sum(map(ord, name)))  # the same inputs every run
            inputs = make_inputs()
            case = f"{name}__{mode}"
            try:
                if mode in ("train_bw", "train_dyn_bw"):
                    continue  # written with train_fw, train_dyn_fw
                if mode in ("train_fw", "train_dyn_fw"):
                    capture_train(root, name, fn, inputs, dynamic=mode == "train_dyn_fw")
                    bw = mode.replace("_fw", "_bw")
                    made[bw] = made.get(bw, 0) + 1
                elif mode in ("real", "symbolic"):
                    capture_make_fx(root, case, fn, inputs, mode)
                else:
                    capture_aot(root, case, fn, inputs, dynamic=(mode == "aot_dyn"))
                made[mode] = made.get(mode, 0) + 1
            except Exception as e:  # a program PyTorch cannot trace this way
                shutil.rmtree(os.path.join(root, case), ignore_errors=True)
                failed.append(f"{case}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    print(f"{len({p[0] for p in PROGRAMS})} programs; cases per mode: {made}; total {sum(made.values())}")
    for f in failed:
        print("not captured:", f, file=sys.stderr)


if __name__ == "__main__":
    main()
