#include "driver/autotune.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "codegen/cpp/cpp_compiler.h"
#include "ir/interpreter.h"
#include "runtime/compile_cache.h"
#include "runtime/loaded_graph.h"
#include "runtime/onednn.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/evaluate.h"
#include "symbolic/printer.h"

namespace lathe {
namespace {

using Clock = std::chrono::steady_clock;

// The record's first word and format.
constexpr char kRecordTag[] = "lathe-tuning";
constexpr int kRecordFormat = 2;  // 2: kWinograd

int64_t Median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// An integer value of `e` at the hints, or the error naming `what`.
absl::StatusOr<int64_t> HintedInt(symbolic::ShapeEnv& env, symbolic::Expr e,
                                  const std::string& what) {
  std::optional<symbolic::Value> v = env.Hint(e);
  if (!v.has_value() || v->type != symbolic::ExprType::kInt || v->inf != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": ", symbolic::ToString(e), " has no hint"));
  }
  return v->i;
}

// A tensor of `m` at the hints, with its annotated strides and offset:
// floats uniform in [-1/16, 1/16) (a hash of each element's storage
// index), integers and bools 0 (an index every gather takes). Small, so
// products of weights over wide rows keep activations and attention scores
// in the ranges trained models have: values of order 1 make scores in the
// hundreds, whose exp(x - max) takes libm's slow scalar lanes (a GPT-2's
// tuning calls took 1.3x its calls on real-sized data).
absl::StatusOr<Tensor> MadeTensor(symbolic::ShapeEnv& env,
                                  const ir::TensorMeta& m,
                                  const std::string& where) {
  std::vector<int64_t> sizes, strides;
  int64_t extent = 1;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    ASSIGN_OR_RETURN(int64_t size, HintedInt(env, m.sizes[d], where));
    ASSIGN_OR_RETURN(int64_t stride, HintedInt(env, m.strides[d], where));
    if (size < 0 || stride < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, ": a negative size or stride"));
    }
    sizes.push_back(size);
    strides.push_back(stride);
    extent += (size - 1) * stride;
  }
  for (int64_t s : sizes) extent = s == 0 ? 0 : extent;
  ASSIGN_OR_RETURN(int64_t offset, HintedInt(env, m.storage_offset, where));
  ASSIGN_OR_RETURN(Tensor storage,
                   Tensor::Empty({offset + std::max<int64_t>(extent, 0)},
                                 m.dtype, m.device));
  const int64_t n = storage.numel();
  auto value = [](int64_t k) {
    uint64_t x = static_cast<uint64_t>(k) * 0x9E3779B97F4A7C15u;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9u;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBu;
    x ^= x >> 31;
    return (static_cast<double>(x >> 11) * 0x1.0p-52 - 1) / 16;
  };
  if (m.dtype == DType::kFloat32) {
    float* p = storage.data<float>();
    for (int64_t k = 0; k < n; ++k) p[k] = static_cast<float>(value(k));
  } else if (m.dtype == DType::kFloat64) {
    double* p = storage.data<double>();
    for (int64_t k = 0; k < n; ++k) p[k] = value(k);
  } else if (IsFloatingPoint(m.dtype)) {
    for (int64_t k = 0; k < n; ++k) storage.SetDouble({k}, value(k));
  }
  return storage.AsStrided(sizes, strides, offset);
}

