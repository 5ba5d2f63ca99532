#include "runtime/loaded_graph.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/kernel_runtime.h"
#include "runtime/packed_weights.h"
#include "status_macros.h"

namespace lathe {

namespace {

// The most outputs a library's lathe_call may have, and the ranks they may
// have.
constexpr int64_t kMaxResults = 1 << 16;
constexpr int64_t kMaxResultRank = 100;

// Appends the ranks of the plain values of `s`, in flatten order.
void Leaves(const CompositeLayout& s, std::vector<int>* ranks) {
  if (s.is_plain()) {
    ranks->push_back(s.rank);
    return;
  }
  for (const CompositeLayout& inner : s.inner) Leaves(inner, ranks);
}

// The LatheValues and dims a result of shape `s` takes, and its rank (a
// composite's outer rank is its first inner value's).
int Count(const CompositeLayout& s, size_t* values, size_t* dims) {
  int rank = s.rank;
  for (size_t k = 0; k < s.inner.size(); ++k) {
    int r = Count(s.inner[k], values, dims);
    if (k == 0) rank = r;
  }
  *values += s.inner.size();
  *dims += 2 * rank;
  return rank;
}

// The result buffers of one call: every LatheValue and dimension array in
// two arrays, shaped as the signature says.
class ResultArena {
 public:
  ResultArena(size_t values, size_t dims) : values_(values), dims_(dims) {}

  LatheValue* top() { return values_.data(); }

  // Shapes values_[*next_top] as `s`.
  int Shape(const CompositeLayout& s, LatheValue* v) {
    *v = LatheValue{};
    int rank = s.rank;
    if (!s.is_plain()) {
      v->num_inner = static_cast<int64_t>(s.inner.size());
      v->inner = values_.data() + next_value_;
      next_value_ += s.inner.size();
      for (size_t k = 0; k < s.inner.size(); ++k) {
        int r = Shape(s.inner[k], &v->inner[k]);
        if (k == 0) rank = r;
      }
    }
    v->sizes = dims_.data() + next_dim_;
    v->strides = v->sizes + rank;
    next_dim_ += 2 * rank;
    return rank;
  }
  void Reserve(size_t top) { next_value_ = top; }

