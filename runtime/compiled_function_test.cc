// CompiledFunction and LoadedGraph on compiled graphs written by hand
// (testdata/add_graph.cc: out = x + y * alpha), so no compiler is in the
// loop: the hit path, the key path, guards, recompiles with reasons, the
// limit and its fallback, argument errors, in-place mutation, and calls from
// many threads (run under ThreadSanitizer by tools/dev.sh), and a first tier
// replaced by a better one (a tiered compile).

#include "runtime/compiled_function.h"

#include <atomic>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernel_runtime.h"
#include "runtime/loaded_graph.h"
#include "runtime/shared_library.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kGuarded[] = "runtime/testdata/add_graph.so";
constexpr char kAny[] = "runtime/testdata/add_graph_any.so";
constexpr char kMutate[] = "runtime/testdata/add_graph_mutate.so";
constexpr char kGraphOnly[] = "runtime/testdata/add_graph_graph.so";

CallSignature AddSignature() {
  CallSignature s;
  s.results = {CompositeLayout::Plain(1)};
  s.checks = {"x is too long"};
  return s;
}

Variant Load(const char* path) {
  absl::StatusOr<std::shared_ptr<const LoadedGraph>> g =
      LoadedGraph::Open(path, AddSignature());
  EXPECT_OK(g.status());
  return Variant{
      *g, {"y.size(0) == x.size(0)", "2 <= x.size(0)", "not isnan(alpha)"}};
}

std::vector<ArgumentSpec> AddArguments() {
  return {{.name = "x", .rank = 1},
          {.name = "y", .rank = 1},
          {.name = "alpha", .kind = ArgumentSpec::Kind::kFloat}};
}

Tensor Vector(std::vector<float> values) {
  Tensor t =
      Tensor::Empty({static_cast<int64_t>(values.size())}, DType::kFloat32)
          .value();
  for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = values[i];
  return t;
}

std::vector<float> Values(const Operand& o) {
  EXPECT_EQ(o.kind, Operand::Kind::kTensor);
  std::vector<float> v;
  for (int64_t i = 0; i < o.tensor.numel(); ++i) {
    v.push_back(o.tensor.data<float>()[i * o.tensor.strides()[0]]);
  }
  return v;
}

std::vector<Operand> Args(int n, double alpha) {
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = static_cast<float>(10 * i);
  }
  return {Operand::Of(Vector(x)), Operand::Of(Vector(y)),
          Operand::Float(alpha)};
}

