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

``lathe.load(path)`` calls an artifact ``lathec compile`` wrote.
"""

import itertools
import logging
import os

import torch

from . import _lathe

__all__ = ["Error", "backend", "compile_graph", "graphs", "load"]

Error = _lathe.Error
logger = logging.getLogger("lathe")

_OPTIONS = {"backend", "dump_dir", "cache_dir", "remote_cache", "max_compiles"}
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
    for key in ("dump_dir", "cache_dir", "remote_cache"):
        if key in options and not isinstance(options[key], (str, os.PathLike)):
            raise Error(f"option {key} is {options[key]!r}; expected a path or string")
    return options


class Graph:
    """One graph AOTAutograd handed lathe: its name ("forward_0"), text and
    compiled function (``fn.compiles``, ``fn.recompiles``)."""

    def __init__(self, name, text, fn, dump_dir):
        self.name = name
        self.text = text
        self.fn = fn
        self.dump_dir = dump_dir

    def write_dumps(self):
        """Writes the compiles' dumps so far under dump_dir/name."""
        if not self.dump_dir:
            return
        for k, files in enumerate(self.fn.dumps()):
            d = os.path.join(self.dump_dir, self.name, f"compile_{k + 1}")
            os.makedirs(d, exist_ok=True)
            for name, text in files:
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)


_graphs = []
_numbers = itertools.count()


def graphs():
    """Every graph lathe compiled in this process, oldest first."""
    return list(_graphs)


def compile_graph(text, name="graph", options=None):
    """Graph text (``print_readable(include_stride=True, include_device=True)``
    of an AOTAutograd graph) as a lathe function; it compiles on its first
    call, for that call's sizes."""
    options = _checked_options(options)
    fn = _lathe.compile(
        text,
        source=name,
        backend=options.get("backend", "cpu"),
        max_compiles=options.get("max_compiles", 8),
        cache_dir=os.fspath(options.get("cache_dir", "")),
        remote_cache=os.fspath(options.get("remote_cache", "")),
        dump=bool(options.get("dump_dir")),
    )
    dump_dir = os.fspath(options.get("dump_dir", "")) or None
    graph = Graph(name, text, fn, dump_dir)
    if dump_dir:
        os.makedirs(os.path.join(dump_dir, name), exist_ok=True)
        with open(os.path.join(dump_dir, name, "graph.txt"), "w") as f:
            f.write(text)
    _graphs.append(graph)
    logger.info("lathe: %s: %d arguments, compiled on its first call", name, fn.num_arguments)
    return fn


def backend(gm, example_inputs, options=None, **_):
    """torch.compile's "lathe" backend: Dynamo's graph through AOTAutograd,
    its forward and backward graphs compiled by lathe."""
    from functorch.compile import make_boxed_func
    from torch._functorch.aot_autograd import aot_module_simplified

    options = _checked_options(options)

    def compiler(kind):
        def compile_fn(g, _example):
            text = g.print_readable(print_output=False, include_stride=True, include_device=True)
            fn = compile_graph(text, f"{kind}_{next(_numbers)}", options)
            return make_boxed_func(fn)
        return compile_fn

    return aot_module_simplified(
        gm,
        example_inputs,
        fw_compiler=compiler("forward"),
        bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"),
        keep_inference_input_mutations=True,
    )


def load(path):
    """The function of the artifact in directory ``path`` (lathe's runtime
    alone: no compiler, no recompiles)."""
    return _lathe.load(os.fspath(path))


def _register():
    from torch._dynamo.backends.registry import _BACKENDS as registered
    from torch._dynamo import register_backend

    if registered.get("lathe") is None:
        register_backend(compiler_fn=backend, name="lathe")


_register()