 private:
  absl::InlinedVector<LatheValue, 32> values_;
  absl::InlinedVector<int64_t, 128> dims_;
  size_t next_value_ = 0, next_dim_ = 0;
};

// Every plain value of `v`'s tree, in flatten order.
void Leaves(LatheValue* v, absl::InlinedVector<LatheValue*, 16>* out) {
  if (v->kind != LATHE_VALUE_COMPOSITE) {
    out->push_back(v);
    return;
  }
  for (int64_t k = 0; k < v->num_inner; ++k) Leaves(&v->inner[k], out);
}

// The user's value of a filled result tree; `held` gives each plain
// value's storage in flatten order.
absl::StatusOr<Operand> Rebuild(const LatheValue& v, Storage** held) {
  if (v.kind != LATHE_VALUE_COMPOSITE) {
    return ResultOperand(v, std::move(*(*held)++));
  }
  std::vector<Operand> inner;
  for (int64_t k = 0; k < v.num_inner; ++k) {
    ASSIGN_OR_RETURN(Operand o, Rebuild(v.inner[k], held));
    inner.push_back(std::move(o));
  }
  const CompositeType* type =
      v.type == nullptr ? nullptr : FindCompositeType(v.type);
  if (type == nullptr) {
    return absl::InternalError(
        absl::StrCat("the compiled wrapper made an unknown composite ",
                     v.type == nullptr ? "(unnamed)" : v.type));
  }
  return type->Unflatten(absl::MakeSpan(inner),
                         absl::MakeConstSpan(v.sizes, v.ndim),
                         absl::MakeConstSpan(v.strides, v.ndim));
}

}  // namespace

absl::StatusOr<Operand> ResultOperand(const LatheValue& o, Storage held) {
  switch (o.kind) {
    case LATHE_VALUE_TENSOR: {
      ASSIGN_OR_RETURN(
          Tensor t, Tensor::Wrap(std::move(held), static_cast<DType>(o.dtype),
                                 absl::MakeConstSpan(o.sizes, o.ndim),
                                 absl::MakeConstSpan(o.strides, o.ndim),
                                 o.storage_offset));
      return Operand::Of(std::move(t));
    }
    case LATHE_VALUE_INT:
      return Operand::Int(o.i);
    case LATHE_VALUE_BOOL:
      return Operand::Bool(o.i != 0);
    case LATHE_VALUE_FLOAT:
      return Operand::Float(o.f);
    default:
      return Operand{};
  }
}

LatheValue ViewOfTensor(const Tensor& t) {
  LatheValue c{};
  c.kind = LATHE_VALUE_TENSOR;
  c.dtype = static_cast<int32_t>(t.dtype());
  c.ndim = t.dim();
  c.sizes = const_cast<int64_t*>(t.sizes().data());
  c.strides = const_cast<int64_t*>(t.strides().data());
  c.storage_offset = t.storage_offset();
  c.data = t.storage().data();
  c.storage = const_cast<Storage*>(&t.storage());
  return c;
}

Storage TakeStorage(void* handle) {
  Storage* s = static_cast<Storage*>(handle);
  Storage taken = std::move(*s);
  delete s;
  return taken;
}

void ArgViews::Build(absl::Span<const Operand> args) {
  inner_.clear();
  names_.clear();
  top_.resize(args.size());
  for (size_t k = 0; k < args.size(); ++k) top_[k] = View(args[k]);
}

LatheValue ArgViews::View(const Operand& o) {
  LatheValue c{};
  switch (o.kind) {
    case Operand::Kind::kTensor:
      if (o.tensor.defined()) return ViewOfTensor(o.tensor);
      c.i = 1;  // not None to the key (SpecializationKey); None to the code
      return c;
    case Operand::Kind::kInt:
      c.kind = LATHE_VALUE_INT;
      c.i = o.i;
      return c;
    case Operand::Kind::kBool:
      c.kind = LATHE_VALUE_BOOL;
      c.i = o.b ? 1 : 0;
      return c;
    case Operand::Kind::kFloat:
      c.kind = LATHE_VALUE_FLOAT;
      c.f = o.f;
      return c;
    case Operand::Kind::kNone:
      return c;
    case Operand::Kind::kComposite:
      break;
  }
  if (o.composite == nullptr) {  // the checks refuse it
    c.i = 2;                     // as an undefined tensor
    return c;
  }
  const CompositeTensor& t = *o.composite;
  c.kind = LATHE_VALUE_COMPOSITE;
  names_.emplace_back(t.type->name());
  c.type = names_.back().c_str();
  c.dtype = static_cast<int32_t>(t.dtype);
  c.ndim = static_cast<int64_t>(t.sizes.size());
  c.sizes = const_cast<int64_t*>(t.sizes.data());
  c.strides = const_cast<int64_t*>(t.strides.data());
  c.num_inner = static_cast<int64_t>(t.inner.size());
  inner_.push_back(std::make_unique<LatheValue[]>(t.inner.size() + 1));
  c.inner = inner_.back().get();
  for (size_t k = 0; k < t.inner.size(); ++k) c.inner[k] = View(t.inner[k]);
  return c;
}

absl::Status KeepOpenMpLoaded() {
  // Were it unloaded with the last kernel library, its thread pool and state
  // would go with it (and LeakSanitizer reports them).
  static const absl::StatusOr<SharedLibrary>* openmp =
      new absl::StatusOr<SharedLibrary>(
          SharedLibrary::Open("libgomp.so.1", /*keep=*/true));
  return openmp->status();
}

absl::StatusOr<int> OpenMpTeam() {
  RETURN_IF_ERROR(KeepOpenMpLoaded());
  ASSIGN_OR_RETURN(SharedLibrary openmp, SharedLibrary::Open("libgomp.so.1"));
  ASSIGN_OR_RETURN(void* f, openmp.Symbol("omp_get_max_threads"));
  return reinterpret_cast<int (*)()>(f)();
}

absl::StatusOr<std::shared_ptr<const LoadedGraph>> LoadedGraph::Open(
    const std::string& path, CallSignature signature) {
  RETURN_IF_ERROR(KeepOpenMpLoaded());
  ASSIGN_OR_RETURN(SharedLibrary library, SharedLibrary::Open(path));
  return Open(std::move(library), std::move(signature));
}

absl::StatusOr<std::shared_ptr<const LoadedGraph>> LoadedGraph::Open(
    SharedLibrary library, CallSignature signature,
    std::shared_ptr<const DeviceKernels> device, std::vector<Tensor> frozen) {
  return Load(std::move(library), std::move(signature), /*user_entry=*/true,
              std::move(device), std::move(frozen));
}

absl::StatusOr<std::shared_ptr<const LoadedGraph>> LoadedGraph::OpenGraph(
    SharedLibrary library, CallSignature signature,
    std::shared_ptr<const DeviceKernels> device, std::vector<Tensor> frozen) {
  return Load(std::move(library), std::move(signature), /*user_entry=*/false,
              std::move(device), std::move(frozen));
}

LoadedGraph::~LoadedGraph() {
  // What the library derived from the frozen constants goes with them.
  for (const Tensor& t : frozen_) {
    ForgetFrozenWeights(t.storage().data(), t.storage().nbytes());
  }
}

absl::Span<const LatheValue> LoadedGraph::WithFrozen(
    absl::Span<const LatheValue> args,
    absl::InlinedVector<LatheValue, 32>* storage) const {
  if (frozen_views_.empty()) return args;
  storage->assign(args.begin(), args.end());
  storage->insert(storage->end(), frozen_views_.begin(), frozen_views_.end());
  return *storage;
}

absl::StatusOr<std::shared_ptr<const LoadedGraph>> LoadedGraph::Load(
    SharedLibrary library, CallSignature signature, bool user_entry,
    std::shared_ptr<const DeviceKernels> device, std::vector<Tensor> frozen) {
  RETURN_IF_ERROR(KeepOpenMpLoaded());
  std::shared_ptr<LoadedGraph> g(new LoadedGraph());
  g->library_ = std::move(library);
  for (const Tensor& t : frozen) {
    if (device != nullptr || !t.device().is_cpu()) {
      return absl::UnimplementedError(
          "frozen constants in a library whose kernels run on a device");
    }
    g->frozen_views_.push_back(ViewOfTensor(t));
  }
  g->frozen_ = std::move(frozen);
  // Until ~LoadedGraph, which forgets them: matrix products pack them once.
  for (const Tensor& t : g->frozen_) {
    RegisterFrozenWeights(t.storage().data(), t.storage().nbytes());
  }
  const bool on_device = g->library_.Symbol(kDeviceKernelsSymbol).ok();
  if (on_device != (device != nullptr)) {
    return absl::FailedPreconditionError(
        on_device ? absl::StrCat(g->library_.path(),
                                 ": its kernels run on a device, and no "
                                 "device kernels were loaded for it")
                  : absl::StrCat(g->library_.path(),
                                 ": a host library, given device kernels"));
  }
  g->device_ = std::move(device);
  if (user_entry) {
    ASSIGN_OR_RETURN(void* call, g->library_.Symbol("lathe_call_user"));
    g->call_ = reinterpret_cast<LatheCallUserFn>(call);
  } else {
    ASSIGN_OR_RETURN(void* call, g->library_.Symbol("lathe_call"));
    g->graph_call_ = reinterpret_cast<LatheCallFn>(call);
    if (absl::StatusOr<void*> user = g->library_.Symbol("lathe_call_user");
        user.ok()) {
      g->call_ = reinterpret_cast<LatheCallUserFn>(*user);
    }
  }
  g->signature_ = std::move(signature);
  const CallSignature& s = g->signature_;
  if (absl::StatusOr<void*> guards = g->library_.Symbol("lathe_guards");
      guards.ok()) {
    g->guards_ = reinterpret_cast<LatheGuardFn>(*guards);
    // The bounds the guards read: the signature's (a manifest's, maybe
    // damaged) must be as many.
    ASSIGN_OR_RETURN(absl::string_view count,
                     g->library_.DataSymbol(LATHE_GUARD_BOUND_COUNT_SYMBOL));
    int64_t n = -1;
    if (count.size() == sizeof(int64_t))
      std::memcpy(&n, count.data(), sizeof n);
    if (n < 0 || static_cast<size_t>(n) != s.guard_bounds.size()) {
      return absl::FailedPreconditionError(
          absl::StrCat(g->library_.path(), ": its guards read ", n,
                       " bounds, the signature gives ", s.guard_bounds.size(),
                       " (a manifest that is not the library's?)"));
    }
  }
  if (s.rebound_ranks.size() != s.rebound_inputs.size()) {
    return absl::InvalidArgumentError(
        "a rebound input without its rank (or a rank without its input)");
  }
  for (const CompositeLayout& r : s.results) {
    if (!r.Complete()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a result laid out as ", r.ToString(),
          ": every plain value needs its rank, every composite a value"));
    }
  }
  g->values_ = s.results.size() + s.rebound_inputs.size();
  for (const CompositeLayout& r : s.results) Count(r, &g->values_, &g->dims_);
  for (int rank : s.rebound_ranks) g->dims_ += 2 * rank;
  // The ranks lathe_call writes its outputs at, which the caller's arrays
  // must have: the signature's (a manifest's, maybe damaged) must agree.
  ASSIGN_OR_RETURN(absl::string_view ranks,
                   g->library_.DataSymbol(LATHE_RESULT_RANKS_SYMBOL));
  const int64_t* r = reinterpret_cast<const int64_t*>(ranks.data());
  if (ranks.size() < sizeof(int64_t) || r[0] < 0 || r[0] > kMaxResults ||
      ranks.size() != sizeof(int64_t) * static_cast<size_t>(r[0] + 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        g->library_.path(), ": " LATHE_RESULT_RANKS_SYMBOL " holds ",
        ranks.size(), " bytes, not a count (at most ", kMaxResults,
        ") and as many ranks"));
  }
  for (int64_t k = 0; k < r[0]; ++k) {
    if (r[1 + k] < 0 || r[1 + k] >= kMaxResultRank) {
      return absl::InvalidArgumentError(
          absl::StrCat(g->library_.path(), ": result ", k, " has rank ",
                       r[1 + k], " (below ", kMaxResultRank, " expected)"));
    }
    g->graph_ranks_.push_back(static_cast<int>(r[1 + k]));
  }
  if (g->call_ != nullptr) {
    std::vector<int> leaves;
    for (const CompositeLayout& shape : s.results) Leaves(shape, &leaves);
    leaves.insert(leaves.end(), s.rebound_ranks.begin(), s.rebound_ranks.end());
    if (leaves != g->graph_ranks_) {
      return absl::FailedPreconditionError(
          absl::StrCat(g->library_.path(), ": its results have ranks [",
                       absl::StrJoin(g->graph_ranks_, ", "),
                       "], the signature says [", absl::StrJoin(leaves, ", "),
                       "] (a manifest that is not the library's?)"));
    }
  }
  return std::shared_ptr<const LoadedGraph>(std::move(g));
}

