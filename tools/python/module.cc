// The native half of the `lathe` Python package (lathe/__init__.py is the
// other): the module `lathe._lathe`, a CPython extension that holds lathe's
// whole compiler and runtime in the Python process. It parses and compiles
// graph text in-process (driver/variant_compiler.h: no subprocess but the C++
// compiler's, no temporary file but its build directory), loads artifacts,
// and calls compiled functions on PyTorch's tensors without copying them
// (torch_bridge.h).
//
//   import torch
//   from lathe import _lathe
//   f = _lathe.compile(text, source="forward_0", backend="cpu")
//   outs = f(x, w)            # a tuple: tensors, ints, floats, bools, None
//   f.compiles, f.recompiles  # 1, [(2, "x.size(0) == 8")...]
//   g = _lathe.load("/tmp/mlp-artifact")
//
// Errors raise _lathe.Error (a RuntimeError) with lathe's one-line message.

// '#' formats take Py_ssize_t lengths; before anything includes Python.h.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <torch/csrc/autograd/python_variable.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "driver/arguments.h"
#include "driver/compile.h"
#include "driver/variant_compiler.h"
#include "runtime/artifact.h"
#include "runtime/compile_cache.h"
#include "runtime/compiled_function.h"
#include "runtime/npy.h"
#include "status_macros.h"
#include "tools/python/torch_bridge.h"

namespace lathe::python {
namespace {

PyObject* error_type = nullptr;  // _lathe.Error

// Raises _lathe.Error with `status`'s message; returns null for the caller
// to return.
PyObject* Raise(const absl::Status& status) {
  PyErr_SetString(error_type, std::string(status.message()).c_str());
  return nullptr;
}

// The compile caches this process made, one per configuration, alive with
// it (their memory tiers are shared by every function compiled through them).
absl::StatusOr<CacheBackend*> CacheFor(const std::string& dir,
                                       const std::string& remote) {
  if (dir.empty() && remote.empty()) return DefaultCompileCache();
  static std::mutex mu;
  static auto* caches = new std::map<std::pair<std::string, std::string>,
                                     std::unique_ptr<TieredCache>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = caches->find({dir, remote});
  if (it != caches->end()) return it->second.get();
  ASSIGN_OR_RETURN(CompileCacheConfig config,
                   CompileCacheConfigFromEnvironment());
  if (!dir.empty()) config.dir = dir;
  if (!remote.empty()) config.remote = remote;
  ASSIGN_OR_RETURN(std::unique_ptr<TieredCache> cache, NewCompileCache(config));
  CacheBackend* raw = cache.get();
  caches->emplace(std::make_pair(dir, remote), std::move(cache));
  return raw;
}

// What a Function object holds: a compiled graph's compiler and function,
// or a loaded artifact's function.
struct Held {
  std::unique_ptr<VariantCompiler> compiler;  // null for an artifact
  std::optional<LoadedArtifact> artifact;
  std::unique_ptr<CompiledFunction> owned;
  CompiledFunction* function = nullptr;
  // Called as on_compile(compiles, recompiles) after a call that compiled
  // (Function.on_compile; None: nothing), and the compiles it was told of.
  PyObject* on_compile = nullptr;
  int reported = 0;
  BorrowCache borrowed;  // the calls' arguments' storages
  ~Held() { Py_XDECREF(on_compile); }
};

struct FunctionObject {
  PyObject_HEAD vectorcallfunc vectorcall;
  Held* held;
  PyObject* weakrefs;  // lathe.graphs() holds its functions weakly
};

PyTypeObject function_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

// The first line of an exception's message.
std::string FirstLine(absl::string_view what) {
  return std::string(what.substr(0, what.find('\n')));
}

// Argument `i` of a call as an Operand (tensors through `bridge`).
absl::StatusOr<Operand> ToOperand(PyObject* obj, int i, CallBridge& bridge) {
  if (THPVariable_Check(obj)) {
    // PyTorch reports what it cannot do (a tensor subclass without storage)
    // by throwing; lathe's callers get the message.
    try {
      return bridge.Argument(THPVariable_Unpack(obj), i);
    } catch (const c10::Error& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "argument ", i, ": ", FirstLine(e.what_without_backtrace())));
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", i, ": ", FirstLine(e.what())));
    }
  }
  if (obj == Py_None) return Operand();
  if (PyBool_Check(obj)) return Operand::Bool(obj == Py_True);
  if (PyLong_Check(obj)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", i, ": an int outside int64's range"));
    }
    return Operand::Int(v);
  }
  if (PyFloat_Check(obj)) return Operand::Float(PyFloat_AS_DOUBLE(obj));
  return absl::InvalidArgumentError(
      absl::StrCat("argument ", i, ": a ", Py_TYPE(obj)->tp_name,
                   "; lathe takes tensors, ints, floats, bools and None"));
}