// The tuning build's inputs: one per placeholder, and the constants the
// caller gives (`given`, by name; the function holds the frozen ones).
absl::Status MakeInputs(
    const ir::Graph& graph, symbolic::ShapeEnv& env,
    const std::vector<std::string>& given, std::vector<ir::Value>* inputs,
    absl::flat_hash_map<std::string, ir::Value>* constants) {
  const std::vector<ir::InputSlot> slots = ir::InputSlots(graph);
  const size_t placeholders = graph.Placeholders().size();
  for (size_t k = 0; k < slots.size(); ++k) {
    if (k >= placeholders + given.size()) break;  // frozen ones
    const ir::ValueMeta& m = slots[k].meta;
    ir::Value v;
    switch (m.kind) {
      case ir::ValueMeta::Kind::kTensor: {
        ASSIGN_OR_RETURN(Tensor t, MadeTensor(env, m.tensor, slots[k].where));
        v = ir::Value::OfTensor(std::move(t));
        break;
      }
      case ir::ValueMeta::Kind::kSym: {
        std::optional<symbolic::Value> h = env.Hint(m.sym);
        if (!h.has_value() || h->inf != 0) {
          return absl::FailedPreconditionError(
              absl::StrCat(slots[k].where, ": no hint"));
        }
        v = h->type == symbolic::ExprType::kFloat  ? ir::Value::Float(h->f)
            : h->type == symbolic::ExprType::kBool ? ir::Value::Bool(h->b)
                                                   : ir::Value::Int(h->i);
        break;
      }
      case ir::ValueMeta::Kind::kNone:
        break;
      default:
        return absl::UnimplementedError(
            absl::StrCat(slots[k].where, ": a tuple is not made"));
    }
    if (k < placeholders) {
      inputs->push_back(std::move(v));
    } else {
      (*constants)[given[k - placeholders]] = std::move(v);
    }
  }
  return absl::OkStatus();
}

// The inputs' sizes, strides and offsets at the hints, and the scalars'
// hints, as text (a symbolic program's record is for these), or why they
// do not evaluate.
absl::StatusOr<std::string> HintedShapes(const ir::Graph& graph,
                                         symbolic::ShapeEnv& env) {
  std::string text;
  for (const ir::InputSlot& slot : ir::InputSlots(graph)) {
    absl::StrAppend(&text, slot.where, ":");
    const ir::ValueMeta& m = slot.meta;
    if (m.kind == ir::ValueMeta::Kind::kTensor) {
      for (const auto* exprs : {&m.tensor.sizes, &m.tensor.strides}) {
        for (symbolic::Expr e : *exprs) {
          ASSIGN_OR_RETURN(int64_t v, HintedInt(env, e, slot.where));
          absl::StrAppend(&text, " ", v);
        }
        text += ";";
      }
      ASSIGN_OR_RETURN(int64_t offset,
                       HintedInt(env, m.tensor.storage_offset, slot.where));
      absl::StrAppend(&text, " ", offset);
    } else if (m.kind == ir::ValueMeta::Kind::kSym) {
      std::optional<symbolic::Value> h = env.Hint(m.sym);
      if (!h.has_value()) {
        return absl::FailedPreconditionError(
            absl::StrCat(slot.where, ": no hint"));
      }
      absl::StrAppend(&text, " ", symbolic::ToString(*h));
    }
    text += "\n";
  }
  return text;
}

// The tuning build's table: its thread counts and times, one per kernel.
struct Table {
  int32_t* threads = nullptr;
  int64_t* ns = nullptr;
};

absl::StatusOr<Table> TableOf(const codegen::CpuFunction& f, int kernels) {
  const size_t n = std::max(kernels, 1);
  ASSIGN_OR_RETURN(void* t, f.Symbol("lathe_tune_threads"));
  ASSIGN_OR_RETURN(void* ns, f.Symbol("lathe_tune_ns"));
  ASSIGN_OR_RETURN(void* count, f.Symbol("lathe_tune_kernels"));
  if (*static_cast<const int64_t*>(count) != kernels) {
    return absl::InternalError("the tuning build's table has another length");
  }
  Table table;
  table.threads = static_cast<int32_t*>(t);
  table.ns = static_cast<int64_t*>(ns);
  std::fill(table.threads, table.threads + n, 0);
  return table;
}