int LoadedGraph::FailedGuard(const ArgViews& args, int64_t placeholders) const {
  if (guards_ == nullptr) return LATHE_GUARDS_HOLD;
  return guards_(args.data(), std::min(placeholders, args.size()),
                 signature_.guard_bounds.data());
}

int LoadedGraph::FailedGuard(const LatheValue* values, int64_t n) const {
  if (guards_ == nullptr) return LATHE_GUARDS_HOLD;
  return guards_(values, n, signature_.guard_bounds.data());
}

bool LoadedGraph::OnItsDevice(const LatheValue* values, int64_t n) const {
  const Device want = device_ != nullptr ? device_->device() : Device::Cpu();
  for (int64_t k = 0; k < n; ++k) {
    const LatheValue& v = values[k];
    if (v.kind == LATHE_VALUE_COMPOSITE) {
      if (!OnItsDevice(v.inner, v.num_inner)) return false;
    } else if (v.kind == LATHE_VALUE_TENSOR && v.storage != nullptr &&
               static_cast<const Storage*>(v.storage)->device() != want) {
      return false;
    }
  }
  return true;
}

LatheKernelRuntime LoadedGraph::CallRuntime(uint64_t seed) const {
  LatheKernelRuntime rt = SeededKernelRuntime(seed);
  if (device_ != nullptr) device_->Prepare(&rt);
  return rt;
}

