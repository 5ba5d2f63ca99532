#include "runtime/compiled_function.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "runtime/storage.h"
#include "status_macros.h"

namespace lathe {

namespace {

// Key tags, one per argument.
enum Tag : int64_t {
  kNoneTag = 0,
  kTensorTag,
  kCompositeTag,
  kIntTag,
  kBoolTag,
  kFloatTag,
};

constexpr int64_t kMax32 = int64_t{1} << 31;

// Appends the key of `v` (ArgViews' view of an argument); `wide` becomes
// true when a tensor has an element past 32-bit offsets.
void ValueKey(const LatheValue& v, KeyBuffer* key, bool* wide) {
  switch (v.kind) {
    case LATHE_VALUE_TENSOR: {
      const Device d = v.storage != nullptr
                           ? static_cast<const Storage*>(v.storage)->device()
                           : Device::Cpu();
      // Written in place: this runs for every argument of every call.
      const size_t at = key->size();
      key->resize(at + 4 + 2 * v.ndim);
      int64_t* out = key->data() + at;
      *out++ = kTensorTag;
      *out++ = static_cast<int64_t>(v.dtype) |
               static_cast<int64_t>(d.type) << 8 |
               static_cast<int64_t>(d.index) << 16;
      *out++ = v.ndim;
      out = std::copy(v.sizes, v.sizes + v.ndim, out);
      out = std::copy(v.strides, v.strides + v.ndim, out);
      *out = v.storage_offset;
      int64_t last = v.storage_offset;
      for (int64_t k = 0; k < v.ndim; ++k) {
        if (v.sizes[k] == 0) return;  // no element at all
        last += (v.sizes[k] - 1) * std::abs(v.strides[k]);
      }
      if (last >= kMax32) *wide = true;
      return;
    }
    case LATHE_VALUE_COMPOSITE: {
      key->push_back(kCompositeTag);
      // The type by name, eight bytes to a slot.
      const absl::string_view name = v.type != nullptr ? v.type : "";
      key->push_back(static_cast<int64_t>(name.size()));
      for (size_t at = 0; at < name.size(); at += 8) {
        int64_t slot = 0;
        std::memcpy(&slot, name.data() + at,
                    std::min<size_t>(8, name.size() - at));
        key->push_back(slot);
      }
      key->push_back(v.dtype);
      key->push_back(v.ndim);
      key->insert(key->end(), v.sizes, v.sizes + v.ndim);
      key->insert(key->end(), v.strides, v.strides + v.ndim);
      key->push_back(v.num_inner);
      for (int64_t k = 0; k < v.num_inner; ++k) ValueKey(v.inner[k], key, wide);
      return;
    }
    case LATHE_VALUE_INT:
      key->push_back(kIntTag);
      key->push_back(v.i);
      return;
    case LATHE_VALUE_BOOL:
      key->push_back(kBoolTag);
      key->push_back(v.i);
      return;
    case LATHE_VALUE_FLOAT:
      // The value is a runtime argument; only NaN is guarded.
      key->push_back(kFloatTag);
      key->push_back(std::isnan(v.f) ? 1 : 0);
      return;
    default:  // None (0), an undefined tensor (1), an empty composite (2)
      key->push_back(kNoneTag);
      key->push_back(v.i);
      return;
  }
}

// `o` as an error message shows it.
std::string Describe(const Operand& o) {
  if (o.kind == Operand::Kind::kTensor && !o.tensor.defined()) {
    return "an undefined tensor";
  }
  if (o.kind == Operand::Kind::kComposite && o.composite == nullptr) {
    return "an empty composite";
  }
  return o.ToString();
}

// Whether `v` can run: a library, or an interpreted variant's guards and
// call.
bool Runnable(const Variant& v) {
  return v.graph != nullptr || (v.run && v.failed_guard);
}

}  // namespace

void SpecializationKey(absl::Span<const LatheValue> views, KeyBuffer* key) {
  key->push_back(static_cast<int64_t>(views.size()));
  bool wide = false;
  for (const LatheValue& v : views) ValueKey(v, key, &wide);
  key->push_back(wide ? 1 : 0);
}

std::string ArgumentSpec::ToString() const {
  switch (kind) {
    case Kind::kTensor:
      return absl::StrCat(name, ": ", ShortName(dtype), " tensor of rank ",
                          rank, " on ", device.ToString());
    case Kind::kComposite:
      return absl::StrCat(name, ": ", type, " composite of rank ", rank);
    case Kind::kInt:
      return absl::StrCat(name, ": int");
    case Kind::kFloat:
      return absl::StrCat(name, ": float");
    case Kind::kBool:
      return absl::StrCat(name, ": bool");
    case Kind::kNone:
      return absl::StrCat(name, ": None");
  }
  return name;
}

size_t CompiledFunction::KeyHash::operator()(
    absl::Span<const int64_t> k) const {
  return absl::Hash<absl::Span<const int64_t>>()(k);
}

CompiledFunction::CompiledFunction(std::vector<ArgumentSpec> arguments,
                                   Options options,
                                   std::vector<Variant> variants)
    : arguments_(std::move(arguments)),
      placeholders_([this] {
        int64_t n = 0;
        for (const ArgumentSpec& a : arguments_) n += a.constant ? 0 : 1;
        return n;
      }()),
      options_(std::move(options)) {
  std::unique_lock lock(mu_);
  for (Variant& v : variants) variants_.push_back(std::move(v));
  link_->function = this;
}

CompiledFunction::~CompiledFunction() {
  // A replacement that arrives from now on finds no function.
  std::lock_guard<std::mutex> lock(link_->mu);
  link_->function = nullptr;
}

const CompiledFunction::Entry* CompiledFunction::Find(
    absl::Span<const int64_t> key) const {
  // 1. The last call's key.
  const Entry* entry = last_.load(std::memory_order_acquire);
  if (entry != nullptr && KeyEq()(entry->key, key)) return entry;
  // 2. A key seen before.
  std::shared_lock lock(mu_);
  auto it = entries_.find(key);
  return it != entries_.end() ? it->second.get() : nullptr;
}

absl::StatusOr<std::vector<Operand>> CompiledFunction::Call(
    absl::Span<Operand> args, uint64_t seed) {
  ArgViews views;
  views.Build(args);
  KeyBuffer key;
  SpecializationKey(views.span(), &key);
  const absl::Span<const int64_t> k =
      absl::MakeConstSpan(key.data(), key.size());
  const Entry* entry = Find(k);
  // 3 and 4. A new key.
  if (entry == nullptr) {
    ASSIGN_OR_RETURN(entry, Admit(k, args, views));
  }
  if (entry != last_.load(std::memory_order_relaxed)) {
    last_.store(entry, std::memory_order_release);
  }
  return Run(*entry, args, views, seed);
}

std::optional<absl::StatusOr<std::vector<Operand>>> CompiledFunction::CallViews(
    absl::Span<const LatheValue> views, uint64_t seed) {
  KeyBuffer key;
  SpecializationKey(views, &key);
  const Entry* entry = Find(absl::MakeConstSpan(key.data(), key.size()));
  // What only Call can do: admit a new key, run the interpreter, name a
  // bad argument, give back a rebound one.
  const Variant* chosen = entry == nullptr
                              ? nullptr
                              : entry->variant.load(std::memory_order_acquire);
  if (chosen == nullptr) return std::nullopt;
  const Variant& variant = *chosen;
  if (variant.graph == nullptr || variant.check_every_call ||
      !variant.graph->signature().rebound_inputs.empty()) {
    return std::nullopt;
  }
  if (entry != last_.load(std::memory_order_relaxed)) {
    last_.store(entry, std::memory_order_release);
  }
  if (!variant.mutated.empty()) {
    absl::Status shared = CheckNoAliasing(variant, views);
    if (!shared.ok()) return shared;
  }
  std::vector<Operand> results, rebound;
  const int rc = variant.graph->Invoke(views, seed, &results, &rebound,
                                       options_.cuda_graphs);
  // The host function's input checks ran before anything else: Call says
  // which input, the slow way.
  if (rc == LATHE_CALL_BAD_INPUTS && variant.check) return std::nullopt;
  if (rc != 0) return variant.graph->CallStatus(rc);
  return results;
}

absl::Status CheckArgument(int k, const ArgumentSpec& want,
                           const Operand& got) {
  bool ok = false;
  switch (want.kind) {
    case ArgumentSpec::Kind::kTensor:
      ok = got.kind == Operand::Kind::kTensor && got.tensor.defined() &&
           got.tensor.dtype() == want.dtype &&
           got.tensor.device() == want.device && got.tensor.dim() == want.rank;
      break;
    case ArgumentSpec::Kind::kComposite:
      ok = got.kind == Operand::Kind::kComposite && got.composite != nullptr &&
           got.composite->type != nullptr &&
           got.composite->type->name() == want.type &&
           got.composite->dtype == want.dtype &&
           static_cast<int>(got.composite->sizes.size()) == want.rank;
      break;
    case ArgumentSpec::Kind::kInt:
      ok = got.kind == Operand::Kind::kInt || got.kind == Operand::Kind::kBool;
      break;
    case ArgumentSpec::Kind::kFloat:
      ok = got.kind == Operand::Kind::kFloat;
      break;
    case ArgumentSpec::Kind::kBool:
      ok = got.kind == Operand::Kind::kBool;
      break;
    case ArgumentSpec::Kind::kNone:
      ok = got.kind == Operand::Kind::kNone;
      break;
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "argument ", k, " (", want.name, "): expected ",
        want.ToString().substr(want.name.size() + 2), ", got ", Describe(got)));
  }
  return absl::OkStatus();
}

