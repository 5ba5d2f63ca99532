"""lathe from PyTorch: ``torch.compile(model, backend="lathe")``.

``import lathe`` registers the "lathe" backend with Dynamo (an installed
package also registers it through the ``torch_dynamo_backends`` entry point,
without the import). Dynamo's graph goes to AOTAutograd
(``aot_module_simplified``), whose forward and backward graphs reach lathe
as their ``print_readable`` text, in-process: lathe parses and compiles them
(``_lathe.compile``) and the compiled functions read and write the caller's
tensors in place.

    import torch, lathe
    model = torch.compile(model, backend="lathe", dynamic=True,
                          options={"backend": "cpu", "max_compiles": 8})
    loss = model(x).sum(); loss.backward()

Options (``torch.compile(..., options={...})``):

    backend        "cpu" (default), "interp" (lathe's reference interpreter)
                   or "cuda" (where a device is)
    dump_dir       write each graph's text and, after its first call, its
                   compiles' dumps (passes, steps, kernel.cc) under this
                   directory, one folder per graph
    cache_dir      the compile cache's disk tier ("off": none; default
                   $LATHE_CACHE_DIR, else ~/.cache/lathe)
    remote_cache   redis://HOST:PORT for the compile cache's Redis tier
    max_compiles   compiles per graph before lathe runs it on its
                   interpreter (default 8)
    tiered         True (backend "cpu"): a compile the cache cannot answer
                   runs its first calls on lathe's interpreter (matrix
                   products through the library's sgemm) while the C++
                   library builds on another thread; the library replaces
                   it for every call after (``fn.wait_for_builds()`` waits)
    autotune       True (backend "cpu"): each kernel's thread count (and a
                   batched matrix product's split over its batch) measured
                   at compile time, or read from the compile cache, which
                   keeps the choices (lathec --autotune)
    freezing       True: in inference (torch.no_grad()), the module's
                   parameters and buffers are the compiled function's own
                   constants, as Inductor's freezing=True: batch norm folds
                   into the convolution before it, what the weights compute
                   alone is computed once, convolution weights are packed
                   once; a later in-place change to them is not seen

``lathe.aot_compile(torch.export.export(model, args), path)`` writes an
artifact (weights included) and ``lathe.load(path)`` calls it, as does a C++
program with lathe's runtime alone; ``lathe.explain(compiled)`` says what
lathe compiled and why it recompiled (also logged to the "lathe" logger).
"""

import builtins
import itertools
import logging
import os
import re
import weakref

import torch

from . import _lathe

__all__ = ["Error", "Explanation", "Graph", "aot_compile", "backend", "compile_graph", "explain", "graphs", "load"]

Error = _lathe.Error
logger = logging.getLogger("lathe")

_OPTIONS = {"backend", "dump_dir", "cache_dir", "remote_cache", "max_compiles", "freezing", "tiered", "autotune"}
_BACKENDS = {"cpu", "interp", "cuda"}


def _checked_options(options):
    options = dict(options or {})
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise Error(f"unknown lathe option(s) {unknown}; expected some of {sorted(_OPTIONS)}")
    backend = options.get("backend", "cpu")
    if backend not in _BACKENDS:
        raise Error(f"option backend is {backend!r}; expected one of {sorted(_BACKENDS)}")
    max_compiles = options.get("max_compiles", 8)
    if not isinstance(max_compiles, int) or isinstance(max_compiles, bool) or not 1 <= max_compiles <= 1000:
        raise Error(f"option max_compiles is {max_compiles!r}; expected an int from 1 to 1000")
    for key in ("freezing", "tiered", "autotune"):
        if not isinstance(options.get(key, False), bool):
            raise Error(f"option {key} is {options[key]!r}; expected True or False")
    if options.get("autotune") and backend != "cpu":
        raise Error(f"option autotune tunes the cpu backend's kernels, not {backend!r}'s")
    if options.get("autotune") and options.get("tiered"):
        raise Error("options autotune and tiered together: the tuner would time the kernels "
                    "while the first tier runs calls beside it")
    for key in ("dump_dir", "cache_dir", "remote_cache"):
        if key in options and not isinstance(options[key], (str, os.PathLike)):
            raise Error(f"option {key} is {options[key]!r}; expected a path or string")
    for key in ("dump_dir", "cache_dir"):
        if options.get(key) and os.fspath(options[key]) != "off":
            options[key] = os.path.abspath(os.path.expanduser(os.fspath(options[key])))
    return options