// One call of the tuning build with kernel k on choices[k]: each kernel's
// time, and the whole call's (ns).
struct CallTimes {
  std::vector<int64_t> kernels;
  int64_t whole = 0;
};
absl::StatusOr<CallTimes> TimedCall(
    const codegen::CpuFunction& f, const Table& table,
    absl::Span<const int> choices, std::vector<ir::Value>& inputs,
    const absl::flat_hash_map<std::string, ir::Value>& constants) {
  const int kernels = static_cast<int>(choices.size());
  std::copy(choices.begin(), choices.end(), table.threads);
  std::fill(table.ns, table.ns + kernels, 0);
  const Clock::time_point start = Clock::now();
  absl::StatusOr<ir::Interpretation> r = f.plan_applied()
                                             ? f.RunWithPlan(inputs, constants)
                                             : f.Run(inputs, constants);
  const Clock::duration whole = Clock::now() - start;
  RETURN_IF_ERROR(r.status());
  return CallTimes{
      std::vector<int64_t>(table.ns, table.ns + kernels),
      std::chrono::duration_cast<std::chrono::nanoseconds>(whole).count()};
}

// Whether candidate `c` is one for kernel `k` (ChooseThreads' rule).
bool CandidateFor(const codegen::TunableKernels& tunable, int k, int c) {
  return c == 0 || (c > 0 && absl::c_linear_search(tunable.threads, k)) ||
         (c == kSplitBatch && absl::c_linear_search(tunable.split_batch, k)) ||
         (c == kWinograd && absl::c_linear_search(tunable.winograd, k));
}

// Every tunable kernel: thread-count kernels, then convolutions that are
// not also among them.
std::vector<int> TunableOf(const codegen::TunableKernels& tunable) {
  std::vector<int> all = tunable.threads;
  for (int k : tunable.winograd) {
    if (!absl::c_linear_search(all, k)) all.push_back(k);
  }
  return all;
}

// Candidate `c` for every tunable kernel it is one for (the whole team
// elsewhere).
std::vector<int> Everywhere(const codegen::TunableKernels& tunable, int kernels,
                            int c) {
  std::vector<int> choices(kernels, 0);
  for (int k : TunableOf(tunable)) {
    if (k >= 0 && k < kernels && CandidateFor(tunable, k, c)) choices[k] = c;
  }
  return choices;
}

// The key of a program's record: the tuning build's source, the compiler
// and this CPU, the team's size and oneDNN's version.
absl::StatusOr<std::string> TuningKey(absl::string_view source, int team,
                                      absl::string_view shapes) {
  ASSIGN_OR_RETURN(std::string identity,
                   codegen::CompilerIdentity(codegen::CompilerName()));
  return CacheKey(
      source, identity,
      {absl::StrCat(kRecordTag, " ", kRecordFormat),
       absl::StrCat("team ", team), onednn::Version(), std::string(shapes)});
}

}  // namespace

std::vector<int> ThreadCandidates(int team, bool split, bool winograd) {
  std::vector<int> c = {0};
  if (team > 1) c.push_back(1);
  if (team / 2 > 1) c.push_back(team / 2);
  if (team > 1 && split) c.push_back(kSplitBatch);
  if (winograd) c.push_back(kWinograd);
  return c;
}

std::vector<int> ChooseThreads(absl::Span<const int> candidates,
                               const TuningTimes& times,
                               const codegen::TunableKernels& tunable,
                               int kernels, double margin) {
  std::vector<int> chosen(kernels, 0);
  for (int k : TunableOf(tunable)) {
    if (k < 0 || k >= kernels) continue;
    std::vector<int64_t> medians;
    for (size_t c = 0; c < candidates.size() && c < times.size(); ++c) {
      std::vector<int64_t> v;
      for (const std::vector<int64_t>& round : times[c]) {
        if (k < static_cast<int>(round.size())) v.push_back(round[k]);
      }
      medians.push_back(Median(std::move(v)));
    }
    if (medians.empty()) continue;
    size_t best = 0;
    for (size_t c = 1; c < medians.size(); ++c) {
      if (!CandidateFor(tunable, k, candidates[c])) continue;
      if (medians[c] < medians[best]) best = c;
    }
    if (best != 0 && static_cast<double>(medians[best]) <
                         (1 - margin) * static_cast<double>(medians[0])) {
      chosen[k] = candidates[best];
    }
  }
  return chosen;
}