absl::Status CompiledFunction::CheckArguments(
    absl::Span<const Operand> args) const {
  if (args.size() != arguments_.size()) {
    std::vector<std::string> names;
    for (const ArgumentSpec& a : arguments_) names.push_back(a.name);
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", arguments_.size(), " arguments (",
                     absl::StrJoin(names, ", "), "), got ", args.size()));
  }
  for (size_t k = 0; k < args.size(); ++k) {
    RETURN_IF_ERROR(CheckArgument(static_cast<int>(k), arguments_[k], args[k]));
  }
  return absl::OkStatus();
}

absl::StatusOr<const CompiledFunction::Entry*> CompiledFunction::Admit(
    absl::Span<const int64_t> key, absl::Span<Operand> args,
    const ArgViews& views) {
  std::unique_lock lock(mu_);
  // Another thread may have admitted the key meanwhile.
  if (auto it = entries_.find(key); it != entries_.end()) {
    return it->second.get();
  }
  if (absl::Status s = CheckArguments(args); !s.ok()) {
    if (options_.explain) RETURN_IF_ERROR(options_.explain(args));
    return s;
  }
  // The guards of each variant, in the order compiled.
  std::vector<std::string> failures;
  const Variant* chosen = nullptr;
  bool made_here = false;  // compiled for this call
  for (size_t v = 0; v < variants_.size() && chosen == nullptr; ++v) {
    const Variant& variant = variants_[v];
    if (replaced_.contains(&variant)) continue;  // its replacement is later
    int failed = FailedGuard(variant, views);
    if (failed == LATHE_GUARDS_HOLD) {
      chosen = &variant;
    } else if (failed >= 0 &&
               failed < static_cast<int>(variant.guards.size())) {
      failures.push_back(variant.guards[failed]);
    } else {
      failures.push_back(absl::StrCat(
          "variant ", v, " was compiled for other argument kinds or ranks"));
    }
  }
  const std::string reason = absl::StrJoin(failures, "; ");
  if (chosen == nullptr) {
    if (!options_.compile) {
      return absl::FailedPreconditionError(
          variants_.empty()
              ? std::string("no compiled variant, and no compile callback")
              : absl::StrCat("no compiled variant admits the arguments (guard "
                             "failed: ",
                             reason, "), and no compile callback"));
    }
    if (compiles_.load(std::memory_order_relaxed) >= options_.max_compiles) {
      std::string why = absl::StrCat(
          "would need compile ", compiles_.load(std::memory_order_relaxed) + 1,
          ", past the limit of ", options_.max_compiles,
          " (guard failed: ", reason, ")");
      if (!options_.fallback) return absl::ResourceExhaustedError(why);
      if (!fallback_warned_) {
        fallback_warned_ = true;
        warnings_.push_back(absl::StrCat(
            why, "; arguments no variant admits run on the interpreter"));
        std::fprintf(stderr, "lathe: warning: %s\n", warnings_.back().c_str());
      }
    } else {
      ASSIGN_OR_RETURN(Variant made, options_.compile(args));
      if (!Runnable(made)) {
        return absl::InternalError("the compile callback returned no graph");
      }
      // The new variant must take the arguments it was compiled for: if
      // not, its host check says why they do not fit.
      int failed = FailedGuard(made, views);
      if (failed != LATHE_GUARDS_HOLD && made.check) {
        RETURN_IF_ERROR(made.check(args));
      }
      if (failed != LATHE_GUARDS_HOLD) {
        return absl::InternalError(absl::StrCat(
            "the new variant's guards refuse the arguments it was compiled "
            "for (",
            failed >= 0 && failed < static_cast<int>(made.guards.size())
                ? made.guards[failed]
                : "other kinds or ranks",
            ")"));
      }
      const int made_now =
          compiles_.fetch_add(1, std::memory_order_release) + 1;
      if (!variants_.empty()) recompiles_.push_back({made_now, reason});
      variants_.push_back(std::move(made));
      chosen = &variants_.back();
      made_here = true;
    }
  }
  auto entry = std::make_unique<Entry>();
  entry->key.assign(key.begin(), key.end());
  entry->variant.store(chosen, std::memory_order_release);
  const Entry* out = entry.get();
  entries_.emplace(entry->key, std::move(entry));
  // A first tier starts its replacement's build, outside the lock (the
  // replacement takes it).
  if (chosen != nullptr && made_here && chosen->upgrade) {
    lock.unlock();
    std::shared_ptr<UpgradeLink> link = link_;
    chosen->upgrade([link, chosen](absl::StatusOr<Variant> better) {
      std::lock_guard<std::mutex> alive(link->mu);
      if (link->function != nullptr) {
        link->function->Replace(chosen, std::move(better));
      }
    });
  }
  return out;
}