class Graph:
    """One graph lathe was given: its name ("forward_0"), kind ("forward",
    "backward", "inference" or "graph"), text, the Dynamo compile it came
    from ("0/1": frame 0, its second compile; None outside Dynamo), the user
    source lines its nodes trace back to, and its function while it lives
    (``fn``: compiles, recompiles)."""

    def __init__(self, name, kind, text, fn, dump_dir, dynamo_compile=None, source_lines=(), parameters=()):
        self.name = name
        self.kind = kind
        self.text = text
        self._fn = weakref.ref(fn)
        self.dump_dir = dump_dir
        self.dynamo_compile = dynamo_compile
        self.source_lines = frozenset(source_lines)
        self.parameters = weakref.WeakSet(parameters)  # the module's, that Dynamo passed

    @property
    def fn(self):
        """The compiled function; None once what held it is gone."""
        return self._fn()

    def summary(self):
        """What happened to this graph, one line per compile."""
        fn = self.fn
        origin = f" (Dynamo compile {self.dynamo_compile})" if self.dynamo_compile else ""
        if fn is None:
            return [f"{self.name}{origin}: released"]
        lines = [f"{self.name}{origin}: {fn.num_arguments} arguments, {fn.compiles} compile(s)"]
        for number, reason in fn.recompiles:
            lines.append(f"  compile {number}: no earlier variant's guards held: {reason}")
        if fn.upgrades:
            lines.append(f"  {fn.upgrades} first tier(s) on the interpreter replaced by the library")
        if fn.fallback_calls:
            lines.append(f"  {fn.fallback_calls} call(s) past the compile limit ran on lathe's interpreter")
        lines += [f"  warning: {w}" for w in fn.warnings]
        return lines

    def write_dumps(self):
        """Writes the compiles' dumps so far under dump_dir/name."""
        fn = self.fn
        if not self.dump_dir or fn is None:
            return
        for k, files in enumerate(fn.dumps()):
            d = os.path.join(self.dump_dir, self.name, f"compile_{k + 1}")
            os.makedirs(d, exist_ok=True)
            for name, text in files:
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)


_graphs = []
_numbers = itertools.count()


def graphs():
    """Every graph lathe was given in this process, oldest first."""
    return list(_graphs)


def _on_compile(graph):
    def report(compiles):
        fn = graph.fn
        if compiles == 1 or fn is None:
            logger.info("%s: compiled for its first call", graph.name)
        else:
            reasons = dict(fn.recompiles)
            logger.info("%s: recompile %d: %s", graph.name, compiles, reasons.get(compiles, "(no reason recorded)"))
        graph.write_dumps()
    return report


def compile_graph(text, name="graph", options=None, kind="graph", dynamo_compile=None, source_lines=(),
                  parameters=(), frozen=None):
    """Graph text (``print_readable(include_stride=True, include_device=True)``
    of an AOTAutograd graph) as a lathe function; it compiles on its first
    call, for that call's sizes. ``frozen`` ({input name: tensor}) makes
    those inputs the function's own constants: its calls take the others."""
    options = _checked_options(options)
    fn = _lathe.compile(
        text,
        source=name,
        backend=options.get("backend", "cpu"),
        max_compiles=options.get("max_compiles", 8),
        cache_dir=os.fspath(options.get("cache_dir", "")),
        remote_cache=os.fspath(options.get("remote_cache", "")),
        dump=bool(options.get("dump_dir")),
        frozen=frozen or None,
        tiered=options.get("tiered", False),
        autotune=options.get("autotune", False),
    )
    dump_dir = os.fspath(options.get("dump_dir", "")) or None
    graph = Graph(name, kind, text, fn, dump_dir, dynamo_compile, source_lines, parameters)
    if dump_dir:
        os.makedirs(os.path.join(dump_dir, name), exist_ok=True)
        with open(os.path.join(dump_dir, name, "graph.txt"), "w") as f:
            f.write(text)
    fn.on_compile = _on_compile(graph)
    _graphs.append(graph)
    logger.info("%s: %d arguments%s", name, fn.num_arguments,
                f" (Dynamo compile {dynamo_compile})" if dynamo_compile else "")
    return fn


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _source_lines(gm):
    """(file, line) of every user frame the nodes of Dynamo's graph trace
    back to."""
    lines = set()
    for node in gm.graph.nodes:
        for file, line in _FRAME.findall(node.meta.get("stack_trace") or ""):
            lines.add((file, int(line)))
    return lines