TEST(LoadedGraphTest, CallsTheLibraryAndNamesItsErrors) {
  Variant v = Load(kGuarded);
  std::vector<Operand> args = Args(3, 0.5);
  ArgViews views;
  views.Build(args);
  EXPECT_EQ(v.graph->FailedGuard(views, 3), LATHE_GUARDS_HOLD);
  std::vector<Operand> results, rebound;
  ASSERT_EQ(v.graph->Invoke(views.span(), kDefaultSeed, &results, &rebound), 0);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_THAT(Values(results[0]), ElementsAre(0, 6, 12));  // x + 0.5 y
  EXPECT_THAT(v.graph->CallStatus(1),
              StatusIs(absl::StatusCode::kInvalidArgument, "x is too long"));
  EXPECT_THAT(v.graph->CallStatus(LATHE_CALL_NO_MEMORY),
              StatusIs(absl::StatusCode::kResourceExhausted));
  // A size of 1 fails guard 1; a missing input makes them unreadable.
  std::vector<Operand> one = Args(1, 0.5);
  views.Build(one);
  EXPECT_EQ(v.graph->FailedGuard(views, 3), 1);
  views.Build(absl::MakeSpan(one).subspan(0, 2));
  EXPECT_EQ(v.graph->FailedGuard(views, 2), LATHE_GUARDS_OTHER_INPUTS);
  EXPECT_THAT(LoadedGraph::Open("runtime/testdata/none.so", AddSignature()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cannot load runtime/testdata/none.so")));
}

// A library lacking the entry a call needs: the call returns
// kCallNoGraphEntry or kCallNoEntry (nothing run, nothing returned), whose
// status names the entry; OpenGraph needs lathe_call, Open lathe_call_user.
TEST(LoadedGraphTest, ACallWithoutItsEntryIsRefused) {
  const std::string no_entry =
      "the compiled library has no lathe_call_user entry (compiled without "
      "its composite wrapper)";
  const std::string no_graph_entry =
      "the compiled graph was opened without its lathe_call entry "
      "(LoadedGraph::OpenGraph opens it)";
  std::vector<Operand> args = Args(3, 0.5);
  ArgViews views;
  views.Build(args);
  std::vector<Operand> results, rebound;

  // Only lathe_call_user: InvokeGraph has no lathe_call to call.
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const LoadedGraph> user,
                       LoadedGraph::Open(kGuarded, AddSignature()));
  EXPECT_EQ(
      user->InvokeGraph(views.data(), views.size(), kDefaultSeed, &results),
      kCallNoGraphEntry);
  EXPECT_TRUE(results.empty());
  EXPECT_THAT(user->CallStatus(kCallNoGraphEntry),
              StatusIs(absl::StatusCode::kFailedPrecondition, no_graph_entry));

  // Only lathe_call: Invoke has no lathe_call_user, InvokeGraph runs.
  ASSERT_OK_AND_ASSIGN(SharedLibrary library, SharedLibrary::Open(kGraphOnly));
  ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const LoadedGraph> graph,
      LoadedGraph::OpenGraph(std::move(library), AddSignature()));
  EXPECT_FALSE(graph->has_user_entry());
  EXPECT_EQ(graph->Invoke(views.span(), kDefaultSeed, &results, &rebound),
            kCallNoEntry);
  EXPECT_TRUE(results.empty());
  EXPECT_TRUE(rebound.empty());
  EXPECT_THAT(graph->CallStatus(kCallNoEntry),
              StatusIs(absl::StatusCode::kFailedPrecondition, no_entry));
  ASSERT_EQ(
      graph->InvokeGraph(views.data(), views.size(), kDefaultSeed, &results),
      0);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_THAT(Values(results[0]), ElementsAre(0, 6, 12));  // x + 0.5 y

  // Each way of opening needs its own entry.
  EXPECT_THAT(LoadedGraph::Open(kGraphOnly, AddSignature()),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("has no symbol 'lathe_call_user'")));
  ASSERT_OK_AND_ASSIGN(SharedLibrary user_only, SharedLibrary::Open(kGuarded));
  EXPECT_THAT(LoadedGraph::OpenGraph(std::move(user_only), AddSignature()),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("has no symbol 'lathe_call'")));
  // A count of ranks its array does not hold ({5, 1}: 16 bytes, not 48) is
  // never read past the array.
  EXPECT_THAT(
      LoadedGraph::Open("runtime/testdata/add_graph_bad_ranks.so",
                        AddSignature()),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("add_graph_bad_ranks.so: lathe_result_ranks holds 16 "
                         "bytes, not a count (at most 65536) and as many "
                         "ranks")));
  EXPECT_THAT(
      LoadedGraph::Open("runtime/testdata/add_graph_bad_rank.so",
                        AddSignature()),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("add_graph_bad_rank.so: result 0 has rank 1000 "
                         "(below 100 expected)")));
  // A signature whose result buffers cannot be sized: a rank not known, a
  // composite without its values.
  CallSignature unknown = AddSignature();
  unknown.results = {CompositeLayout::Plain()};
  EXPECT_THAT(LoadedGraph::Open(kGuarded, unknown),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "a result laid out as ?: every plain value needs its "
                       "rank, every composite a value"));
  unknown.results = {CompositeLayout::Of(FindCompositeType("pair"), {})};
  EXPECT_THAT(LoadedGraph::Open(kGuarded, unknown),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a result laid out as pair()")));
}

TEST(CompiledFunctionTest, HitAndKeyPathsRunTheVariant) {
  CompiledFunction f(AddArguments(), {}, {Load(kGuarded)});
  for (int n : {4, 4, 8, 4, 8}) {
    std::vector<Operand> args = Args(n, 2.0);
    ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                         f.Call(absl::MakeSpan(args)));
    ASSERT_EQ(out.size(), 1u);
    std::vector<float> want;
    for (int i = 0; i < n; ++i) want.push_back(i + 20.0f * i);
    EXPECT_EQ(Values(out[0]), want);
  }
  EXPECT_EQ(f.compiles(), 0);
  EXPECT_TRUE(f.recompiles().empty());
}

