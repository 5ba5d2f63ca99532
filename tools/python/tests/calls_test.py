"""lathe's compiled functions called from Python (issue 29, items 2 and 3):
arguments read and written in place, results that alias an argument as
views of its storage, results handed to PyTorch without a copy, dynamic
shapes and float scalars without compiles of lathe's own, the backend's
options, dumps and errors. Values are checked against eager PyTorch."""

import gc
import os
import sys
import tempfile
import unittest

import torch
from torch._dynamo.utils import counters

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lathe  # noqa: E402
from lathe import _lathe  # noqa: E402
from models import MODELS  # noqa: E402

ADD_IN_PLACE = '''
def forward(self, x: "f32[4][1]cpu", y: "f32[4][1]cpu"):
    add: "f32[4][1]cpu" = torch.ops.aten.add.Tensor(x, y)
    copy_: "f32[4][1]cpu" = torch.ops.aten.copy_.default(x, add)
    mul: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor(add, 2)
    return (mul,)
'''

VIEW_OF_INPUT = '''
def forward(self, x: "f32[4][1]cpu"):
    view: "f32[2, 2][2, 1]cpu" = torch.ops.aten.view.default(x, [2, 2])
    neg: "f32[4][1]cpu" = torch.ops.aten.neg.default(x)
    view_1: "f32[2, 2][2, 1]cpu" = torch.ops.aten.view.default(neg, [2, 2])
    return (view, neg, view_1)
'''

SCALARS = '''
def forward(self, x: "f32[s0][1]cpu", s0: "Sym(s0)", a: "f64[][]cpu"):
    mul: "f32[s0][1]cpu" = torch.ops.aten.mul.Tensor(x, a)
    return (mul, s0)
'''


DYNAMIC_NEG = '''
def forward(self, x: "f32[s0][1]cpu"):
    neg: "f32[s0][1]cpu" = torch.ops.aten.neg.default(x)
    return (neg,)
'''

TRANSPOSED = '''
def forward(self, x: "f32[3, 2][1, 3]cpu"):
    sum_1: "f32[3][1]cpu" = torch.ops.aten.sum.dim_IntList(x, [1])
    return (sum_1,)
'''