def _range_directive(symbol, lower, upper):
    """``# lathe: range`` for an integer symbol's value range, or "" when
    either end is unbounded (PyTorch's int_oo has no int) or fractional."""
    try:
        lo, hi = int(lower), int(upper)
    except (AttributeError, TypeError, ValueError, OverflowError):
        return ""
    if lo != lower or hi != upper:
        return ""
    return f"# lathe: range {symbol} {lo} {hi}\n"


def _range_lines(text):
    """The value ranges PyTorch's ShapeEnv knows for the size symbols of
    `text` (Dynamo guards them: "2 <= s77 <= 15" where a convolution's batch
    heuristics need it), as lathe directives, so lathe proves what PyTorch
    proved, e.g. that ((s53 - 1)//32) + 1 is 1 when s53 <= 32."""
    from torch._guards import TracingContext

    context = TracingContext.try_get()
    shape_env = None if context is None or context.fake_mode is None else context.fake_mode.shape_env
    if shape_env is None:
        return ""
    # Backed symbols of the inputs' annotations only: an unbacked one (u0)
    # is numbered by each tracer in its own order.
    signature = text.split("def forward(", 1)[-1].split("):", 1)[0]
    words = set(re.findall(r"\bs\d+\b", signature))
    lines = []
    for symbol, r in shape_env.var_to_range.items():
        if str(symbol) in words:
            lines.append(_range_directive(symbol, r.lower, r.upper))
    return "".join(sorted(lines))


def _wrapper_is_identity(graph_args, example_inputs):
    """Whether AOTAutograd's runtime wrappers around the inference graph now
    being compiled would hand lathe's function Dynamo's arguments unchanged
    and return its outputs unchanged: the same arguments (no deduplicated or
    synthetic-base inputs, no RNG state or effect tokens, plain tensors), no
    input mutation or version bump left to the wrapper, no output that
    aliases an input or an intermediate, no dynamic-output marks, grad-mode
    or autocast state to restore. Then the backend returns lathe's function
    itself and a call skips the wrappers (about 5 us)."""
    from torch._guards import TracingContext

    context = TracingContext.try_get()
    meta = None if context is None else getattr(context, "fw_metadata", None)
    if meta is None or len(graph_args) != len(example_inputs):
        return False
    if any(isinstance(t, torch.Tensor) and type(t) not in (torch.Tensor, torch.nn.Parameter)
           for t in example_inputs):
        return False
    try:
        plain = (meta.num_mutated_inp_runtime_indices == 0
                 and not meta.mutated_graph_handled_indices_seen_by_autograd
                 and meta.num_outputs_aliased == 0
                 and meta.num_unsafe_view_outputs == 0
                 and meta.num_intermediate_bases == 0
                 and not meta.dynamic_outputs
                 and meta.grad_enabled_mutation is None
                 and not meta.tokens
                 and not meta.is_rng_op_functionalized)
    except AttributeError:
        # AOTAutograd's metadata is private: a PyTorch whose fields differ
        # keeps its wrappers rather than risk skipping one that matters.
        return False
    return plain and not torch._C._is_any_autocast_enabled()


def _frozen_inputs(g, example_inputs):
    """For freezing: the inference graph `g`'s inputs that are the module's
    parameters and buffers (Dynamo marks them static inputs), by placeholder
    name, with their values, and the indices of the others, which calls
    still pass; ({}, None) when AOTAutograd's inputs are not Dynamo's one for
    one, or nothing can be frozen. An input the graph writes, or that an
    output aliases, stays an input (as Inductor's replace_params_with_constants
    keeps it)."""
    from torch._dynamo.utils import get_static_address_type
    from torch._guards import TracingContext

    placeholders = [n for n in g.graph.nodes if n.op == "placeholder"]
    context = TracingContext.try_get()
    meta = None if context is None else getattr(context, "fw_metadata", None)
    if (meta is None or len(placeholders) != len(example_inputs)
            or len(getattr(meta, "input_info", ())) != len(example_inputs) or getattr(meta, "tokens", None)):
        return {}, None
    try:
        from torch._functorch._aot_autograd.schemas import OutputType

        written = {i for i, m in enumerate(meta.input_info) if m.mutates_data or m.mutates_metadata}
        aliased = {o.base_idx for o in meta.output_info
                   if o.base_idx is not None and o.output_type in (OutputType.alias_of_input, OutputType.is_input)}
    except (AttributeError, ImportError):
        # AOTAutograd's metadata is private: a PyTorch whose fields differ
        # keeps every input.
        return {}, None
    frozen = {}
    for i, (node, t) in enumerate(zip(placeholders, example_inputs)):
        if (type(t) in (torch.Tensor, torch.nn.Parameter) and t.device.type == "cpu"
                and get_static_address_type(t) is not None and i not in written and i not in aliased):
            frozen[node.name] = t
    if not frozen:
        return {}, None
    return frozen, [i for i, n in enumerate(placeholders) if n.name not in frozen]