TEST(CompiledFunctionTest, FloatScalarsAreArgumentsNotKeys) {
  int compiles = 0;
  CompiledFunction f(AddArguments(),
                     {.compile = [&](absl::Span<const Operand>) {
                       ++compiles;
                       return absl::StatusOr<Variant>(Load(kGuarded));
                     }});
  for (double alpha : {0.0, 1.0, -3.5, 1e-7, 100.0}) {
    std::vector<Operand> args = Args(2, alpha);
    ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                         f.Call(absl::MakeSpan(args)));
    EXPECT_THAT(Values(out[0]),
                ElementsAre(0.0f, 1.0f + 10.0f * static_cast<float>(alpha)));
  }
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(f.compiles(), 1);
  // NaN is guarded: the variant refuses it, and the callback's second
  // (guarded) variant refuses it too.
  std::vector<Operand> args = Args(2, std::nan(""));
  EXPECT_THAT(f.Call(absl::MakeSpan(args)),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("refuse the arguments it was compiled for "
                                 "(not isnan(alpha))")));
}

TEST(CompiledFunctionTest, AMissRecompilesAndSaysWhy) {
  CompiledFunction f(AddArguments(),
                     {.compile =
                          [&](absl::Span<const Operand>) {
                            return absl::StatusOr<Variant>(Load(kAny));
                          }},
                     {Load(kGuarded)});
  std::vector<Operand> args = Args(1, 1.0);
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out, f.Call(absl::MakeSpan(args)));
  EXPECT_THAT(Values(out[0]), ElementsAre(0));
  EXPECT_EQ(f.compiles(), 1);
  ASSERT_EQ(f.recompiles().size(), 1u);
  EXPECT_EQ(f.recompiles()[0].compile, 1);
  EXPECT_EQ(f.recompiles()[0].reason, "2 <= x.size(0)");
  // Size 1 again, and other sizes: no more compiles.
  for (int n : {1, 5, 1}) {
    std::vector<Operand> again = Args(n, 1.0);
    ASSERT_OK(f.Call(absl::MakeSpan(again)).status());
  }
  EXPECT_EQ(f.compiles(), 1);
}