// A result as a Python object (tensors through `bridge`).
absl::StatusOr<PyObject*> ToPython(const Operand& o, CallBridge& bridge) {
  switch (o.kind) {
    case Operand::Kind::kTensor:
      try {
        ASSIGN_OR_RETURN(at::Tensor t, bridge.Result(o.tensor));
        return THPVariable_Wrap(std::move(t));
      } catch (const std::exception& e) {
        return absl::InternalError(absl::StrCat(
            "a result as a PyTorch tensor: ", FirstLine(e.what())));
      }
    case Operand::Kind::kInt:
      return PyLong_FromLongLong(o.i);
    case Operand::Kind::kFloat:
      return PyFloat_FromDouble(o.f);
    case Operand::Kind::kBool:
      return PyBool_FromLong(o.b);
    case Operand::Kind::kNone:
      Py_RETURN_NONE;
    case Operand::Kind::kComposite:
      break;
  }
  return absl::UnimplementedError(
      "a composite (tensor subclass) result; lathe's Python calls return "
      "plain tensors");
}

// Argument `obj` as a LatheValue (tensors through `bridge`), for
// CompiledFunction::CallViews; false where only ToOperand goes on (a value
// it refuses, with its error, or one it converts).
bool ToView(PyObject* obj, CallBridge& bridge, LatheValue* out) {
  *out = LatheValue{};
  if (THPVariable_Check(obj)) {
    try {
      return bridge.View(THPVariable_Unpack(obj), out);
    } catch (const std::exception&) {
      return false;
    }
  }
  if (obj == Py_None) return true;  // LATHE_VALUE_NONE
  if (PyBool_Check(obj)) {
    out->kind = LATHE_VALUE_BOOL;
    out->i = obj == Py_True ? 1 : 0;
    return true;
  }
  if (PyLong_Check(obj)) {
    int overflow = 0;
    out->kind = LATHE_VALUE_INT;
    out->i = PyLong_AsLongLongAndOverflow(obj, &overflow);
    return overflow == 0;
  }
  if (PyFloat_Check(obj)) {
    out->kind = LATHE_VALUE_FLOAT;
    out->f = PyFloat_AS_DOUBLE(obj);
    return true;
  }
  return false;
}

// The results as a tuple (tensors through `bridge`).
PyObject* ResultTuple(const std::vector<Operand>& results, CallBridge& bridge) {
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(results.size()));
  if (tuple == nullptr) return nullptr;
  for (size_t i = 0; i < results.size(); ++i) {
    absl::StatusOr<PyObject*> o = ToPython(results[i], bridge);
    if (!o.ok()) {
      Py_DECREF(tuple);
      return Raise(o.status());
    }
    if (*o == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), *o);
  }
  return tuple;
}