int LoadedGraph::InvokeGraph(const LatheValue* given, int64_t given_n,
                             uint64_t seed,
                             std::vector<Operand>* results) const {
  if (graph_call_ == nullptr) return kCallNoGraphEntry;
  absl::InlinedVector<LatheValue, 32> all;
  absl::Span<const LatheValue> with =
      WithFrozen(absl::MakeConstSpan(given, given_n), &all);
  const LatheValue* inputs = with.data();
  const int64_t n = static_cast<int64_t>(with.size());
  if (!OnItsDevice(inputs, n)) return kCallWrongDevice;
  // Each result's sizes and strides, at its rank, in one array.
  absl::Span<const int> ranks = graph_ranks_;
  int64_t dims = 0;
  for (int rank : ranks) dims += 2 * rank;
  absl::InlinedVector<LatheValue, 16> out(ranks.size());
  absl::InlinedVector<int64_t, 64> shape(dims);
  for (size_t k = 0, at = 0; k < ranks.size(); ++k) {
    out[k].sizes = shape.data() + at;
    at += ranks[k];
    out[k].strides = shape.data() + at;
    at += ranks[k];
  }
  const LatheKernelRuntime rt = CallRuntime(seed);
  int rc =
      graph_call_(inputs, n, out.data(), static_cast<int64_t>(out.size()), &rt);
  if (rc != 0) return rc;
  // Every result holds a storage from here on: each is taken back, even
  // when an earlier one fails to wrap.
  absl::InlinedVector<Storage, 16> held(out.size());
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k].kind == LATHE_VALUE_TENSOR)
      held[k] = TakeStorage(out[k].storage);
  }
  results->clear();
  results->reserve(out.size());
  for (size_t k = 0; k < out.size(); ++k) {
    absl::StatusOr<Operand> o = ResultOperand(out[k], std::move(held[k]));
    if (!o.ok()) return kCallBadResult;
    results->push_back(*std::move(o));
  }
  return 0;
}