std::string EncodeTuning(absl::Span<const int> threads) {
  return absl::StrCat(kRecordTag, " ", kRecordFormat, " ", threads.size(), "\n",
                      absl::StrJoin(threads, " "), "\n");
}

absl::StatusOr<std::vector<int>> DecodeTuning(absl::string_view record,
                                              int kernels, int team) {
  auto bad = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat("tuning record: ", why));
  };
  std::vector<absl::string_view> lines = absl::StrSplit(record, '\n');
  if (lines.size() != 3 || !lines[2].empty()) return bad("not two lines");
  const std::string head =
      absl::StrCat(kRecordTag, " ", kRecordFormat, " ", kernels);
  if (lines[0] != head) {
    return bad(absl::StrCat("the header is not '", head, "'"));
  }
  std::vector<int> threads;
  for (absl::string_view w : absl::StrSplit(lines[1], ' ', absl::SkipEmpty())) {
    int t = 0;
    if (!absl::SimpleAtoi(w, &t) || t < kWinograd || t > team) {
      return bad(absl::StrCat("'", w, "' is not a choice in [", kWinograd, ", ",
                              team, "]"));
    }
    threads.push_back(t);
  }
  if (static_cast<int>(threads.size()) != kernels) {
    return bad(
        absl::StrCat(threads.size(), " counts for ", kernels, " kernels"));
  }
  return threads;
}