TEST(CompiledFunctionTest, WithoutACallbackAMissIsAnError) {
  CompiledFunction f(AddArguments(), {}, {Load(kGuarded)});
  std::vector<Operand> args = Args(1, 1.0);
  EXPECT_THAT(f.Call(absl::MakeSpan(args)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "no compiled variant admits the arguments (guard "
                       "failed: 2 <= x.size(0)), and no compile callback"));
  CompiledFunction empty(AddArguments(), {});
  EXPECT_THAT(empty.Call(absl::MakeSpan(args)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no compiled variant")));
}

TEST(CompiledFunctionTest, PastTheLimitTheFallbackRunsWithOneWarning) {
  int fallback = 0;
  CompiledFunction f(AddArguments(),
                     {.compile =
                          [&](absl::Span<const Operand>) {
                            return absl::StatusOr<Variant>(Load(kGuarded));
                          },
                      .fallback =
                          [&](absl::Span<Operand> args, uint64_t) {
                            ++fallback;
                            return absl::StatusOr<std::vector<Operand>>(
                                std::vector<Operand>{args[0]});
                          },
                      .max_compiles = 1});
  std::vector<Operand> args = Args(3, 1.0);
  ASSERT_OK(f.Call(absl::MakeSpan(args)).status());
  for (int k = 0; k < 3; ++k) {
    std::vector<Operand> one = Args(1, 1.0);
    ASSERT_OK_AND_ASSIGN(std::vector<Operand> out, f.Call(absl::MakeSpan(one)));
    EXPECT_THAT(Values(out[0]), ElementsAre(0));
  }
  EXPECT_EQ(fallback, 3);
  EXPECT_EQ(f.fallback_calls(), 3);
  EXPECT_EQ(f.compiles(), 1);
  ASSERT_EQ(f.warnings().size(), 1u);
  EXPECT_THAT(f.warnings()[0],
              HasSubstr("would need compile 2, past the limit of 1 (guard "
                        "failed: 2 <= x.size(0))"));
  // Without a fallback, the limit is an error.
  CompiledFunction strict(AddArguments(),
                          {.compile =
                               [&](absl::Span<const Operand>) {
                                 return absl::StatusOr<Variant>(Load(kGuarded));
                               },
                           .max_compiles = 0});
  EXPECT_THAT(strict.Call(absl::MakeSpan(args)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("past the limit of 0")));
}

TEST(CompiledFunctionTest, BadArgumentsAreNamed) {
  CompiledFunction f(AddArguments(), {}, {Load(kGuarded)});
  std::vector<Operand> two = Args(4, 1.0);
  two.pop_back();
  EXPECT_THAT(f.Call(absl::MakeSpan(two)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "expected 3 arguments (x, y, alpha), got 2"));
  std::vector<Operand> args = Args(4, 1.0);
  args[1] = Operand::Of(Tensor::Empty({4}, DType::kFloat64).value());
  EXPECT_THAT(f.Call(absl::MakeSpan(args)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "argument 1 (y): expected f32 tensor of rank 1 on cpu, "
                       "got f64[4][1]cpu"));
  args = Args(4, 1.0);
  args[0] = Operand::Of(Tensor::Empty({2, 2}, DType::kFloat32).value());
  EXPECT_THAT(f.Call(absl::MakeSpan(args)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("argument 0 (x): expected f32 tensor of rank "
                                 "1 on cpu, got f32[2, 2]")));
  args = Args(4, 1.0);
  args[2] = Operand::Int(3);
  EXPECT_THAT(f.Call(absl::MakeSpan(args)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "argument 2 (alpha): expected float, got 3"));
  args = Args(4, 1.0);
  args[0] = Operand::Of(Tensor());
  EXPECT_THAT(f.Call(absl::MakeSpan(args)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("got an undefined tensor")));
  args = Args(4, 1.0);
  args[0] = Operand::Of(std::shared_ptr<const CompositeTensor>());
  EXPECT_THAT(f.Call(absl::MakeSpan(args)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("got an empty composite")));
  // A bad call changes nothing: the next good one runs.
  args = Args(4, 1.0);
  EXPECT_OK(f.Call(absl::MakeSpan(args)).status());
}

Variant Mutating() {
  Variant v = Load(kMutate);
  v.mutated = {0};  // x += 1
  return v;
}

TEST(CompiledFunctionTest, MutatedInputsAreWrittenInPlace) {
  CompiledFunction f(AddArguments(), {}, {Mutating()});
  std::vector<Operand> args = Args(3, 1.0);
  Tensor x = args[0].tensor;
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out, f.Call(absl::MakeSpan(args)));
  EXPECT_THAT(Values(out[0]), ElementsAre(0, 11, 22));
  EXPECT_THAT(Values(Operand::Of(x)), ElementsAre(1, 2, 3));
  ASSERT_OK_AND_ASSIGN(out, f.Call(absl::MakeSpan(args)));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 12, 23));
  EXPECT_THAT(Values(Operand::Of(x)), ElementsAre(2, 3, 4));
}

// x is written; y sharing x's storage would read values the call changes
// under it, so it is refused (y alone may alias anything read-only).
TEST(CompiledFunctionTest, AWrittenArgumentSharingAStorageIsRefused) {
  CompiledFunction f(AddArguments(), {}, {Mutating()});
  std::vector<Operand> args = Args(3, 1.0);
  args[1] = args[0];
  EXPECT_THAT(f.Call(absl::MakeSpan(args)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "arguments 0 (x) and 1 (y) share a storage, and the "
                       "call writes argument 0: pass separate tensors"));
  Tensor x = args[0].tensor;
  EXPECT_THAT(Values(Operand::Of(x)), ElementsAre(0, 1, 2));  // untouched
  // A view of x's storage is refused too; separate tensors run.
  args[1] = Operand::Of(x.AsStrided({3}, {1}, 0).value());
  EXPECT_FALSE(f.Call(absl::MakeSpan(args)).ok());
  args = Args(3, 1.0);
  EXPECT_OK(f.Call(absl::MakeSpan(args)).status());
  // Without writes, sharing is harmless.
  CompiledFunction reads(AddArguments(), {}, {Load(kGuarded)});
  args[1] = args[0];
  EXPECT_OK(reads.Call(absl::MakeSpan(args)).status());
}