void CompiledFunction::Replace(const Variant* old,
                               absl::StatusOr<Variant> better) {
  std::unique_lock lock(mu_);
  if (replaced_.contains(old)) return;  // replaced once only
  if (better.ok() && !Runnable(*better)) {
    better = absl::InternalError("the replacement has no graph");
  }
  // The replacement takes over the keys the first admitted: it must guard
  // them as the first did.
  if (better.ok() && better->guards != old->guards) {
    better = absl::InternalError(absl::StrCat(
        "its guards (", absl::StrJoin(better->guards, "; "),
        ") are not the first tier's (", absl::StrJoin(old->guards, "; "), ")"));
  }
  if (!better.ok()) {
    warnings_.push_back(absl::StrCat(
        "the optimized build of a variant failed (", better.status().message(),
        "); its calls stay on the first tier"));
    std::fprintf(stderr, "lathe: warning: %s\n", warnings_.back().c_str());
    return;
  }
  better->upgrade = nullptr;  // one replacement per variant
  variants_.push_back(*std::move(better));
  const Variant* now = &variants_.back();
  replaced_.insert(old);
  for (auto& [key, entry] : entries_) {
    if (entry->variant.load(std::memory_order_relaxed) == old) {
      entry->variant.store(now, std::memory_order_release);
    }
  }
  upgrades_.fetch_add(1, std::memory_order_release);
}