PyObject* Call(PyObject* self, PyObject* const* argv, size_t nargsf,
               PyObject* kwnames) {
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) > 0) {
    PyErr_SetString(PyExc_TypeError,
                    "a lathe function takes positional arguments only");
    return nullptr;
  }
  Held& held = *reinterpret_cast<FunctionObject*>(self)->held;
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  CallBridge bridge(&held.borrowed);
  // The arguments as views of their own memory and arrays, for a variant
  // that admits them already (no lathe::Tensor per argument); else, or for
  // anything the views cannot say, Operands.
  absl::InlinedVector<LatheValue, 16> views(n);
  bool viewed = true;
  for (Py_ssize_t i = 0; i < n && viewed; ++i) {
    viewed = ToView(argv[i], bridge, &views[i]);
  }
  if (viewed) {
    std::optional<absl::StatusOr<std::vector<Operand>>> fast;
    Py_BEGIN_ALLOW_THREADS;
    fast = held.artifact.has_value() ? held.artifact->CallViews(views)
                                     : held.function->CallViews(views);
    Py_END_ALLOW_THREADS;
    if (fast.has_value()) {
      if (!fast->ok()) return Raise(fast->status());
      return ResultTuple(**fast, bridge);
    }
  }
  absl::InlinedVector<Operand, 16> args;
  args.reserve(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    absl::StatusOr<Operand> o = ToOperand(argv[i], static_cast<int>(i), bridge);
    if (!o.ok()) return Raise(o.status());
    args.push_back(*std::move(o));
  }
  // What each argument views, to see that none was rebound.
  absl::InlinedVector<const void*, 16> before;
  for (const Operand& a : args) before.push_back(a.tensor.storage().data());
  absl::StatusOr<std::vector<Operand>> results;
  Py_BEGIN_ALLOW_THREADS;
  results = held.artifact.has_value()
                ? held.artifact->Call(absl::MakeSpan(args))
                : held.function->Call(absl::MakeSpan(args));
  Py_END_ALLOW_THREADS;
  if (!results.ok()) return Raise(results.status());
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (args[i].tensor.storage().data() != before[i]) {
      return Raise(absl::UnimplementedError(
          absl::StrCat("argument ", i,
                       " was rebound (set_ or as_strided_), which "
                       "lathe's Python calls cannot hand back to PyTorch")));
    }
  }
  if (held.on_compile != nullptr) {
    const int compiles = held.function->compiles();
    if (compiles != held.reported) {
      held.reported = compiles;
      PyObject* r = PyObject_CallFunction(held.on_compile, "i", compiles);
      if (r == nullptr) return nullptr;
      Py_DECREF(r);
    }
  }
  return ResultTuple(*results, bridge);
}

PyObject* NewFunction(Held* held) {
  FunctionObject* f = PyObject_New(FunctionObject, &function_type);
  if (f == nullptr) {
    delete held;
    return nullptr;
  }
  f->vectorcall = &Call;
  f->held = held;
  f->weakrefs = nullptr;
  return reinterpret_cast<PyObject*>(f);
}

void FunctionDealloc(PyObject* self) {
  if (reinterpret_cast<FunctionObject*>(self)->weakrefs != nullptr) {
    PyObject_ClearWeakRefs(self);
  }
  Held* held = reinterpret_cast<FunctionObject*>(self)->held;
  // A tiered function's builds finish without the GIL: other Python
  // threads run meanwhile.
  if (held != nullptr && held->compiler != nullptr) {
    Py_BEGIN_ALLOW_THREADS;
    held->compiler->WaitForBuilds();
    Py_END_ALLOW_THREADS;
  }
  delete held;
  PyObject_Free(self);
}

Held& HeldOf(PyObject* self) {
  return *reinterpret_cast<FunctionObject*>(self)->held;
}

PyObject* GetCompiles(PyObject* self, void*) {
  return PyLong_FromLong(HeldOf(self).function->compiles());
}

PyObject* GetFallbackCalls(PyObject* self, void*) {
  return PyLong_FromLongLong(HeldOf(self).function->fallback_calls());
}

PyObject* GetUpgrades(PyObject* self, void*) {
  return PyLong_FromLong(HeldOf(self).function->upgrades());
}