// The key of arguments, through their views.
KeyBuffer KeyOf(absl::Span<const Operand> args) {
  ArgViews views;
  views.Build(args);
  KeyBuffer key;
  SpecializationKey(views.span(), &key);
  return key;
}

TEST(CompiledFunctionTest, KeysDifferInStridesNotFloatValues) {
  std::vector<Operand> a = Args(4, 1.0), b = Args(4, 2.0);
  const KeyBuffer ka = KeyOf(a);
  EXPECT_EQ(ka, KeyOf(b));
  Tensor wide = Tensor::Empty({4, 2}, DType::kFloat32).value();
  b[0] = Operand::Of(wide.AsStrided({4}, {2}, 0).value());
  EXPECT_NE(ka, KeyOf(b));
  b[0] = Operand::Of(wide.AsStrided({4}, {1}, 1).value());  // an offset
  EXPECT_NE(ka, KeyOf(b));
  b = Args(4, std::nan(""));
  EXPECT_NE(ka, KeyOf(b));
  b = Args(4, 1.0);
  b[2] = Operand::Int(1);  // an int is not a float
  EXPECT_NE(ka, KeyOf(b));
}

// CallViews runs what a variant already admits on the caller's views, as
// Call does, and leaves the rest to Call: a key not seen before, a bad
// argument to name (the host check), an interpreted variant.
TEST(CompiledFunctionTest, CallViewsRunsWhatAVariantAdmits) {
  CompiledFunction f(AddArguments(), {}, {Load(kGuarded)});
  std::vector<Operand> args = Args(3, 0.5);
  ArgViews views;
  views.Build(args);
  EXPECT_FALSE(f.CallViews(views.span()).has_value());  // a new key
  ASSERT_OK(f.Call(absl::MakeSpan(args)).status());
  std::optional<absl::StatusOr<std::vector<Operand>>> out =
      f.CallViews(views.span());
  ASSERT_TRUE(out.has_value());
  ASSERT_OK(out->status());
  ASSERT_EQ((*out)->size(), 1u);
  EXPECT_THAT(Values((**out)[0]), ElementsAre(0, 6, 12));  // x + 0.5 y
  // A new alpha is the same key: a runtime argument.
  args[2] = Operand::Float(2.0);
  views.Build(args);
  out = f.CallViews(views.span());
  ASSERT_TRUE(out.has_value() && out->ok());
  EXPECT_THAT(Values((**out)[0]), ElementsAre(0, 21, 42));
  // Another length is another key.
  std::vector<Operand> longer = Args(4, 0.5);
  views.Build(longer);
  EXPECT_FALSE(f.CallViews(views.span()).has_value());
  // A written argument sharing a storage is refused as Call refuses it.
  CompiledFunction writes(AddArguments(), {}, {Mutating()});
  args = Args(3, 1.0);
  ASSERT_OK(writes.Call(absl::MakeSpan(args)).status());
  args[1] = Operand::Of(args[0].tensor.AsStrided({3}, {1}, 0).value());
  views.Build(args);
  out = writes.CallViews(views.span());
  ASSERT_TRUE(out.has_value());
  EXPECT_THAT(*out, StatusIs(absl::StatusCode::kInvalidArgument,
                             HasSubstr("share a storage")));
  // An interpreted variant (no library) is Call's.
  Variant interpreted;
  interpreted.failed_guard = [](const ArgViews&) { return LATHE_GUARDS_HOLD; };
  interpreted.run = [](absl::Span<Operand>, uint64_t) {
    return absl::StatusOr<std::vector<Operand>>(std::vector<Operand>{});
  };
  CompiledFunction runs(AddArguments(), {}, {interpreted});
  args = Args(3, 1.0);
  ASSERT_OK(runs.Call(absl::MakeSpan(args)).status());
  views.Build(args);
  EXPECT_FALSE(runs.CallViews(views.span()).has_value());
}