int LoadedGraph::Invoke(absl::Span<const LatheValue> given, uint64_t seed,
                        std::vector<Operand>* results,
                        std::vector<Operand>* rebound, bool replay) const {
  if (call_ == nullptr) return kCallNoEntry;
  absl::InlinedVector<LatheValue, 32> all;
  absl::Span<const LatheValue> args = WithFrozen(given, &all);
  if (!OnItsDevice(args.data(), static_cast<int64_t>(args.size()))) {
    return kCallWrongDevice;
  }
  // A refused graph's calls launch as always, without building a key.
  if (replay && device_ != nullptr && replays_.refused()) {
    replays_.CountLaunched();
  } else if (replay && device_ != nullptr) {
    const ReplayKey key(args.data(), args.size(), seed);
    absl::Status error;
    if (replays_.Replay(key, results, &error)) {
      rebound->clear();
      return 0;
    }
    if (!error.ok()) {
      SetDeviceError(std::move(error));
      return LATHE_CALL_DEVICE_FAILED;
    }
    std::unique_ptr<DeviceRecorder> recorder = replays_.Recorder(*device_);
    if (recorder == nullptr) return Invoke(given, seed, results, rebound);
    const int rc = Invoke(given, seed, results, rebound);
    if (rc != 0) {
      replays_.Abandon(std::move(recorder));
    } else {
      replays_.Keep(key, std::move(recorder), args.data(), args.size(),
                    *results, static_cast<int64_t>(rebound->size()));
    }
    return rc;
  }
  const CallSignature& s = signature_;
  const size_t users = s.results.size();
  const size_t top = users + s.rebound_inputs.size();
  ResultArena arena(values_, dims_);
  arena.Reserve(top);
  LatheValue* out = arena.top();
  for (size_t r = 0; r < users; ++r) arena.Shape(s.results[r], &out[r]);
  for (size_t j = 0; j < s.rebound_ranks.size(); ++j) {
    arena.Shape(CompositeLayout::Plain(s.rebound_ranks[j]), &out[users + j]);
  }
  // This call's seed rides in a copy of the runtime's routines.
  const LatheKernelRuntime rt = CallRuntime(seed);
  int rc = call_(args.data(), args.size(), out, static_cast<int64_t>(top), &rt);
  if (rc != 0) return rc;
  // Every plain result holds a storage from here on: each is taken back
  // (in flatten order) before any is wrapped.
  absl::InlinedVector<LatheValue*, 16> leaves;
  for (size_t r = 0; r < top; ++r) Leaves(&out[r], &leaves);
  absl::InlinedVector<Storage, 16> held(leaves.size());
  for (size_t k = 0; k < leaves.size(); ++k) {
    if (leaves[k]->kind == LATHE_VALUE_TENSOR) {
      held[k] = TakeStorage(leaves[k]->storage);
    }
  }
  Storage* next = held.data();
  results->clear();
  results->reserve(users);
  rebound->clear();
  for (size_t r = 0; r < top; ++r) {
    absl::StatusOr<Operand> o = Rebuild(out[r], &next);
    // A result the runtime cannot wrap is the compiled code's fault: its
    // storages are already held above and go with `held`.
    if (!o.ok()) return kCallBadResult;
    (r < users ? results : rebound)->push_back(std::move(*o));
  }
  return 0;
}