// Function.wait_for_builds(): waits for the libraries a tiered function's
// compiles are building (each has then replaced the interpreter, or failed
// with a warning).
PyObject* WaitForBuilds(PyObject* self, PyObject*) {
  Held& held = HeldOf(self);
  if (held.compiler != nullptr) {
    Py_BEGIN_ALLOW_THREADS;
    held.compiler->WaitForBuilds();
    Py_END_ALLOW_THREADS;
  }
  Py_RETURN_NONE;
}

PyObject* GetNumArguments(PyObject* self, void*) {
  const Held& held = HeldOf(self);
  return PyLong_FromSize_t(
      held.function->arguments().size() -
      (held.artifact.has_value() ? held.artifact->bound.size() : 0));
}

PyObject* GetRecompiles(PyObject* self, void*) {
  std::vector<Recompile> r = HeldOf(self).function->recompiles();
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(r.size()));
  if (list == nullptr) return nullptr;
  for (size_t i = 0; i < r.size(); ++i) {
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i),
                    Py_BuildValue("(is)", r[i].compile, r[i].reason.c_str()));
  }
  return list;
}

PyObject* GetWarnings(PyObject* self, void*) {
  std::vector<std::string> w = HeldOf(self).function->warnings();
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(w.size()));
  if (list == nullptr) return nullptr;
  for (size_t i = 0; i < w.size(); ++i) {
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i),
                    PyUnicode_FromString(w[i].c_str()));
  }
  return list;
}

// Function.dumps(): per compile so far, a list of (name, text): the graph
// after AOT and after each pass (when compiled with dump=True), the steps'
// times, and the generated source ("kernel.cc") with a backend.
PyObject* Dumps(PyObject* self, PyObject*) {
  Held& held = HeldOf(self);
  PyObject* out = PyList_New(0);
  if (out == nullptr || held.compiler == nullptr) return out;
  for (const CompiledGraph* c : held.compiler->compiled()) {
    std::vector<std::pair<std::string, std::string>> files = c->dumps;
    std::string steps;
    for (const StepTime& s : c->steps) {
      absl::StrAppend(&steps, s.name, " ", s.seconds * 1e3, " ms\n");
    }
    files.emplace_back("steps.txt", steps);
    if (c->function != nullptr) {
      files.emplace_back("kernel.cc", c->function->source());
    }
    PyObject* list = PyList_New(static_cast<Py_ssize_t>(files.size()));
    for (size_t i = 0; i < files.size(); ++i) {
      PyList_SET_ITEM(
          list, static_cast<Py_ssize_t>(i),
          Py_BuildValue("(s#s#)", files[i].first.data(),
                        static_cast<Py_ssize_t>(files[i].first.size()),
                        files[i].second.data(),
                        static_cast<Py_ssize_t>(files[i].second.size())));
    }
    PyList_Append(out, list);
    Py_DECREF(list);
  }
  return out;
}

PyObject* GetOnCompile(PyObject* self, void*) {
  PyObject* f = HeldOf(self).on_compile;
  if (f == nullptr) Py_RETURN_NONE;
  Py_INCREF(f);
  return f;
}

int SetOnCompile(PyObject* self, PyObject* value, void*) {
  if (value != nullptr && value != Py_None && !PyCallable_Check(value)) {
    PyErr_SetString(PyExc_TypeError, "on_compile must be callable or None");
    return -1;
  }
  Held& held = HeldOf(self);
  Py_XDECREF(held.on_compile);
  held.on_compile = value == nullptr || value == Py_None ? nullptr : value;
  Py_XINCREF(held.on_compile);
  return 0;
}