TEST(CompiledFunctionTest, ManyThreadsCallAtOnce) {
  CompiledFunction f(AddArguments(),
                     {.compile =
                          [&](absl::Span<const Operand>) {
                            return absl::StatusOr<Variant>(Load(kAny));
                          }},
                     {Load(kGuarded)});
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 100; ++k) {
        int n = 1 + (t + k) % 5;
        std::vector<Operand> args = Args(n, 1.0);
        absl::StatusOr<std::vector<Operand>> out = f.Call(absl::MakeSpan(args));
        bool ok = out.ok() && out->size() == 1 &&
                  Values((*out)[0]).back() == 11.0f * (n - 1);
        if (!ok) ++bad;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(f.compiles(), 1);  // size 1, once
}

// A first tier as the compiler side's interpreted variants are: guards and
// a call on the host. Its guards are the library's (kGuarded's, of which it
// checks the size: 2 <= x.size(0)); it returns x (the libraries return
// x + alpha * y), counting its calls; `upgrade` keeps the function's
// `replace` for the test to call.
Variant FirstTier(std::atomic<int>* calls, Variant::Replace* replace) {
  Variant v;
  v.guards = Load(kGuarded).guards;
  v.failed_guard = [](const ArgViews& views) {
    return views.data()[0].sizes[0] >= 2 ? LATHE_GUARDS_HOLD : 1;
  };
  v.run = [calls](absl::Span<Operand> args, uint64_t) {
    ++*calls;
    return absl::StatusOr<std::vector<Operand>>(std::vector<Operand>{args[0]});
  };
  v.upgrade = [replace](Variant::Replace r) { *replace = std::move(r); };
  return v;
}

TEST(CompiledFunctionTest, AFirstTierIsReplacedForEveryKeyItAdmitted) {
  std::atomic<int> first_calls{0};
  int compiles = 0;
  Variant::Replace replace;
  auto f = std::make_unique<CompiledFunction>(
      AddArguments(),
      CompiledFunction::Options{.compile = [&](absl::Span<const Operand>) {
        ++compiles;
        return absl::StatusOr<Variant>(
            compiles == 1 ? FirstTier(&first_calls, &replace) : Load(kAny));
      }});
  // Sizes 4 and 8: the first tier (x back), and its build started once.
  for (int n : {4, 8}) {
    std::vector<Operand> args = Args(n, 2.0);
    ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                         f->Call(absl::MakeSpan(args)));
    EXPECT_EQ(Values(out[0]).back(), n - 1.0f);
  }
  EXPECT_EQ(first_calls, 2);
  ASSERT_TRUE(replace != nullptr);
  EXPECT_EQ(f->upgrades(), 0);
  // Views cannot run an interpreted variant.
  std::vector<Operand> four = Args(4, 2.0);
  ArgViews views;
  views.Build(absl::MakeSpan(four));
  EXPECT_FALSE(f->CallViews(views.span()).has_value());

  replace(Load(kGuarded));
  EXPECT_EQ(f->upgrades(), 1);
  // Both keys now run the library (x + 2 y), on every path.
  for (int n : {4, 8, 4}) {
    std::vector<Operand> args = Args(n, 2.0);
    ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                         f->Call(absl::MakeSpan(args)));
    EXPECT_EQ(Values(out[0]).back(), 21.0f * (n - 1));
  }
  std::optional<absl::StatusOr<std::vector<Operand>>> viewed =
      f->CallViews(views.span());
  ASSERT_TRUE(viewed.has_value());
  ASSERT_OK(viewed->status());
  EXPECT_EQ(Values((**viewed)[0]).back(), 63.0f);
  EXPECT_EQ(first_calls, 2);
  // A new size the replacement's guards refuse (2 <= x.size(0)) is not
  // given to the replaced first tier: a recompile, which says why.
  std::vector<Operand> one = Args(1, 2.0);
  ASSERT_OK(f->Call(absl::MakeSpan(one)).status());
  EXPECT_EQ(compiles, 2);
  ASSERT_EQ(f->recompiles().size(), 1u);
  EXPECT_EQ(f->recompiles()[0].reason, "2 <= x.size(0)");
  EXPECT_EQ(first_calls, 2);
  // A second replacement of the same variant is ignored.
  replace(Load(kAny));
  EXPECT_EQ(f->upgrades(), 1);
  EXPECT_TRUE(f->warnings().empty());
  // After the function is gone, `replace` does nothing.
  f.reset();
  replace(Load(kGuarded));
}