std::string FillCheckMessage(absl::string_view message,
                             absl::Span<const int64_t> values) {
  std::string out;
  size_t at = 0;
  while (at < message.size()) {
    size_t open = message.find('{', at);
    if (open == absl::string_view::npos) break;
    absl::StrAppend(&out, message.substr(at, open - at));
    // A hole: '{', at most 3 digits, ':', text without braces, '}'.
    size_t colon = open + 1;
    int64_t k = 0;
    while (colon < message.size() && colon - open <= 3 &&
           absl::ascii_isdigit(message[colon])) {
      k = 10 * k + (message[colon++] - '0');
    }
    size_t close = message.find_first_of("{}", colon);
    if (colon == open + 1 || colon >= message.size() || message[colon] != ':' ||
        close == absl::string_view::npos || message[close] != '}') {
      out.push_back('{');  // not a hole: kept as it is
      at = open + 1;
      continue;
    }
    if (k < static_cast<int64_t>(values.size())) {
      absl::StrAppend(&out, values[k]);
    } else {
      absl::StrAppend(&out, message.substr(colon + 1, close - colon - 1));
    }
    at = close + 1;
  }
  if (at < message.size()) absl::StrAppend(&out, message.substr(at));
  return out;
}

absl::Status CallStatus(int rc, absl::Span<const std::string> checks) {
  switch (rc) {
    case LATHE_CALL_BAD_INPUTS:
      return absl::InvalidArgumentError(
          "the inputs do not match the compiled graph's annotations");
    case LATHE_CALL_NO_MEMORY: {
      // The allocator's own message ("allocating N bytes would exceed the
      // memory limit of M bytes"), as the interpreter gives it.
      absl::Status why = TakeAllocError();
      if (!why.ok()) return why;
      return absl::ResourceExhaustedError(
          "out of memory allocating the compiled graph's buffers");
    }
    case LATHE_CALL_COPY_FAILED:
      return absl::InternalError(
          "the mutation epilogue could not copy an updated value into its "
          "input");
    case LATHE_CALL_DEVICE_FAILED: {
      absl::Status why = TakeDeviceError();
      if (!why.ok()) return why;
      return absl::InternalError("the device refused a launch or a copy");
    }
    case kCallBadResult:
      return absl::InternalError(
          "the compiled graph returned a result the runtime cannot wrap");
    case kCallNoEntry:
      return absl::FailedPreconditionError(
          "the compiled library has no lathe_call_user entry (compiled "
          "without its composite wrapper)");
    case kCallNoGraphEntry:
      return absl::FailedPreconditionError(
          "the compiled graph was opened without its lathe_call entry "
          "(LoadedGraph::OpenGraph opens it)");
    case kCallWrongDevice:
      return absl::InvalidArgumentError(
          "a tensor argument is on another device than the compiled "
          "graph's kernels (copy it there first)");
    default:
      break;
  }
  if (rc > 0 && rc <= static_cast<int>(checks.size())) {
    return absl::InvalidArgumentError(
        FillCheckMessage(checks[rc - 1], TakeCheckValues()));
  }
  return absl::InternalError(
      absl::StrCat("the compiled graph failed (", rc, ")"));
}

absl::Status LoadedGraph::CallStatus(int rc) const {
  return lathe::CallStatus(rc, signature_.checks);
}

}  // namespace lathe