def backend(gm, example_inputs, options=None, **_):
    """torch.compile's "lathe" backend: Dynamo's graph through AOTAutograd,
    its forward and backward graphs compiled by lathe. An inference graph
    whose AOTAutograd wrappers would change nothing is called directly."""
    from functorch.compile import make_boxed_func
    from torch._functorch.aot_autograd import aot_module_simplified

    from torch._guards import CompileContext

    options = _checked_options(options)
    compile_id = CompileContext.current_compile_id()
    dynamo_compile = None if compile_id is None else str(compile_id)
    source_lines = _source_lines(gm)
    parameters = [p for p in example_inputs if isinstance(p, torch.nn.Parameter)]
    direct = []

    freezing = options.get("freezing", False) and not torch.is_grad_enabled()

    def compiler(kind):
        def compile_fn(g, graph_args):
            text = g.print_readable(print_output=False, include_stride=True, include_device=True)
            frozen, keep = _frozen_inputs(g, example_inputs) if freezing and kind == "inference" else ({}, None)
            fn = compile_graph(_range_lines(text) + text, f"{kind}_{next(_numbers)}", options, kind,
                               dynamo_compile, source_lines, parameters, frozen)
            if keep is not None:
                compiled = fn

                def fn(*args):
                    return compiled(*[args[i] for i in keep])
            if kind == "inference" and _wrapper_is_identity(graph_args, example_inputs):
                direct.append(fn)
            return make_boxed_func(fn)
        return compile_fn

    wrapped = aot_module_simplified(
        gm,
        example_inputs,
        fw_compiler=compiler("forward"),
        bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"),
        keep_inference_input_mutations=True,
    )
    # aot_module_simplified puts the module's own parameters and buffers
    # before Dynamo's arguments; Dynamo lifts them into its arguments, so
    # there are none, except where it did not.
    stateless = next(gm.parameters(), None) is None and next(gm.buffers(), None) is None
    return direct[0] if len(direct) == 1 and stateless else wrapped


class Explanation:
    """What lathe did with the graphs of one compiled function or model:
    ``graphs`` (Graph records), ``compiles`` (lathe's, in all),
    ``recompiles`` ([(graph name, compile number, reason)]); str() is a
    report."""

    def __init__(self, graphs):
        self.graphs = graphs
        live = [g for g in graphs if g.fn is not None]
        self.compiles = sum(g.fn.compiles for g in live)
        self.recompiles = [(g.name, n, r) for g in live for n, r in g.fn.recompiles]

    def __str__(self):
        if not self.graphs:
            return "lathe compiled no graph for this (not called yet, or not through lathe)"
        head = f"{len(self.graphs)} graph(s), {self.compiles} lathe compile(s), {len(self.recompiles)} recompile(s)"
        return "\n".join([head] + [line for g in self.graphs for line in g.summary()])


def _code_lines(fn):
    """(file, first line, last line) of the code `fn` (a function, method or
    module, compiled or not) runs first; None when it has none."""
    fn = getattr(fn, "_torchdynamo_orig_callable", fn)
    fn = getattr(fn, "_orig_mod", fn)
    if isinstance(fn, torch.nn.Module):
        fn = fn.forward
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None:
        return None
    lines = [line for _, _, line in code.co_lines() if line is not None]
    return code.co_filename, min(lines, default=code.co_firstlineno), max(lines, default=code.co_firstlineno)