PyGetSetDef function_getset[] = {
    {"on_compile", &GetOnCompile, &SetOnCompile,
     "called as on_compile(compiles) after a call that compiled", nullptr},
    {"compiles", &GetCompiles, nullptr, "the variants compiled so far",
     nullptr},
    {"recompiles", &GetRecompiles, nullptr,
     "(compile number, reason) for each recompile", nullptr},
    {"fallback_calls", &GetFallbackCalls, nullptr,
     "the calls run on the interpreter past the compile limit", nullptr},
    {"upgrades", &GetUpgrades, nullptr,
     "the interpreted first tiers the library replaced (tiered=True)", nullptr},
    {"warnings", &GetWarnings, nullptr, "warnings given", nullptr},
    {"num_arguments", &GetNumArguments, nullptr, "the arguments a call takes",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef function_methods[] = {
    {"dumps", &Dumps, METH_NOARGS, "per compile, its (name, text) dumps"},
    {"wait_for_builds", &WaitForBuilds, METH_NOARGS,
     "waits for the libraries a tiered function builds"},
    {nullptr, nullptr, 0, nullptr},
};

// The values of `frozen` (a dict of input name to tensor, or None) copied
// into `out`: the compiled function's own from then on.
absl::Status FrozenValues(PyObject* frozen, ir::Constants* out) {
  if (frozen == nullptr || frozen == Py_None) return absl::OkStatus();
  if (!PyDict_Check(frozen)) {
    return absl::InvalidArgumentError(
        "frozen must be a dict of input name to tensor");
  }
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  Py_ssize_t pos = 0;
  CallBridge bridge;
  int i = 0;
  while (PyDict_Next(frozen, &pos, &key, &value)) {
    const char* name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
    if (name == nullptr) {
      PyErr_Clear();
      return absl::InvalidArgumentError("frozen's keys must be input names");
    }
    ASSIGN_OR_RETURN(Operand o, ToOperand(value, i++, bridge));
    if (o.kind != Operand::Kind::kTensor || !o.tensor.defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("frozen input '", name, "': expected a tensor"));
    }
    if (!o.tensor.device().is_cpu()) {
      return absl::InvalidArgumentError(
          absl::StrCat("frozen input '", name,
                       "': expected a tensor on the "
                       "host, got ",
                       o.tensor.ToString()));
    }
    ASSIGN_OR_RETURN(Tensor copy, o.tensor.Clone());
    (*out)[name] = ir::Value::OfTensor(std::move(copy));
  }
  return absl::OkStatus();
}

// _lathe.compile(text, source="graph", backend="cpu", max_compiles=8,
//                cache_dir="", remote_cache="", dump=False, frozen=None,
//                tiered=False, autotune=False):
// `frozen` ({input name: tensor}) freezes those inputs (driver/freeze.h):
// the function's calls take the others. `tiered`: calls run on the
// interpreter until the library, built on another thread, replaces it
// (driver/variant_compiler.h). `autotune`: each kernel's threads measured
// at compile time, or read from the cache (driver/autotune.h).
PyObject* CompileText(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {
      "text", "source", "backend", "max_compiles", "cache_dir", "remote_cache",
      "dump", "frozen", "tiered",  "autotune",     nullptr};
  const char* text = nullptr;
  Py_ssize_t text_size = 0;
  const char* source = "graph";
  const char* backend = "cpu";
  int max_compiles = 8;
  const char* cache_dir = "";
  const char* remote = "";
  int dump = 0;
  PyObject* frozen = nullptr;
  int tiered = 0;
  int autotune = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "s#|ssisspOpp", const_cast<char**>(keywords), &text,
          &text_size, &source, &backend, &max_compiles, &cache_dir, &remote,
          &dump, &frozen, &tiered, &autotune)) {
    return nullptr;
  }
  if (max_compiles < 1 || max_compiles > 1000) {
    return Raise(absl::InvalidArgumentError(absl::StrCat(
        "max_compiles is ", max_compiles, "; expected 1 to 1000")));
  }
  CompileOptions options;
  options.source = source;
  options.dump = dump != 0;
  options.autotune = autotune != 0;
  if (absl::Status s = FrozenValues(frozen, &options.frozen); !s.ok()) {
    return Raise(s);
  }
  absl::StatusOr<const codegen::Backend*> b = BackendNamed(backend);
  if (!b.ok()) return Raise(b.status());
  options.backend = *b;
  CacheBackend* cache = nullptr;
  if (options.backend != nullptr) {
    absl::StatusOr<CacheBackend*> c = CacheFor(cache_dir, remote);
    if (!c.ok()) return Raise(c.status());
    cache = *c;
  }
  absl::StatusOr<ParsedGraph> parsed;
  std::string copy(text, static_cast<size_t>(text_size));
  Py_BEGIN_ALLOW_THREADS;
  parsed = Parse(copy, source);
  Py_END_ALLOW_THREADS;
  if (!parsed.ok()) return Raise(parsed.status());
  auto held = std::make_unique<Held>();
  held->compiler =
      std::make_unique<VariantCompiler>(*std::move(parsed), options, cache);
  absl::StatusOr<std::unique_ptr<CompiledFunction>> f =
      held->compiler->Function(
          {.max_compiles = max_compiles, .tiered = tiered != 0});
  if (!f.ok()) return Raise(f.status());
  held->owned = *std::move(f);
  held->function = held->owned.get();
  return NewFunction(held.release());
}

