# Generates the PyTorch-captured NnOpsTest cases of ir/ops_nn_test.cc and
# ir/ops_embedding_test.cc (a developer tool: run once with PyTorch
# installed, paste the output between the helpers and the error tests;
# nothing builds or tests with it).
#   python3 ir/testdata/make_ops_nn_cases.py > cases.inc
import torch, math
A = torch.ops.aten
torch.backends.mkldnn.enabled = False  # the reference CPU kernels, not oneDNN
DT = {'f32': (torch.float32, 'DType::kFloat32'), 'f64': (torch.float64, 'DType::kFloat64'),
      'i64': (torch.int64, 'DType::kInt64'), 'i32': (torch.int32, 'DType::kInt32'),
      'f16': (torch.float16, 'DType::kFloat16')}
RDT = {v[0]: v[1] for v in DT.values()}

class S:  # Seq tensor
    def __init__(self, sizes, dt='f32', mod=11, off=5, scale=0.5):
        self.sizes, self.dt, self.mod, self.off, self.scale = sizes, dt, mod, off, scale
    def torch(self):
        n = math.prod(self.sizes)
        v = [((i * 7) % self.mod - self.off) * self.scale for i in range(n)]
        return torch.tensor(v, dtype=torch.float64).reshape(self.sizes).to(DT[self.dt][0])
    def cpp(self):
        return f"V(Seq({{{', '.join(map(str, self.sizes))}}}, {DT[self.dt][1]}, {self.mod}, {self.off}, {self.scale}))"

class L:  # literal tensor
    def __init__(self, t):
        self.t = t
    def torch(self):
        return self.t.clone()
    def cpp(self):
        vals = ', '.join(num(x) for x in self.t.double().flatten().tolist())
        return f"V(T({{{', '.join(map(str, self.t.shape))}}}, {{{vals}}}, {RDT[self.t.dtype]}))"

class F:  # float scalar
    def __init__(self, v): self.v = v

def num(x):
    if isinstance(x, bool): return 'true' if x else 'false'
    if isinstance(x, int): return str(x)
    if math.isnan(x): return 'kNaN'
    if math.isinf(x): return 'kInf' if x > 0 else '-kInf'
    r = repr(float(x))
    return r

def arg_cpp(a):
    if isinstance(a, (S, L)): return a.cpp()
    if a is None: return 'Value::None()'
    if isinstance(a, bool): return f"Value::Bool({num(a)})"
    if isinstance(a, int): return f"Value::Int({a})"
    if isinstance(a, float): return f"Value::Float({num(a)})"
    if isinstance(a, list):
        if all(isinstance(x, bool) for x in a): return f"Bools({{{', '.join(num(x) for x in a)}}})"
        if all(isinstance(x, int) for x in a): return f"Ints({{{', '.join(map(str, a))}}})"
        return f"Floats({{{', '.join(num(float(x)) for x in a)}}})"
    raise TypeError(a)

def arg_torch(a):
    if isinstance(a, (S, L)): return a.torch()
    return a