def explain(compiled=None):
    """What lathe did with `compiled`: a function or model torch.compile
    returned (the graphs Dynamo traced from its code, or that take the
    model's parameters), a function lathe
    compiled, or None for every graph in this process. Recompile reasons
    also reach the "lathe" logger (logging.INFO) as they happen."""
    if compiled is None:
        return Explanation(graphs())
    if isinstance(compiled, _lathe.Function):
        return Explanation([g for g in _graphs if g.fn is compiled])
    module = getattr(compiled, "_orig_mod", compiled)
    if isinstance(module, torch.nn.Module):
        # A model with parameters is found by them (its graphs take them),
        # not by its code, which another instance of its class shares.
        mine = set(map(id, module.parameters()))
        if mine:
            return Explanation([g for g in _graphs if any(id(p) in mine for p in g.parameters)])
    where = _code_lines(compiled)
    if where is None:
        raise Error(f"lathe.explain: {type(compiled).__name__} is not a function, a module or a lathe function")
    file, first, last = where
    return Explanation([g for g in _graphs
                        if any(f == file and first <= line <= last for f, line in g.source_lines)])


def aot_compile(exported, path, options=None):
    """Compiles ``exported`` (a ``torch.export.export`` program) into a
    lathe artifact in directory ``path``: the kernels for its inputs' sizes,
    with each dimension a ``Dim`` made dynamic symbolic within the Dim's
    range, and its parameters, buffers and constants held in the artifact.
    ``lathe.load(path)`` calls it with the user inputs alone, as does a C++
    program through ``//runtime`` (``LoadArtifact``, ``LoadedArtifact::Call``).
    Options: backend ("cpu", "cuda"), cache_dir, remote_cache."""
    from torch.export.graph_signature import InputKind, OutputKind

    options = _checked_options(options)
    if not hasattr(exported, "graph_signature"):
        raise Error(f"lathe.aot_compile: expected a torch.export.ExportedProgram, got {type(exported).__name__}")
    ep = exported.run_decompositions()
    signature = ep.graph_signature
    for spec in signature.output_specs:
        if spec.kind != OutputKind.USER_OUTPUT:
            raise Error(f"lathe.aot_compile: the program's output {spec.arg.name} is a {spec.kind.name} "
                        "(a buffer it updates, as batch norm in training mode does); export the model in eval mode")
    args, kwargs = ep.example_inputs
    user = iter(torch.utils._pytree.tree_leaves((args, kwargs)))
    values, bound = [], []
    for k, spec in enumerate(signature.input_specs):
        if spec.kind == InputKind.USER_INPUT:
            values.append(next(user))
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            values.append(ep.state_dict[spec.target] if spec.target in ep.state_dict else ep.constants[spec.target])
            bound.append(k)
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            values.append(ep.constants[spec.target])
            bound.append(k)
        else:
            raise Error(f"lathe.aot_compile: input {spec.arg.name} is a {spec.kind.name}, which lathe cannot hold")
    values = [v.detach() if isinstance(v, torch.Tensor) else v for v in values]
    gm = ep.graph_module
    for node in gm.graph.nodes:
        # A placeholder named after a builtin ("input") prints as
        # "def forward(self, input): input_1 = input"; lathe's text has no
        # such lines, so it gets a name of its own.
        if node.op == "placeholder" and node.name in dir(builtins):
            node._rename(f"{node.name}_arg")
            node.target = node.name
    gm.recompile()
    text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    ranges = [_range_directive(symbol, r.lower, r.upper) for symbol, r in ep.range_constraints.items()
              if str(symbol).isidentifier()]
    os.makedirs(os.path.dirname(os.path.abspath(os.fspath(path))), exist_ok=True)
    _lathe.compile_artifact(
        "".join(ranges) + text,
        os.fspath(path),
        values,
        bound,
        source=f"{type(exported).__name__} for {os.fspath(path)}",
        backend=options.get("backend", "cpu"),
        cache_dir=os.fspath(options.get("cache_dir", "")),
        remote_cache=os.fspath(options.get("remote_cache", "")),
    )
    logger.info("aot_compile: wrote %s (%d arguments held, %d taken)", path, len(bound), len(values) - len(bound))
    return os.fspath(path)


def load(path):
    """The function of the artifact in directory ``path`` (lathe's runtime
    alone: no compiler, no recompiles); it takes the arguments the artifact
    does not hold (an exported model's user inputs) and returns a tuple."""
    return _lathe.load(os.fspath(path))


def _register():
    from torch._dynamo.backends.registry import _BACKENDS as registered
    from torch._dynamo import register_backend

    if registered.get("lathe") is None:
        register_backend(compiler_fn=backend, name="lathe")


_register()