// _lathe.compile_artifact(text, path, args, bound=(), source="graph",
//                         backend="cpu", cache_dir="", remote_cache=""):
// compiles `text` for the example `args` (one per placeholder: their sizes
// are the hints) and writes the artifact to `path`, holding the arguments
// whose indices `bound` lists (an exported model's weights).
PyObject* CompileArtifact(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"text",      "path",         "args",
                                   "bound",     "source",       "backend",
                                   "cache_dir", "remote_cache", nullptr};
  const char* text = nullptr;
  Py_ssize_t text_size = 0;
  const char* path = nullptr;
  PyObject* example = nullptr;
  PyObject* bound = nullptr;
  const char* source = "graph";
  const char* backend = "cpu";
  const char* cache_dir = "";
  const char* remote = "";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s#sO|Ossss",
                                   const_cast<char**>(keywords), &text,
                                   &text_size, &path, &example, &bound, &source,
                                   &backend, &cache_dir, &remote)) {
    return nullptr;
  }
  PyObject* seq = PySequence_Fast(example, "args must be a sequence");
  if (seq == nullptr) return nullptr;
  CallBridge bridge;
  std::vector<Operand> operands;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < n; ++i) {
    absl::StatusOr<Operand> o = ToOperand(PySequence_Fast_GET_ITEM(seq, i),
                                          static_cast<int>(i), bridge);
    if (!o.ok()) {
      Py_DECREF(seq);
      return Raise(o.status());
    }
    operands.push_back(*std::move(o));
  }
  Py_DECREF(seq);
  std::vector<int> bound_indices;
  if (bound != nullptr && bound != Py_None) {
    PyObject* b = PySequence_Fast(bound, "bound must be a sequence of ints");
    if (b == nullptr) return nullptr;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(b); ++i) {
      long k = PyLong_AsLong(PySequence_Fast_GET_ITEM(b, i));
      if (k == -1 && PyErr_Occurred()) {
        Py_DECREF(b);
        return nullptr;
      }
      if (k < 0 || k >= n || operands[k].kind != Operand::Kind::kTensor) {
        Py_DECREF(b);
        return Raise(absl::InvalidArgumentError(
            absl::StrCat("bound argument ", k, " is not one of the ", n,
                         " example arguments' tensors")));
      }
      bound_indices.push_back(static_cast<int>(k));
    }
    Py_DECREF(b);
  }
  absl::StatusOr<const codegen::Backend*> b = BackendNamed(backend);
  if (!b.ok()) return Raise(b.status());
  if (*b == nullptr) {
    return Raise(absl::InvalidArgumentError(
        "an artifact holds compiled code: backend cpu or cuda, not interp"));
  }
  absl::StatusOr<CacheBackend*> cache = CacheFor(cache_dir, remote);
  if (!cache.ok()) return Raise(cache.status());
  absl::Status status;
  std::string copy(text, static_cast<size_t>(text_size));
  Py_BEGIN_ALLOW_THREADS;
  status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(ParsedGraph parsed, Parse(copy, source));
    CompileOptions options;
    options.source = source;
    options.backend = *b;
    options.cache = *cache;
    options.artifact = true;
    options.hints = HintsOf(*parsed.written, operands);
    ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> c,
                     Compile(parsed, options));
    Manifest manifest = c->manifest;
    std::vector<std::pair<std::string, std::string>> files = c->files;
    for (int k : bound_indices) {
      ASSIGN_OR_RETURN(std::string npy, EncodeNpy(operands[k].tensor));
      std::string name = absl::StrCat("bound_", k, ".npy");
      manifest.bound[k] = name;
      files.emplace_back(std::move(name), std::move(npy));
    }
    return WriteArtifact(path, std::move(manifest), files);
  }();
  Py_END_ALLOW_THREADS;
  if (!status.ok()) return Raise(status);
  Py_RETURN_NONE;
}