TEST(CompiledFunctionTest, AFailedUpgradeKeepsTheFirstTierWithAWarning) {
  std::atomic<int> first_calls{0};
  Variant::Replace replace;
  CompiledFunction f(
      AddArguments(),
      {.compile =
           [&](absl::Span<const Operand>) {
             return absl::StatusOr<Variant>(FirstTier(&first_calls, &replace));
           },
       .fallback =
           [&](absl::Span<Operand> args, uint64_t) {
             return absl::StatusOr<std::vector<Operand>>(
                 std::vector<Operand>{args[0]});
           },
       .max_compiles = 1});
  std::vector<Operand> args = Args(3, 1.0);
  ASSERT_OK(f.Call(absl::MakeSpan(args)).status());
  replace(absl::InternalError("the C++ compiler failed on kernel.cc"));
  EXPECT_EQ(f.upgrades(), 0);
  ASSERT_EQ(f.warnings().size(), 1u);
  EXPECT_THAT(f.warnings()[0],
              HasSubstr("the optimized build of a variant failed (the C++ "
                        "compiler failed on kernel.cc); its calls stay on the "
                        "first tier"));
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out, f.Call(absl::MakeSpan(args)));
  EXPECT_THAT(Values(out[0]), ElementsAre(0, 1, 2));
  EXPECT_EQ(first_calls, 2);
  EXPECT_EQ(f.compiles(), 1);
  // Past the limit, the fallback still gives its own warning.
  std::vector<Operand> one = Args(1, 1.0);
  ASSERT_OK(f.Call(absl::MakeSpan(one)).status());
  ASSERT_EQ(f.warnings().size(), 2u);
  EXPECT_THAT(f.warnings()[1], HasSubstr("past the limit of 1"));
}

TEST(CompiledFunctionTest, AReplacementWithOtherGuardsIsRefused) {
  std::atomic<int> first_calls{0};
  Variant::Replace replace;
  CompiledFunction f(
      AddArguments(), {.compile = [&](absl::Span<const Operand>) {
        return absl::StatusOr<Variant>(FirstTier(&first_calls, &replace));
      }});
  std::vector<Operand> args = Args(3, 1.0);
  ASSERT_OK(f.Call(absl::MakeSpan(args)).status());
  Variant other = Load(kAny);
  other.guards = {"x.size(0) == 3"};
  replace(std::move(other));
  EXPECT_EQ(f.upgrades(), 0);
  ASSERT_EQ(f.warnings().size(), 1u);
  EXPECT_THAT(f.warnings()[0],
              HasSubstr("its guards (x.size(0) == 3) are not the first "
                        "tier's (y.size(0) == x.size(0); 2 <= x.size(0); not "
                        "isnan(alpha))"));
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out, f.Call(absl::MakeSpan(args)));
  EXPECT_THAT(Values(out[0]), ElementsAre(0, 1, 2));  // still the first tier
  EXPECT_EQ(first_calls, 2);
}

TEST(CompiledFunctionTest, AnUpgradeWhileThreadsCall) {
  std::atomic<int> first_calls{0};
  Variant::Replace replace;
  std::atomic<bool> started{false};
  CompiledFunction f(AddArguments(),
                     {.compile = [&](absl::Span<const Operand>) {
                       Variant v = FirstTier(&first_calls, &replace);
                       v.upgrade = [&](Variant::Replace r) {
                         replace = std::move(r);
                         started = true;
                       };
                       return absl::StatusOr<Variant>(std::move(v));
                     }});
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 200; ++k) {
        int n = 2 + (t + k) % 4;
        std::vector<Operand> args = Args(n, 1.0);
        absl::StatusOr<std::vector<Operand>> out = f.Call(absl::MakeSpan(args));
        // The first tier's x, or the library's x + y.
        float last = out.ok() ? Values((*out)[0]).back() : -1;
        if (last != n - 1.0f && last != 11.0f * (n - 1)) ++bad;
      }
    });
  }
  while (!started) std::this_thread::yield();
  replace(Load(kGuarded));
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(f.upgrades(), 1);
  EXPECT_EQ(f.compiles(), 1);
  std::vector<Operand> args = Args(5, 1.0);
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out, f.Call(absl::MakeSpan(args)));
  EXPECT_EQ(Values(out[0]).back(), 44.0f);
}

}  // namespace
}  // namespace lathe