class CallsTest(unittest.TestCase):
    def setUp(self):
        torch._dynamo.reset()
        counters.clear()

    def test_mutated_inputs_are_written_in_place(self):
        fn = lathe.compile_graph(ADD_IN_PLACE, "add_in_place")
        base = torch.arange(10, dtype=torch.float32)
        x = base[3:7]  # at a storage offset
        y = torch.ones(4)
        want_x = x + y
        address = x.data_ptr()
        (out,) = fn(x, y)
        torch.testing.assert_close(x, want_x)
        torch.testing.assert_close(out, want_x * 2)
        self.assertEqual(x.data_ptr(), address)
        torch.testing.assert_close(base[:3], torch.arange(3, dtype=torch.float32))

    def test_mutation_through_torch_compile(self):
        def f(x, y):
            x.add_(y)
            return x * 2
        x, y = torch.randn(6), torch.randn(6)
        want = x + y
        address = x.data_ptr()
        with torch.no_grad():
            out = torch.compile(f, backend="lathe")(x, y)
        torch.testing.assert_close(x, want)
        torch.testing.assert_close(out, want * 2)
        self.assertEqual(x.data_ptr(), address)

    def test_strided_arguments_are_read_in_place(self):
        fn = lathe.compile_graph(TRANSPOSED, "transposed")
        x = torch.randn(2, 3).t()
        (out,) = fn(x)
        torch.testing.assert_close(out, x.sum(1))

    def test_results_alias_arguments_and_each_other(self):
        fn = lathe.compile_graph(VIEW_OF_INPUT, "views")
        x = torch.arange(4, dtype=torch.float32)
        view, neg, view_1 = fn(x)
        # A view of the argument: its storage, written through.
        self.assertEqual(view.untyped_storage().data_ptr(), x.untyped_storage().data_ptr())
        view[1, 1] = 42
        self.assertEqual(x[3].item(), 42)
        # Two results on one of lathe's blocks share one PyTorch storage.
        self.assertEqual(neg.untyped_storage().data_ptr(), view_1.untyped_storage().data_ptr())
        torch.testing.assert_close(view_1, -torch.tensor([[0.0, 1.0], [2.0, 3.0]]))
        neg[0] = 7
        self.assertEqual(view_1[0, 0].item(), 7)

    def test_repeated_calls_keep_every_semantic(self):
        # From the second call on, arguments a variant admits go to it as
        # views of PyTorch's own arrays (no lathe tensor per argument): the
        # same results, aliases, writes and refusals.
        fn = lathe.compile_graph(VIEW_OF_INPUT, "views")
        for k in range(3):
            base = torch.arange(10, dtype=torch.float32) + k
            x = base[3:7]  # at a storage offset
            view, neg, _ = fn(x)
            self.assertEqual(view.untyped_storage().data_ptr(), base.untyped_storage().data_ptr())
            self.assertEqual(view.storage_offset(), 3)
            torch.testing.assert_close(view, x.view(2, 2))
            torch.testing.assert_close(neg, -x)
            view[1, 1] = 42
            self.assertEqual(base[6].item(), 42)
        self.assertEqual(fn.compiles, 1)
        add = lathe.compile_graph(ADD_IN_PLACE, "add_in_place")
        for k in range(3):
            x, y = torch.full((4,), float(k)), torch.ones(4)
            (out,) = add(x, y)
            torch.testing.assert_close(x, torch.full((4,), k + 1.0))
            torch.testing.assert_close(out, torch.full((4,), 2 * (k + 1.0)))
        shared = torch.zeros(4)
        with self.assertRaises(lathe.Error) as e:
            add(shared, shared)
        self.assertIn("share", str(e.exception))
        torch.testing.assert_close(shared, torch.zeros(4))
        with self.assertRaises(lathe.Error) as e:
            add(torch.zeros(4), torch.zeros(4, dtype=torch.float64))
        self.assertIn("y", str(e.exception))
        self.assertEqual(add.compiles, 1)

    def test_results_outlive_the_function(self):
        fn = lathe.compile_graph(VIEW_OF_INPUT, "views")
        x = torch.arange(4, dtype=torch.float32)
        _, neg, _ = fn(x)
        del fn, x
        gc.collect()
        junk = [torch.full((4,), 9.0) for _ in range(100)]
        del junk
        torch.testing.assert_close(neg, -torch.arange(4, dtype=torch.float32))

    def test_ints_floats_and_symbolic_sizes(self):
        fn = lathe.compile_graph(SCALARS, "scalars")
        for n, a in ((3, 0.5), (5, -2.0), (9, 3.25)):
            x = torch.randn(n)
            out, size = fn(x, n, torch.tensor(a, dtype=torch.float64))
            torch.testing.assert_close(out, x * a)
            self.assertEqual(size, n)
        self.assertEqual(fn.compiles, 1)

    def test_float_scalars_add_no_lathe_compiles(self):
        # Dynamo specializes the first float it sees and then passes floats
        # as f64[] tensors; lathe compiles each graph Dynamo gives it once.
        def f(x, a):
            return x * a + 1
        compiled = torch.compile(f, backend="lathe")
        start = len(lathe.graphs())
        x = torch.randn(4)
        for a in (0.5, 1.5, 2.5, 3.5, -1.0):
            torch.testing.assert_close(compiled(x, a), f(x, a))
        graphs = lathe.graphs()[start:]
        dynamo = counters["stats"]["unique_graphs"]
        print(f"\nfloat scalars: Dynamo graphs {dynamo}, lathe compiles "
              f"{sum(g.fn.compiles for g in graphs)} for 5 values", file=sys.stderr)
        self.assertEqual(len(graphs), dynamo)
        self.assertEqual(sum(g.fn.compiles for g in graphs), dynamo)

    def check_dynamic_batch(self, name):
        """Training under dynamic=True at batches 6, 11 and 33: lathe adds
        no compile of its own (each graph Dynamo hands it compiles once).
        Dynamo itself compiles convolutional models twice: its fake
        convolution guards 2 <= batch <= 15 (a PyTorch heuristic, the same
        under Inductor), so batch 33 is a new Dynamo graph, whose libraries
        the compile cache gives (no C++ build): the two graphs differ only
        in the batch's range, which lathe's guards read as data and its
        element-count checks do not use."""
        torch._dynamo.reset()
        counters.clear()
        torch.manual_seed(0)
        model, inputs, loss_fn = MODELS[name]()
        start = len(lathe.graphs())
        dumps = tempfile.TemporaryDirectory()
        self.addCleanup(dumps.cleanup)
        compiled = torch.compile(model, backend="lathe", dynamic=True, options={"dump_dir": dumps.name})
        batches = (6, 11, 33)
        for batch in batches:
            x = inputs(batch)
            out = compiled(*x)
            torch.testing.assert_close(out, model(*x), rtol=1e-4, atol=1e-5)
            loss_fn(out, *x).backward()
        graphs = lathe.graphs()[start:]
        dynamo = counters["stats"]["unique_graphs"]
        print(f"\n{name} under dynamic=True, batches {batches}: Dynamo graphs {dynamo}, "
              f"lathe compiles {sum(g.fn.compiles for g in graphs)}", file=sys.stderr)
        self.assertEqual(dynamo, 2 if name in ("cnn", "resnet18") else 1, name)
        self.assertEqual(sorted(g.name.split("_")[0] for g in graphs), sorted(["backward", "forward"] * dynamo), name)
        for g in graphs:
            self.assertEqual(g.fn.compiles, 1, f"{name} {g.name}")
            self.assertEqual(g.fn.recompiles, [], f"{name} {g.name}")
        # Dynamo's second graph differs from its first only in the batch's
        # range ("# lathe: range s77 2 15" against none), which lathe's
        # guards read as data: its libraries come from the compile cache.
        first = graphs[0].dynamo_compile
        later = [g for g in graphs if g.dynamo_compile != first]
        self.assertEqual(len(later), 2 if dynamo == 2 else 0, name)
        for g in later:
            steps = dict(g.fn.dumps()[0])["steps.txt"]
            self.assertRegex(steps, r"build \((memory|disk|redis) cache hit\)", f"{name} {g.name}")

    def test_inference_skips_aots_wrappers_only_where_they_do_nothing(self):
        returned = []

        def spy(gm, example_inputs):
            fn = lathe.backend(gm, example_inputs)
            returned.append(fn)
            return fn

        def plain(x, y):
            return x * 2 + y

        def transposed(x):  # the output aliases the input
            return x.t()

        def mutating(x):  # x.add_ is left in the graph, seen by autograd
            x.add_(1)
            return x * 2

        x, y = torch.randn(3, 4), torch.randn(3, 4)
        with torch.no_grad():
            torch._dynamo.reset()
            torch.testing.assert_close(torch.compile(plain, backend=spy)(x, y), plain(x, y))
            self.assertIsInstance(returned[-1], lathe._lathe.Function)
            torch._dynamo.reset()
            out = torch.compile(transposed, backend=spy)(x)
            self.assertNotIsInstance(returned[-1], lathe._lathe.Function)
            self.assertIs(out._base, x)
            torch._dynamo.reset()
            z = torch.zeros(4)
            out = torch.compile(mutating, backend=spy)(z)
            self.assertNotIsInstance(returned[-1], lathe._lathe.Function)
            torch.testing.assert_close(z, torch.ones(4))
            torch.testing.assert_close(out, torch.full((4,), 2.0))
        # Under grad mode with a tensor that requires grad: training graphs,
        # always wrapped.
        torch._dynamo.reset()
        w = torch.randn(3, 4, requires_grad=True)
        torch.compile(plain, backend=spy)(w, y).sum().backward()
        self.assertNotIsInstance(returned[-1], lathe._lathe.Function)
        torch.testing.assert_close(w.grad, torch.full((3, 4), 2.0))

    def test_options(self):
        with tempfile.TemporaryDirectory() as d:
            def f(x):
                return torch.sin(x) * 2
            compiled = torch.compile(f, backend="lathe", options={
                "backend": "interp", "dump_dir": os.path.join(d, "dump"),
                "cache_dir": os.path.join(d, "cache"), "max_compiles": 2})
            x = torch.randn(5)
            torch.testing.assert_close(compiled(x), f(x))
            g = lathe.graphs()[-1]
            self.assertEqual(g.fn.compiles, 1)
            g.write_dumps()
            folder = os.path.join(d, "dump", g.name)
            with open(os.path.join(folder, "graph.txt")) as fh:
                self.assertIn("aten.sin", fh.read())
            self.assertTrue(os.path.exists(os.path.join(folder, "compile_1", "steps.txt")))
            compiled = torch.compile(f, backend="lathe", options={
                "dump_dir": os.path.join(d, "dump2"), "cache_dir": os.path.join(d, "cache")})
            torch._dynamo.reset()
            torch.testing.assert_close(compiled(x), f(x))
            g = lathe.graphs()[-1]
            g.write_dumps()
            with open(os.path.join(d, "dump2", g.name, "compile_1", "kernel.cc")) as fh:
                self.assertIn("lathe_call_user", fh.read())
            self.assertTrue(os.listdir(os.path.join(d, "cache")))

    def test_tiered_runs_the_interpreter_until_the_library_replaces_it(self):
        with tempfile.TemporaryDirectory() as d:
            def f(x, w, b):
                return torch.nn.functional.gelu(torch.addmm(b, x, w))
            x, w, b = torch.randn(16, 32), torch.randn(32, 24), torch.randn(24)
            options = {"cache_dir": os.path.join(d, "cache"), "tiered": True}
            compiled = torch.compile(f, backend="lathe", options=options)
            torch.testing.assert_close(compiled(x, w, b), f(x, w, b))
            fn = lathe.graphs()[-1].fn
            self.assertEqual(fn.compiles, 1)
            fn.wait_for_builds()
            self.assertEqual(fn.upgrades, 1)
            self.assertEqual(fn.warnings, [])
            self.assertIn("1 first tier(s) on the interpreter replaced by the library",
                          "\n".join(lathe.graphs()[-1].summary()))
            torch.testing.assert_close(compiled(x, w, b), f(x, w, b))
            self.assertEqual(fn.compiles, 1)
            # A new process's compile (a fresh Dynamo) finds the library in
            # the cache: no first tier.
            torch._dynamo.reset()
            again = torch.compile(f, backend="lathe", options=options)
            torch.testing.assert_close(again(x, w, b), f(x, w, b))
            fn = lathe.graphs()[-1].fn
            fn.wait_for_builds()
            self.assertEqual(fn.upgrades, 0)
        with self.assertRaises(lathe.Error) as e:
            lathe.compile_graph(ADD_IN_PLACE, "g", {"tiered": "yes"})
        self.assertIn("option tiered is 'yes'; expected True or False", str(e.exception))

    def test_autotune_measures_once_and_the_cache_keeps_the_choices(self):
        with tempfile.TemporaryDirectory() as d:
            def f(q, k):
                return torch.softmax(q @ k.transpose(1, 2), dim=-1)
            q, k = torch.randn(16, 64, 32), torch.randn(16, 64, 32)
            options = {"cache_dir": os.path.join(d, "cache"), "autotune": True,
                       "dump_dir": os.path.join(d, "dump")}

            def steps():
                g = lathe.graphs()[-1]
                g.write_dumps()
                with open(os.path.join(d, "dump", g.name, "compile_1", "steps.txt")) as fh:
                    return fh.read()
            compiled = torch.compile(f, backend="lathe", options=options)
            torch.testing.assert_close(compiled(q, k), f(q, k))
            self.assertEqual(lathe.graphs()[-1].fn.compiles, 1)
            self.assertRegex(steps(), r"autotune \([0-9]+ calls\)")
            torch._dynamo.reset()
            again = torch.compile(f, backend="lathe", options=options)
            torch.testing.assert_close(again(q, k), f(q, k))
            # A fresh Dynamo, the same process: the cache's memory tier.
            self.assertRegex(steps(), r"autotune \((memory|disk) cache hit\)")
        for bad, message in (({"autotune": 1}, "option autotune is 1; expected True or False"),
                             ({"autotune": True, "backend": "interp"},
                              "option autotune tunes the cpu backend's kernels, not 'interp''s"),
                             ({"autotune": True, "tiered": True},
                              "options autotune and tiered together")):
            with self.assertRaises(lathe.Error) as e:
                lathe.compile_graph(ADD_IN_PLACE, "g", bad)
            self.assertIn(message, str(e.exception))

    def test_range_directives_only_for_finite_integer_ends(self):
        import sympy
        from torch.utils._sympy.numbers import int_oo

        self.assertEqual(lathe._range_directive("s0", 2, 15), "# lathe: range s0 2 15\n")
        self.assertEqual(lathe._range_directive("s1", sympy.Integer(0), sympy.Integer(7)),
                         "# lathe: range s1 0 7\n")
        self.assertEqual(lathe._range_directive("s2", 2, int_oo), "")
        self.assertEqual(lathe._range_directive("s3", -int_oo, 4), "")
        self.assertEqual(lathe._range_directive("s4", 2, 2.5), "")

    def test_range_lines_name_the_signatures_backed_symbols_only(self):
        from torch._dynamo.source import ConstantSource
        from torch._guards import TracingContext, tracing
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv
        from torch.utils._sympy.value_ranges import ValueRanges

        self.assertEqual(lathe._range_lines("def forward(self, x):\n"), "")  # no context
        env = ShapeEnv()
        bounded, unbounded, body_only = (
            env.create_symbol(size, ConstantSource(name))  # distinct: no duck sizing
            for name, size in (("a", 8), ("b", 9), ("c", 10)))
        env.var_to_range[bounded] = ValueRanges(2, 15)
        env.var_to_range[body_only] = ValueRanges(2, 9)
        text = (f'def forward(self, x: "f32[{bounded}, {unbounded}][{unbounded}, 1]cpu"):\n'
                f'    view: "f32[{body_only}][1]cpu" = torch.ops.aten.view.default(x, [-1])\n')
        with tracing(TracingContext(FakeTensorMode(shape_env=env))):
            self.assertEqual(lathe._range_lines(text), f"# lathe: range {bounded} 2 15\n")

    def test_aots_wrappers_are_kept_when_their_metadata_is_not_understood(self):
        from types import SimpleNamespace

        from torch._guards import TracingContext, tracing

        plain = dict(num_mutated_inp_runtime_indices=0,
                     mutated_graph_handled_indices_seen_by_autograd=[],
                     num_outputs_aliased=0, num_unsafe_view_outputs=0,
                     num_intermediate_bases=0, dynamic_outputs=False,
                     grad_enabled_mutation=None, tokens={},
                     is_rng_op_functionalized=False)
        x = torch.randn(2)
        for meta, want in ((plain, True),
                           ({**plain, "num_outputs_aliased": 1}, False),
                           ({k: v for k, v in plain.items() if k != "tokens"}, False)):
            context = TracingContext(None)
            context.fw_metadata = SimpleNamespace(**meta)
            with tracing(context):
                self.assertEqual(lathe._wrapper_is_identity([x], [x]), want, meta)
        self.assertFalse(lathe._wrapper_is_identity([x], [x]))  # no context

    def test_dumps_while_another_thread_compiles(self):
        # A call compiles with the GIL released; dumps() reads the compiles
        # made so far meanwhile (a snapshot taken under the compiler's lock).
        import threading

        dump_dir = tempfile.mkdtemp()
        for _ in range(8):
            fn = lathe.compile_graph(DYNAMIC_NEG, "neg", options={"dump_dir": dump_dir})
            x = torch.randn(5)
            worker = threading.Thread(target=lambda: fn(x))
            worker.start()
            seen = [len(fn.dumps())]  # at least one read beside the compile
            while worker.is_alive():
                seen.append(len(fn.dumps()))
            worker.join()
            self.assertTrue(all(n in (0, 1) for n in seen), seen)
            self.assertEqual(len(fn.dumps()), 1)
            self.assertEqual(fn.compiles, 1)

    def test_bad_options_are_one_line_errors(self):
        for options, message in (
            ({"backend": "tpu"}, "option backend is 'tpu'; expected one of ['cpu', 'cuda', 'interp']"),
            ({"max_compiles": 0}, "option max_compiles is 0; expected an int from 1 to 1000"),
            ({"speed": "max"}, "unknown lathe option(s) ['speed']"),
            ({"remote_cache": "http://x"}, "redis"),
        ):
            with self.assertRaises(lathe.Error) as e:
                lathe.compile_graph(ADD_IN_PLACE, "g", options)
            self.assertIn(message, str(e.exception))
        torch._dynamo.reset()
        with self.assertRaises(Exception) as e:
            torch.compile(lambda x: x + 1, backend="lathe", options={"backend": "tpu"})(torch.ones(2))
        self.assertIn("option backend is 'tpu'", str(e.exception))

    def test_bad_graph_text_names_the_graph(self):
        with self.assertRaises(lathe.Error) as e:
            lathe.compile_graph("def forward(self, x):\n    return (y,)\n", "broken_graph")
        self.assertIn("broken_graph", str(e.exception))

    def test_bad_arguments_are_one_line_errors(self):
        fn = lathe.compile_graph(ADD_IN_PLACE, "add_in_place")
        x = torch.zeros(4)
        cases = (
            ((x, "y"), "argument 1: a str; lathe takes tensors, ints, floats, bools and None"),
            ((x, torch.zeros(4, dtype=torch.complex64)), "argument 1: lathe has no dtype for torch.ComplexFloat"),
            ((x, torch.zeros(4).to_sparse()), "argument 1: a Sparse tensor; lathe takes strided tensors"),
            ((x, torch.zeros(4)._neg_view()), "argument 1: a tensor with a pending conjugation or negation bit"),
            ((x, 2 ** 70), "argument 1: an int outside int64's range"),
            ((x,), "argument"),
            ((x, torch.zeros(5)), "y"),
            ((x, torch.zeros(4, dtype=torch.float64)), "y"),
            ((x, torch.ones(8)[::2]), "input 1 ('y') stride(0): expected 1, got 2"),
        )
        for args, message in cases:
            with self.assertRaises(lathe.Error) as e:
                fn(*args)
            self.assertIn(message, str(e.exception), str(args))
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            fake = torch.zeros(4)
        with self.assertRaises(lathe.Error) as e:
            fn(x, fake)
        self.assertIn("argument 1: a tensor whose storage is on meta", str(e.exception))
        with self.assertRaises(TypeError):
            fn(x, y=x)
        torch.testing.assert_close(x, torch.zeros(4))  # nothing ran

    def test_recompiles_are_logged_and_explained(self):
        fn = lathe.compile_graph(DYNAMIC_NEG, "dynamic_neg")
        with self.assertLogs("lathe", "INFO") as logs:
            for n in (4, 1, 5):
                x = torch.randn(n)
                torch.testing.assert_close(fn(x)[0], -x)
        text = "\n".join(logs.output)
        self.assertIn("dynamic_neg: compiled for its first call", text)
        self.assertIn("dynamic_neg: recompile 2: 2 <= x.size(0)", text)
        explained = lathe.explain(fn)
        self.assertEqual(explained.compiles, 2)
        self.assertEqual(explained.recompiles, [("dynamic_neg", 2, "2 <= x.size(0)")])
        self.assertIn("compile 2: no earlier variant's guards held: 2 <= x.size(0)", str(explained))
        self.assertIn("dynamic_neg", str(lathe.explain()))

    def test_explain_finds_a_compiled_model_and_function(self):
        torch.manual_seed(0)
        for name in ("mlp", "cnn"):  # nn.Sequential's code is PyTorch's; SmallCnn's is ours
            model, inputs, loss_fn = MODELS[name]()
            compiled = torch.compile(model, backend="lathe")
            self.assertEqual(lathe.explain(compiled).graphs, [])
            x = inputs(2)
            loss_fn(compiled(*x), *x).backward()
            explained = lathe.explain(compiled)
            self.assertEqual(sorted(g.kind for g in explained.graphs), ["backward", "forward"], name)
            self.assertEqual(explained.compiles, 2)
            self.assertEqual(lathe.explain(model).graphs, explained.graphs)

        def f(x):
            return torch.cos(x) - 1
        compiled = torch.compile(f, backend="lathe")
        compiled(torch.randn(3))
        self.assertEqual([g.kind for g in lathe.explain(compiled).graphs], ["inference"])
        with self.assertRaises(lathe.Error) as e:
            lathe.explain(42)
        self.assertIn("int is not a function, a module or a lathe function", str(e.exception))

    def test_aliased_mutated_arguments_are_refused(self):
        fn = lathe.compile_graph(ADD_IN_PLACE, "add_in_place")
        base = torch.zeros(6)
        with self.assertRaises(lathe.Error) as e:
            fn(base[:4], base[2:])
        self.assertIn("share", str(e.exception))
        torch.testing.assert_close(base, torch.zeros(6))



for _name in MODELS:
    setattr(CallsTest, f"test_dynamic_batch_compiles_once_{_name}",
            lambda self, name=_name: self.check_dynamic_batch(name))


if __name__ == "__main__":
    unittest.main()