// _lathe.load(path): an artifact's function (runtime alone: no recompiles).
PyObject* Load(PyObject*, PyObject* args) {
  const char* path = nullptr;
  if (!PyArg_ParseTuple(args, "s", &path)) return nullptr;
  absl::StatusOr<LoadedArtifact> a;
  Py_BEGIN_ALLOW_THREADS;
  a = LoadArtifact(path);
  Py_END_ALLOW_THREADS;
  if (!a.ok()) return Raise(a.status());
  auto held = std::make_unique<Held>();
  held->artifact = *std::move(a);
  held->function = held->artifact->function.get();
  return NewFunction(held.release());
}

PyMethodDef module_methods[] = {
    {"compile", reinterpret_cast<PyCFunction>(&CompileText),
     METH_VARARGS | METH_KEYWORDS,
     "compile(text, source='graph', backend='cpu', max_compiles=8, "
     "cache_dir='', remote_cache='', dump=False): graph text as a function"},
    {"load", &Load, METH_VARARGS, "load(path): an artifact as a function"},
    {"compile_artifact", reinterpret_cast<PyCFunction>(&CompileArtifact),
     METH_VARARGS | METH_KEYWORDS,
     "compile_artifact(text, path, args, bound=(), source='graph', "
     "backend='cpu', cache_dir='', remote_cache=''): writes an artifact"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_lathe",
                          "lathe's compiler and runtime, in-process", -1,
                          module_methods};

}  // namespace
}  // namespace lathe::python

PyMODINIT_FUNC PyInit__lathe() {
  using namespace lathe::python;
  function_type.tp_name = "lathe._lathe.Function";
  function_type.tp_basicsize = sizeof(FunctionObject);
  function_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  function_type.tp_vectorcall_offset = offsetof(FunctionObject, vectorcall);
  function_type.tp_call = &PyVectorcall_Call;
  function_type.tp_dealloc = &FunctionDealloc;
  function_type.tp_weaklistoffset = offsetof(FunctionObject, weakrefs);
  function_type.tp_getset = function_getset;
  function_type.tp_methods = function_methods;
  function_type.tp_doc = "a compiled lathe function: call it with tensors";
  if (PyType_Ready(&function_type) < 0) return nullptr;
  PyObject* m = PyModule_Create(&module_def);
  if (m == nullptr) return nullptr;
  error_type =
      PyErr_NewException("lathe._lathe.Error", PyExc_RuntimeError, nullptr);
  Py_INCREF(error_type);
  PyModule_AddObject(m, "Error", error_type);
  Py_INCREF(&function_type);
  PyModule_AddObject(m, "Function",
                     reinterpret_cast<PyObject*>(&function_type));
  return m;
}