absl::StatusOr<TuningResult> Autotune(const TuningRequest& request) {
  const codegen::CpuFunction::Parts& parts = *request.parts;
  const codegen::Program& program = parts.lowered.program;
  const int kernels = static_cast<int>(program.kernels.size());
  TuningResult result;
  result.threads.assign(kernels, 0);
  codegen::TunableKernels tunable;
  ASSIGN_OR_RETURN(std::string tuning_kernels,
                   request.backend->EmitTuningKernels(program, &tunable));
  const std::vector<int> tunable_kernels = TunableOf(tunable);
  if (tunable_kernels.empty()) {
    result.log.push_back(
        "autotune: no kernel runs on threads or is a convolution to measure");
    return result;
  }
  auto skipped = [&](const absl::Status& why) {
    result.log.push_back(
        absl::StrCat("autotune: not measured, every kernel keeps the whole "
                     "team: ",
                     why.message()));
    return result;
  };

  // The choices the cache holds for this program, at these sizes, on this
  // machine.
  const std::string tuning_source = tuning_kernels + parts.host.text;
  absl::StatusOr<int> team = OpenMpTeam();
  if (!team.ok()) return skipped(team.status());
  absl::StatusOr<std::string> shapes =
      HintedShapes(*request.graph, *request.env);
  absl::StatusOr<std::string> key = TuningKey(
      tuning_source, *team,
      shapes.ok() ? *shapes
                  : absl::StrCat("no hints: ", shapes.status().message()));
  if (!key.ok()) return skipped(key.status());
  if (request.cache != nullptr) {
    ASSIGN_OR_RETURN(std::optional<CacheHit> hit, request.cache->Get(*key));
    if (hit.has_value()) {
      absl::StatusOr<std::vector<int>> threads =
          DecodeTuning(hit->bytes, kernels, *team);
      if (threads.ok()) {
        // Only choices the tuner could have made reach the kernels.
        for (int k = 0; k < kernels; ++k) {
          const int t = (*threads)[k];
          if (CandidateFor(tunable, k, t)) result.threads[k] = t;
        }
        result.cache_hit = hit->tier;
        int changed = 0;
        for (int t : result.threads) changed += t != 0;
        result.log.push_back(absl::StrCat(
            "autotune: ", tunable_kernels.size(), " tunable kernels, ", changed,
            " off the whole team, from the ", hit->tier,
            " cache (nothing measured)"));
        return result;
      }
      result.log.push_back(absl::StrCat(
          "autotune: the ", hit->tier, " cache's record is not used (",
          threads.status().message(), "): measured again"));
    }
  }

  if (request.cached_only) {
    result.missed = true;
    return result;
  }

  // What stops every compile of this program from measuring (no hint, an
  // input the annotations do not make, a call that fails) is stored too,
  // as the whole team everywhere, so a later compile (a tiered one's
  // probe) finds its answer.
  auto unmeasurable = [&](const absl::Status& why) {
    skipped(why);
    if (request.cache != nullptr) {
      (void)request.cache->Put(*key, EncodeTuning(result.threads));
    }
    return result;
  };
  if (!shapes.ok()) return unmeasurable(shapes.status());
  std::vector<ir::Value> inputs;
  absl::flat_hash_map<std::string, ir::Value> constants;
  const std::vector<std::string> given(
      parts.lowered.constants.begin(),
      parts.lowered.constants.end() - parts.lowered.frozen_constants);
  auto make_inputs = [&]() {
    inputs.clear();
    constants.clear();
    return MakeInputs(*request.graph, *request.env, given, &inputs, &constants);
  };
  if (absl::Status made = make_inputs(); !made.ok()) {
    return unmeasurable(made);
  }

  // The tuning build, loaded (not stored in the cache: only its choices
  // are).
  absl::StatusOr<std::string> dir = codegen::TemporaryBuildDir();
  if (!dir.ok()) return skipped(dir.status());
  absl::StatusOr<codegen::BuiltLibrary> built =
      request.backend->Build(tuning_kernels, parts.host.text, *dir, {});
  if (!built.ok()) {
    std::error_code ignored;
    std::filesystem::remove_all(*dir, ignored);
    return skipped(built.status());
  }
  codegen::CpuFunction::Parts tp = parts;
  tp.source = tuning_source;
  tp.built = *std::move(built);
  tp.temp_dir = *dir;  // removed with the function
  absl::StatusOr<std::unique_ptr<codegen::CpuFunction>> loaded =
      codegen::CpuFunction::Load(*request.graph, std::move(tp));
  if (!loaded.ok()) return skipped(loaded.status());
  const codegen::CpuFunction& f = **loaded;
  absl::StatusOr<Table> table = TableOf(f, kernels);
  if (!table.ok()) return skipped(table.status());

  // One call outside the timing (which also says whether the graph writes
  // its inputs: then each call gets fresh ones).
  const std::vector<int> candidates = ThreadCandidates(
      *team, !tunable.split_batch.empty(), !tunable.winograd.empty());
  Clock::time_point start = Clock::now();
  absl::StatusOr<ir::Interpretation> warm =
      f.plan_applied() ? f.RunWithPlan(inputs, constants)
                       : f.Run(inputs, constants);
  ++result.calls;
  if (!warm.ok()) return unmeasurable(warm.status());
  // A graph that writes its inputs gets fresh ones for every call.
  bool writes = f.plan_applied();
  for (bool w : warm->mutated_inputs) writes = writes || w;
  const double call_seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  const TuningOptions& o = request.tuning;
  int rounds = std::max(1, o.rounds);
  const double affordable =
      o.budget_seconds /
      (call_seconds * static_cast<double>(candidates.size()));
  if (call_seconds > 0 && affordable < rounds) {
    rounds = affordable >= 1 ? static_cast<int>(affordable) : 1;
  }
  // One call (fresh inputs for a graph that writes them).
  auto call = [&](absl::Span<const int> choices) -> absl::StatusOr<CallTimes> {
    if (writes) RETURN_IF_ERROR(make_inputs());
    ++result.calls;
    return TimedCall(f, *table, choices, inputs, constants);
  };
  TuningTimes times(candidates.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t c = 0; c < candidates.size(); ++c) {
      absl::StatusOr<CallTimes> t =
          call(Everywhere(tunable, kernels, candidates[c]));
      if (!t.ok()) return skipped(t.status());
      times[c].push_back(std::move(t->kernels));
    }
  }
  std::vector<int> chosen =
      ChooseThreads(candidates, times, tunable, kernels, o.margin);

  // Each kernel's time says what it costs itself, not what it leaves the
  // kernels after it (the caches a batch split fills another way): the
  // choices are kept only when whole calls with them are faster than with
  // the whole team everywhere, in interleaved rounds.
  std::string whole_calls;
  if (chosen != std::vector<int>(kernels, 0)) {
    std::vector<int64_t> team_ns, chosen_ns;
    for (int r = 0; r < rounds; ++r) {
      absl::StatusOr<CallTimes> a = call(Everywhere(tunable, kernels, 0));
      if (!a.ok()) return skipped(a.status());
      absl::StatusOr<CallTimes> b = call(chosen);
      if (!b.ok()) return skipped(b.status());
      team_ns.push_back(a->whole);
      chosen_ns.push_back(b->whole);
    }
    const int64_t team_median = Median(team_ns);
    const int64_t chosen_median = Median(chosen_ns);
    const bool keep = chosen_median < team_median;
    whole_calls = absl::StrCat("autotune: whole calls (median of ", rounds,
                               "): the whole team ", team_median / 1e6,
                               " ms, the choices ", chosen_median / 1e6,
                               " ms: ", keep ? "kept" : "not kept");
    if (!keep) chosen.assign(kernels, 0);
  }
  result.threads = std::move(chosen);
  int changed = 0;
  auto named = [&](int choice) {
    return choice == 0             ? absl::StrCat(*team, " (team)")
           : choice == kSplitBatch ? std::string("split_batch")
           : choice == kWinograd   ? std::string("winograd")
                                   : absl::StrCat(choice);
  };
  for (int k : tunable_kernels) {
    // A convolution without thread counts: the direct algorithm or not.
    const bool algorithm_only = !absl::c_linear_search(tunable.threads, k);
    auto label = [&](int choice) {
      return algorithm_only && choice == 0 ? std::string("direct")
                                           : named(choice);
    };
    std::vector<std::string> medians;
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (!CandidateFor(tunable, k, candidates[c])) continue;
      std::vector<int64_t> v;
      for (const auto& round : times[c]) v.push_back(round[k]);
      medians.push_back(absl::StrCat(label(candidates[c]), ": ",
                                     Median(std::move(v)) / 1000.0, " us"));
    }
    changed += result.threads[k] != 0;
    result.log.push_back(absl::StrCat(
        "autotune: ", program.kernels[k].name, " ",
        result.threads[k] == kSplitBatch ? "split_batch"
        : result.threads[k] == kWinograd ? "winograd"
        : algorithm_only                 ? "direct"
                         : "threads=" + named(result.threads[k]),
        " (median of ", rounds, ": ", absl::StrJoin(medians, ", "), ")"));
  }
  if (!whole_calls.empty()) result.log.push_back(whole_calls);
  result.log.push_back(
      absl::StrCat("autotune: ", tunable_kernels.size(), " tunable kernels, ",
                   changed, " off the whole team, ", result.calls, " calls"));
  if (request.cache != nullptr) {
    absl::Status stored =
        request.cache->Put(*key, EncodeTuning(result.threads));
    if (!stored.ok()) {
      result.log.push_back(absl::StrCat(
          "autotune: the choices were not stored: ", stored.message()));
    }
  }
  return result;
}

}  // namespace lathe