absl::StatusOr<std::vector<Operand>> CompiledFunction::Run(
    const Entry& entry, absl::Span<Operand> args, const ArgViews& views,
    uint64_t seed) {
  const Variant* chosen = entry.variant.load(std::memory_order_acquire);
  if (chosen == nullptr) {
    fallback_calls_.fetch_add(1, std::memory_order_relaxed);
    return options_.fallback(args, seed);
  }
  const Variant& variant = *chosen;
  if (variant.graph == nullptr) return variant.run(args, seed);
  if (!variant.mutated.empty())
    RETURN_IF_ERROR(CheckNoAliasing(variant, views.span()));
  if (variant.check_every_call) RETURN_IF_ERROR(variant.check(args));
  std::vector<Operand> results, rebound;
  int rc = variant.graph->Invoke(views.span(), seed, &results, &rebound,
                                 options_.cuda_graphs);
  if (rc == LATHE_CALL_BAD_INPUTS && variant.check) {
    RETURN_IF_ERROR(variant.check(args));
  }
  if (rc != 0) return variant.graph->CallStatus(rc);
  const std::vector<int>& rebind = variant.graph->signature().rebound_inputs;
  for (size_t j = 0; j < rebind.size(); ++j) {
    if (rebind[j] >= 0) args[rebind[j]] = std::move(rebound[j]);
  }
  return results;
}

int CompiledFunction::FailedGuard(const Variant& variant,
                                  const ArgViews& views) const {
  return variant.graph != nullptr
             ? variant.graph->FailedGuard(views, placeholders_)
             : variant.failed_guard(views);
}

absl::Status CompiledFunction::CheckNoAliasing(
    const Variant& variant, absl::Span<const LatheValue> views) const {
  const LatheValue* v = views.data();
  const int64_t n = static_cast<int64_t>(views.size());
  for (int m : variant.mutated) {
    if (m >= n || v[m].kind != LATHE_VALUE_TENSOR || v[m].data == nullptr) {
      continue;
    }
    for (int64_t k = 0; k < n; ++k) {
      if (k != m && v[k].kind == LATHE_VALUE_TENSOR && v[k].data == v[m].data) {
        return absl::InvalidArgumentError(
            absl::StrCat("arguments ", std::min<int64_t>(k, m), " (",
                         arguments_[std::min<int64_t>(k, m)].name, ") and ",
                         std::max<int64_t>(k, m), " (",
                         arguments_[std::max<int64_t>(k, m)].name,
                         ") share a storage, and the call writes argument ", m,
                         ": pass separate tensors"));
      }
    }
  }
  return absl::OkStatus();
}

int CompiledFunction::compiles() const {
  return compiles_.load(std::memory_order_acquire);
}

std::vector<Recompile> CompiledFunction::recompiles() const {
  std::shared_lock lock(mu_);
  return recompiles_;
}

int CompiledFunction::upgrades() const {
  return upgrades_.load(std::memory_order_acquire);
}

int64_t CompiledFunction::fallback_calls() const {
  return fallback_calls_.load(std::memory_order_relaxed);
}

std::vector<std::string> CompiledFunction::warnings() const {
  std::shared_lock lock(mu_);
  return warnings_;
}

}  // namespace lathe