def case(target, args, check_args=(), skip_values=(), tol=None):
    name, overload = target.split('.')
    fn = getattr(getattr(A, name), overload)
    targs = [arg_torch(a) for a in args]
    out = fn(*targs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    lines = ["  {", f"    std::vector<Value> args = {{{', '.join(arg_cpp(a) for a in args)}}};",
             f"    Value r = RunV(\"aten.{target}\", args);"]
    def expect(expr, t, values=True):
        if t is None:
            lines.append(f"    EXPECT_TRUE({expr}.is_none());")
            return
        vals = ', '.join(num(x) for x in t.double().flatten().tolist()) if values else ''
        tl = tol if tol is not None else (1e-2 if t.dtype == torch.float16 else 1e-4)
        lines.append(f"    Expect({expr}, {{{', '.join(map(str, t.shape))}}}, {RDT[t.dtype]}, {{{vals}}}, {tl}, {'true' if values else 'false'});")
    for i, t in enumerate(outs):
        expr = f"Out(r, {i})" if isinstance(out, (tuple, list)) else "r"
        expect(expr, t, i not in skip_values)
    for i in check_args:
        expect(f"args[{i}]", targs[i])
    lines.append("  }")
    return '\n'.join(lines)

tests = []
def test(name, comment, cases):
    body = '\n'.join(cases)
    tests.append(f"TEST(NnOpsTest, {name}) {{\n  // {comment}\n{body}\n}}\n")

CAP = "Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured."
# Convolution.
test("Convolution", CAP + " 2-d with bias, stride and padding; 1-d groups+dilation; 3-d; transposed with groups and output_padding; transposed 1-d dilated with bias; int64.", [
    case("convolution.default", [S([2,3,5,5]), S([4,3,3,3], mod=13, off=6), S([4]), [2,2], [1,1], [1,1], False, [0,0], 1]),
    case("convolution.default", [S([1,4,9]), S([6,2,3], mod=5, off=2), None, [1], [2], [2], False, [0], 2]),
    case("convolution.default", [S([1,2,4,4,4]), S([2,2,2,2,2], mod=7, off=3), None, [1,2,1], [1,0,1], [1,1,1], False, [0,0,0], 1]),
    case("convolution.default", [S([1,4,3,3]), S([4,3,3,3], mod=13, off=6), S([6]), [2,2], [1,1], [1,1], True, [1,1], 2]),
    case("convolution.default", [S([2,2,4]), S([2,3,3], mod=5, off=2), S([3]), [3], [1], [2], True, [1], 1]),
    case("convolution.default", [S([1,2,4,4], 'i64', 5, 2, 1), S([3,2,2,2], 'i64', 3, 1, 1), None, [1,1], [0,0], [1,1], False, [0,0], 1]),
])
test("ConvolutionBackward", CAP + " grouped strided 2-d with all outputs; transposed 1-d with grad_weight masked out.", [
    case("convolution_backward.default", [S([1,4,3,3], mod=7, off=3), S([1,4,5,5]), S([4,2,3,3], mod=13, off=6), [4], [2,2], [1,1], [1,1], False, [0,0], 2, [True,True,True]]),
    case("convolution_backward.default", [S([2,3,13], mod=7, off=3), S([2,2,4]), S([2,3,3], mod=5, off=2), None, [3], [1], [2], True, [1], 1, [True,False,True]]),
])
x5 = S([1,2,5,5], mod=23, off=11)
test("MaxPool", CAP + " ceil_mode, padding with dilation and a rectangular kernel, unbatched, int64, 3-d with ceil_mode, NaN and ties.", [
    case("max_pool2d_with_indices.default", [x5, [2,2], [2,2], [0,0], [1,1], True]),
    case("max_pool2d_with_indices.default", [x5, [3,2], [2,1], [1,1], [2,1], False]),
    case("max_pool2d_with_indices.default", [S([2,4,4], mod=13, off=6), [2,2], [], [1,1], [1,1], False]),
    case("max_pool2d_with_indices.default", [S([1,1,4,4], 'i64', 9, 4, 1), [3,3], [1,1], [1,1], [1,1], False]),
    case("max_pool3d_with_indices.default", [S([1,1,4,5,5], mod=29, off=14), [2,2,2], [2,2,2], [1,1,1], [1,1,1], True]),
    case("max_pool3d_with_indices.default", [S([2,3,4,4], mod=29, off=14), [2,3,2], [1,1,2], [0,1,0], [2,1,1], False]),
    # NaN wins (the last NaN of a window gives the index); ties keep the first.
    case("max_pool2d_with_indices.default", [L(torch.tensor([[[1., float('nan'), 3., 3.], [float('nan'), 2., 3., 0.], [5., 5., -1., float('-inf')]]])), [2,2], [1,1], [0,0], [1,1], False]),
])
_, mi = A.max_pool2d_with_indices(x5.torch(), [3,3], [2,2], [1,1], [1,1], True)
_, mi2 = A.max_pool2d_with_indices(x5.torch(), [3,2], [2,1], [1,1], [2,1], False)
test("MaxPoolBackward", CAP + " indices from the PyTorch forward (ceil_mode, overlapping windows; dilation).", [
    case("max_pool2d_with_indices_backward.default", [S(list(mi.shape), mod=7, off=3), x5, [3,3], [2,2], [1,1], [1,1], True, L(mi)]),
    case("max_pool2d_with_indices_backward.default", [S(list(mi2.shape), mod=7, off=3), x5, [3,2], [2,1], [1,1], [2,1], False, L(mi2)]),
])
x6 = S([1,2,6,6], mod=17, off=8)
test("AvgPool", CAP + " ceil_mode with count_include_pad off and on, divisor_override, int64 truncation, 3-d.", [
    case("avg_pool2d.default", [x6, [3,3], [2,2], [1,1], True, False, None]),
    case("avg_pool2d.default", [x6, [3,3], [2,2], [1,1], True, True, None]),
    case("avg_pool2d.default", [x6, [2,3], [2,2], [1,1], False, True, 5]),
    case("avg_pool2d.default", [S([1,1,4,4], 'i64', 23, 11, 1), [2,2], [], [0,0], False, True, 3]),
    case("avg_pool2d.default", [S([2,5,5], mod=17, off=8), [2,2], [3,3], [1,1], True, False, None]),
    case("avg_pool3d.default", [S([1,1,4,4,5], mod=17, off=8), [2,3,2], [2,2,2], [1,1,1], True, False, None]),
    case("avg_pool3d.default", [S([1,1,4,4,5], mod=17, off=8), [2,2,2], [], [1,0,1], False, True, 7]),
])
test("AvgPoolBackward", CAP + " ceil_mode with padding, count_include_pad off/on, divisor_override.", [
    case("avg_pool2d_backward.default", [S([1,2,4,4], mod=7, off=3), x6, [3,3], [2,2], [1,1], True, False, None]),
    case("avg_pool2d_backward.default", [S([1,2,4,4], mod=7, off=3), x6, [3,3], [2,2], [1,1], True, True, None]),
    case("avg_pool2d_backward.default", [S([1,2,4,3], mod=7, off=3), x6, [2,3], [2,2], [1,1], False, True, 5]),
])
test("AdaptiveAvgPool", CAP + " uneven windows (overlapping), unbatched, upsampling sizes, 3-d, backward.", [
    case("_adaptive_avg_pool2d.default", [S([1,2,5,7], mod=13, off=6), [3,4]]),
    case("_adaptive_avg_pool2d.default", [S([2,5,5], mod=13, off=6), [2,3]]),
    case("_adaptive_avg_pool2d.default", [S([1,1,2,3], mod=13, off=6), [3,5]]),
    case("_adaptive_avg_pool3d.default", [S([1,1,5,4,3], mod=13, off=6), [2,3,2]]),
    case("_adaptive_avg_pool2d_backward.default", [S([1,2,3,4], mod=7, off=3), S([1,2,5,7])]),
])
xb = S([2,3,2,2], mod=13, off=6)
test("BatchNorm", CAP + " training updates running_mean/running_var in place (unbiased variance); eval uses running stats and gives empty stats; no_stats; no_training; float16 input with float32 running stats keeps float32 stats.", [
    case("_native_batch_norm_legit.default", [xb, S([3], mod=5, off=1), S([3], mod=3, off=1), S([3], mod=5, off=2), L(torch.tensor([1.0, 0.5, 2.0])), True, 0.1, 1e-5], check_args=(3, 4)),
    case("_native_batch_norm_legit.default", [xb, S([3], mod=5, off=1), None, S([3], mod=5, off=2), L(torch.tensor([1.0, 0.5, 2.0])), False, 0.1, 1e-5], check_args=(3, 4)),
    case("_native_batch_norm_legit.no_stats", [S([4,3], mod=13, off=6), None, S([3], mod=3, off=1), True, 0.1, 1e-3]),
    case("_native_batch_norm_legit_no_training.default", [xb, None, S([3], mod=3, off=1), S([3], mod=5, off=2), L(torch.tensor([1.0, 0.5, 2.0])), 0.1, 1e-5]),
    case("_native_batch_norm_legit.default", [S([2,3,2], 'f16', 13, 6), None, None, S([3], mod=5, off=2), L(torch.tensor([1.0, 0.5, 2.0])), True, 0.3, 1e-5], check_args=(3, 4)),
])
xg = S([2,4,3], mod=13, off=6)
mg, rg = A.native_group_norm(xg.torch(), None, None, 2, 4, 3, 2, 1e-5)[1:]
test("GroupNorm", CAP + " forward with weight and bias; backward with all outputs (and without weight).", [
    case("native_group_norm.default", [xg, S([4], mod=5, off=1), S([4], mod=3, off=1), 2, 4, 3, 2, 1e-5]),
    case("native_group_norm.default", [S([1,6,2,2], mod=17, off=8), None, None, 1, 6, 4, 3, 1e-2]),
    case("native_group_norm_backward.default", [S([2,4,3], mod=7, off=3), xg, L(mg), L(rg), S([4], mod=5, off=1), 2, 4, 3, 2, [True,True,True]]),
    case("native_group_norm_backward.default", [S([2,4,3], mod=7, off=3), xg, L(mg), L(rg), None, 2, 4, 3, 2, [True,False,True]]),
])
xl = S([2,3,4], mod=13, off=6)
_, ml, rl = A.native_layer_norm(xl.torch(), [3,4], None, None, 1e-5)
_, ml1, rl1 = A.native_layer_norm(xl.torch(), [4], None, None, 1e-5)
test("LayerNormBackward", CAP + " mean/rstd from PyTorch's native_layer_norm; all outputs with weight and bias; input gradient only without weight.", [
    case("native_layer_norm_backward.default", [S([2,3,4], mod=7, off=3), xl, [3,4], L(ml), L(rl), S([3,4], mod=5, off=1), S([3,4], mod=3, off=1), [True,True,True]]),
    case("native_layer_norm_backward.default", [S([2,3,4], mod=7, off=3), xl, [4], L(ml1), L(rl1), None, None, [True,False,False]]),
])
xu = S([1,2,3,4], mod=13, off=6)
test("Upsample", CAP + " bilinear with and without align_corners, from output_size and from scale_factors (the scales set the source index); nearest up and down, with scales.", [
    case("upsample_bilinear2d.vec", [xu, [5,7], False, None]),
    case("upsample_bilinear2d.vec", [xu, [5,7], True, None]),
    case("upsample_bilinear2d.vec", [xu, None, True, [1.5, 2.0]]),
    case("upsample_bilinear2d.vec", [xu, None, False, [1.7, 0.6]]),
    case("upsample_bilinear2d.vec", [xu, [2,3], False, None]),
    case("upsample_nearest2d.vec", [xu, [5,7], None]),
    case("upsample_nearest2d.vec", [xu, [6,8], None]),
    case("upsample_nearest2d.vec", [xu, None, [1.7, 0.6]]),
    case("upsample_nearest2d.vec", [S([1,1,5,5], mod=13, off=6), [3,2], None]),
])
test("Pad", CAP + " reflection 1-d/2-d/3-d (borders reflect without repeating the edge; a negative pad crops), replication 2-d/3-d, int64, unbatched.", [
    case("reflection_pad1d.default", [S([1,2,5]), [2,3]]),
    case("reflection_pad1d.default", [S([2,5]), [-1,2]]),
    case("reflection_pad1d.default", [S([1,2,5], 'i64', 7, 3, 1), [4,1]]),
    case("reflection_pad2d.default", [S([1,3,4]), [1,2,2,0]]),
    case("reflection_pad3d.default", [S([1,2,3,3]), [1,1,2,0,1,1]]),
    case("replication_pad2d.default", [S([1,2,3,3]), [2,0,1,3]]),
    case("replication_pad2d.default", [S([2,3,3]), [-1,2,0,-2]]),
    case("replication_pad3d.default", [S([1,1,2,3,2]), [1,0,2,1,0,2]]),
])
test("Col2Im", CAP + " batched with dilation, padding and stride; unbatched, overlapping blocks summed.", [
    case("col2im.default", [S([1,8,9], mod=13, off=6), [4,5], [2,2], [1,2], [1,0], [2,1]]),
    case("col2im.default", [S([4,9], mod=13, off=6), [4,4], [2,2], [1,1], [0,0], [1,1]]),
])
gcases = []
grid = S([1,2,3,2], mod=23, off=11, scale=0.13)
for mode in (0, 1, 2):
    for pad in (0, 1, 2):
        for ac in (False, True):
            gcases.append(case("grid_sampler_2d.default", [S([1,2,3,4], mod=13, off=6), grid, mode, pad, ac]))
gcases.append(case("grid_sampler_2d.default", [S([2,1,2,3], 'f64', 13, 6), S([2,2,2,2], 'f64', 19, 9, 0.21), 0, 2, False]))
# Non-finite and huge grid coordinates.
odd = L(torch.tensor([[[[float('nan'), 0.2], [0.3, float('inf')], [-1e12, 0.1], [0.5, float('-inf')]]]]))
for mode in (0, 1, 2):
    for pad in (0, 1, 2):
        gcases.append(case("grid_sampler_2d.default", [S([1,1,3,4], mod=13, off=6), odd, mode, pad, False]))
test("GridSampler2d", CAP + " every interpolation mode (bilinear, nearest, bicubic) x padding mode (zeros, border, reflection) x align_corners, grid points outside [-1, 1] included; NaN, +-inf and huge grid coordinates.", gcases)
ix = L(torch.tensor([[1,0,3],[1,1,4]]))
test("EmbeddingDenseBackward", CAP + " repeated indices accumulate; padding_idx rows stay zero; scale_grad_by_freq divides by counts; int32 indices.", [
    case("embedding_dense_backward.default", [S([2,3,4], mod=7, off=3), ix, 6, 4, True]),
    case("embedding_dense_backward.default", [S([2,3,4], mod=7, off=3), ix, 6, -1, False]),
    case("embedding_dense_backward.default", [S([3,2]), L(torch.tensor([2,2,0], dtype=torch.int32)), 3, -1, False]),
])
w = S([5,3], mod=13, off=6)
wd = S([5,3], 'f64', 13, 6)
idx = L(torch.tensor([1,2,4,1,0]))
off = L(torch.tensor([0,2,2,4]))
bcases = []
off_last = L(torch.tensor([0,2,2,5]))
for mode in (0, 1, 2):
    for ilo in (False, True):
        for wt in (w, wd):
            bcases.append(case("_embedding_bag.default", [wt, idx, off_last if ilo else off, False, mode, False, None, ilo, -1]))
bcases.append(case("_embedding_bag.default", [w, idx, off, False, 0, False, S([5], mod=5, off=1), False, -1]))
bcases.append(case("_embedding_bag.default", [w, idx, off, False, 1, False, None, False, 1]))
bcases.append(case("_embedding_bag.default", [w, idx, off_last, False, 2, False, None, True, 1]))
bcases.append(case("_embedding_bag.default", [w, idx, off, False, 0, False, None, False, 2]))
bcases.append(case("_embedding_bag.default", [w, L(torch.tensor([3,0], dtype=torch.int32)), L(torch.tensor([0,1], dtype=torch.int32)), False, 1, False, None, False, -1]))
test("EmbeddingBag", CAP + " sum/mean/max x include_last_offset x float32 (fast path: empty offset2bag) / float64, an empty bag, per_sample_weights, padding_idx, int32 indices. include_last_offset with offsets ending at len(indices) (PyTorch's fast and slow paths disagree otherwise).", bcases)
test("Distances", CAP + " cdist with broadcast batch dims for p = 2, 1, 0, inf, 3; pdist for p = 2, 1.5, 0, inf.", [
    case("_cdist_forward.default", [S([2,1,3,4], mod=13, off=6), S([3,2,4], mod=11, off=4), 2.0, None]),
    case("_cdist_forward.default", [S([3,4], mod=13, off=6), S([2,4], mod=11, off=4), 1.0, None]),
    case("_cdist_forward.default", [S([3,4], mod=13, off=6), S([2,4], mod=11, off=4), 0.0, None]),
    case("_cdist_forward.default", [S([3,4], mod=13, off=6), S([2,4], mod=11, off=4), float('inf'), None]),
    case("_cdist_forward.default", [S([2,3,4], 'f64', 13, 6), S([2,4], 'f64', 11, 4), 3.0, None]),
    case("_pdist_forward.default", [S([4,3], mod=13, off=6), 2.0]),
    case("_pdist_forward.default", [S([4,3], mod=13, off=6), 1.5]),
    case("_pdist_forward.default", [S([4,3], mod=5, off=2), 0.0]),
    case("_pdist_forward.default", [S([4,3], mod=13, off=6), float('inf')]),
])
print('\n'.join(tests))
