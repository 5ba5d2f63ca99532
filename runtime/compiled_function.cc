#include "runtime/compiled_function.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
  kUndefinedTag,
};

constexpr int64_t kMax32 = int64_t{1} << 31;

// Appends `t`'s dtype and device, rank, sizes, strides and offset; `wide`
// becomes true when an element lies past 32-bit offsets.
void TensorKey(const Tensor& t, KeyBuffer* key, bool* wide) {
  const Device d = t.device();
  key->push_back(static_cast<int64_t>(t.dtype()) |
                 static_cast<int64_t>(d.type) << 8 |
                 static_cast<int64_t>(d.index) << 16);
  const std::vector<int64_t>& sizes = t.sizes();
  const std::vector<int64_t>& strides = t.strides();
  key->push_back(static_cast<int64_t>(sizes.size()));
  key->insert(key->end(), sizes.begin(), sizes.end());
  key->insert(key->end(), strides.begin(), strides.end());
  key->push_back(t.storage_offset());
  int64_t last = t.storage_offset();
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == 0) return;  // no element at all
    last += (sizes[k] - 1) * std::abs(strides[k]);
  }
  if (last >= kMax32) *wide = true;
}

void OperandKey(const Operand& a, KeyBuffer* key, bool* wide) {
  switch (a.kind) {
    case Operand::Kind::kNone:
      key->push_back(kNoneTag);
      return;
    case Operand::Kind::kTensor:
      if (!a.tensor.defined()) {
        key->push_back(kUndefinedTag);
        return;
      }
      key->push_back(kTensorTag);
      TensorKey(a.tensor, key, wide);
      return;
    case Operand::Kind::kComposite: {
      key->push_back(kCompositeTag);
      if (a.composite == nullptr) {
        key->push_back(-1);
        return;
      }
      const CompositeTensor& c = *a.composite;
      // The type by address: registered types live for the process.
      key->push_back(reinterpret_cast<intptr_t>(c.type));
      key->push_back(static_cast<int64_t>(c.dtype));
      key->push_back(static_cast<int64_t>(c.sizes.size()));
      key->insert(key->end(), c.sizes.begin(), c.sizes.end());
      key->insert(key->end(), c.strides.begin(), c.strides.end());
      key->push_back(static_cast<int64_t>(c.inner.size()));
      for (const Operand& inner : c.inner) OperandKey(inner, key, wide);
      return;
    }
    case Operand::Kind::kInt:
      key->push_back(kIntTag);
      key->push_back(a.i);
      return;
    case Operand::Kind::kBool:
      key->push_back(kBoolTag);
      key->push_back(a.b ? 1 : 0);
      return;
    case Operand::Kind::kFloat:
      // The value is a runtime argument; only NaN is guarded.
      key->push_back(kFloatTag);
      key->push_back(std::isnan(a.f) ? 1 : 0);
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

}  // namespace

void SpecializationKey(absl::Span<const Operand> args, KeyBuffer* key) {
  key->push_back(static_cast<int64_t>(args.size()));
  bool wide = false;
  for (const Operand& a : args) OperandKey(a, key, &wide);
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
}

CompiledFunction::~CompiledFunction() = default;

absl::StatusOr<std::vector<Operand>> CompiledFunction::Call(
    absl::Span<Operand> args, uint64_t seed) {
  KeyBuffer key;
  SpecializationKey(args, &key);
  ArgViews views;
  views.Build(args);
  // 1. The last call's key.
  const Entry* entry = last_.load(std::memory_order_acquire);
  if (entry == nullptr ||
      !KeyEq()(entry->key, absl::MakeConstSpan(key.data(), key.size()))) {
    // 2. A key seen before.
    {
      std::shared_lock lock(mu_);
      auto it = entries_.find(absl::MakeConstSpan(key.data(), key.size()));
      entry = it != entries_.end() ? it->second.get() : nullptr;
    }
    // 3 and 4. A new key.
    if (entry == nullptr) {
      ASSIGN_OR_RETURN(entry, Admit(absl::MakeConstSpan(key.data(), key.size()),
                                    args, views));
    }
    last_.store(entry, std::memory_order_release);
  }
  return Run(*entry, args, views, seed);
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
  for (size_t v = 0; v < variants_.size() && chosen == nullptr; ++v) {
    const Variant& variant = variants_[v];
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
      if (warnings_.empty()) {
        warnings_.push_back(absl::StrCat(
            why, "; arguments no variant admits run on the interpreter"));
        std::fprintf(stderr, "lathe: warning: %s\n", warnings_.back().c_str());
      }
    } else {
      ASSIGN_OR_RETURN(Variant made, options_.compile(args));
      if (made.graph == nullptr && !(made.run && made.failed_guard)) {
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
    }
  }
  auto entry = std::make_unique<Entry>();
  entry->key.assign(key.begin(), key.end());
  entry->variant = chosen;
  const Entry* out = entry.get();
  entries_.emplace(entry->key, std::move(entry));
  return out;
}

absl::StatusOr<std::vector<Operand>> CompiledFunction::Run(
    const Entry& entry, absl::Span<Operand> args, const ArgViews& views,
    uint64_t seed) {
  if (entry.variant == nullptr) {
    fallback_calls_.fetch_add(1, std::memory_order_relaxed);
    return options_.fallback(args, seed);
  }
  const Variant& variant = *entry.variant;
  if (variant.graph == nullptr) return variant.run(args, seed);
  if (!variant.mutated.empty())
    RETURN_IF_ERROR(CheckNoAliasing(variant, views));
  if (variant.check_every_call) RETURN_IF_ERROR(variant.check(args));
  std::vector<Operand> results, rebound;
  int rc = variant.graph->Invoke(views, seed, &results, &rebound,
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

absl::Status CompiledFunction::CheckNoAliasing(const Variant& variant,
                                               const ArgViews& views) const {
  const LatheValue* v = views.data();
  for (int m : variant.mutated) {
    if (m >= views.size() || v[m].kind != LATHE_VALUE_TENSOR ||
        v[m].data == nullptr) {
      continue;
    }
    for (int64_t k = 0; k < views.size(); ++k) {
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

int64_t CompiledFunction::fallback_calls() const {
  return fallback_calls_.load(std::memory_order_relaxed);
}

std::vector<std::string> CompiledFunction::warnings() const {
  std::shared_lock lock(mu_);
  return warnings_;
}

}  // namespace lathe
